"""Hosts that copy the demo news network, each on a loopback address of its own: a full mirror
(every page of the network as it is), a near mirror (the network and two stories of its own)
and a partner (four stories of its own and two of the network's, republished)."""

from __future__ import annotations

from html import escape

from . import render
from .content import ARTICLES_DIR, SITES_BY_KEY, Article, load_article
from .server import DemoSiteServer, Resource, build_routes

#: Host kind -> its loopback address (each served on a port of its own).
ADDRESSES = {"mirror": "127.0.0.2", "near-mirror": "127.0.0.3", "partner": "127.0.0.4"}
#: The stories of the mirror hosts' own, in ``mirror_articles/en``.
OWN_DIR = ARTICLES_DIR.parent / "mirror_articles" / "en"
NEAR_MIRROR_OWN = ("lighthouse-keeper", "bakery-award")
PARTNER_OWN = ("tidal-pools", "choir-tour", "harbour-cleanup", "night-buses")
#: The network's stories the partner republishes: (slug, the network site that published it).
PARTNER_REPUBLISHED = (("community-garden", "ledger"), ("ferry-timetable", "metro"))


def _html(text: str) -> Resource:
    return Resource("text/html; charset=utf-8", text.encode("utf-8"))


def _page(name: str, title: str, main: str) -> str:
    """A page of a mirror host's own, in its plain template."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)} | {escape(name)}</title>"
        f'<meta property="og:site_name" content="{escape(name)}"></head><body>'
        f'<header><a href="/">{escape(name)}</a></header><main>{main}</main>'
        f"<footer>Copyright 2024 {escape(name)}</footer></body></html>\n"
    )


def _story(name: str, article: Article, credit: str = "") -> Resource:
    """A story page: the article, and where it was first published."""
    paragraphs = "".join(f"<p>{escape(p)}</p>" for p in article.paragraphs)
    source = f'<p class="credit">First published by {escape(credit)}</p>' if credit else ""
    main = (
        f"<article><h1>{escape(article.title)}</h1><p class='byline'>By "
        f"{escape(article.author)}</p>{paragraphs}{source}</article>"
    )
    return _html(_page(name, article.title, main))


def _own(slug: str) -> Article:
    return load_article(OWN_DIR / f"{slug}.txt")


def _links(paths: list[tuple[str, str]]) -> str:
    return "".join(f'<li><a href="{path}">{escape(title)}</a></li>' for path, title in paths)


def mirror_routes() -> dict[str, Resource]:
    """The full mirror: the network's every page, as it is."""
    return build_routes()


def near_mirror_routes() -> dict[str, Resource]:
    """The near mirror: the network's pages and two stories of its own, linked from its home."""
    routes = build_routes()
    stories = {f"/local/{slug}": _own(slug) for slug in NEAR_MIRROR_OWN}
    for path, article in stories.items():
        routes[path] = _story("Network Mirror", article)
    local = _links([(path, article.title) for path, article in stories.items()])
    home = render.home_page().replace("</body>", f"<h2>Local news</h2><ul>{local}</ul></body>")
    routes["/"] = _html(home)
    return routes


def partner_routes() -> dict[str, Resource]:
    """The partner: its own stories and two of the network's, each credited to its site."""
    name = "Harbour Gazette"
    routes: dict[str, Resource] = {}
    listed = []
    for slug in PARTNER_OWN:
        article = _own(slug)
        routes[f"/story/{slug}"] = _story(name, article)
        listed.append((f"/story/{slug}", article.title))
    for slug, key in PARTNER_REPUBLISHED:
        article = load_article(ARTICLES_DIR / "en" / f"{slug}.txt")
        routes[f"/story/{slug}"] = _story(name, article, SITES_BY_KEY[key].name)
        listed.append((f"/story/{slug}", article.title))
    routes["/"] = _html(_page(name, "Latest", f"<h2>Latest</h2><ul>{_links(listed)}</ul>"))
    return routes


def mirror_servers(port: int = 0) -> dict[str, DemoSiteServer]:
    """Host kind -> its server (not started), on ``port`` of its address if that is free."""
    routes = {
        "mirror": mirror_routes,
        "near-mirror": near_mirror_routes,
        "partner": partner_routes,
    }
    return {
        kind: DemoSiteServer(ADDRESSES[kind], port, routes[kind], any_port_if_taken=True)
        for kind in ADDRESSES
    }
