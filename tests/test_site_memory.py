"""A site's memory past its bound: the embedded index and Redis (one crawler or two) forget
the same lines, in the same order, and a line seen on several stories outlives the others."""

from __future__ import annotations

import asyncio
import random
import sqlite3
from pathlib import Path

import pytest

from nearDupe.sitetemplate import SITE_LINES
from nearDupe.store import EmbeddedIndex, EmbeddedStore, IndexHeader, Store
from nearDupe.store.redis import RedisStore
from nearDupe.store.sites import CACHED_SITES, learned
from tests.redis_server import RedisServer, require_redis

pytestmark = pytest.mark.redis


def portal_pages(rng: random.Random) -> list[tuple[int, list[int]]]:
    """(story, line hashes) of a portal's pages: 40 templates of 20 lines each, every page
    its template's lines and 30 of its own (a memory of SITE_LINES overflows many times)."""
    templates = [[rng.getrandbits(64) for _ in range(20)] for _ in range(40)]
    pages = []
    for story in range(1, 301):
        own = [rng.getrandbits(64) for _ in range(30)]
        lines = rng.sample(own + templates[rng.randrange(40)], 50)
        pages.append((story, lines))
    pages += rng.sample(pages, 40)  # a story decided again (another copy's URL)
    return pages


async def _learn_all(stores: list[Store], pages: list[tuple[int, list[int]]]) -> None:
    for n, (story, lines) in enumerate(pages):
        await stores[n % len(stores)].learn_site("portal.example", story, lines)


def test_embedded_and_redis_forget_the_same_lines(tmp_path: Path) -> None:
    """The same pages learned by the embedded index, by one Redis crawler and by two taking
    them in turn: one memory, line for line and in the same order of recency."""
    require_redis()
    pages = portal_pages(random.Random(3))
    expected: dict[int, tuple[int, ...]] = {}
    for story, lines in pages:
        learned(expected, story, lines)
    assert len(expected) == SITE_LINES
    assert sum(len(titles) > 1 for titles in expected.values()) > 100

    async def crawl(url: str) -> list[list[tuple[int, tuple[int, ...]]]]:
        embedded = EmbeddedStore(EmbeddedIndex(tmp_path / "index", IndexHeader()))
        one = [RedisStore.from_url(url, IndexHeader(), name="one")]
        two = [RedisStore.from_url(url, IndexHeader(), name="two") for _ in range(2)]
        reader = RedisStore.from_url(url, IndexHeader(), name="two")
        found = []
        try:
            for team in ([embedded], one, two):
                await _learn_all(team, pages)
            for store in (embedded, one[0], reader):
                found.append(list((await store.site_template("portal.example")).lines.items()))
        finally:
            for store in (embedded, *one, *two, reader):
                await store.close()
        return found

    with RedisServer(tmp_path / "redis") as redis:
        memories = asyncio.run(crawl(redis.url))
    for memory in memories:
        assert memory == list(expected.items())


def test_sites_learned_without_a_new_page_reach_the_disk_and_leave_memory(
    tmp_path: Path,
) -> None:
    """A re-crawl that adds no page still learns each host's lines: they are committed within
    the commit interval, so the memory holds at most CACHED_SITES of them however many hosts."""
    index = EmbeddedIndex(tmp_path / "index", IndexHeader(), commit_interval=0.05)
    store = EmbeddedStore(index)
    hosts = CACHED_SITES + 500
    rng = random.Random(5)

    async def recrawl() -> None:
        for n in range(hosts):
            await store.learn_site(
                f"h{n}.example", n + 1, [rng.getrandbits(64) for _ in range(40)]
            )
            if n % 100 == 99:
                await asyncio.sleep(0.2)  # a commit interval passes, as in a crawl
        await asyncio.sleep(0.2)
        await store.site_template("last.example")  # a new host: the oldest saved ones go

    try:
        asyncio.run(recrawl())
        assert len(index.sites._cache) <= CACHED_SITES
        reader = sqlite3.connect(tmp_path / "index" / "pages.sqlite3")
        assert reader.execute("SELECT COUNT(*) FROM sites").fetchone()[0] == hosts
        reader.close()
    finally:
        asyncio.run(store.close())
