"""The Redis store on a cluster whose slots move (resharding) or whose client re-learns the
cluster while checks run: every check completes, each article is kept once, and the counter
counts the pages stored."""

from __future__ import annotations

import asyncio
import random
import threading
from pathlib import Path

import pytest
from redis.crc import key_slot

from nearDupe.store import IndexHeader
from nearDupe.store.redis import RedisStore
from nearDupe.store.redis_reading import page_keys

try:
    from redis_server import RedisCluster
except ImportError:  # tests/ imported as a package
    from tests.redis_server import RedisCluster

pytestmark = pytest.mark.redis

Article = tuple[int, tuple[tuple[int, int], ...]]  # fingerprint, sentences


def _articles(seed: int, n: int, copies: int) -> list[list[Article]]:
    """``n`` articles, each in ``copies`` versions within 2 bits of its first and with the
    same sentences (so copies lease sentence buckets, as crawled pages do)."""
    rng = random.Random(seed)
    groups = []
    for _ in range(n):
        fp = rng.getrandbits(64)
        sentences = tuple(sorted((rng.getrandbits(64), 80) for _ in range(3)))
        versions = [fp, fp ^ 1 << rng.randrange(64) ^ 1 << rng.randrange(64)]
        while len(versions) < copies:
            versions.append(fp ^ (1 << rng.randrange(64)))
        groups.append([(v, sentences) for v in versions[:copies]])
    return groups


async def _check_all(
    store: RedisStore, groups: list[list[Article]], tasks: int
) -> dict[int, list[str]]:
    """Check every copy of every article with ``tasks`` concurrent clients; exactly one
    copy of each is kept, and every other names it: the copies kept, by article."""
    jobs = [(g, v) for g, versions in enumerate(groups) for v in range(len(versions))]
    random.Random(7).shuffle(jobs)
    kept: dict[int, list[str]] = {g: [] for g in range(len(groups))}
    matched: list[tuple[int, str]] = []

    async def client(part: list[tuple[int, int]]) -> None:
        for g, v in part:
            fp, sentences = groups[g][v]
            match = await store.check_and_add(fp, f"a{g}-v{v}", None, sentences)
            if match is None:
                kept[g].append(f"a{g}-v{v}")
            else:
                matched.append((g, match.key))

    await asyncio.gather(*(client(jobs[i::tasks]) for i in range(tasks)))
    assert {g: keys for g, keys in kept.items() if len(keys) != 1} == {}
    assert all(key == kept[g][0] for g, key in matched)
    return kept


async def _stored(store: RedisStore, kept: dict[int, list[str]]) -> None:
    """The index holds the pages kept, and counts them."""
    assert await store.count() == len(kept)
    stored = sorted(key for _, key, _ in await store.pages())
    assert stored == sorted(keys[0] for keys in kept.values())


def test_checks_go_on_while_slots_move_under_them(tmp_path: Path) -> None:
    """Slots holding the articles' buckets move from node to node (as ``redis-cli --cluster
    reshard`` moves them) while 16 checks run at once: a command sent where its slot no
    longer is follows the redirection, a script meeting a slot on the move writes nothing
    and is run again, and no check fails; once the slots rest, the index lists each article
    once."""
    groups = _articles(31, 120, 3)
    with RedisCluster(tmp_path / "cluster") as cluster:
        store = RedisStore.from_url(cluster.url, IndexHeader(), name="moving", cluster=True)
        slots = sorted(
            {
                key_slot(key.encode())
                for versions in groups[::4]
                for fp, sentences in versions[:1]
                for key in [*page_keys(store.layout, fp, sentences), store.layout.page_key(fp)]
            }
            | {key_slot(b"{moving}:count")}
        )
        stop, moves = threading.Event(), [0]

        def reshard() -> None:
            rng = random.Random(3)
            while not stop.is_set():
                cluster.move_slot(rng.choice(slots), rng.randrange(3))
                moves[0] += 1

        mover = threading.Thread(target=reshard)
        mover.start()
        try:

            async def body() -> None:
                kept = await _check_all(store, groups, tasks=16)
                # The listing is read once the slots rest: a SCAN of each node while a slot
                # moves key by key may miss a key on its way (inspection, not the checks).
                stop.set()
                await asyncio.to_thread(mover.join)
                await _stored(store, kept)
                await store.close()

            asyncio.run(body())
        finally:
            stop.set()
            mover.join()
        assert moves[0] > 5


def test_checks_go_on_while_the_client_learns_the_cluster_again(tmp_path: Path) -> None:
    """The cluster client closes its nodes' connections whenever it learns the cluster again
    (a redirection, a failover, another call's connection error): batches of checks then in
    flight are not cut, and no check fails."""
    groups = _articles(37, 80, 3)
    with RedisCluster(tmp_path / "cluster") as cluster:

        async def body() -> None:
            store = RedisStore.from_url(cluster.url, IndexHeader(), name="relearn", cluster=True)
            checking = asyncio.ensure_future(_check_all(store, groups, tasks=16))
            while not checking.done():
                await store.client.aclose()  # what redis-py does after such an event
                await asyncio.sleep(0.1)
            await _stored(store, await checking)
            await store.close()

        asyncio.run(body())
