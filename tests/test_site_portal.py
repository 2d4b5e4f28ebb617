"""A portal: many templates on one loopback host, copies of a story across its sections; the
same portal crawled in two orders, through either index, gives the same decisions, however
many templates share the host."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.crawl import CrawlResult, run_crawl
from tests.mockserver import MockServer, Page
from tests.redis_server import RedisServer, require_redis
from tests.site import article
from tests.template_sites import ORDER, portal_pages

#: The portal's pages in the template sites' crawl order, then the republished story.
PATHS = [f"/{site}{path}" for site, path in ORDER] + ["/teasers/bridge-again"]
#: The one story served in three sections (two templates and another headline).
COPIES = {"/clean/bridge", "/jobs/bridge", "/teasers/bridge-again"}


@pytest.fixture(scope="module")
def portal() -> Iterator[MockServer]:
    with MockServer(portal_pages(), host="127.0.0.5") as server:
        yield server


def _crawl(tmp_path: Path, portal: MockServer, paths: list[str], settings) -> CrawlResult:
    urls = ",".join(portal.url + path for path in paths)
    result = run_crawl(tmp_path, ["runspider", "tests/spiders/in_order.py", "-a", f"urls={urls}"],
                       settings)  # fmt: skip
    assert result.returncode == 0 and result.stats["finish_reason"] == "finished", result.log
    assert len(result.report) == len(paths), result.log[-3000:]
    return result


def stories(result: CrawlResult, portal: MockServer) -> set[frozenset[str]]:
    """The crawl's decisions as the stories it told apart: each page kept (fingerprinted, or
    ``template-text``: all its lines are the site's other pages') with the pages dropped as
    its copies (paths)."""
    joined: dict[str, set[str]] = {}
    for line in result.report:
        path = line["url"].removeprefix(portal.url)
        assert line["decision"] != "skipped" or line["reason"] == "template-text", line
        if line["decision"] != "dropped":
            joined.setdefault(path, set()).add(path)
    for line in result.report:
        if line["decision"] == "dropped":
            joined[line["duplicate_of"].removeprefix(portal.url)].add(
                line["url"].removeprefix(portal.url)
            )
    return {frozenset(paths) for paths in joined.values()}


@pytest.mark.parametrize("backend", ["embedded", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_portals_sections_keep_their_stories_apart_in_any_order(
    backend: str, portal: MockServer, tmp_path: Path
) -> None:
    """Four templates on one host (teasers, a job board, a heading that is the portal's name),
    one story in three sections (once under another headline): every other story is kept,
    the three copies are one story, whichever section is crawled first."""
    expected = {frozenset(COPIES)} | {frozenset([p]) for p in PATHS if p not in COPIES}
    for found, report in crawled(tmp_path, portal, [PATHS, PATHS[::-1]], backend):
        assert found == expected, report


def crawled(
    tmp_path: Path, server: MockServer, orders: list[list[str]], backend: str
) -> Iterator[tuple[set[frozenset[str]], list]]:
    """Each order of paths crawled into a fresh index of ``backend``: its :func:`stories` and
    report."""
    for n, paths in enumerate(orders):
        with ExitStack() as stack:
            settings = {"NEARDUPE_INDEX": str(tmp_path / f"index{n}")}
            if backend == "redis":
                require_redis()
                redis = stack.enter_context(RedisServer(tmp_path / f"redis{n}"))
                settings["NEARDUPE_INDEX"] = redis.url
            result = _crawl(tmp_path / f"crawl{n}", server, paths, settings)
            yield stories(result, server), result.report


#: A large portal's sections, each a template of its own chrome and its own block of teasers.
SECTIONS = [
    "news",
    "sport",
    "arts",
    "travel",
    "food",
    "money",
    "science",
    "health",
    "style",
    "books",
    "music",
    "cars",
]
#: Words of the teasers (each line its own words: a line is hashed on its letters).
WORDS = [
    "harbor",
    "council",
    "river",
    "market",
    "festival",
    "school",
    "garden",
    "museum",
    "library",
    "station",
    "bridge",
    "orchestra",
    "farmer",
    "village",
    "harvest",
    "mayor",
    "league",
    "season",
    "ferry",
    "tower",
    "theatre",
    "clinic",
    "bakery",
    "coast",
    "valley",
    "forest",
    "summit",
    "parade",
    "gallery",
    "stadium",
]


def section_pages() -> tuple[dict[str, Page], list[list[str]]]:
    """Path -> page of a portal of 12 sections (their teasers together overflow what one site
    remembers), three different short stories in each, and a copy of the news section's second
    story republished in the sport section under another headline (``/sport/again``); two
    crawl orders: each section's first story, then each one's second, ..., the sections
    forward or backward, the copy last."""
    paragraphs = [p for slug in SLUGS for p in article(slug) if len(p) > 150]
    pages: dict[str, Page] = {}
    for story in range(3):
        for n, section in enumerate(SECTIONS):
            text = paragraphs[story * len(SECTIONS) + n]
            pages[f"/{section}/story-{story}"] = _section_page(section, text)
    copied = paragraphs[len(SECTIONS)]  # the news section's second story
    pages["/sport/again"] = _section_page("sport", copied, "Republished: ")
    orders = [
        [f"/{section}/story-{story}" for story in range(3) for section in sections]
        + ["/sport/again"]
        for sections in (SECTIONS, SECTIONS[::-1])
    ]
    return pages, orders


SLUGS = ("harbor-bridge", "council-budget", "ferry-timetable", "flood-warning", "library-app",
         "old-mill-cinema", "riverside-marathon", "science-fair", "community-garden")  # fmt: skip


def _section_page(section: str, text: str, label: str = "") -> Page:
    """A page of a section: its chrome, a story (headed by its first words), then the
    section's 24 teasers."""
    teasers = random.Random(section)
    tail = [
        f"Also in {section}: " + " ".join(teasers.choice(WORDS) for _ in range(12))
        for _ in range(24)
    ]
    chrome = " ".join(f"{part}-{section}" for part in ("top", "nav", "menu", "logo", "search"))
    headline = label + " ".join(text.split()[:7])
    body = "".join(f"<p>{line}</p>" for line in [text, *tail])
    html = (
        f"<html><head><title>{headline} | Portal</title></head><body>"
        f'<div class="{chrome}"><a href="/">Portal</a></div>'
        f'<div class="story-{section}"><h1>{headline}</h1>{body}</div></body></html>'
    )
    return Page(html.encode("utf-8"))


@pytest.mark.parametrize("backend", ["embedded", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_portal_of_many_sections_keeps_each_sections_stories_apart(
    backend: str, tmp_path: Path
) -> None:
    """Twelve sections on one host, each with its own chrome and teasers (more lines than one
    site remembers), crawled section by section in turn: each section's template is learned
    in a memory of its own, so no two of its short stories are joined by their teasers, and
    the story republished in another section is still its copy, in either order."""
    pages, orders = section_pages()
    expected = {frozenset(["/news/story-1", "/sport/again"])} | {
        frozenset([path]) for path in pages if path not in ("/news/story-1", "/sport/again")
    }
    with MockServer(pages, host="127.0.0.8") as server:
        for found, report in crawled(tmp_path, server, orders, backend):
            assert found == expected, report
