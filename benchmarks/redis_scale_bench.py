"""Check-and-add on one Redis (``--topologies node cluster3``: and on a 3-node cluster, loaded
after it) holding up to 10^8 pages: the index built with numpy, streamed, bucket family by
bucket family, then ``redis_bench.py``'s rounds against it.

``RedisStore.add_many`` holds a whole load in memory (3.5 GB of loader for 10^7 pages), so
10^8 pages are written here directly in the store's format: ``redis_bench.py``'s pages
(70-byte URLs, ``--sentences`` sentences of 150 letters (4), signature = fingerprint), each
bucket family (table t, sentences, pages) in passes over the pages by key range
(``--chunk`` bytes of records a pass), each bucket SET whole.  The records are checked
against the store's own (its layout's ``page_record`` and sentence records under
``recorded``), and a
sample of pages is found by ``query`` (its fingerprint) and ``holders`` (its sentences)
before the rounds.  Reported per size: load seconds, bytes a page (INFO used_memory), then
per round ops/s, p50/p99, server CPU and commands per check (per node) and crawler CPU per
check, and their medians (and a cluster's capacity against one node's); with
``--old REV`` that revision's code runs rounds too, in turn with this tree's, against the
same index (a revision before format 4, 48ae2a7, refuses the format-4 index this tree builds).

    python benchmarks/redis_scale_bench.py [--sizes 1000000 100000000] [--ops 20000] [--old REV]
        [--topologies node cluster3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import redis_bench as rb  # noqa: E402

from nearDupe.shorttext import SENTENCE_PAGE_LETTERS  # noqa: E402
from nearDupe.store.base import SAMPLE_SENTENCES, SKETCH_SENTENCES  # noqa: E402

#: Pages generated at once (their records: ~1.2 GB of loader memory at 10^7).
BLOCK = 5_000_000
#: The URL of page i: the fixed text around its 9 digits.
_HEAD, _TAIL = (part.encode() for part in rb.URL.split("{:09d}"))

#: Sentences a page's sketch keeps and a page is recorded under (its smallest hashes).
SKETCHED = min(rb.SENTENCES, SKETCH_SENTENCES)
SAMPLE = min(rb.SENTENCES, SAMPLE_SENTENCES)
assert rb.SENTENCES * rb.SENTENCE_LETTERS >= SENTENCE_PAGE_LETTERS, "recorded under a sample"

Rows = tuple[np.ndarray, np.ndarray]  # (bucket prefix per record, records as uint8 rows)


def _be(values: np.ndarray, width: int) -> np.ndarray:
    """The low ``width`` bytes of uint64s, big-endian, one row each."""
    return values.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - width :]


def table_rows(
    store: Any, t: int, fps: np.ndarray, keep: Callable[[np.ndarray], np.ndarray]
) -> Rows:
    """Table t's bucket prefix and record (its permuted bits below the prefix) of each page."""
    shift = np.uint64(64 - store.layout.bucket_bits[t])
    permuted = store.design.permute(t, fps)
    prefixes = permuted >> shift
    kept = keep(prefixes)
    low = permuted[kept] & ((np.uint64(1) << shift) - np.uint64(1))
    return prefixes[kept], _be(low, store.layout.widths[t])


def sentence_rows(
    store: Any, first: int, fps: np.ndarray, keep: Callable[[np.ndarray], np.ndarray]
) -> Rows:
    """Each page's records under its SAMPLE_SENTENCES smallest sentence hashes (its letters
    are over SENTENCE_PAGE_LETTERS)."""
    records = store.layout.sentences
    hashes = rb.sentence_hashes(np.arange(first, first + len(fps)))[:, :SAMPLE].ravel()
    pages = np.repeat(fps, SAMPLE)
    prefixes = hashes >> np.uint64(store.layout.sentence_shift)
    kept = keep(prefixes)
    table = records.table(hashes[kept], pages[kept])
    return prefixes[kept], np.frombuffer(table, np.uint8).reshape(-1, records.size)


def page_rows(
    store: Any, first: int, fps: np.ndarray, keep: Callable[[np.ndarray], np.ndarray]
) -> Rows:
    """Each page's record in its page bucket, as the layout's ``page_record`` writes it for
    a bulk load (writer zero, the sketch of its SKETCHED smallest sentence hashes)."""
    from nearDupe.store.base import TAIL_BYTES
    from nearDupe.store.redis_records import SIGNED, STORED_FP, WRITER, stored_key

    code, head = stored_key(_HEAD.decode())

    prefixes = fps >> np.uint64(store.layout.page_shift)
    kept = np.flatnonzero(keep(prefixes))
    fp = fps[kept]
    index = np.uint64(first) + kept.astype(np.uint64)
    n = len(fp)
    tails = rb.sentence_hashes(index)[:, :SKETCHED] & np.uint64(2 ** (8 * TAIL_BYTES) - 1)
    letters = rb.SENTENCES * rb.SENTENCE_LETTERS
    sketched = SKETCHED * rb.SENTENCE_LETTERS
    digits = np.stack(
        [(index // np.uint64(10 ** (8 - d))) % np.uint64(10) + np.uint64(48) for d in range(9)],
        axis=1,
    ).astype(np.uint8)
    raw_length = TAIL_BYTES * SKETCHED + len(head) + 9 + len(_TAIL)
    columns = [
        _be(fp, STORED_FP),
        np.zeros((n, WRITER), np.uint8),
        _be(fp, 8),  # the signature: the fingerprint
        np.tile(_be(np.array([letters, sketched], np.uint64), 3).ravel(), (n, 1)),
        np.full((n, 1), SKETCHED | SIGNED | code, np.uint8),
        np.tile(_be(np.array([raw_length], np.uint64), 2), (n, 1)),
        tails.astype(">u2").view(np.uint8).reshape(n, -1),
        np.tile(np.frombuffer(head, np.uint8), (n, 1)),
        digits,
        np.tile(np.frombuffer(_TAIL, np.uint8), (n, 1)),
    ]
    return prefixes[kept], np.concatenate(columns, axis=1)


def _buckets(prefixes: np.ndarray, rows: np.ndarray) -> Iterator[tuple[int, bytes]]:
    """(prefix, the records of its bucket) per distinct prefix."""
    order = np.argsort(prefixes, kind="stable")
    ordered, rows = prefixes[order], rows[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    for start, stop in zip(starts, np.r_[starts[1:], len(order)], strict=True):
        yield int(ordered[start]), rows[start:stop].tobytes()


def load(store: Any, client: Any, n: int, chunk: int) -> None:
    """Write n pages' buckets, family by family, each in as many passes by key range as keep
    a pass's records under ``chunk`` bytes."""
    from nearDupe.store.base import Sketch

    layout = store.layout
    sketch = Sketch(0, 0, bytes(2 * SKETCHED))
    page_record = len(layout.page_record(0, rb.URL.format(0), 0, sketch))
    families: list[tuple[int, Callable[..., Rows], Callable[[int], str]]] = [
        (
            n * layout.widths[t],
            lambda first, fps, keep, t=t: table_rows(store, t, fps, keep),
            lambda prefix, t=t: layout.bucket_key(t, prefix),
        )
        for t in range(len(layout.bucket_bits))
    ]
    families += [
        (
            n * SAMPLE * layout.sentences.size,
            lambda first, fps, keep: sentence_rows(store, first, fps, keep),
            lambda prefix: layout.sentence_key(prefix << layout.sentence_shift),
        ),
        (
            n * page_record,
            lambda first, fps, keep: page_rows(store, first, fps, keep),
            lambda prefix: layout.page_key(prefix << layout.page_shift),
        ),
    ]
    for size, rows_of, key_of in families:
        passes = -(-size // chunk)
        for part in range(passes):

            def keep(prefixes: np.ndarray, part: int = part, passes: int = passes) -> np.ndarray:
                return prefixes % np.uint64(passes) == np.uint64(part)

            got = [
                rows_of(first, rb.stored_fps(np.arange(first, min(n, first + BLOCK))), keep)
                for first in range(0, n, BLOCK)
            ]
            prefixes = np.concatenate([p for p, _ in got])
            rows = np.concatenate([r for _, r in got])
            del got
            pipe = client.pipeline(transaction=False)
            for prefix, value in _buckets(prefixes, rows):
                pipe.set(key_of(prefix), value)
                if len(pipe) >= 200:
                    pipe.execute()
            pipe.execute()
    client.set(store._count_key, n)


def _check_records(store: Any) -> None:
    """The loader's page and sentence records of a few pages are the store's own bytes."""
    from nearDupe.store.base import recorded, sketch_of

    def every(prefixes: np.ndarray) -> np.ndarray:
        return np.ones(len(prefixes), bool)

    fps = rb.stored_fps(np.arange(5))
    _, pages = page_rows(store, 0, fps, every)
    _, sentences = sentence_rows(store, 0, fps, every)
    for i, fp in enumerate(fps.tolist()):
        page = rb.stored_sentences(i)
        stored = store.layout.page_record(fp, rb.URL.format(i), fp, sketch_of(page))
        assert pages[i].tobytes() == stored
        mine = [r.tobytes() for r in sentences[i * SAMPLE : (i + 1) * SAMPLE]]
        assert mine == [store.layout.sentences.record(h, fp) for h, _ in recorded(page)]


async def _verify(store: Any, n: int, sample: int = 200) -> None:
    """Sample pages found by their fingerprint (distance 0, their URL) and their sentences."""
    from nearDupe.store import Match

    rng = np.random.default_rng(5)
    for i in rng.integers(0, n, sample).tolist():
        fp = int(rb.stored_fps(np.array([i]))[0])
        sentences = rb.stored_sentences(i)
        found = await store.query(fp, signature=fp, sentences=sentences)
        assert Match(rb.URL.format(i), fp, 0) in found, (i, found[:3])
        assert rb.URL.format(i) in {h.key for h in await store.holders(sentences)}
    await store.close()


def main() -> None:
    """Load each size on a fresh Redis (and/or cluster), verify a sample, time the rounds,
    print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 100_000_000])
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--sentences", type=int, default=rb.SENTENCES, help="sentences a page")
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--inflight", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=2**28, help="loader bytes a pass")
    parser.add_argument("--maxmemory", default="21gb", help="Redis refuses writes above it")
    parser.add_argument(
        "--old", default="", help="git revision whose code also runs the rounds, in turn"
    )
    parser.add_argument(
        "--topologies",
        nargs="+",
        default=["node"],
        choices=["node", "cluster3"],
        help="one Redis, and/or a 3-node cluster (each loaded in turn: one at a time in memory)",
    )
    parser.add_argument(
        "--layout-pages",
        type=int,
        default=0,
        help="NEARDUPE_REDIS_PAGES of the index (0: default)",
    )
    a = parser.parse_args()
    os.environ["REDIS_BENCH_SENTENCES"] = str(a.sentences)  # the subprocesses read it
    if a.sentences != rb.SENTENCES:  # this process's pages too
        os.execv(sys.executable, [sys.executable, *sys.argv])
    load_avg = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} CPUs (load {load_avg}); {rb.HEADER}; {a.procs} processes x "
          f"{a.inflight} in flight, pages of {a.sentences} sentences, {a.ops} check-and-adds a "
          f"round (half new, half near copies), laid out for {a.layout_pages or 'the default'} "
          f"pages; server us, commands: a check, per node")  # fmt: skip
    print(f"{'stored N':>12} {'code':<4} {'topology':<8} {'load s':>7} {'B/page (nodes)':>16} "
          f"{'round':>5} {'ops/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'server us':>12} "
          f"{'client us':>9} {'commands':>14}")  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="neardupe-scale-"))
    codes = [("new", HERE.parent)]
    if a.old:
        codes.insert(0, ("old", rb.tree(a.old, tmp / "old")))
    capacity: dict[tuple[int, str], list[float]] = {}
    for n in a.sizes:
        for topology in a.topologies:
            capacity[n, topology] = _size(n, topology, codes, a, tmp)
    for n in a.sizes:
        if len(a.topologies) == 2:
            node, cluster = capacity[n, "node"], capacity[n, "cluster3"]
            print(f"{n:>12,} 3-node cluster vs one node, this tree's capacity (checks/s one core "
                  f"a node sustains, medians of the rounds): {cluster[-1]:,.0f} / {node[-1]:,.0f}"
                  f" = {cluster[-1] / node[-1]:.2f}x")  # fmt: skip


def _size(n: int, topology: str, codes: list[tuple[str, Path]], a: Any, tmp: Path) -> list[float]:
    """Load n pages on a fresh Redis (or 3-node cluster), verify a sample, time the codes'
    rounds in turn; per code, its median capacity (checks/s one core a node sustains)."""
    import redis
    from redis_server import RedisCluster, RedisServer

    cluster = topology == "cluster3"
    extra = ("--appendonly", "no", "--maxmemory", a.maxmemory)
    servers: Any = (
        RedisCluster(tmp / f"cluster-{n}") if cluster else RedisServer(tmp / f"node-{n}")
    )
    for server in servers.nodes if cluster else [servers]:
        server.extra = (*server.extra, *extra)
    with servers:
        ports = [s.port for s in servers.nodes] if cluster else [servers.port]
        client: Any = (redis.RedisCluster if cluster else redis.Redis)("127.0.0.1", ports[0])
        before = rb._memory(ports)
        options = {"pages": a.layout_pages} if a.layout_pages else {}
        store = rb._open(servers.url, cluster, **options)
        _check_records(store)
        started = time.perf_counter()
        load(store, client, n, a.chunk)
        seconds = time.perf_counter() - started
        per_node = [(m - b) / n for m, b in zip(rb._memory(ports), before, strict=True)]
        per_page = f"{sum(per_node):.0f}"
        if cluster:
            per_page += f" ({rb.per_node(per_node, '.0f')})"
        asyncio.run(_verify(rb._open(servers.url, cluster), n))
        rounds: dict[str, list[dict]] = {code: [] for code, _ in codes}
        for r in range(a.rounds):  # the codes in turn, each first in some round
            for code, path in codes[r % len(codes) :] + codes[: r % len(codes)]:
                # Pages of their own (seeds by round and code): not the copies of
                # the new pages the other code has just stored.
                seeds = r * len(codes) + [c for c, _ in codes].index(code)
                done = rb.run_round(path, servers.url, ports, cluster, n, a, seeds)
                rounds[code].append(done)
                print(f"{n:>12,} {code:<4} {topology:<8} {seconds:>7.0f} {per_page:>16} "
                      f"{r:>5} {done['rate']:>7,.0f} {done['p50']:>7.2f} {done['p99']:>7.2f} "
                      f"{rb.per_node(done['cpu_us'], '.0f'):>12} "
                      f"{done['client_us']:>9.0f} {rb.per_node(done['commands'], '.1f'):>14}",
                      flush=True)  # fmt: skip
        median = statistics.median
        out = []
        for code, got in rounds.items():
            cpu = [median(r["cpu_us"][i] for r in got) for i in range(len(ports))]
            commands = [median(r["commands"][i] for r in got) for i in range(len(ports))]
            print(f"{n:>12,} {code:<4} {topology:<8} {seconds:>7.0f} {per_page:>16} "
                  f"{'med':>5} {median(r['rate'] for r in got):>7,.0f} "
                  f"{median(r['p50'] for r in got):>7.2f} "
                  f"{median(r['p99'] for r in got):>7.2f} "
                  f"{rb.per_node(cpu, '.0f'):>12} {median(r['client_us'] for r in got):>9.0f} "
                  f"{rb.per_node(commands, '.1f'):>14}",
                  flush=True)  # fmt: skip
            out.append(median(1e6 / max(r["cpu_us"]) for r in got))
        client.close()
        return out


if __name__ == "__main__":
    main()
