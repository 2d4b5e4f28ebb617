"""What the sentence sample costs: the in-RAM sample index, the embedded store's whole sentence
path, and today's SQLite ``sentences`` table (main 800c1d7) side by side; prints one table.

Per size N, N pages are recorded under 4 random sentences each (long pages: 4 sentences of 130
letters, all four sampled). Queries have 40 sentences: half a stored page's 4 and 36 new, half
40 new. Measured:
  index    SampleIndex alone: lookup p50/p99 µs, RAM per page steady (its arrays) and peak
           (tracemalloc while it is built run by run, merges included; the inputs excluded),
           build time.
  store    EmbeddedIndex over pages written to SQLite in the new layout: lookup p50/p99 µs of
           the sentence path (committed_holders + sentence_matches), open time with both
           snapshots present, the sample's load from its snapshot and its rebuild from
           SQLite alone, sample RAM per page, SQLite file bytes per page.
  table    today's layout (pages + ``sentences`` table with its index, built at the end): the
           same queries through its SQL and sentence_matches, file bytes per page.

    python benchmarks/sample_bench.py [--sizes 1e5 1e6 1e7 1e8] [--store-max 1e7] [--table-max 1e7]

``--real [--base DIR]``: what real pages' sentence units cost, this code and the checkout DIR
side by side (each in a subprocess importing its own nearDupe). Every real article body of
``../shared/data`` (aeb; zh-extract and thucnews) is cut into the units its code keeps, REPLICAS
times (each copy's unit hashes salted apart, so none is crowded), and checked and added to a
fresh embedded index and a fresh redis-server: units kept and recorded per page, sketch bytes,
the sample's RAM (after a reopen), SQLite bytes and Redis used_memory per page.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from nearDupe.sample_index import SampleIndex
from nearDupe.shorttext import Sentences
from nearDupe.store import EmbeddedIndex, embedded_sample
from nearDupe.store.base import SENTENCE_SHARE, Holder, Sketch, sentence_matches, sketch_of
from nearDupe.store.embedded_sample import committed_holders
from nearDupe.store.embedded_sqlite import to_signed, to_unsigned

#: Sentences a page is recorded under, their letters, and the sentences of a query.
PER_PAGE, LETTERS, QUERY = 4, 130, 40
#: Pages generated (and written) at a time: 4 * 10**6 entries, 32 MB of hashes.
CHUNK = 1_000_000
QUERIES = 2000
URL = "https://www.example-news.com/2024/05/story-{:09d}.html"
TARGETS = "lookup <= 1 ms p50 at 10^8 pages; sample <= ~28 B of RAM per page"


def chunk_hashes(seed: int, chunk: int, pages: int) -> np.ndarray:
    """The sentence hashes of one chunk of pages, (pages, PER_PAGE), each row sorted."""
    rng = np.random.default_rng((seed, chunk))
    return np.sort(rng.integers(0, 2**64, (pages, PER_PAGE), dtype=np.uint64), axis=1)


def chunks(n: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first page id, hashes) of every chunk of n pages (ids from 1, as SQLite's)."""
    for c, start in enumerate(range(0, n, CHUNK)):
        yield start + 1, chunk_hashes(seed, c, min(CHUNK, n - start))


def make_queries(n: int, seed: int) -> list[Sentences]:
    """Half a stored page's sentences plus 36 new ones, half 40 new ones."""
    rng = np.random.default_rng(seed + 1)
    stored = []
    for c in rng.choice((n + CHUNK - 1) // CHUNK, size=min(4, (n + CHUNK - 1) // CHUNK)):
        hashes = chunk_hashes(seed, int(c), min(CHUNK, n - int(c) * CHUNK))
        stored += hashes[rng.integers(0, len(hashes), QUERIES // 2)].tolist()
    picked = rng.choice(len(stored), QUERIES // 2, replace=False)
    out = []
    for i in range(QUERIES):
        extra = rng.integers(0, 2**64, QUERY, dtype=np.uint64).tolist()
        page = stored[picked[i // 2]] + extra[PER_PAGE:] if i % 2 else extra
        out.append(tuple(sorted((h, LETTERS) for h in page)))
    return out


def timed(func: Callable[[Sentences], object], queries: list[Sentences]) -> tuple[float, float]:
    """p50 and p99 µs of ``func`` over the queries (after one warm-up pass)."""
    for q in queries[:200]:
        func(q)
    ns = []
    for q in queries:
        t = time.perf_counter_ns()
        func(q)
        ns.append(time.perf_counter_ns() - t)
    a = np.asarray(ns) / 1e3
    return float(np.median(a)), float(np.percentile(a, 99))


def bench_index(n: int, seed: int, queries: list[Sentences]) -> dict[str, float]:
    """The sample index alone, built chunk by chunk as the store's rebuild does."""
    index = SampleIndex()
    peak = 0
    t0 = time.perf_counter()
    tracemalloc.start()
    for first, hashes in chunks(n, seed):
        ids = np.repeat(np.arange(first, first + len(hashes), dtype=np.uint64), PER_PAGE)
        tracemalloc.reset_peak()
        before, held = tracemalloc.get_traced_memory()[0], index.nbytes
        index.add_many(ids, hashes.ravel())
        peak = max(peak, tracemalloc.get_traced_memory()[1] - before + held)
        del ids, hashes
    index.flush()
    tracemalloc.stop()
    build = time.perf_counter() - t0
    arrays = [np.fromiter((h for h, _ in q), np.uint64, len(q)) for q in queries]
    by_query = dict(zip(map(id, queries), arrays, strict=True))
    p50, p99 = timed(lambda q: index.lookup(by_query[id(q)]), queries)
    return {
        "p50": p50,
        "p99": p99,
        "steady": index.nbytes / n,
        "peak": peak / n,
        "build": build,
    }


def write_store(path: Path, n: int, seed: int) -> None:
    """An embedded index of n pages in the new layout, written straight into its SQLite."""
    EmbeddedIndex(path).close()
    fps = np.random.default_rng(seed + 2)
    with sqlite3.connect(path / "pages.sqlite3") as db:
        for first, hashes in chunks(n, seed):
            blob = hashes.astype("<u8").tobytes()
            size = 8 * PER_PAGE
            page_hashes = hashes.reshape(-1, PER_PAGE).tolist()
            rows = (
                (
                    first + i,
                    to_signed(fp),
                    URL.format(first + i),
                    0.0,
                    None,
                    *sketch_of(tuple((h, 520 // PER_PAGE) for h in page_hashes[i])),
                    blob[size * i : size * (i + 1)],
                )
                for i, fp in enumerate(
                    fps.integers(0, 2**64, len(hashes), dtype=np.uint64).tolist()
                )
            )
            db.executemany("INSERT INTO pages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def bench_store(path: Path, n: int, seed: int, queries: list[Sentences]) -> dict[str, float]:
    """The embedded store's sentence path, and its open time with the tables' snapshot."""
    write_store(path, n, seed)
    EmbeddedIndex(path).close()  # rebuilds the tables and sample, and writes their snapshots
    gc.collect()
    t0 = time.perf_counter()
    index = EmbeddedIndex(path)
    opened = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        embedded_sample.load(index._db, path)
        snapshot = time.perf_counter() - t0
        t0 = time.perf_counter()
        embedded_sample.load(index._db, path / "no-snapshot-here")
        rebuild = time.perf_counter() - t0

        def path_(q: Sentences) -> object:
            return sentence_matches(
                q, committed_holders(index._db, index.sample, q), SENTENCE_SHARE
            )

        p50, p99 = timed(path_, queries)
        ram = index.sample.nbytes / n
    finally:
        index.close()
    disk = (path / "pages.sqlite3").stat().st_size / n
    return {
        "p50": p50,
        "p99": p99,
        "open": opened,
        "snapshot": snapshot,
        "rebuild": rebuild,
        "ram": ram,
        "disk": disk,
    }


def legacy_holders(db: sqlite3.Connection, sentences: Sentences) -> list[Holder]:
    """committed_holders of main 800c1d7: the pages in the ``sentences`` table (its letter
    counts in the place of a sketch: the lookup is what is timed)."""
    wanted = [to_signed(sentence) for sentence, _ in sentences]
    rows = db.execute(
        f"SELECT sentence, key, fp, letters, sampled FROM sentences WHERE sentence IN "
        f"({','.join('?' * len(wanted))}) ORDER BY rowid",
        wanted,
    ).fetchall()
    found = [
        Holder(to_unsigned(s), key, to_unsigned(fp), Sketch(n, m, b""))
        for s, key, fp, n, m in rows
    ]
    position = {sentence: i for i, (sentence, _) in enumerate(sentences)}
    return sorted(found, key=lambda row: position[row[0]])


def bench_table(path: Path, n: int, seed: int, queries: list[Sentences]) -> dict[str, float]:
    """Today's sentences table: the same queries through its SQL."""
    path.mkdir()
    db = sqlite3.connect(path / "pages.sqlite3")
    db.executescript(
        """
        PRAGMA journal_mode=WAL;
        CREATE TABLE pages (id INTEGER PRIMARY KEY, fp INTEGER NOT NULL, key TEXT NOT NULL,
                            added REAL NOT NULL, sig INTEGER);
        CREATE INDEX pages_fp ON pages(fp);
        CREATE TABLE sentences (sentence INTEGER NOT NULL, fp INTEGER NOT NULL,
            letters INTEGER NOT NULL, sampled INTEGER NOT NULL, key TEXT NOT NULL);
        """
    )
    fps = np.random.default_rng(seed + 2)
    t0 = time.perf_counter()
    for first, hashes in chunks(n, seed):
        page_fps = [
            to_signed(f) for f in fps.integers(0, 2**64, len(hashes), dtype=np.uint64).tolist()
        ]
        keys = [URL.format(first + i) for i in range(len(hashes))]
        db.executemany(
            "INSERT INTO pages VALUES (?, ?, ?, 0.0, NULL)",
            zip(range(first, first + len(hashes)), page_fps, keys, strict=True),
        )
        db.executemany(
            "INSERT INTO sentences VALUES (?, ?, 520, 520, ?)",
            (
                (to_signed(h), page_fps[i], keys[i])
                for i, row in enumerate(hashes.tolist())
                for h in row
            ),
        )
    db.execute("CREATE INDEX sentences_sentence ON sentences(sentence)")
    db.commit()
    build = time.perf_counter() - t0
    p50, p99 = timed(lambda q: sentence_matches(q, legacy_holders(db, q), SENTENCE_SHARE), queries)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    disk = (path / "pages.sqlite3").stat().st_size / n
    return {"p50": p50, "p99": p99, "build": build, "disk": disk}


#: Copies of each real article (salted apart) in ``--real``.
REPLICAS = 10


def real_side() -> dict[str, float]:
    """``--real`` for the code imported as nearDupe (see the module's docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import redis
    from _data import data_dir
    from _quality_cases import load_articles
    from redis_server import RedisServer

    from nearDupe.shorttext import sentences
    from nearDupe.store import IndexHeader
    from nearDupe.store.base import recorded
    from nearDupe.store.redis import RedisStore

    rng = np.random.default_rng(0)
    units = [sentences(a.text) for a in load_articles(data_dir())]
    pages = [
        tuple(sorted((h ^ salt, n) for h, n in page))
        for salt in rng.integers(0, 2**64, REPLICAS, dtype=np.uint64).tolist()
        for page in units
        if page
    ]
    fps = rng.integers(0, 2**64, len(pages), dtype=np.uint64).tolist()
    out = {
        "pages": len(pages),
        "units": float(np.mean([len(p) for p in pages])),
        "recorded": float(np.mean([len(recorded(p)) for p in pages])),
        "sketch": float(np.mean([len(sketch_of(p).tails) for p in pages])),
    }
    with tempfile.TemporaryDirectory() as tmp:
        index = EmbeddedIndex(Path(tmp) / "index")
        for i, (fp, page) in enumerate(zip(fps, pages, strict=True)):
            index.check_and_add(fp, URL.format(i), fp, page)
        index.close()
        index = EmbeddedIndex(Path(tmp) / "index")
        out["ram"] = index.sample.nbytes / len(pages)
        index.close()
        out["disk"] = (Path(tmp) / "index" / "pages.sqlite3").stat().st_size / len(pages)
        with RedisServer(Path(tmp) / "redis") as server:
            client = redis.Redis.from_url(server.url)
            before = int(client.info("memory")["used_memory"])

            async def fill() -> None:
                store = RedisStore.from_url(server.url, IndexHeader(), name="real")
                for i, (fp, page) in enumerate(zip(fps, pages, strict=True)):
                    await store.check_and_add(fp, URL.format(i), fp, page)
                await store.close()

            asyncio.run(fill())
            used = int(client.info("memory")["used_memory"]) - before
            client.close()
            out["redis"] = used / len(pages)
    return out


def real(base: Path | None) -> None:
    """``--real``: this code's figures and ``base``'s, side by side."""
    here = Path(__file__).resolve().parents[1]
    print(
        f"{'code':<40} {'pages':>6} {'units':>6} {'recorded':>8} {'sketch B':>8} "
        f"{'sample RAM B':>12} {'SQLite B':>8} {'Redis B':>8}"
    )
    for root in [r for r in (base, here) if r is not None]:
        env = dict(os.environ, PYTHONPATH=str(root))
        r = json.loads(
            subprocess.run(
                [sys.executable, __file__, "--real-side"],
                env=env, check=True, capture_output=True, text=True,
            ).stdout.splitlines()[-1]
        )  # fmt: skip
        print(
            f"{str(root)[-40:]:<40} {r['pages']:>6} {r['units']:>6.1f} {r['recorded']:>8.2f} "
            f"{r['sketch']:>8.1f} {r['ram']:>12.1f} {r['disk']:>8.0f} {r['redis']:>8.0f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e5, 1e6, 1e7, 1e8])
    parser.add_argument("--store-max", type=float, default=1e7, help="largest store size")
    parser.add_argument("--table-max", type=float, default=1e7, help="largest legacy table")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--real", action="store_true", help="real pages' units, side by side")
    parser.add_argument("--base", type=Path, help="the checkout --real compares with")
    parser.add_argument("--real-side", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.real_side:
        print(json.dumps(real_side()))
        return
    if args.real:
        real(args.base)
        return
    print(f"targets: {TARGETS}")
    print(
        f"{'pages':>9} {'what':<6} {'p50 µs':>8} {'p99 µs':>8} {'B/page':>7} {'peak B':>7} "
        f"{'disk B':>7} {'open s':>7} {'snap s':>7} {'rebuild s':>9} {'build s':>8}"
    )
    for size in args.sizes:
        n = int(size)
        queries = make_queries(n, args.seed)
        r = bench_index(n, args.seed, queries)
        print(
            f"{n:>9} {'index':<6} {r['p50']:>8.1f} {r['p99']:>8.1f} {r['steady']:>7.1f} "
            f"{r['peak']:>7.1f} {'':>7} {'':>7} {'':>7} {'':>9} {r['build']:>8.1f}",
            flush=True,
        )
        gc.collect()
        tmp = Path(tempfile.mkdtemp(prefix="sample-bench-"))
        try:
            if n <= args.store_max:
                s = bench_store(tmp / "store", n, args.seed, queries)
                print(
                    f"{n:>9} {'store':<6} {s['p50']:>8.1f} {s['p99']:>8.1f} {s['ram']:>7.1f} "
                    f"{'':>7} {s['disk']:>7.0f} {s['open']:>7.2f} {s['snapshot']:>7.2f} "
                    f"{s['rebuild']:>9.2f}",
                    flush=True,
                )
            if n <= args.table_max:
                t = bench_table(tmp / "table", n, args.seed, queries)
                print(
                    f"{n:>9} {'table':<6} {t['p50']:>8.1f} {t['p99']:>8.1f} {0:>7} {'':>7} "
                    f"{t['disk']:>7.0f} {'':>7} {'':>7} {'':>9} {t['build']:>8.1f}",
                    flush=True,
                )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
