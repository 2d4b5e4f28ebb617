"""Redis index names with glob characters (``*?[]\\``): listing an index's pages, the
commands that read it touch that index's keys only."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from nearDupe.store import IndexHeader
from nearDupe.store.redis import RedisStore
from tests.redis_server import RedisServer
from tests.test_commands import neardupe
from tests.test_crawl_redis import PLUGIN_HEADER

pytestmark = pytest.mark.redis

#: Names that, read as glob patterns, match "news" (or "a\\b" the name "a\\b" and "ab").
GLOB_NAMES = ["ne*", "n?ws", "n[a-z]ws", "[n]ews", "*", "a\\b"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh redis-server in tmp_path, stopped afterwards."""
    with RedisServer(tmp_path / "redis") as s:
        yield s


def test_a_glob_escaped_name_matches_itself_only(server: RedisServer) -> None:
    import redis

    from nearDupe.store.redis_layout import glob_escaped

    client = redis.Redis.from_url(server.url)
    names = [*GLOB_NAMES, "news", "ab", "a\\\\b", "nXws"]
    for name in names:
        client.set(f"{name}:x", 1)
    for name in names:
        assert client.keys(f"{glob_escaped(name)}:x") == [f"{name}:x".encode()]
    client.close()


def test_an_index_named_with_glob_characters_lists_its_own_pages(server: RedisServer) -> None:
    """Index "news" (and "ab") hold pages; each index named like a pattern that matches them
    lists its own page only, as ``stats``, ``clusters`` and ``report`` read it."""

    async def body() -> None:
        for i, name in enumerate(["news", "ab", *GLOB_NAMES]):
            async with RedisStore.from_url(server.url, IndexHeader(), name=name) as store:
                assert await store.check_and_add(i << 50 | 7, f"https://{i}/{name}") is None
        for i, name in enumerate(GLOB_NAMES, start=2):
            async with RedisStore.from_url(server.url, IndexHeader(), name=name) as store:
                assert await store.pages() == [(i << 50 | 7, f"https://{i}/{name}", None)]

    asyncio.run(body())


def test_stats_of_an_index_named_like_a_pattern_counts_its_own_pages(
    server: RedisServer, tmp_path: Path
) -> None:
    async def fill() -> None:
        async with RedisStore.from_url(server.url, PLUGIN_HEADER, name="news") as news:
            for i in range(3):
                fp = 0x0123456789ABCDEF * (i + 3) & (2**64 - 1)
                assert await news.check_and_add(fp, f"https://news/{i}") is None
        async with RedisStore.from_url(server.url, PLUGIN_HEADER, name="n[a-z]ws") as odd:
            assert await odd.check_and_add(1 << 60, "https://odd/0") is None

    asyncio.run(fill())
    stats = neardupe(
        tmp_path, "stats", "--json", "-s", "NEARDUPE_INDEX_NAME=n[a-z]ws", index=server.url
    )
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["pages"] == 1
