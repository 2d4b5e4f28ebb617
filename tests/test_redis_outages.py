"""A Redis index through the outages that lose or refuse data: Redis emptied under running
crawlers, a cluster node holding the header restarted empty, Redis out of memory."""

from __future__ import annotations

import asyncio
import logging
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from redis.exceptions import OutOfMemoryError
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from nearDupe.backlog import Backlog
from nearDupe.errors import StoreUnavailable
from nearDupe.store import IndexHeader, Match
from nearDupe.store.redis import RedisStore

try:
    from redis_server import REDIS_CLI, RedisCluster, RedisServer
except ImportError:  # tests/ imported as a package
    from tests.redis_server import REDIS_CLI, RedisCluster, RedisServer

pytestmark = pytest.mark.redis

LOGGER = "nearDupe.store.redis"


def _said(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if text in r.getMessage() and r.levelno >= logging.WARNING]


def test_an_emptied_index_keeps_its_layout_and_every_crawler_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two crawlers share an index laid out for 10^8 pages (2^23 page buckets), one opened
    with the setting, one without; Redis is emptied under them. The first to notice says so
    (once, with 8 checks in flight) and writes the index again with the layout it opened
    with; the other says once that it was created again. Each finds the other's pages."""

    async def body() -> None:
        with RedisServer(tmp_path / "redis", extra=("--appendonly", "no")) as server:
            a = RedisStore.from_url(server.url, IndexHeader(), name="shared", pages=10**8)
            b = RedisStore.from_url(server.url, IndexHeader(), name="shared")
            assert a.layout.page_shift == b.layout.page_shift == 64 - 23
            assert await a.check_and_add(1 << 50, "a/before") is None
            assert await b.check_and_add(1 << 50 | 1, "b/copy") == Match("a/before", 1 << 50, 1)
            await a.client.flushall()
            with caplog.at_level("WARNING", logger=LOGGER):
                rng = random.Random(3)
                fps = [rng.getrandbits(64) for _ in range(8)]
                got = await asyncio.gather(
                    *(b.check_and_add(fp, f"b{i}") for i, fp in enumerate(fps))
                )
                assert got == [None] * 8
                assert len(_said(caplog, "was emptied while this crawl ran")) == 1
                for _ in range(2):
                    assert await a.check_and_add(fps[0] ^ 2, "a/copy") == Match("b0", fps[0], 1)
                assert len(_said(caplog, "was created again by another crawler")) == 1
                assert await a.check_and_add(7 << 40, "a/new") is None
                assert await b.check_and_add(7 << 40 | 4, "b/copy2") == Match("a/new", 7 << 40, 1)
            assert a.layout.page_shift == b.layout.page_shift == 64 - 23
            assert await a.client.exists(f"shared:{{p.{(7 << 40) >> 41:x}}}") == 1
            assert await a.count() == 9
            # A later crawl opens it with the layout it has, not the one it would create.
            async with RedisStore.from_url(server.url, IndexHeader(), name="shared") as later:
                assert later.layout.page_shift == 64 - 23
            await a.close()
            await b.close()

    asyncio.run(body())


def _restart_empty(cluster: RedisCluster, node: int) -> None:
    """Restart cluster node ``node`` without its data (no persistence), keeping its slots."""
    server = cluster.nodes[node]
    server.stop()
    shutil.rmtree(server.directory / "appendonlydir", ignore_errors=True)
    server.start()
    assert REDIS_CLI is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        states = [
            subprocess.run(
                [REDIS_CLI, "-p", str(n.port), "cluster", "info"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout
            for n in cluster.nodes
        ]
        if all("cluster_state:ok" in s for s in states):
            return
        time.sleep(0.1)
    raise RuntimeError("the cluster did not come back")


def test_cluster_node_holding_the_header_restarted_empty(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """On a 3-node cluster an index laid out for 10^8 pages holds 60 pages; the node holding
    its header restarts empty. A crawl opened then without NEARDUPE_REDIS_PAGES takes the
    header and layout back from the copies on the other nodes (saying so) and finds every
    page whose buckets the other nodes hold; a crawl that ran through it says once that the
    index was created again, and keeps that layout."""
    rng = random.Random(5)
    fps = [rng.getrandbits(64) for _ in range(60)]
    with RedisCluster(tmp_path / "cluster") as cluster:
        ports = [n.port for n in cluster.nodes]

        async def body() -> None:
            running = RedisStore.from_url(
                cluster.url, IndexHeader(), name="wide", cluster=True, pages=10**8
            )
            for i, fp in enumerate(fps):
                assert await running.check_and_add(fp, f"u{i}") is None
            node = running.client.get_node_from_key
            lost = ports.index(node(running._header_key).port)
            reachable = {
                i
                for i, fp in enumerate(fps)
                if node(running.layout.page_key(fp)).port != ports[lost]
                and any(node(key).port != ports[lost] for key in running.bucket_keys(fp))
            }
            assert 20 < len(reachable) < 60
            await asyncio.to_thread(_restart_empty, cluster, lost)
            with caplog.at_level("WARNING", logger=LOGGER):
                later = RedisStore.from_url(cluster.url, IndexHeader(), name="wide", cluster=True)
                assert later.layout.page_shift == 64 - 23
                assert len(_said(caplog, "taken back from the copies")) == 1
                found = {
                    i
                    for i, fp in enumerate(fps)
                    if await later.check_and_add(fp, f"again{i}") == Match(f"u{i}", fp, 0)
                }
                assert found == reachable
                await later.close()
                # The crawl that ran through it: the later one wrote the layout again (a new
                # mark), which it says once, and it reads on with that layout.
                for i in sorted(reachable)[:3]:
                    got = await running.check_and_add(fps[i] ^ 1, f"copy{i}")
                    assert got == Match(f"u{i}", fps[i], 1)
                assert len(_said(caplog, "was created again by another crawler")) == 1
                assert running.layout.page_shift == 64 - 23
            await running.close()

        asyncio.run(body())


def test_a_full_redis_is_an_outage_whose_pages_wait_in_the_backlog(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis at maxmemory with noeviction refuses writes: a check then fails as an outage
    (StoreUnavailable, at once), so the kept pages wait in the backlog (spilled to its file)
    instead of being set aside; an ERROR says once what to do; an index opened then is
    checked on first use. Once memory is freed, the backlog is recorded, none lost."""
    full = ("--appendonly", "no", "--maxmemory-policy", "noeviction")
    rng = random.Random(8)
    pages = [(rng.getrandbits(64), f"kept{i}", None, ()) for i in range(6)]

    async def body() -> None:
        with RedisServer(tmp_path / "redis", extra=full) as server:
            store = RedisStore.from_url(server.url, IndexHeader(), name="full", retry_seconds=5)
            assert await store.check_and_add(1 << 40, "before") is None
            filled = 50
            for i in range(filled):  # other data, then maxmemory below what Redis holds
                await store.client.set(f"other:{i}", b"x" * 10_000)
            used = (await store.client.info("memory"))["used_memory"]
            await store.client.config_set("maxmemory", used - 100_000)
            with pytest.raises(OutOfMemoryError):
                await store.client.set("one-more", b"x")
            backlog = Backlog(tmp_path / "pending.jsonl", limit=2)
            stats = MemoryStatsCollector(get_crawler())
            with caplog.at_level("WARNING", logger=LOGGER):
                started = time.monotonic()
                for page in pages:
                    with pytest.raises(StoreUnavailable, match="out of memory"):
                        await store.check_and_add(*page)
                    backlog.append(page)
                assert time.monotonic() - started < 2  # not retried for retry_seconds each
                await backlog.replay(store, stats)
                assert len(backlog) == 6 and not stats.get_value("neardupe/backlog/set_aside")
                assert len((tmp_path / "pending.jsonl").read_text().splitlines()) == 4
                # An index created now: opened, checked on first use (an outage too).
                other = RedisStore.from_url(server.url, IndexHeader(), name="new")
                with pytest.raises(StoreUnavailable, match="out of memory"):
                    await other.check_and_add(5, "x")
                # An existing index opens: its header is only read.
                async with RedisStore.from_url(server.url, IndexHeader(), name="full") as again:
                    assert await again.count() == 1
            told = _said(caplog, "Raise maxmemory")
            assert len(told) == 2  # once per crawl: store, other
            assert "recorded" in told[0].getMessage()
            assert not _said(caplog, "set aside")
            await store.client.delete(*(f"other:{i}" for i in range(filled)))
            await backlog.replay(store, stats)
            assert len(backlog) == 0 and await store.count() == 7
            for fp, url, _, _ in pages:
                assert await store.check_and_add(fp ^ 1, "copy") == Match(url, fp, 1)
            assert await other.check_and_add(5, "x") is None
            await other.close()
            await store.close()

    asyncio.run(body())
