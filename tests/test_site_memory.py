"""A site's memory past its bound: the embedded index and Redis (one crawler or two) forget
the same lines, in the same order, and a line seen on several stories outlives the others."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from nearDupe.sitetemplate import SITE_LINES
from nearDupe.store import EmbeddedIndex, EmbeddedStore, IndexHeader, Store
from nearDupe.store.redis import RedisStore
from nearDupe.store.sites import learned
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
