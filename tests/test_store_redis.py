"""The Redis store: key layout, atomicity across processes, Redis going away, Redis Cluster."""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from nearDupe.errors import IndexSettingsMismatch, StoreUnavailable
from nearDupe.store import IndexHeader, Match
from nearDupe.store.redis import RedisStore

try:
    from redis_server import RedisCluster, RedisServer
except ImportError:  # tests/ imported as a package
    from tests.redis_server import RedisCluster, RedisServer

pytestmark = pytest.mark.redis


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh redis-server (AOF, fsync always) in tmp_path, stopped afterwards."""
    with RedisServer(tmp_path / "redis") as s:
        yield s


def flip(fp: int, *bits: int) -> int:
    """fp with the given bit positions inverted."""
    for b in bits:
        fp ^= 1 << b
    return fp


def brute_force(stored: dict[int, str], fp: int, k: int) -> list[Match]:
    """Every stored page within k, nearest first (ties by fingerprint)."""
    near = [(o ^ fp).bit_count() for o in stored]
    found = [Match(stored[o], o, d) for o, d in zip(stored, near, strict=True) if d <= k]
    return sorted(found, key=lambda m: (m.distance, m.fingerprint))


# -- layout ----------------------------------------------------------------------------------


def test_key_layout_buckets_with_their_own_hash_tags(server: RedisServer) -> None:
    async def body() -> None:
        store = RedisStore.from_url(server.url, IndexHeader(), name="crawl-a")
        fps = [random.Random(1).getrandbits(64) | (1 << 63), 12345 | (0xAB << 40)]
        assert await store.check_and_add(fps[0], "https://x/0") is None
        brief = ((7 << 50 | 0x12345678, 40),)
        assert await store.check_and_add(fps[1], "https://x/1", 0xABC, brief) is None
        client = store.client
        keys = sorted([k.decode() async for k in client.scan_iter(match="*")])
        assert {"{crawl-a}:header", "{crawl-a}:layout", "{crawl-a}:count"} <= set(keys)
        buckets = [k for k in keys if k.startswith("crawl-a:{f")]
        assert len(buckets) == 2 * len(store.design.tables)
        assert not [k for k in keys if k.endswith(":lease")]  # every lease ended
        for fp in fps:
            for key, _prefix, record in store.layout.buckets(fp):
                assert await client.type(key) == b"string"
                assert await client.get(key) == record and len(record) == 6
        pages = [await client.get(store.layout.page_key(fp)) for fp in fps]
        writers = [page[6:10] for page in pages]  # the first bytes of each check's token
        assert writers[0] != writers[1]
        assert (
            pages
            == [
                fps[0].to_bytes(8, "big")[2:]
                + writers[0]
                + bytes(8 + 3 + 3)
                + b"\x40"  # no tail nor signature; "https://" cut (code 2 in bits 5-6)
                + b"\0\x03x/0",
                fps[1].to_bytes(8, "big")[2:]  # the page bucket's key holds the top 18 bits
                + writers[1]
                + (0xABC).to_bytes(8, "big")
                + (40).to_bytes(3, "big") * 2
                + b"\xc1"  # one sketch tail, a signature, "https://" cut
                + b"\0\x05"
                + b"\x56\x78"  # the tail: the sentence hash's low 2 bytes
                + b"x/1",
            ]
        )
        sentence = await client.get(store.layout.sentence_key(7 << 50))
        assert sentence == b"\x12\x34\x56\x78" + (fps[1] >> 32).to_bytes(4, "big")
        assert await client.get("{crawl-a}:count") == b"2"
        assert sorted(await store.pages()) == [
            (fps[1], "https://x/1", 0xABC),
            (fps[0], "https://x/0", None),
        ]
        await store.close()

    asyncio.run(body())


def test_a_check_leases_the_buckets_of_its_looked_up_sentences_only(server: RedisServer) -> None:
    """A 60-sentence article's check reads its table buckets and LOOKUP_SENTENCES sentence
    buckets (it read 64 of them before) and, on a single Redis, takes no lease: one script
    checks that none grew and writes; its copy still finds it."""
    from nearDupe.store.base import LOOKUP_SENTENCES
    from nearDupe.store.redis_reading import page_keys

    rng = random.Random(12)
    article = tuple(sorted((rng.getrandbits(64), 60) for _ in range(60)))

    async def body() -> None:
        store = RedisStore.from_url(server.url, IndexHeader(), name="leases")
        keys = page_keys(store.layout, 5, article)
        assert len(keys) == len(store.design.tables) + LOOKUP_SENTENCES
        await store.client.config_resetstat()
        assert await store.check_and_add(5, "https://article", None, article) is None
        stats = await store.client.info("commandstats")
        # Tables and the sample, then the page record and the URL's claim.
        written = len(store.design.tables) + 4
        # Each grown in C and copied to its exact size; no bucket read into the script.
        for command in ("append", "copy", "rename"):
            assert stats[f"cmdstat_{command}"]["calls"] == written + 2
        assert "cmdstat_get" not in stats and "cmdstat_set" not in stats
        # Each checked (and the URL's shard), none leased (one MGET of the leases).
        assert stats["cmdstat_strlen"]["calls"] == len(keys) + 1
        assert stats["cmdstat_mget"]["calls"] == 2  # the buckets, then the leases
        assert stats["cmdstat_evalsha"]["calls"] == 1
        got = await store.check_and_add(~5 & (2**64 - 1), "https://copy", None, article[1:])
        assert got is not None and (got.key, got.distance) == ("https://article", None)
        await store.close()

    asyncio.run(body())


def test_an_index_laid_out_for_many_pages_keeps_its_layout(server: RedisServer) -> None:
    """An index created for 10^8 pages (NEARDUPE_REDIS_PAGES) gets 2^23 page and sentence
    buckets (~12 pages and ~48 records each at that size, instead of ~380 and ~1,500); a crawl
    opening it without the setting keeps that layout and finds its pages."""
    rng = random.Random(14)
    article = tuple(sorted((rng.getrandbits(64), 60) for _ in range(30)))
    fp = rng.getrandbits(64)

    async def body() -> None:
        store = RedisStore.from_url(server.url, IndexHeader(), name="big", pages=10**8)
        assert (store.layout.page_shift, store.layout.sentence_shift) == (64 - 23, 64 - 23)
        assert await store.check_and_add(fp, "https://article", None, article) is None
        assert await store.client.exists(f"big:{{p.{fp >> 41:x}}}") == 1
        await store.close()
        again = RedisStore.from_url(server.url, IndexHeader(), name="big")
        assert again.layout.page_shift == 64 - 23
        got = await again.check_and_add(~fp & (2**64 - 1), "https://copy", None, article[1:])
        assert got is not None and (got.key, got.distance) == ("https://article", None)
        await again.close()
        small = RedisStore.from_url(server.url, IndexHeader(), name="small", pages=10**6)
        assert (small.layout.page_shift, small.layout.sentence_shift) == (64 - 18, 64 - 18)
        await small.close()

    asyncio.run(body())


def test_names_isolate_crawls_on_one_redis(server: RedisServer) -> None:
    async def body() -> None:
        a = RedisStore.from_url(server.url, IndexHeader(), name="a")
        b = RedisStore.from_url(server.url, IndexHeader(design="10-table"), name="b")
        assert await a.check_and_add(99, "a") is None
        assert await b.check_and_add(99, "b") is None
        assert await a.query(99) == [Match("a", 99, 0)]
        assert await b.query(99) == [Match("b", 99, 0)]
        # Deleting one index's keys ({b}:* and b:*) leaves the other's alone.
        b_keys = [key async for key in b.client.scan_iter(match="{b}:*")]
        b_keys += [key async for key in b.client.scan_iter(match="b:*")]
        assert b_keys and await b.client.delete(*b_keys) == len(b_keys)
        assert await a.count() == 1 and await a.query(99) == [Match("a", 99, 0)]
        await a.close()
        await b.close()
        with pytest.raises(
            IndexSettingsMismatch, match=r"Redis index 'a' at redis://127\.0\.0\.1"
        ):
            RedisStore.from_url(server.url, IndexHeader(design="20-table"), name="a")

    asyncio.run(body())


def test_a_url_cut_at_the_record_limit_reads_back_and_spoils_no_bucket(
    server: RedisServer,
) -> None:
    """A URL of 80 KB of "é" is cut where a page record ends (64 KiB) on a character
    boundary: a copy names it back, its sentences find it, and listing the pages (what
    ``stats``, ``clusters`` and ``report`` read) works. A record an earlier writer cut inside
    a character, in the page bucket of another page, leaves that page found and listed."""
    from nearDupe.store.base import Sketch

    long = "http://127.0.0.1/" + "é" * 40_000
    fp = 0x5A5A_1234_5678_9ABC
    article = tuple((0x1000 + i * 7919, 60) for i in range(6))

    async def body() -> None:
        async with RedisStore.from_url(server.url, IndexHeader(), name="cut") as store:
            assert await store.check_and_add(fp, long, None, article) is None
            copy = await store.check_and_add(fp ^ 1, "http://127.0.0.1/copy")
            assert copy is not None and long.startswith(copy.key) and len(copy.key) > 32_000
            same = await store.check_and_add(fp ^ 0xFFFF << 30, "http://s/", None, article)
            assert same is not None and same.key == copy.key
            # A record cut by bytes inside an "é", next to a page in its page bucket.
            other = fp ^ 0xFF
            assert await store.check_and_add(other, "http://127.0.0.1/other") is None
            record = store.layout.page_record(fp ^ 0xF0, "http://x/ab", None, Sketch(0, 0, b""))
            bucket = store.layout.page_key(other)
            await store.client.append(bucket, record[:-1] + "é".encode()[:1])
            got = await store.check_and_add(other ^ 2, "http://127.0.0.1/again")
            assert got == Match("http://127.0.0.1/other", other, 1)
            listed = {key for _fp, key, _sig in await store.pages()}
            assert listed == {copy.key, "http://127.0.0.1/other", "http://x/a\ufffd"}

    asyncio.run(body())


@pytest.mark.parametrize("design", ["10-table", "20-table", "blocks-6-7"])
def test_other_designs_exact(server: RedisServer, design: str) -> None:
    """Long prefixes are cut at MAX_BUCKET_BITS, short ones leave big buckets: still exact."""

    async def body() -> None:
        header = IndexHeader(design=design, k=3)
        store = RedisStore.from_url(server.url, header, name=design)
        rng = random.Random(design)
        stored: dict[int, str] = {}
        for i in range(300):
            fp = rng.getrandbits(64)
            stored[fp] = f"u{i}"
            assert await store.check_and_add(fp, f"u{i}") is None
        kmax = store.design.k
        for _ in range(100):
            fp = flip(rng.choice(list(stored)), *rng.sample(range(64), rng.randint(0, kmax)))
            assert await store.query(fp, kmax) == brute_force(stored, fp, kmax)
        await store.close()

    asyncio.run(body())


def test_add_many_bulk_load(server: RedisServer) -> None:
    async def body() -> None:
        store = RedisStore.from_url(server.url, IndexHeader(), name="bulk")
        rng = random.Random(5)
        fps = [rng.getrandbits(64) for _ in range(3000)]
        keys = [f"k{i}" for i in range(len(fps))]
        await store.add_many(fps, keys)
        assert await store.count() == len(fps)
        stored = dict(zip(fps, keys, strict=True))
        for fp in rng.sample(fps, 200):
            near = flip(fp, rng.randrange(64), rng.randrange(64))
            assert await store.query(near) == brute_force(stored, near, 3)
            assert await store.check_and_add(near, "x") == brute_force(stored, near, 3)[0]
        await store.close()

    asyncio.run(body())


def test_checks_started_while_the_scripts_load_wait_for_all_of_them(server: RedisServer) -> None:
    """A crawl's first items arrive together: a check begun while another is still loading
    the scripts waits for the whole load, and never calls a script Redis does not hold."""

    async def body() -> None:
        rng = random.Random(8)
        fps = [rng.getrandbits(64) for _ in range(40)]
        async with RedisStore.from_url(server.url, IndexHeader(), name="first") as earlier:
            for i, fp in enumerate(fps):
                assert await earlier.check_and_add(fp, f"https://x/{i}") is None
        store = RedisStore.from_url(server.url, IndexHeader(), name="first")
        checks = []
        for i, fp in enumerate(fps):  # one more check every 0.2 ms: some begin mid-load
            copy = store.check_and_add(flip(fp, 3), f"https://copy/{i}")
            checks.append(asyncio.ensure_future(copy))
            await asyncio.sleep(0.0002)
        found = await asyncio.gather(*checks)
        assert found == [Match(f"https://x/{i}", fp, 1) for i, fp in enumerate(fps)]
        assert await store.count() == len(fps)
        await store.close()

    asyncio.run(body())


# -- failures --------------------------------------------------------------------------------


def test_lost_reply_is_not_a_duplicate_of_itself(
    server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writes ran but the reply was lost: the retry recognises its own page."""
    import nearDupe.store.redis as redis_module

    real = redis_module.commit
    calls = 0

    async def reply_lost(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        done = await real(*args, **kwargs)  # type: ignore[arg-type]
        if calls == 1:
            raise RedisConnectionError("connection reset after the writes ran")
        return done

    async def body() -> None:
        store = RedisStore.from_url(server.url, IndexHeader(), name="lost")
        monkeypatch.setattr(redis_module, "commit", reply_lost)
        brief = ((5 << 40, 60),)
        assert await store.check_and_add(777, "https://first", None, brief) is None
        assert calls == 2
        monkeypatch.setattr(redis_module, "commit", real)
        assert await store.check_and_add(777, "https://second") == Match("https://first", 777, 0)
        assert await store.count() == 1
        assert len(await store.holders(brief)) == 1  # recorded once under its sentence
        assert len(await store.pages()) == 1
        await store.close()

    asyncio.run(body())


def test_redis_killed_restarted_and_frozen(server: RedisServer) -> None:
    async def body() -> None:
        rng = random.Random(11)
        store = RedisStore.from_url(server.url, IndexHeader(), name="crash", retry_seconds=0.5)
        fps = [rng.getrandbits(64) for _ in range(50)]
        for i, fp in enumerate(fps):
            assert await store.check_and_add(fp, f"u{i}") is None

        # killed without warning: bounded retries, then StoreUnavailable; the crawl queues pages
        server.kill()
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="crash"):
            await store.check_and_add(rng.getrandbits(64), "lost")
        assert 0.4 <= time.monotonic() - started < 1.5
        pending = [(rng.getrandbits(64), f"queued{i}") for i in range(5)]
        pending.append((flip(fps[7], 3), "queued-copy"))
        with pytest.raises(StoreUnavailable):  # still down: the queue waits
            await store.check_and_add(*pending[0])

        # back (AOF, fsync always): every page stored before the kill is still there
        server.start()
        done = [await store.check_and_add(fp, key) for fp, key in pending]
        assert done == [None] * 5 + [Match("u7", fps[7], 1)]
        assert await store.count() == 55

        # restarted while a call is waiting: the call rides it out
        server.stop()
        store.retry_seconds = 10.0
        threading.Timer(0.5, server.start).start()
        assert await store.check_and_add(flip(fps[0], 1), "during") == Match("u0", fps[0], 1)

        # frozen (SIGSTOP): the deadline still holds
        store.retry_seconds = 0.5
        server.pause()
        started = time.monotonic()
        try:
            with pytest.raises(StoreUnavailable):
                await store.check_and_add(rng.getrandbits(64), "frozen")
            assert time.monotonic() - started < 1.5
        finally:
            server.resume()
        assert await store.check_and_add(fps[1], "after") == Match("u1", fps[1], 0)
        await store.close()

    asyncio.run(body())


def test_redis_restarted_empty_is_said_loudly_and_the_index_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis without persistence restarts empty under a running crawl: the loss is logged
    as an ERROR, the header written again, and later crawls open the index as usual."""
    volatile = ("--appendonly", "no")

    async def body() -> None:
        with RedisServer(tmp_path / "redis", extra=volatile) as server:
            store = RedisStore.from_url(server.url, IndexHeader(), name="lost")
            assert await store.check_and_add(1 << 40, "a") is None
            server.restart()  # nothing saved: every key is gone
            with caplog.at_level("ERROR", logger="nearDupe.store.redis"):
                assert await store.check_and_add(1 << 40, "a-again") is None
                assert await store.check_and_add(flip(1 << 40, 2), "copy") == Match(
                    "a-again", 1 << 40, 1
                )
            assert any("was emptied while this crawl ran" in r.message for r in caplog.records)
            await store.close()
            # The next crawl opens it: it is not left with pages and no header.
            async with RedisStore.from_url(server.url, IndexHeader(), name="lost") as later:
                assert await later.count() == 1
                # Pages written without a header (an older version's crawl) are re-headed.
                await later.client.delete(later._header_key)
            with caplog.at_level("WARNING", logger="nearDupe.store.redis"):
                async with RedisStore.from_url(server.url, IndexHeader(), name="lost") as again:
                    assert await again.check_and_add(1 << 40, "b") == Match("a-again", 1 << 40, 0)
            assert any("held pages but no header" in r.message for r in caplog.records)

    asyncio.run(body())


def test_unreachable_at_open_checks_header_on_first_use(tmp_path: Path) -> None:
    async def body() -> None:
        server = RedisServer(tmp_path / "later")
        store = RedisStore.from_url(server.url, IndexHeader(), name="late", retry_seconds=0.3)
        with pytest.raises(StoreUnavailable):
            await store.count()
        with server:
            await server_seed(server.url)
            store.retry_seconds = 2.0
            with pytest.raises(IndexSettingsMismatch):
                await store.check_and_add(1, "a")
        await store.close()

    async def server_seed(url: str) -> None:
        other = RedisStore.from_url(url, IndexHeader(design="16-table"), name="late")
        await other.check_and_add(5, "x")
        await other.close()

    asyncio.run(body())


# -- many processes at once --------------------------------------------------------------------


Variant = tuple[int, tuple[tuple[int, int], ...]]  # fingerprint, sentences


def _crawler(
    url: str, worker: int, groups: list[list[Variant]], tasks: int, cluster: bool = False
) -> list[tuple]:
    """One crawler process: ``tasks`` concurrent clients submit every copy of every page."""

    async def main() -> list[tuple]:
        store = RedisStore.from_url(
            url, IndexHeader(), name="race", max_connections=2 * tasks, cluster=cluster
        )
        jobs = [(c, v) for c, variants in enumerate(groups) for v in range(len(variants))]
        random.Random(worker).shuffle(jobs)
        results: list[tuple] = []

        async def client(part: list[tuple[int, int]]) -> None:
            for c, v in part:
                key = f"w{worker}-c{c}-v{v}"
                fp, sentences = groups[c][v]
                match = await store.check_and_add(fp, key, None, sentences)
                results.append((c, key, None if match is None else match.key))

        await asyncio.gather(*(client(jobs[i::tasks]) for i in range(tasks)))
        await store.close()
        return results

    return asyncio.run(main())


@pytest.mark.parametrize("topology", ["node", "cluster"])
def test_processes_racing_keep_exactly_one_copy_per_article(topology: str, tmp_path: Path) -> None:
    """8 processes x 4 clients submit every copy of 100 articles (8 copies within distance 3
    of each other) and of 40 short pages (4 copies with other fingerprints and the same
    sentences) at once: exactly one copy of each is kept, every other names it, nothing is
    lost; on one node and on a 3-node Redis Cluster."""
    with ExitStack() as stack:
        if topology == "node":
            server = RedisServer(tmp_path / "redis", extra=("--appendfsync", "everysec"))
            url = stack.enter_context(server).url
        else:
            url = stack.enter_context(RedisCluster(tmp_path / "cluster")).url
        _race(url, cluster=topology == "cluster")


def _race(url: str, cluster: bool, processes: int = 8) -> None:
    rng = random.Random(2024)
    bases: list[int] = []
    while len(bases) < 100 + 4 * 40:
        fp = rng.getrandbits(64)
        if all((fp ^ b).bit_count() >= 10 for b in bases):
            bases.append(fp)
    groups: list[list[Variant]] = []
    for base in bases[:100]:
        bits = rng.sample(range(64), 3)  # every subset of 3 fixed bits: pairwise distance <= 3
        groups.append(
            [(flip(base, *(b for j, b in enumerate(bits) if m >> j & 1)), ()) for m in range(8)]
        )
    for g in range(40):
        brief = ((rng.getrandbits(64), 60), (rng.getrandbits(64), 70))
        groups.append([(bases[100 + 4 * g + v], brief) for v in range(4)])

    # Fresh processes forked from a server that imported this module once (not 8 imports of
    # scrapy and nearDupe, ~1.5 s of CPU each; not forked from this threaded test process).
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    with ctx.Pool(processes) as pool:
        per_process = pool.starmap(
            _crawler, [(url, w, groups, 4, cluster) for w in range(processes)]
        )
    results = [r for rs in per_process for r in rs]
    assert len(results) == processes * sum(len(g) for g in groups)
    kept: dict[int, list[str]] = {c: [] for c in range(len(groups))}
    for c, key, match in results:
        if match is None:
            kept[c].append(key)
    assert all(len(keys) == 1 for keys in kept.values()), {
        c: k for c, k in kept.items() if len(k) != 1
    }
    for c, _key, match in results:
        assert match is None or match == kept[c][0]

    async def stored() -> tuple[int, set[str]]:
        store = RedisStore.from_url(url, IndexHeader(), name="race", cluster=cluster)
        n, pages = await store.count(), {key for _, key, _ in await store.pages()}
        await store.close()
        return n, pages

    assert asyncio.run(stored()) == (len(groups), {keys[0] for keys in kept.values()})


# -- the lease protocol, interleaved ------------------------------------------------------------


def _stall_commit(
    monkeypatch: pytest.MonkeyPatch, url: str
) -> tuple[asyncio.Event, asyncio.Event]:
    """Make the commit of the page whose record names ``url`` wait until the first event is
    set; the second is set once it waits."""
    import nearDupe.store.redis as redis_module
    from nearDupe.store.redis_records import page_records

    real = redis_module.commit
    stall, stalled = asyncio.Event(), asyncio.Event()

    async def stalling(pipes: Any, page: Any, *args: Any, **kwargs: Any) -> None:
        if page_records(page[1], 0)[0].key == url and not stall.is_set():
            stalled.set()
            await stall.wait()
        await real(pipes, page, *args, **kwargs)

    monkeypatch.setattr(redis_module, "commit", stalling)
    return stall, stalled


@pytest.mark.parametrize("topology", ["node", "cluster"])
def test_a_stalled_crawler_writes_nothing_and_finds_the_copy(
    topology: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crawler A reads its buckets, then stalls before writing. Crawler B, with a near copy,
    keeps its page: at once on a single Redis (A holds no lease), after A's leases expired
    on a cluster. A wakes: its write finds a bucket grown and writes nothing; A starts again
    and reports B's page."""
    stall, stalled = _stall_commit(monkeypatch, "https://a")

    async def body(url: str, cluster: bool) -> None:
        a, b = (
            RedisStore.from_url(
                url, IndexHeader(), name="stall", lease_seconds=0.5, cluster=cluster
            )
            for _ in range(2)
        )
        first = asyncio.create_task(a.check_and_add(1 << 40, "https://a"))
        await stalled.wait()
        started = time.monotonic()
        assert await b.check_and_add(flip(1 << 40, 2), "https://b") is None
        waited = time.monotonic() - started
        assert 0.3 < waited < 2.0 if cluster else waited < 0.3  # A's leases expired first
        stall.set()
        assert await first == Match("https://b", flip(1 << 40, 2), 1)
        assert await a.count() == 1
        assert [key for _, key, _ in await a.pages()] == ["https://b"]
        leases = [k async for k in a.client.scan_iter(match="*:lease")]
        assert leases == []
        await a.close()
        await b.close()

    with ExitStack() as stack:
        if topology == "node":
            url = stack.enter_context(RedisServer(tmp_path / "redis")).url
        else:
            url = stack.enter_context(RedisCluster(tmp_path / "cluster")).url
        asyncio.run(body(url, topology == "cluster"))


def test_a_check_that_finds_a_copy_after_a_refused_commit_ends_its_leases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a cluster, crawler A leases its buckets on other nodes, then its commit is refused
    (a bucket grew: B's near copy was stored meanwhile). A reads again, reports B's page and
    ends the leases it still held, so no other crawler waits for them to expire."""
    import nearDupe.store.redis as redis_module
    from nearDupe.store.redis_leases import ReadAgain

    real = redis_module.commit

    async def body(url: str) -> None:
        a, b = (
            RedisStore.from_url(url, IndexHeader(), name="refused", lease_seconds=30, cluster=True)
            for _ in range(2)
        )

        async def refused(*args: Any, **kwargs: Any) -> None:
            monkeypatch.setattr(redis_module, "commit", real)
            assert [k async for k in a.client.scan_iter(match="*:lease")]  # A's leases
            await b.add_many([flip(1 << 40, 2)], ["https://b"])
            raise ReadAgain

        monkeypatch.setattr(redis_module, "commit", refused)
        match = await a.check_and_add(1 << 40, "https://a")
        assert match == Match("https://b", flip(1 << 40, 2), 1)
        assert [k async for k in a.client.scan_iter(match="*:lease")] == []
        assert [key for _, key, _ in await a.pages()] == ["https://b"]
        await a.close()
        await b.close()

    with RedisCluster(tmp_path / "cluster") as cluster:
        asyncio.run(body(cluster.url))


def test_a_bucket_another_crawler_leases_is_written_once_the_lease_ends(
    server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bucket leased by another crawler (an older version's, which leases what it reads on
    one node too) is not written under it: the check waits, with pauses, until the lease
    ends (here: expires), then writes; a lease held past BUSY_SECONDS makes the check give
    up (the store is unavailable: the plugin keeps the page and checks it later)."""
    import nearDupe.store.redis_leases as leases

    async def body() -> None:
        store = RedisStore.from_url(server.url, IndexHeader(), name="held", lease_seconds=0.1)
        fp = 1 << 40
        bucket = store.bucket_keys(fp)[2]
        await store.client.set(bucket + ":lease", b"another", px=400)
        started = time.monotonic()
        assert await store.check_and_add(fp, "https://a") is None
        assert 0.3 < time.monotonic() - started < 2.0
        assert await store.client.exists(bucket) == 1
        assert await store.check_and_add(flip(fp, 1), "https://copy") == Match("https://a", fp, 1)
        monkeypatch.setattr(leases, "BUSY_SECONDS", 0.3)
        await store.client.set(bucket + ":lease", b"another", px=5000)
        started = time.monotonic()
        apart = (flip(fp, *range(b, b + 8)) for b in range(0, 64, 8))  # 8 bits: no copy
        other = next(o for o in apart if store.bucket_keys(o)[2] == bucket)
        with pytest.raises(StoreUnavailable, match="written or leased by other crawlers"):
            await store.check_and_add(other, "https://other")
        assert 0.3 < time.monotonic() - started < 2.0
        await store.close()

    asyncio.run(body())


def test_a_page_stored_under_a_known_fingerprint_meanwhile_is_found(
    server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page whose fingerprint is stored already adds no table record, only its page record.
    C reads (page A is near, its signature too far: not a copy), stalls; B, with A's
    fingerprint and C's signature, is stored; C's write finds B's page bucket grown, writes
    nothing, and C reports B."""
    stall, stalled = _stall_commit(monkeypatch, "https://c")
    fp, far = 1 << 40, 2**64 - 1

    async def body() -> None:
        store = RedisStore.from_url(server.url, IndexHeader(confirm_k=22), name="same")
        assert await store.check_and_add(fp, "https://a", 0) is None
        third = asyncio.create_task(store.check_and_add(flip(fp, 5), "https://c", far))
        await stalled.wait()
        assert await store.check_and_add(fp, "https://b", far) is None  # A's words reordered
        stall.set()
        assert await third == Match("https://b", fp, 1)
        assert await store.count() == 2
        await store.close()

    asyncio.run(body())


def test_a_retry_never_takes_another_crawlers_record_of_the_same_page_for_its_own(
    server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crawlers A and B check the same URL and text.  B's write is lost before it reaches
    Redis (the connection drops) after A, waiting out B's leases, recorded the page.  B's retry
    finds A's record: B is a copy of it, and one page is stored.  (Taking a record with B's URL
    at distance 0 for B's own kept both copies in a CI run of three concurrent crawls.)"""
    import nearDupe.store.redis as redis_module

    real = redis_module.commit
    first = True

    async def lost_before_sent(*args: Any, **kwargs: Any) -> Any:
        nonlocal first
        if not first:
            return await real(*args, **kwargs)
        first = False
        assert await a.check_and_add(1 << 40, "https://same", None, brief) is None
        raise RedisConnectionError("connection reset before the writes were sent")

    brief = ((5 << 40, 60),)
    a = RedisStore.from_url(server.url, IndexHeader(), name="same", lease_seconds=0.5)
    b = RedisStore.from_url(server.url, IndexHeader(), name="same", lease_seconds=0.5)

    async def body() -> None:
        monkeypatch.setattr(redis_module, "commit", lost_before_sent)
        found = await b.check_and_add(1 << 40, "https://same", None, brief)
        assert found is not None and found.seen is not None and not found.seen.changed
        assert (found.key, found.fingerprint, found.distance) == ("https://same", 1 << 40, 0)
        assert await a.count() == 1
        assert len(await a.pages()) == 1
        assert len(await a.holders(brief)) == 1
        await a.close()
        await b.close()

    asyncio.run(body())


def test_leases_all_or_nothing_and_token_checked(server: RedisServer) -> None:
    """A check that finds one of its buckets leased holds none of the others while it waits
    (so it blocks nobody); a release ends only its own token's leases."""
    from nearDupe.store.redis_leases import acquire, release

    async def body() -> None:
        store = RedisStore.from_url(server.url, IndexHeader(), name="leases", lease_seconds=5)
        pipes, keys = store.pipes, store.bucket_keys(1 << 40)
        seen = dict.fromkeys(keys, b"")
        await acquire(pipes, {keys[0]: b""}, b"holder", lease_seconds=5)
        waiting = asyncio.create_task(acquire(pipes, seen, b"waiter", lease_seconds=5))
        for _ in range(20):
            await asyncio.sleep(0.01)
            held = [await store.client.get(k + ":lease") for k in keys]
            assert held == [b"holder", None, None, None]
        await release(pipes, keys, b"waiter")  # not the holder's: nothing ends
        assert await store.client.get(keys[0] + ":lease") == b"holder"
        await store.client.set(keys[2], b"grown")  # written while the waiter waited
        await release(pipes, keys[:1], b"holder")
        values, changed = await asyncio.wait_for(waiting, 2)
        assert changed and values == {**seen, keys[2]: b"grown"}
        assert [await store.client.get(k + ":lease") for k in keys] == [b"waiter"] * 4
        assert 0 < await store.client.pttl(keys[1] + ":lease") <= 5000
        await release(pipes, keys, b"waiter")
        values, changed = await acquire(pipes, values, b"again", lease_seconds=5)
        assert not changed and values == {**seen, keys[2]: b"grown"}  # none read again
        await store.close()

    asyncio.run(body())


def test_a_page_record_is_known_by_its_start_not_by_bytes_inside_another(
    server: RedisServer,
) -> None:
    """A retry's commit appends a page record unless one with its fingerprint and writer starts
    a record there; the same bytes inside another record's URL neither stop the append nor
    are removed by an undo."""
    from nearDupe.store.base import Sketch
    from nearDupe.store.redis_leases import commit
    from nearDupe.store.redis_records import page_record, page_records, record_id

    async def body() -> None:
        store = RedisStore.from_url(server.url, IndexHeader(), name="records")
        fp, writer = int.from_bytes(b"\0\0xyzxyz", "big"), b"abcd"  # printable bytes
        mine = record_id(fp, writer)
        other = page_record(7, "https://x/" + mine.decode(), None, Sketch(0, 0, b""))
        bucket = store.layout.page_key(fp)
        await store.client.set(bucket, other)
        page = bucket, page_record(fp, "https://mine", None, Sketch(0, 0, b""), writer)
        for retry in (False, True):  # the retry finds its record and appends nothing
            await commit(store.pipes, page, {}, {}, b"token", store._count_key, retry=retry)
        top = store.layout.page_key_top(bucket)
        stored = page_records(await store.client.get(bucket), top)
        assert [r.key for r in stored] == ["https://x/" + mine.decode(), "https://mine"]
        removed = await store.pipes.run(
            lambda pipe: store.pipes.script(pipe, "remove", [bucket], [mine])
        )
        assert removed == [1]
        assert await store.client.get(bucket) == other
        removed = await store.pipes.run(
            lambda pipe: store.pipes.script(pipe, "remove", [bucket], [mine])
        )
        assert removed == [0] and await store.client.get(bucket) == other
        await store.close()

    asyncio.run(body())


# -- Redis Cluster ---------------------------------------------------------------------------


def test_redis_cluster_spreads_one_index_over_every_node(tmp_path: Path) -> None:
    with RedisCluster(tmp_path / "cluster") as cluster:

        async def body() -> None:
            rng = random.Random(9)
            stores = [
                RedisStore.from_url(cluster.url, IndexHeader(), name=n, cluster=True)
                for n in ("alpha", "beta", "gamma")
            ]
            for store in stores:
                stored: dict[int, str] = {}
                for i in range(100):
                    fp = rng.getrandbits(64)
                    stored[fp] = f"{store.name}{i}"
                    assert await store.check_and_add(fp, stored[fp]) is None
                for fp in rng.sample(list(stored), 30):
                    near = flip(fp, rng.randrange(64))
                    assert (
                        await store.check_and_add(near, "copy") == brute_force(stored, near, 3)[0]
                    )
                brief = ((rng.getrandbits(64), 40), (rng.getrandbits(64), 50))  # its sentences
                assert await store.check_and_add(rng.getrandbits(64), "brief", None, brief) is None
                copy = await store.check_and_add(rng.getrandbits(64), "copy", None, brief)
                assert copy is not None and (copy.key, copy.shared) == ("brief", 1.0)
                assert await store.count() == 101
                # Its buckets, page and sentence buckets: on every node, in many slots.
                nodes = {}
                async for raw in store.client.scan_iter(match=f"{store.name}:{{*"):
                    key = raw.decode()
                    nodes.setdefault(store.client.get_node_from_key(key).name, set()).add(key)
                assert len(nodes) == 3, nodes.keys()
                for keys in nodes.values():  # fingerprint and page buckets on each
                    assert {k.split(":{")[1][0] for k in keys} >= {"f", "p"}
                await store.close()
            with pytest.raises(IndexSettingsMismatch):
                RedisStore.from_url(
                    cluster.url, IndexHeader(design="4-table", k=3, bits=64, format=99),
                    name="alpha", cluster=True,
                )  # fmt: skip

        asyncio.run(body())


def test_redis_cluster_spreads_sites_over_slots(tmp_path: Path) -> None:
    """What sites taught lives in one hash per site, each in its own slot: on a 3-node
    cluster, sites land on several nodes, and a second crawler reads what the first learned."""
    with RedisCluster(tmp_path / "cluster") as cluster:

        async def body() -> None:
            first = RedisStore.from_url(cluster.url, IndexHeader(), name="sites", cluster=True)
            sites = [f"site{i}.example" for i in range(30)]
            for n, site in enumerate(sites):
                await first.learn_site(site, n + 1, [2**63 + n, 7])
            nodes = {first.client.get_node_from_key(first.sites.key(site)).name for site in sites}
            assert len(nodes) == 3
            await first.close()
            second = RedisStore.from_url(cluster.url, IndexHeader(), name="sites", cluster=True)
            for n, site in enumerate(sites):
                assert (await second.site_template(site)).lines == {
                    2**63 + n: (n + 1,),
                    7: (n + 1,),
                }
            await second.close()

        asyncio.run(body())


def test_redis_cluster_reads_with_plain_commands_and_follows_a_moved_slot(
    tmp_path: Path,
) -> None:
    """On a cluster a check reads its buckets with one GET each (no script: Lua would hash
    every byte of them), a copy costs no script call, and a new page one lease and one commit
    call on each node it reads or writes (the page bucket's node too); when a slot moves
    to another node under a running crawl (resharding), its bucket is read where it went and
    the crawl goes on."""
    from redis.crc import key_slot

    from nearDupe.store.redis_reading import page_keys

    rng = random.Random(21)
    article = tuple(sorted((rng.getrandbits(64), 60) for _ in range(6)))
    fp = rng.getrandbits(64)
    with RedisCluster(tmp_path / "cluster") as cluster:

        async def body() -> None:
            store = RedisStore.from_url(cluster.url, IndexHeader(), name="moved", cluster=True)
            await store.client.initialize()
            keys = page_keys(store.layout, fp, article)
            nodes = {store.client.get_node_from_key(k).name for k in keys}

            async def commandstats() -> dict[str, Any]:
                """Each node's command counts since the last call (then reset)."""
                out = {}
                for node in store.client.get_primaries():
                    out[node.name] = await node.execute_command("INFO", "commandstats")
                    await node.execute_command("CONFIG", "RESETSTAT")
                return out

            await commandstats()
            assert await store.check_and_add(fp, "https://article", None, article) is None
            stats = await commandstats()
            gets = sum(s.get("cmdstat_get", {"calls": 0})["calls"] for s in stats.values())
            assert gets >= len(keys) + 1  # each bucket and the header, then the leases
            page_node = store.client.get_node_from_key(store.layout.page_key(fp)).name
            for name in nodes | {page_node}:  # a lease and a commit call on each node (on
                # the page bucket's node only the commit if no bucket read lies there)
                calls = stats[name]["cmdstat_evalsha"]["calls"]
                assert calls == (2 if name in nodes else 1)
            near = fp ^ 0b101
            got = await store.check_and_add(near, "https://copy", None, article)
            assert got is not None and (got.key, got.distance) == ("https://article", 2)
            for node_stats in (await commandstats()).values():
                assert "cmdstat_evalsha" not in node_stats  # a copy: reads only
            # Reshard: the slot of the page's first table bucket moves to another node.
            slot = key_slot(keys[0].encode())
            owner = [n.port for n in cluster.nodes].index(
                store.client.get_node_from_key(keys[0]).port
            )
            cluster.move_slot(slot, (owner + 1) % 3)
            got = await store.check_and_add(fp ^ 0b11, "https://again", None, article)
            assert got is not None and got.key == "https://article"
            other = tuple(sorted((rng.getrandbits(64), 60) for _ in range(6)))
            far = fp  # 8 bits away, in the moved bucket: a new page written there
            while bin(far ^ fp).count("1") != 8 or page_keys(store.layout, far, ())[0] != keys[0]:
                far = fp ^ sum(1 << b for b in rng.sample(range(64), 8))
            assert await store.check_and_add(far, "https://b", None, other) is None
            got = await store.check_and_add(far ^ 1, "https://b2", None, other)
            assert got is not None and got.key == "https://b"
            assert await store.count() == 2
            await store.close()

        asyncio.run(body())


def test_redis_cluster_node_killed_and_restarted(tmp_path: Path) -> None:
    """A cluster node killed under a running store: checks end in StoreUnavailable within the
    retry deadline (the store's own per-node pipelines close their connections and learn the
    cluster again); once it is back (AOF), every page stored before is found again, and a
    check waiting through its restart rides it out."""
    rng = random.Random(23)
    with RedisCluster(tmp_path / "cluster") as cluster:

        async def body() -> None:
            store = RedisStore.from_url(
                cluster.url, IndexHeader(), name="crash", cluster=True, retry_seconds=0.5
            )
            fps = [rng.getrandbits(64) for _ in range(60)]
            for i, fp in enumerate(fps):
                assert await store.check_and_add(fp, f"u{i}") is None
            node = cluster.nodes[1]
            node.kill()
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="crash"):
                for i in range(20):  # some fall on the killed node's slots
                    await store.check_and_add(rng.getrandbits(64), f"lost{i}")
            assert time.monotonic() - started < 3  # the retry deadline, not a hang
            node.start()
            store.retry_seconds = 20.0  # the cluster is ok again once the node answers
            for i, fp in enumerate(fps):
                assert await store.check_and_add(flip(fp, 2), f"copy{i}") == Match(f"u{i}", fp, 1)
            node.stop()
            threading.Timer(0.5, node.start).start()
            assert await store.check_and_add(flip(fps[0], 5), "during") == Match("u0", fps[0], 1)
            await store.close()

        asyncio.run(body())
