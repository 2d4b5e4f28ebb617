"""A small news network for end-to-end crawls: the same articles in several templates."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from spiders.demosite.content import ARTICLES_DIR, load_article
from tests.mockserver import Page


def article(slug: str, lang: str = "en") -> list[str]:
    """The paragraphs of one of the demo project's articles (real prose, distinct topics)."""
    return list(load_article(ARTICLES_DIR / lang / f"{slug}.txt").paragraphs)


@dataclass(frozen=True)
class Template:
    """A site's look: its navigation, ads, footer and per-page noise."""

    name: str
    nav: tuple[str, ...]
    ad: str

    def render(self, title: str, paragraphs: list[str], views: int, stamp: str) -> str:
        """A full page around an article body."""
        nav = "".join(f'<li><a href="#{n}">{n}</a></li>' for n in self.nav)
        body = "".join(f"<p>{p}</p>" for p in paragraphs)
        return (
            f"<html><head><title>{title} - {self.name}</title></head><body>"
            f'<header><ul class="nav">{nav}</ul></header>'
            f'<aside class="ads"><div class="ad">{self.ad}</div></aside>'
            f"<main><article><h1>{title}</h1><div class='meta'>{stamp} · {views} views</div>"
            f"{body}</article></main>"
            f'<footer class="footer">© {self.name}. All rights reserved. Privacy</footer>'
            "</body></html>"
        )


TEMPLATES = (
    Template("Daily Ledger", ("Home", "World", "Sports", "Opinion"), "Buy fresh coffee today"),
    Template("Metro Wire", ("Front", "City", "Arts", "Weather", "Jobs"), "Cheap flights now"),
    Template("Valley Courier", ("News", "Local", "Business"), "Best mortgage rates in town"),
)


def build_site() -> tuple[dict[str, Page], dict[str, list[str]]]:
    """(path -> Page, cluster name -> paths of its copies). Each cluster keeps exactly one."""
    pages: dict[str, Page] = {}
    clusters: dict[str, list[str]] = {}

    def add(path: str, html: str, cluster: str, charset: str = "utf-8") -> None:
        pages[path] = Page(
            html.encode(charset, "xmlcharrefreplace"), f"text/html; charset={charset}"
        )
        clusters.setdefault(cluster, []).append(path)

    story_a = article("harbor-bridge")
    add("/ledger/a.html", TEMPLATES[0].render("Bridge reopens", story_a, 10, "2024-05-01"), "A")
    add("/metro/a.html", TEMPLATES[1].render("Bridge reopens", story_a, 9876, "May 2"), "A")
    edited = [*story_a[:-1], story_a[-1] + " Originally published by the Daily Ledger."]
    add("/courier/a.html", TEMPLATES[2].render("Bridge reopens", edited, 3, "today"), "A")
    # Story A's very words, each paragraph's in another order: the words' fingerprint is the
    # same, the word-pair signature is not, so it is a different page and must be kept.
    rng = random.Random(3)
    reordered = [" ".join(rng.sample(p.split(), len(p.split()))) for p in story_a]
    add("/courier/a-words.html", TEMPLATES[2].render("Bridge", reordered, 4, "x"), "A-words")
    story_zh = article("metro-line", "zh")
    add("/ledger/zh.html", TEMPLATES[0].render("地铁新线开通", story_zh, 5, "2024-05-01"), "ZH")
    add(
        "/metro/zh.html",
        TEMPLATES[1].render("地铁新线开通", story_zh, 77, "2024-05-03"),
        "ZH",
        charset="gbk",
    )
    for template, path, slug in [
        (0, "/ledger/b.html", "council-budget"),
        (1, "/metro/c.html", "flood-warning"),
        (2, "/courier/d.html", "science-fair"),
    ]:
        add(path, TEMPLATES[template].render(slug, article(slug), len(path), "x"), path)

    links = "".join(f'<a href="{p}">{p}</a> ' for p in [*pages, "/logo.png", "/api.json"])
    links += '<a href="/tiny.html">tiny</a>'
    pages["/"] = Page(f"<html><body><nav>{links}</nav></body></html>".encode())
    pages["/logo.png"] = Page(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "image/png")
    pages["/api.json"] = Page(json.dumps({"a": 1}).encode(), "application/json")
    pages["/tiny.html"] = Page(b"<html><body><p>Contact us.</p></body></html>")
    return pages, clusters
