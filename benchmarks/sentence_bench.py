"""What sentence-level matching of short pages costs: check-and-add time and storage per page.

Side by side in one run, on the embedded index and on Redis (its own redis-server unless
``--url`` is given): N short pages (3-6 sentences each, one in ten with a template sentence
shared by all of them) are stored with check-and-add, then M more are checked, half new pages
and half copies with a sentence added. The same M checks without sentences (the path of a
long page) are timed next to them. Storage: SQLite bytes and Redis memory per short page.

    python benchmarks/sentence_bench.py [--sizes 10000 100000] [--ops 5000] [--url redis://...]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from redis_bench import start_redis
from scrapy.settings import Settings

from nearDupe._settings import Config
from nearDupe.shorttext import Sentences
from nearDupe.store import EmbeddedIndex, EmbeddedStore, Store
from nearDupe.store.redis import RedisStore

#: Each backend at its default settings (k=10 embedded, k=6 in Redis).
EMBEDDED = Config.from_settings(Settings({"NEARDUPE_INDEX": "index"})).header
REDIS = Config.from_settings(Settings({"NEARDUPE_INDEX": "redis://localhost:6379/0"})).header
TEMPLATE_SENTENCE = (0x7E3A_0000_0000_0001, 40)
URL = "https://www.example-news.com/2024/05/brief-{:09d}.html"


def short_page(rng: random.Random) -> Sentences:
    """3-6 random sentences of 10-60 letters; one page in ten also has the template sentence."""
    found = {rng.getrandbits(64): rng.randint(10, 60) for _ in range(rng.randint(3, 6))}
    if rng.random() < 0.1:
        found[TEMPLATE_SENTENCE[0]] = TEMPLATE_SENTENCE[1]
    return tuple(sorted(found.items()))


def workload(stored: list[Sentences], ops: int, seed: int) -> list[Sentences]:
    """Half new short pages, half stored ones with a sentence added."""
    rng = random.Random(seed)
    out = []
    for i in range(ops):
        if i % 2:
            copy = dict(rng.choice(stored))
            copy[rng.getrandbits(64)] = 30
            out.append(tuple(sorted(copy.items())))
        else:
            out.append(short_page(rng))
    return out


async def run(store: Store, n: int, ops: int) -> dict[str, float]:
    """Store N short pages, then time M checks with their sentences and M without."""
    rng = random.Random(1)
    stored = [short_page(rng) for _ in range(n)]
    started = time.perf_counter()
    for i, page in enumerate(stored):
        await store.check_and_add(rng.getrandbits(64), URL.format(i), rng.getrandbits(64), page)
    load = time.perf_counter() - started
    queries = workload(stored, ops, 2)
    # Random fingerprints and signatures of their own: only the sentences can match.
    fps = [rng.getrandbits(64) for _ in queries]
    signatures = [rng.getrandbits(64) for _ in queries]
    timings = {}
    for label, with_sentences in (("with sentences", True), ("without", False)):
        dropped = 0
        started = time.perf_counter()
        for i, (fp, signature, page) in enumerate(zip(fps, signatures, queries, strict=True)):
            key = f"{label}-{i}"
            match = await store.check_and_add(fp, key, signature, page if with_sentences else ())
            dropped += match is not None
        timings[label] = (time.perf_counter() - started) / ops * 1e6
        timings[f"dropped {label}"] = dropped
        fps = [fp ^ (1 << 63) ^ 0xFFFF for fp in fps]  # the second pass: other fingerprints
    return {"load_us": load / n * 1e6, **timings}


def embedded(directory: Path, n: int, ops: int) -> dict[str, float]:
    """The embedded index: timings and SQLite bytes per stored short page."""
    path = directory / f"embedded-{n}"

    async def main() -> dict[str, float]:
        store = EmbeddedStore(EmbeddedIndex(path, EMBEDDED, commit_interval=1.0))
        try:
            return await run(store, n, ops)
        finally:
            await store.close()

    result = asyncio.run(main())
    size = sum(p.stat().st_size for p in path.iterdir() if p.name.startswith("pages.sqlite3"))
    pages = n + 2 * ops
    return {**result, "bytes_per_page": size / pages}


def redis_store(url: str, n: int, ops: int) -> dict[str, float]:
    """Redis: timings and memory per stored short page (whole database, empty at start)."""
    client = redis.Redis.from_url(url)
    client.flushdb()
    before = int(client.info("memory")["used_memory"])

    async def main() -> dict[str, float]:
        store = RedisStore.from_url(url, REDIS, name="sentences")
        try:
            return await run(store, n, ops)
        finally:
            await store.close()

    result = asyncio.run(main())
    used = int(client.info("memory")["used_memory"]) - before
    sentences = int(client.memory_usage("{sentences}:sentences", samples=0) or 0)
    client.close()
    pages = n + 2 * ops
    return {**result, "bytes_per_page": used / pages, "sentence_bytes_per_page": sentences / pages}


def main() -> None:
    """Print one table: per backend and size, µs per check with and without sentences."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--ops", type=int, default=5_000)
    parser.add_argument("--url", help="an existing Redis (flushed!), else one is started")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server: subprocess.Popen[bytes] | None = None
        url = args.url
        if url is None:
            server, url = start_redis(Path(tmp))
        try:
            print(
                "| backend | short pages stored | store µs/page | check µs with sentences "
                "| check µs without | ratio | copies dropped | bytes/page (sentences) |"
            )
            print("|---|---|---|---|---|---|---|---|")
            for n in args.sizes:
                for name, result in (
                    ("embedded", embedded(Path(tmp), n, args.ops)),
                    ("Redis", redis_store(url, n, args.ops)),
                ):
                    with_s, without = result["with sentences"], result["without"]
                    extra = result.get("sentence_bytes_per_page")
                    size = f"{result['bytes_per_page']:.0f}" + (
                        f" ({extra:.0f})" if extra is not None else ""
                    )
                    print(
                        f"| {name} | {n:,} | {result['load_us']:.0f} | {with_s:.0f} "
                        f"| {without:.0f} | {with_s / without:.2f} "
                        f"| {result['dropped with sentences']:.0f} of {args.ops // 2} | {size} |",
                        flush=True,
                    )
        finally:
            if server is not None:
                server.terminate()
                server.wait()


if __name__ == "__main__":
    main()
