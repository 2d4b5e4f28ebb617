"""Crawler processes with busy event loops racing for the same articles on a Redis Cluster:
every check makes progress (none waits out the leases' patience), and each article is kept
once."""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import time
from pathlib import Path

import pytest

from nearDupe.shorttext import Sentences
from nearDupe.store import IndexHeader
from nearDupe.store.base import url_hash
from nearDupe.store.redis import RedisStore
from nearDupe.store.redis_reading import page_keys, sentence_keys

try:
    from redis_server import RedisCluster
except ImportError:  # tests/ imported as a package
    from tests.redis_server import RedisCluster

pytestmark = pytest.mark.redis

Article = tuple[int, tuple[tuple[int, int], ...]]  # fingerprint, sentences

#: How long a check may wait for buckets other crawlers lease before it gives up: a crawl's
#: own patience (a check that gives up keeps its page unchecked). Under the suite's load,
#: checks that go round in circles exceed it; ordered leases stay well within it.
PATIENCE = 30.0


def _articles(n: int, copies: int) -> list[list[Article]]:
    rng = random.Random(11)
    groups = []
    for _ in range(n):
        fp = rng.getrandbits(64)
        sentences = tuple(sorted((rng.getrandbits(64), 80) for _ in range(3)))
        groups.append(
            [(fp ^ (1 << rng.randrange(64)) if c else fp, sentences) for c in range(copies)]
        )
    return groups


def _crawler(url: str, worker: int, groups: list[list[Article]], tasks: int) -> tuple:
    """One crawler process: its event loop busy 10 ms of every 20 (parsing, scheduling),
    ``tasks`` concurrent checks of every copy, in the order every crawler meets them."""
    from nearDupe.store import redis_leases

    redis_leases.BUSY_SECONDS = PATIENCE

    async def main() -> tuple:
        store = RedisStore.from_url(url, IndexHeader(), name="race", cluster=True)
        await store.count()
        jobs = [(g, c) for g, copies in enumerate(groups) for c in range(len(copies))]
        results: list[tuple[int, str, str | None]] = []
        errors: list[str] = []
        slowest = [0.0]
        done = asyncio.Event()

        async def busy() -> None:
            while not done.is_set():
                end = time.perf_counter() + 0.01
                while time.perf_counter() < end:
                    pass
                await asyncio.sleep(0.01)

        async def client(part: list[tuple[int, int]]) -> None:
            for g, c in part:
                fp, sentences = groups[g][c]
                key = f"w{worker}-a{g}-c{c}"
                started = time.monotonic()
                try:
                    match = await store.check_and_add(fp, key, None, sentences)
                except Exception as exc:  # counted: the test says which
                    errors.append(repr(exc))
                    continue
                slowest[0] = max(slowest[0], time.monotonic() - started)
                results.append((g, key, None if match is None else match.key))

        hog = asyncio.ensure_future(busy())
        await asyncio.gather(*(client(jobs[i::tasks]) for i in range(tasks)))
        done.set()
        await hog
        await store.close()
        return results, errors, slowest[0]

    return asyncio.run(main())


def test_busy_crawlers_racing_on_a_cluster_all_make_progress(tmp_path: Path) -> None:
    """6 processes x 6 concurrent checks, their event loops half busy, meet 6 copies each of
    40 articles (3 sentences shared) in the same order on a 3-node cluster.  Every check ends
    within the leases' patience (crawlers that gave back every lease whenever one node
    refused went round in circles, some past 30 s), one copy of each article is kept and
    every other names it, and the counter counts the kept ones."""
    groups = _articles(40, 6)
    processes = 6
    with RedisCluster(tmp_path / "cluster") as cluster:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([__name__])
        with ctx.Pool(processes) as pool:
            outcomes = pool.starmap(
                _crawler, [(cluster.url, w, groups, 6) for w in range(processes)]
            )
        errors = [e for _, errs, _ in outcomes for e in errs]
        assert errors == []
        results = [r for rs, _, _ in outcomes for r in rs]
        assert len(results) == processes * 6 * len(groups)
        kept: dict[int, list[str]] = {g: [] for g in range(len(groups))}
        for g, key, match in results:
            if match is None:
                kept[g].append(key)
        assert {g: keys for g, keys in kept.items() if len(keys) != 1} == {}
        assert all(match is None or match == kept[g][0] for g, _key, match in results)

        async def count() -> int:
            store = RedisStore.from_url(cluster.url, IndexHeader(), name="race", cluster=True)
            n = await store.count()
            await store.close()
            return n

        assert asyncio.run(count()) == len(groups)


async def _waiting_check(store: RedisStore, seed: int) -> tuple[int, Sentences, list[list[str]]]:
    """A page whose first node (in the leases' order) holds none of its sentence buckets: its
    fingerprint, sentences and keys per node in that order."""
    rng = random.Random(seed)
    while True:
        fp = rng.getrandbits(64)
        sentences = tuple(sorted((rng.getrandbits(64), 80) for _ in range(3)))
        keys = page_keys(store.layout, fp, sentences)
        keys.append(store.layout.url_key(url_hash("https://x")))
        groups = await store.pipes.by_node(keys)
        groups.sort(key=lambda group: store.pipes.node_name(group[0]))
        if len(groups) == 3 and not set(groups[0]) & set(sentence_keys(store.layout, sentences)):
            return fp, sentences, groups


def test_a_check_waiting_for_a_lease_finds_the_copy_written_on_later_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crawler X waits for a bucket of its first node, leased by a crawler that does not let
    go; crawler B meanwhile stores X's text under another fingerprint (its records land on
    X's sentence buckets, all on later nodes).  X finds B's page while it waits, without the
    lease, and returns it well within the patience (X never saw the leased node grow, and
    waited until it gave up); while X waits it leases nothing on the nodes after the one it
    waits for (where B has to write)."""
    from nearDupe.store import redis_leases

    monkeypatch.setattr(redis_leases, "BUSY_SECONDS", 5.0)

    async def body(url: str) -> None:
        x, b = (
            RedisStore.from_url(url, IndexHeader(), name="wait", lease_seconds=1, cluster=True)
            for _ in range(2)
        )
        fp, sentences, groups = await _waiting_check(x, 3)
        await x.client.set(groups[0][0] + ":lease", b"another", px=60_000)
        waiting = asyncio.create_task(x.check_and_add(fp, "https://x", None, sentences))
        later = [key + ":lease" for group in groups[1:] for key in group]
        await asyncio.sleep(0.1)  # its first try, at every node at once, refused
        for _ in range(40):
            await asyncio.sleep(0.005)
            assert await x.client.exists(*later) == 0
        assert not waiting.done()
        started = time.monotonic()
        assert await b.check_and_add(~fp & (2**64 - 1), "https://b", None, sentences) is None
        match = await asyncio.wait_for(waiting, 4.0)
        assert match is not None and match.key == "https://b"
        assert time.monotonic() - started < 4.0
        leases = [k.decode() async for k in x.client.scan_iter(match="*:lease")]
        assert leases == [groups[0][0] + ":lease"]  # the other crawler's, still held
        assert await x.count() == 1
        await x.close()
        await b.close()

    with RedisCluster(tmp_path / "cluster") as cluster:
        asyncio.run(body(cluster.url))
