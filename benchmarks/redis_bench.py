"""Check-and-insert throughput and latency of the Redis store (loopback), vs the embedded index.

One run: for each index size N, preload N random fingerprints with pipelined bulk inserts, then
time check-and-add calls (half new pages, half near copies of stored ones) from 1 and from 4
processes, each with 1 or 8 calls in flight; report Redis memory per fingerprint and the same
ops on the embedded index.  Starts its own redis-server unless ``--url`` is given.

    python benchmarks/redis_bench.py [--sizes 100000 1000000] [--ops 20000] [--url redis://...]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import redis

from nearDupe.store import EmbeddedIndex, IndexHeader
from nearDupe.store.redis import RedisStore

logger = logging.getLogger(__name__)

NAME = "bench"
URL_PATTERN = "https://www.example-news.com/2024/05/article-{:09d}.html"


def stored_fps(n: int, seed: int = 1) -> np.ndarray:
    """The N preloaded fingerprints (every process regenerates them from the seed)."""
    return np.random.default_rng(seed).integers(0, 2**64, n, dtype=np.uint64)


def workload(n: int, ops: int, worker: int) -> list[int]:
    """``ops`` queries for one worker: half fresh random pages, half copies 1-3 bits away."""
    rng = np.random.default_rng(1000 + worker)
    stored = stored_fps(n)
    out = []
    for i in range(ops):
        if i % 2:
            fp = int(stored[rng.integers(n)])
            for bit in rng.choice(64, int(rng.integers(1, 4)), replace=False):
                fp ^= 1 << int(bit)
        else:
            fp = int(rng.integers(0, 2**64, dtype=np.uint64))
        out.append(fp)
    return out


def summarize(latencies: list[float], seconds: float) -> tuple[float, float, float]:
    """(ops/s, median ms, p99 ms)."""
    lat = np.asarray(latencies) * 1000
    return len(lat) / seconds, float(np.median(lat)), float(np.percentile(lat, 99))


# -- Redis -------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A redis-server on a free port, AOF with fsync once a second, data in ``directory``."""
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server not found on PATH; pass --url redis://host:port/db")
    port = _free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
            "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
            "--logfile", "redis.log"]  # fmt: skip
    process = subprocess.Popen(args)
    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    client.close()
    return process, f"redis://127.0.0.1:{port}/0"


async def preload(url: str, n: int, header: IndexHeader) -> dict[str, float]:
    """Empty the index, bulk-load N pages; seconds taken and bytes of Redis memory per page."""
    client = redis.Redis.from_url(url)
    client.flushdb()
    before = int(client.info("memory")["used_memory"])
    store = RedisStore.from_url(url, header, name=NAME)
    fps = stored_fps(n)
    keys = [URL_PATTERN.format(i) for i in range(n)]
    started = time.perf_counter()
    await store.add_many(fps, keys, fps.tolist())  # signature: the fingerprint (see workload)
    seconds = time.perf_counter() - started
    await store.close()
    after = int(client.info("memory")["used_memory"])
    url_hash = int(client.memory_usage(f"{{{NAME}}}:keys", samples=0) or 0)
    client.close()
    return {
        "seconds": seconds,
        "bytes_per_fp": (after - before) / n,
        "url_bytes_per_fp": url_hash / n,
    }


def _redis_worker(
    url: str, header: IndexHeader, n: int, ops: int, worker: int, inflight: int, barrier, queue
) -> None:
    fps = workload(n, ops, worker)

    async def main() -> tuple[list[float], float]:
        store = RedisStore.from_url(url, header, name=NAME, max_connections=inflight)
        await store.count()  # connect before the clock starts
        latencies: list[float] = []

        async def client(part: list[int], tag: int) -> None:
            for i, fp in enumerate(part):
                t0 = time.perf_counter()
                await store.check_and_add(fp, f"https://w{worker}.example/{tag}/{i}", fp)
                latencies.append(time.perf_counter() - t0)

        barrier.wait()
        started = time.perf_counter()
        await asyncio.gather(*(client(fps[j::inflight], j) for j in range(inflight)))
        seconds = time.perf_counter() - started
        await store.close()
        return latencies, seconds

    queue.put(asyncio.run(main()))


def run_redis(
    url: str, header: IndexHeader, n: int, ops: int, processes: int, inflight: int
) -> tuple[float, ...]:
    """Total ops/s, median and p99 latency of ``processes`` x ``inflight`` concurrent clients."""
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(processes), ctx.Queue()
    workers = [
        ctx.Process(
            target=_redis_worker,
            args=(
                url,
                header,
                n,
                ops // processes,
                w + 100 * processes * inflight,
                inflight,
                barrier,
                queue,
            ),
        )
        for w in range(processes)
    ]
    for w in workers:
        w.start()
    results = [queue.get() for _ in workers]
    for w in workers:
        w.join()
    latencies = [x for lat, _ in results for x in lat]
    return summarize(latencies, max(s for _, s in results))


# -- embedded ----------------------------------------------------------------------------------


def run_embedded(n: int, ops: int, header: IndexHeader) -> tuple[float, ...]:
    """ops/s, median and p99 latency of EmbeddedIndex.check_and_add at the same size and mix."""
    with tempfile.TemporaryDirectory() as tmp:
        index = EmbeddedIndex(Path(tmp) / "index", header, commit_interval=1.0)
        fps = stored_fps(n)
        for i, fp in enumerate(fps.tolist()):
            index.add(fp, URL_PATTERN.format(i), fp)
        index.commit()
        queries = workload(n, ops, 0)
        latencies = []
        started = time.perf_counter()
        for i, fp in enumerate(queries):
            t0 = time.perf_counter()
            index.check_and_add(fp, f"https://embedded.example/{i}", fp)
            latencies.append(time.perf_counter() - t0)
        seconds = time.perf_counter() - started
        index.close()
    return summarize(latencies, seconds)


# -- main --------------------------------------------------------------------------------------


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--ops", type=int, default=20_000, help="check-and-adds per run")
    parser.add_argument("--url", help="an existing Redis (its database is FLUSHED)")
    parser.add_argument("--design", default="4-table", help="index design (default 4-table)")
    parser.add_argument("--k", type=int, default=3, help="k (default 3)")
    parser.add_argument("--confirm-k", type=int, default=14, help="confirm_k (default 14)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    header = IndexHeader(design=args.design, k=args.k, confirm_k=args.confirm_k)

    tmp = Path(tempfile.mkdtemp(prefix="neardupe-redis-bench-"))
    server = None
    url = args.url
    if url is None:
        server, url = start_redis(tmp)
    try:
        version = redis.Redis.from_url(url).info("server")["redis_version"]
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"Redis {version} at {url} (loopback), {os.cpu_count()} CPUs (load average {load}), "
            f"design {header.design} k={header.k} confirm_k={header.confirm_k} (signature of a "
            "page: its fingerprint, so near copies confirm)"
        )
        print("ops: check_and_add, half new pages (insert), half near copies (match)\n")
        head = (
            f"{'stored N':>9} {'backend':<9} {'procs x inflight':>16} {'ops/s':>9} "
            f"{'median ms':>10} {'p99 ms':>8}"
        )
        print(head)
        print("-" * len(head))
        notes = []
        for n in args.sizes:
            loaded = asyncio.run(preload(url, n, header))
            notes.append(
                f"N={n:>9,}: preload {loaded['seconds']:.1f} s "
                f"({n / loaded['seconds']:,.0f} fps/s bulk); Redis memory "
                f"{loaded['bytes_per_fp']:.0f} B/fp (of which URL hash "
                f"{loaded['url_bytes_per_fp']:.0f} B, URLs ~{len(URL_PATTERN.format(0))} chars)"
            )
            single = None
            for procs, inflight in ((1, 1), (1, 8), (4, 1), (4, 8)):
                rate, med, p99 = run_redis(url, header, n, args.ops, procs, inflight)
                if (procs, inflight) == (1, 1):
                    single = rate
                print(
                    f"{n:>9,} {'redis':<9} {f'{procs} x {inflight}':>16} {rate:>9,.0f} "
                    f"{med:>10.3f} {p99:>8.3f}"
                )
            rate, med, p99 = run_embedded(n, args.ops, header)
            print(
                f"{n:>9,} {'embedded':<9} {'1 x 1':>16} {rate:>9,.0f} {med:>10.3f} {p99:>8.3f}"
                f"   (embedded / redis 1x1 = {rate / single:.1f}x)"
            )
        print()
        for note in notes:
            print(note)
        print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print("targets: >= 5,000 check-and-inserts/s from one process, p99 <= 5 ms")
        print("anchor: datasketch MinHashLSH on Redis ~162 inserts/s, ~28 ms per query")
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
