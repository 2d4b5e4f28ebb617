"""What the URL table costs: a re-crawl decision beside a first-crawl decision, on both
backends, and the bytes a URL takes in the URL table at 10^5 and 10^6 URLs.

Decisions: an index of ``--pages`` pages (70-byte URLs, 20 sentences of 60 letters, random
fingerprints) is built through check_and_add; then, in one run, per backend and in turns of
``--batch``: first-crawl decisions (new URLs and new text: recorded), re-crawl decisions of
unchanged pages (their URL held: compared with its version, nothing written) and, with
NEARDUPE_RECRAWL = "changed", of changed pages (compared, checked against the other pages,
stored in the URL's place). Printed: p50 and p90 microseconds a decision, and each kind's
p50 against the first crawl's.

Bytes per URL: embedded, the growth of a SQLite file (``urls`` table only, one transaction,
VACUUMed) per URL; Redis, the growth of INFO used_memory per URL, with the URL shards of
an index laid out for that many pages (NEARDUPE_REDIS_PAGES), each shard written whole
(the commit script keeps shards at their exact size with COPY).

    python benchmarks/recrawl_bench.py [--pages 20000] [--ops 2000] [--sizes 100000 1000000]
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _harness import arguments  # noqa: E402

from nearDupe.designs import Design  # noqa: E402
from nearDupe.shorttext import Sentences  # noqa: E402
from nearDupe.store import EmbeddedIndex, EmbeddedStore, IndexHeader, Store  # noqa: E402
from nearDupe.store.base import url_hash  # noqa: E402
from nearDupe.store.embedded_sqlite import connect, to_signed  # noqa: E402
from nearDupe.store.recrawl import CHANGED  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402

URL = "https://www.example-news-site.com/2024/05/section/story-{:09d}-slug-of-the-story.html"


def page(i: int, edition: int = 0) -> tuple[int, str, int, Sentences]:
    """Page ``i`` (its ``edition``: another text under the same URL)."""
    rng = random.Random(i * 7919 + edition)
    sentences = tuple((rng.getrandbits(64), 60) for _ in range(20))
    return rng.getrandbits(64), URL.format(i), rng.getrandbits(64), sentences


async def timed(call: Awaitable[object]) -> float:
    """Microseconds one call takes (awaited here: it starts running here)."""
    start = time.perf_counter()
    await call
    return (time.perf_counter() - start) * 1e6


async def decisions(store: Store, pages: int, ops: int, batch: int) -> dict[str, list[float]]:
    """Microseconds of each kind of decision, measured in turns."""
    for i in range(pages):
        fp, url, sig, sentences = page(i)
        await store.check_and_add(fp, url, sig, sentences)
    times: dict[str, list[float]] = {"first crawl": [], "re-crawl, unchanged": []}
    times["re-crawl, changed"] = []
    fresh, old = pages, 0
    while old < ops:
        for _ in range(batch):
            fp, url, sig, sentences = page(fresh)
            fresh += 1
            us = await timed(store.check_and_add(fp, url, sig, sentences))
            times["first crawl"].append(us)
        for j in range(old, old + batch):
            fp, url, sig, sentences = page(j)
            us = await timed(store.check_and_add(fp, url, sig, sentences))
            times["re-crawl, unchanged"].append(us)
        for j in range(old, old + batch):
            fp, url, sig, sentences = page(j, edition=1)
            us = await timed(store.check_and_add(fp, url, sig, sentences, CHANGED))
            times["re-crawl, changed"].append(us)
        old += batch
    return times


def print_decisions(name: str, times: dict[str, list[float]]) -> None:
    first = statistics.median(times["first crawl"])
    print(f"\n{name}: microseconds a decision ({len(times['first crawl'])} of each)")
    print(f"  {'decision':<22} {'p50':>8} {'p90':>8} {'p50 / first':>12}")
    for kind, values in times.items():
        values = sorted(values)
        p50, p90 = statistics.median(values), values[int(0.9 * len(values))]
        print(f"  {kind:<22} {p50:>8.0f} {p90:>8.0f} {p50 / first:>12.2f}")


def embedded_bytes(n: int, directory: Path) -> float:
    """Bytes a URL takes in an embedded index's URL table (the file's growth, VACUUMed)."""
    empty, full = directory / f"empty-{n}", directory / f"full-{n}"
    for path, rows in ((empty, 0), (full, n)):
        path.mkdir()
        db = connect(path)
        now = time.time()
        db.executemany(
            "INSERT INTO urls VALUES (?, ?, ?, ?, ?)",
            (
                (to_signed(url_hash(URL.format(i))), i + 1, now, None, to_signed(i * 0x9E37))
                for i in range(rows)
            ),
        )
        db.commit()
        db.execute("VACUUM")
        db.close()
    grown = (full / "pages.sqlite3").stat().st_size - (empty / "pages.sqlite3").stat().st_size
    return grown / n


def redis_bytes(n: int, server: RedisServer) -> float:
    """Bytes a URL takes in a Redis index's URL shards (INFO used_memory's growth)."""
    import redis

    from nearDupe.store.redis_layout import Layout, wanted_layout
    from nearDupe.store.redis_records import url_record

    design = Design.named(IndexHeader().design)
    layout = Layout(f"bench{n}", design, wanted_layout(design, 20, n))
    shards: dict[str, list[bytes]] = {}
    now = time.time()
    for i in range(n):
        h = url_hash(URL.format(i))
        shards.setdefault(layout.url_key(h), []).append(url_record(h, i, b"w", now, 0, i))
    client = redis.Redis.from_url(server.url)
    client.flushall()
    before = int(client.info("memory")["used_memory"])
    pipe = client.pipeline(transaction=False)
    for j, (key, records) in enumerate(shards.items()):
        pipe.set(key, b"".join(records))
        if j % 10_000 == 9_999:
            pipe.execute()
    pipe.execute()
    after = int(client.info("memory")["used_memory"])
    client.flushall()
    client.close()
    return (after - before) / n


def main() -> None:
    parser = arguments(__doc__, sizes=[100_000, 1_000_000])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--ops", type=int, default=2_000)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    print(f"index of {args.pages:,} pages; 70-byte URLs, 20 sentences a page")
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp) / "redis") as server:
        from nearDupe.store.redis import RedisStore

        async def on_embedded() -> dict[str, list[float]]:
            index = EmbeddedIndex(Path(tmp) / "index", IndexHeader())
            store = EmbeddedStore(index)
            try:
                return await decisions(store, args.pages, args.ops, args.batch)
            finally:
                await store.close()

        async def on_redis() -> dict[str, list[float]]:
            store = RedisStore.from_url(server.url, IndexHeader(), name="recrawl-bench")
            try:
                return await decisions(store, args.pages, args.ops, args.batch)
            finally:
                await store.close()

        print_decisions("embedded", asyncio.run(on_embedded()))
        print_decisions("redis (one local redis-server)", asyncio.run(on_redis()))
        print("\nbytes a URL takes in the URL table")
        print(f"  {'URLs':>10} {'embedded':>10} {'redis':>10}")
        for n in args.sizes:
            sizes = Path(tmp) / f"sizes-{n}"
            sizes.mkdir()
            print(f"  {n:>10,} {embedded_bytes(n, sizes):>10.1f} {redis_bytes(n, server):>10.1f}")


if __name__ == "__main__":
    main()
