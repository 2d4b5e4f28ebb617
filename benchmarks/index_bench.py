"""Benchmark of BlockIndex, the new default beside the old one and peers; prints the goals.

Run: python benchmarks/index_bench.py [--sizes 1e5 1e6 1e7 1e8]
     python benchmarks/index_bench.py --kernels [--sizes 1e4 1e5 1e6 1e7]
     python benchmarks/index_bench.py --whole-check --base DIR [--sizes 1e5 1e6]
     python benchmarks/index_bench.py --bulk [--sizes 1e5 1e6 1e7]
     python benchmarks/index_bench.py --import [--sizes 1e5 1e6]

``--bulk`` times a bulk load (EmbeddedIndex.load) beside adds one by one, in pages/s of wall
and of CPU time, then the index's open. ``--import`` times ``scrapy neardupe import``'s
decisions on analysed items (importer.import_feed) beside check_and_add item by item.

``--whole-check`` times the whole check-and-add through the embedded store (new pages,
fingerprint copies, sentence copies), this code beside the checkout in DIR (e.g. one made by
``git worktree add /tmp/nd-base HEAD``): see benchmarks/_whole_check.py.

``--kernels`` compares numpy's kernels with numba's compiled ones (nearDupe/kernels.py picks
between them by the index's size): single queries, single adds and the sentence-sample lookup.

For each size, random uint64 fingerprints are stored and queried (half stored ones with 1-3
bits flipped, half random) by the new default (4-table, k=3) and the old one (blocks-10-11,
k=10), each checked against numpy brute force on a sample of the queries. Memory: steady is
the index after compaction; peak is the most held during each phase (build by add_many in
batches, which merges runs; compact after single adds; snapshot save; snapshot load), by
tracemalloc and by the resident set's high-water mark. Peers (skipped with a note when not
installed or above --peer-cap): numpy brute force, pynear MIHBinaryIndex, faiss
IndexBinaryMultiHash.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import math
import shutil
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nearDupe import kernels
from nearDupe.designs import Design
from nearDupe.index import BlockIndex
from nearDupe.sample_index import SampleIndex
from nearDupe.store.embedded_files import read_rows, write_rows

#: (design, k): the new default and the one it replaces.
NEW, OLD = ("4-table", 3), ("blocks-10-11", 10)
#: Peers answer at the new default's k.
K = NEW[1]
#: Timed passes over the queries; the fastest pass is reported (the machine is shared).
REPEAT = 3
#: Batches of the build: each add_many merges into everything before it (the largest merges).
BUILD_BATCHES = 4
#: Single adds before compact(), so it merges a small run into the big one.
SINGLE_ADDS = 5_000
#: Single adds timed at the end (each 1024th flushes the buffer into a run, and may merge).
TIMED_ADDS = 20_000
#: Seconds of single queries per design and size: caps the query count where a query is slow
#: (blocks-10-11 at 1e8 scans ~20 M candidates, ~30 ms).
QUERY_BUDGET_S = 20.0
#: At least this many queries are timed, whatever the budget.
MIN_QUERIES = 50
#: Scan cost per candidate (ns; blocks-10-11 at 1e7: 6.7 ms for 2.0 M) and per query (µs).
NS_PER_CANDIDATE, US_PER_QUERY = 3.3, 5.0
#: Brute force compares this many stored fingerprints per numpy call (80 MB temporaries).
BRUTE_CHUNK = 10_000_000
#: A design is skipped when its estimated peak exceeds this share of available memory.
MEMORY_SHARE = 0.8

LIBC = ctypes.CDLL("libc.so.6")

GOALS_TEXT = (
    "p50 lookup <= 100 µs @1e7, <= 1 ms @1e8; slope 1e6->1e8 <= 0.6; exact; "
    "tables <= 36 B/page (total <= 64); peak <= 2x steady"
)


def read_status_kib(field_name: str) -> int:
    """A VmXXX figure of /proc/self/status, in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise KeyError(field_name)


def available_bytes() -> int:
    """MemAvailable of /proc/meminfo."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise KeyError("MemAvailable")


@dataclass
class Peak:
    """The most memory held during one phase: traced by tracemalloc and resident (HWM)."""

    traced: float = 0
    rss: float = 0


def settle() -> int:
    """Collect garbage and return freed heap to the system (so RSS shows what is held); RSS."""
    gc.collect()
    LIBC.malloc_trim(0)
    return read_status_kib("VmRSS") * 1024


@contextmanager
def measure_peak(peak: Peak, rss_base: int) -> Iterator[None]:
    """Record a phase's tracemalloc peak and resident high-water mark above ``rss_base``."""
    settle()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    tracemalloc.reset_peak()
    yield
    peak.traced = tracemalloc.get_traced_memory()[1]
    peak.rss = read_status_kib("VmHWM") * 1024 - rss_base


def percentiles_us(ns: Sequence[int]) -> tuple[float, float]:
    """p50 and p99 of nanosecond timings, in microseconds."""
    a = np.asarray(ns, dtype=np.float64) / 1e3
    return float(np.median(a)), float(np.percentile(a, 99))


def make_queries(stored: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Half stored fingerprints with 1-3 bits flipped, half random."""
    near = stored[rng.integers(0, len(stored), n // 2)].copy()
    for i in range(len(near)):
        for bit in rng.choice(64, size=rng.integers(1, K + 1), replace=False):
            near[i] ^= np.uint64(1) << np.uint64(bit)
    qs = np.concatenate([near, rng.integers(0, 2**64, n - n // 2, dtype=np.uint64)])
    rng.shuffle(qs)
    return qs


def brute_force(
    stored: np.ndarray, qs: np.ndarray, k: int
) -> tuple[list[set[tuple[int, int]]], list[int]]:
    """Every stored fingerprint within k of each query with its distance, and each query's ns."""
    truth, ns = [], []
    for q in qs:
        t = time.perf_counter_ns()
        found: set[tuple[int, int]] = set()
        for start in range(0, len(stored), BRUTE_CHUNK):
            chunk = stored[start : start + BRUTE_CHUNK]
            d = np.bitwise_count(chunk ^ q)
            hit = np.flatnonzero(d <= k)
            found.update((int(chunk[i]), int(d[i])) for i in hit)
        ns.append(time.perf_counter_ns() - t)
        truth.append(found)
    return truth, ns


def within(truth: list[set[tuple[int, int]]], k: int) -> list[set[tuple[int, int]]]:
    """The truth of a larger k cut to k."""
    return [{m for m in t if m[1] <= k} for t in truth]


def recall(found: list[set[int]], truth: list[set[tuple[int, int]]]) -> float:
    """Fraction of true (fingerprint) matches found."""
    want = sum(len(t) for t in truth)
    got = sum(len(f & {fp for fp, _ in t}) for f, t in zip(found, truth, strict=True))
    return got / want if want else 1.0


@dataclass
class Row:
    """One line of a size's table."""

    name: str
    single: tuple[float, float] | None = None
    batched: float | None = None
    queries: int = 0
    candidates: float | None = None
    steady: float | None = None
    peaks: dict[str, Peak] = field(default_factory=dict)
    recall: float | None = None
    exact: bool | None = None
    build_s: float | None = None
    bytes_note: str = ""
    notes: list[str] = field(default_factory=list)

    def peak_ratio(self, kind: str) -> tuple[float, str]:
        """Highest phase peak / steady by 'traced' or 'rss', and its phase."""
        assert self.steady
        phase = max(self.peaks, key=lambda p: getattr(self.peaks[p], kind))
        return getattr(self.peaks[phase], kind) / self.steady, phase


def time_single(query: Callable[[int], object], qs: Sequence[int]) -> list[int]:
    """Nanoseconds of each single query, from the fastest of REPEAT passes."""
    query(qs[0])
    clock = time.perf_counter_ns
    best: list[int] = []
    for _ in range(REPEAT):
        out = []
        for q in qs:
            t = clock()
            query(q)
            out.append(clock() - t)
        if not best or sum(out) < sum(best):
            best = out
    return best


def time_batch(run: Callable[[], object], n: int) -> float:
    """Microseconds per query of a batched call, fastest of REPEAT."""
    run()
    best = float("inf")
    for _ in range(REPEAT):
        t = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t)
    return best / n * 1e6


def candidates(index: BlockIndex, qs: np.ndarray) -> float:
    """Mean stored fingerprints sharing a query's prefix, summed over tables (one run)."""
    (run,) = index._runs
    total = 0
    for t, table in enumerate(index.design.tables):
        shift = np.uint64(64 - table.prefix_bits)
        lo = (index.design.permute(t, qs) >> shift) << shift
        hi = lo | ((np.uint64(1) << shift) - np.uint64(1))
        row = run.keys[t]
        total += int((np.searchsorted(row, hi, "right") - np.searchsorted(row, lo)).sum())
    return total / len(qs)


def query_count(design: Design, n: int, wanted: int) -> int:
    """Queries to time: all wanted, unless that exceeds QUERY_BUDGET_S."""
    us = design.expected_candidates(n) * NS_PER_CANDIDATE / 1e3 + US_PER_QUERY
    return min(wanted, max(MIN_QUERIES, int(QUERY_BUDGET_S * 1e6 / us / (REPEAT + 2))))


def exactness(index: BlockIndex, sample: np.ndarray, truth: list[set[tuple[int, int]]]) -> bool:
    """Single and batched answers both equal brute force's, distances included."""
    batched = [set(r) for r in index.query_many(sample)]
    singles = [set(index.query(q)) for q in sample.tolist()]
    return batched == truth == singles


def bench_ours(
    name: str,
    k: int,
    stored: np.ndarray,
    qs: np.ndarray,
    sample: np.ndarray,
    truth: list[set[tuple[int, int]]],
    workdir: Path,
) -> Row:
    """BlockIndex: build, compact, queries, exactness, save and load, with memory peaks."""
    design = Design.named(name)
    n = len(stored)
    row = Row(f"{name} k={k}")
    need = len(design.tables) * 8 * n * 1.5  # tables, plus one row and temporaries
    if need > MEMORY_SHARE * available_bytes():
        row.notes.append(
            f"skipped: needs ~{need / 2**30:.1f} GiB, {available_bytes() / 2**30:.1f} available"
        )
        return row
    BlockIndex(design)  # kernels loaded before anything is measured
    truth = within(truth, k)
    rss_base = settle()
    tracemalloc.start()
    try:
        t = time.perf_counter()
        with measure_peak(row.peaks.setdefault("build", Peak()), rss_base):
            index = BlockIndex(design)
            for batch in np.array_split(stored, BUILD_BATCHES):
                index.add_many(batch)
        row.build_s = time.perf_counter() - t
        rng = np.random.default_rng(n + 7)
        extra = rng.integers(0, 2**64, SINGLE_ADDS, dtype=np.uint64)
        for fp in extra.tolist():
            index.add(fp)
        with measure_peak(row.peaks.setdefault("compact", Peak()), rss_base):
            index.compact()
        total = len(index)
        steady = index.nbytes
        row.steady = steady / total
        path = workdir / "tables.npy"
        with measure_peak(row.peaks.setdefault("save", Peak()), rss_base), open(path, "wb") as f:
            write_rows(f, index.compact())
        del index
        load = row.peaks.setdefault("load", Peak())
        with measure_peak(load, rss_base), open(path, "rb") as f:
            index = BlockIndex.from_run(design, read_rows(f, len(design.tables), total))
        path.unlink()
    finally:
        tracemalloc.stop()
    for peak in row.peaks.values():  # as bytes per page, like steady
        peak.traced, peak.rss = peak.traced / total, peak.rss / total
    # The extra adds join the truth: brute force over them only.
    extra_truth, _ = brute_force(extra, sample, k)
    full_truth = [a | b for a, b in zip(truth, extra_truth, strict=True)]
    row.exact = exactness(index, sample, full_truth)
    found = [{fp for fp, _ in r} for r in index.query_many(sample)]
    row.recall = recall(found, full_truth)
    row.candidates = candidates(index, qs)
    row.queries = query_count(design, n, len(qs))
    timed = qs[: row.queries]
    row.single = percentiles_us(time_single(index.query, timed.tolist()))
    row.batched = time_batch(lambda: index.query_many(timed), len(timed))
    new = np.random.default_rng(n + 8).integers(0, 2**64, TIMED_ADDS, dtype=np.uint64)
    add_ns = []
    for fp in new.tolist():
        t0 = time.perf_counter_ns()
        index.add(fp)
        add_ns.append(time.perf_counter_ns() - t0)
    p50, p99 = percentiles_us(add_ns)
    row.notes.append(
        f"{TIMED_ADDS:,} single add() after the queries: p50 {p50:.1f} µs, p99 {p99:.1f} µs, "
        f"max {max(add_ns) / 1e3:,.0f} µs (a flush and merges)"
    )
    row.bytes_note = (
        f"{len(design.tables)} tables of 8 B + {row.steady - 8 * len(design.tables):.2f} "
        "of directories"
    )
    return row


def bench_brute(ns: list[int]) -> Row:
    """numpy brute force: popcount(stored ^ q) <= k over every stored fingerprint."""
    row = Row("numpy brute force", queries=len(ns), recall=1.0, exact=True)
    row.single = percentiles_us(ns)
    row.steady = 8.0
    row.notes.append(f"chunks of {BRUTE_CHUNK:,}; timed while computing the truth")
    return row


def bench_pynear(stored: np.ndarray, qs: np.ndarray, truth: list) -> Row:
    """pynear MIHBinaryIndex with m=4 16-bit substrings (exact for k=3 by pigeonhole)."""
    row = Row("pynear MIH m=4")
    try:
        import pynear
    except ImportError:
        row.notes.append("skipped: `pip install pynear` failed or not installed")
        return row
    codes = stored.view(np.uint8).reshape(-1, 8)
    qcodes = qs.view(np.uint8).reshape(-1, 8)
    rss0 = settle()
    t = time.perf_counter()
    index = pynear.MIHBinaryIndex(4)
    index.set(codes)
    row.build_s = time.perf_counter() - t
    row.steady = (settle() - rss0) / len(stored)
    row.bytes_note = "RSS growth"
    nn = 8  # kNN with a radius: ask for 8 neighbours, keep those within K

    def query(i: int) -> None:
        index.searchKNN_arrays(qcodes[i : i + 1], nn, K)

    row.queries = len(qs)
    row.single = percentiles_us(time_single(query, list(range(len(qs)))))
    row.batched = time_batch(lambda: index.searchKNN_arrays(qcodes, nn, K), len(qs))
    ids, dist = index.searchKNN_arrays(qcodes, nn, K)
    found = [
        {int(stored[j]) for j, d in zip(i_row, d_row, strict=True) if j >= 0 and d <= K}
        for i_row, d_row in zip(ids, dist, strict=True)
    ]
    row.recall = recall(found, truth)
    row.notes.append("kNN (8) with a radius: no pure range search; no single inserts")
    return row


def bench_faiss(stored: np.ndarray, qs: np.ndarray, truth: list) -> Row:
    """faiss IndexBinaryMultiHash, 4 tables of 16 bits (exact for k=3), one thread."""
    row = Row("faiss BinaryMultiHash")
    try:
        import faiss
    except ImportError:
        row.notes.append("skipped: `pip install faiss-cpu` failed or not installed")
        return row
    faiss.omp_set_num_threads(1)
    codes = np.ascontiguousarray(stored.view(np.uint8).reshape(-1, 8))
    qcodes = np.ascontiguousarray(qs.view(np.uint8).reshape(-1, 8))
    rss0 = settle()
    t = time.perf_counter()
    index = faiss.IndexBinaryMultiHash(64, 4, 16)
    index.add(codes)
    row.build_s = time.perf_counter() - t
    row.steady = (settle() - rss0) / len(stored)
    row.bytes_note = "RSS growth"

    def query(i: int) -> None:
        index.range_search(qcodes[i : i + 1], K + 1)

    row.queries = len(qs)
    row.single = percentiles_us(time_single(query, list(range(len(qs)))))
    row.batched = time_batch(lambda: index.range_search(qcodes, K + 1), len(qs))
    lims, _, ids = index.range_search(qcodes, K + 1)
    found = [{int(stored[j]) for j in ids[lims[i] : lims[i + 1]]} for i in range(len(qs))]
    row.recall = recall(found, truth)
    row.notes.append("1 OpenMP thread")
    return row


PEERS = {"pynear MIH m=4": bench_pynear, "faiss BinaryMultiHash": bench_faiss}


def fmt(value: float | None, spec: str) -> str:
    """A figure, or '-' when not measured."""
    return "-" if value is None else format(value, spec)


def print_table(n: int, rows: list[Row]) -> None:
    """One table per size: times, candidates, memory (B/page), exactness."""
    print(f"\n=== N = {n:,} stored fingerprints ===")
    head = (
        f"{'index':<22}{'p50 µs':>10}{'p99 µs':>10}{'batch µs':>9}{'queries':>8}{'cands':>12}"
        f"{'build s':>8}{'steady':>8}{'peak traced':>22}{'peak RSS':>22}{'recall':>8}{'exact':>6}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        p50, p99 = r.single if r.single else (None, None)
        traced = rss = "-"
        if r.peaks and r.steady:
            ratio, phase = r.peak_ratio("traced")
            traced = f"{ratio * r.steady:.1f} {ratio:.2f}x {phase}"
            ratio, phase = r.peak_ratio("rss")
            rss = f"{ratio * r.steady:.1f} {ratio:.2f}x {phase}"
        exact = "-" if r.exact is None else ("yes" if r.exact else "NO")
        print(
            f"{r.name:<22}{fmt(p50, '.1f'):>10}{fmt(p99, '.1f'):>10}{fmt(r.batched, '.2f'):>9}"
            f"{r.queries or '-':>8}{fmt(r.candidates, ',.0f'):>12}{fmt(r.build_s, '.1f'):>8}"
            f"{fmt(r.steady, '.1f'):>8}{traced:>22}{rss:>22}{fmt(r.recall, '.4f'):>8}{exact:>6}"
        )
        if r.peaks:
            phases = ", ".join(f"{p} {v.traced:.1f}/{v.rss:.1f}" for p, v in r.peaks.items())
            print(f"{'':<22}  peaks B/page traced/RSS: {phases}; {r.bytes_note}")
        elif r.bytes_note:
            print(f"{'':<22}  steady: {r.bytes_note}")
        for note in r.notes:
            print(f"{'':<22}  note: {note}")


def slope(results: dict[int, Row]) -> float | None:
    """log-log slope of p50 single-query time from 1e6 to 1e8."""
    a, b = results.get(10**6), results.get(10**8)
    if not (a and b and a.single and b.single):
        return None
    return math.log(b.single[0] / a.single[0]) / math.log(100)


def print_goals(ours: dict[str, dict[int, Row]]) -> None:
    """The performance goals with the measured figures of both designs."""
    print(f"\n=== Goals: {GOALS_TEXT} ===")
    head = f"{'goal':<44}" + "".join(f"{name:>24}" for name in ours) + "   new default"
    print(head)
    print("-" * len(head))

    def line(goal: str, value: Callable[[dict[int, Row]], float | None], limit: float) -> None:
        values = [value(results) for results in ours.values()]
        cells = "".join(f"{fmt(v, '.2f'):>24}" for v in values)
        new = values[0]
        verdict = "not measured" if new is None else "met" if new <= limit else "NOT met"
        print(f"{goal:<44}{cells}   {verdict}")

    def p50(n: int) -> Callable[[dict[int, Row]], float | None]:
        return lambda r: r[n].single[0] if n in r and r[n].single else None  # type: ignore[index]

    def worst(get: Callable[[Row], float]) -> Callable[[dict[int, Row]], float | None]:
        return lambda r: max((get(row) for row in r.values() if row.steady), default=None)

    line("p50 lookup @1e7 <= 100 µs", p50(10**7), 100)
    line("p50 lookup @1e8 <= 1000 µs", p50(10**8), 1000)
    line("log-log slope of p50, 1e6 -> 1e8 <= 0.6", slope, 0.6)
    line("tables B/page, worst size <= 36", worst(lambda r: r.steady or 0), 36)
    line("peak / steady, traced, worst <= 2", worst(lambda r: r.peak_ratio("traced")[0]), 2)
    line("peak / steady, RSS, worst <= 2", worst(lambda r: r.peak_ratio("rss")[0]), 2)
    line("peak / steady, RSS, worst at sizes >= 1e7 <= 2", rss_ratio, 2)
    line("inexact sizes (recall < 1 or other answers)", inexact, 0)
    print(
        "(verdicts are for the new default, the first column. RSS below 1e7: rows of 128 KB to "
        "32 MB come from glibc's heap, whose freed holes count until reused)"
    )


def rss_ratio(results: dict[int, Row]) -> float | None:
    """Worst RSS peak / steady at sizes of 1e7 and up (rows of 80 MB and more: mmapped)."""
    big = [row for n, row in results.items() if row.steady and n >= 10**7]
    return max((row.peak_ratio("rss")[0] for row in big), default=None)


def inexact(results: dict[int, Row]) -> float | None:
    """Sizes whose answers were not exactly brute force's."""
    measured = [row for row in results.values() if row.steady]
    if not measured:
        return None
    return float(sum(not (row.exact and row.recall == 1.0) for row in measured))


def bench_reopen(n: int, design: str) -> None:
    """Time adding n pages to an EmbeddedIndex, closing it and reopening it."""
    from nearDupe.store.base import IndexHeader
    from nearDupe.store.embedded import EmbeddedIndex

    tmp = Path(tempfile.mkdtemp(prefix="neardupe-bench-"))
    try:
        fps = np.random.default_rng(9).integers(0, 2**64, n, dtype=np.uint64).tolist()
        header = IndexHeader.for_settings(design, K)
        t = time.perf_counter()
        index = EmbeddedIndex(tmp, header, commit_interval=3600)
        for i, fp in enumerate(fps):
            index.add(fp, f"https://example.com/page/{i}")
        t_add = time.perf_counter() - t
        t = time.perf_counter()
        index.commit()
        t_commit = time.perf_counter() - t
        t = time.perf_counter()
        index.close()
        t_close = time.perf_counter() - t
        t = time.perf_counter()
        index = EmbeddedIndex(tmp, header)
        t_open = time.perf_counter() - t
        assert len(index) == n
        index.close()
        (tmp / "tables.npy").unlink()
        t = time.perf_counter()
        index = EmbeddedIndex(tmp, header)
        t_rebuild = time.perf_counter() - t
        index.close()
        size = sum(f.stat().st_size for f in tmp.iterdir())
        print(f"\n=== EmbeddedIndex ({design}), N = {n:,} pages ===")
        print(f"add one at a time     {t_add / n * 1e6:8.1f} µs/page ({t_add:.1f} s)")
        print(f"commit (SQLite)       {t_commit:8.2f} s")
        print(f"close (snapshot)      {t_close:8.2f} s")
        print(f"reopen from snapshot  {t_open:8.2f} s   (target <= 2 s)")
        print(f"reopen, no snapshot   {t_rebuild:8.2f} s   (rebuilt from SQLite)")
        print(f"on disk               {size / n:8.1f} B/page")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_kernels(sizes: list[float], queries: int) -> None:
    """numpy vs numba per size: query p50 (4-table, k=3), add (amortised, with its flushes and
    merges), sample lookup of 40 sentences p50 (index of ``size`` entries); a table."""
    kernels.load_numba()
    print(
        "| stored | query numpy / numba (µs p50) | add numpy / numba (µs) "
        "| sample lookup numpy / numba (µs p50, 40 sentences) |"
    )
    print("|---|---|---|---|")
    design = Design.named(NEW[0])
    for size in sizes:
        n = int(size)
        rng = np.random.default_rng(n)
        stored = rng.integers(0, 2**64, n, dtype=np.uint64)
        qs = make_queries(stored, queries, rng).tolist()
        adds = rng.integers(0, 2**64, TIMED_ADDS, dtype=np.uint64).tolist()
        hashes = rng.integers(0, 2**64, n, dtype=np.uint64)
        lookups = [hashes[rng.integers(0, n, 40)] for _ in range(queries // 4)]
        cells: dict[str, list[str]] = {"query": [], "add": [], "lookup": []}
        for backend in ("numpy", "numba"):
            kernels.force(backend)
            index = BlockIndex(design)
            index.add_many(stored)
            cells["query"].append(f"{percentiles_us(time_single(index.query, qs))[0]:.1f}")
            started = time.perf_counter()
            for fp in adds:
                index.add(fp)
            cells["add"].append(f"{(time.perf_counter() - started) / len(adds) * 1e6:.1f}")
            del index
            sample = SampleIndex()
            sample.add_many(np.arange(n) % 2**32, hashes)
            sample.add(1, hashes[:500].tolist())  # a half-full insert buffer
            times = time_single(sample.lookup, lookups)  # type: ignore[arg-type]
            cells["lookup"].append(f"{percentiles_us(times)[0]:.0f}")
            gc.collect()
        kernels.force(None)
        print(f"| {n:.0e} | " + " | ".join(" / ".join(c) for c in cells.values()) + " |")


def main() -> None:
    """Parse flags, run every size, print the tables and the goals."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", action="store_true", help="numpy vs numba kernels only")
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e5, 1e6, 1e7, 1e8])
    ap.add_argument("--queries", type=int, default=2000, help="queries timed (budget permitting)")
    ap.add_argument("--exact", type=int, default=100, help="queries checked by brute force")
    ap.add_argument("--peer-cap", type=float, default=1e7, help="largest size peers are run at")
    ap.add_argument("--reopen-size", type=float, default=1e6, help="0 to skip")
    ap.add_argument("--no-old", action="store_true", help="only the new default")
    ap.add_argument("--whole-check", action="store_true", help="store's check_and_add only")
    ap.add_argument(
        "--bulk", action="store_true", help="bulk load beside adds one by one, then open"
    )
    ap.add_argument(
        "--import",
        dest="import_",
        action="store_true",
        help="the import's decisions: its bulk path beside item by item",
    )
    ap.add_argument(
        "--one-by-one-cap",
        type=float,
        default=2e5,
        help="--bulk, --import: adds (checks) one by one up to this",
    )
    ap.add_argument("--base", type=Path, help="the checkout --whole-check compares with")
    ap.add_argument(
        "--built", type=Path, help="--whole-check keeps its built indexes here, and reuses them"
    )
    ap.add_argument(
        "--intervals", nargs="+", type=float, help="--whole-check's commit intervals (1 0.01)"
    )
    args = ap.parse_args()
    if args.whole_check:
        from _whole_check import run

        if args.base is None:
            ap.error("--whole-check needs --base (e.g. git worktree add /tmp/nd-base HEAD)")
        run(args.sizes, args.base.resolve(), args.built, args.intervals)
        return
    if args.import_:
        from _whole_check import bench_import

        bench_import(args.sizes, int(args.one_by_one_cap))
        return
    if args.bulk:
        from _whole_check import bench_bulk

        bench_bulk(args.sizes, int(args.one_by_one_cap))
        return
    if args.kernels:
        bench_kernels(args.sizes, args.queries)
        return
    designs = [NEW] if args.no_old else [NEW, OLD]
    print(f"goals: {GOALS_TEXT}")
    print(
        f"queries: half stored fps with 1-3 bits flipped, half random; times are the fastest of "
        f"{REPEAT} passes (shared 2-core machine); exactness on {args.exact} of them"
    )
    workdir = Path(tempfile.mkdtemp(prefix="neardupe-index-bench-"))
    ours: dict[str, dict[int, Row]] = {f"{d} k={k}": {} for d, k in designs}
    built = dict.fromkeys(PEERS, "")  # a peer's build cost at the largest size it ran
    try:
        for size in args.sizes:
            n = int(size)
            rng = np.random.default_rng(n)
            stored = rng.integers(0, 2**64, n, dtype=np.uint64)
            qs = make_queries(stored, args.queries, rng)
            sample = qs[: args.exact]
            truth, brute_ns = brute_force(stored, sample, max(k for _, k in designs))
            rows = []
            for name, k in designs:
                row = bench_ours(name, k, stored, qs, sample, truth, workdir)
                ours[row.name][n] = row
                rows.append(row)
                gc.collect()
            rows.append(bench_brute(brute_ns))
            for name, peer in PEERS.items():
                if n > args.peer_cap:
                    row = Row(name)
                    row.notes.append(
                        f"skipped (N above --peer-cap {args.peer_cap:.0e}{built[name]})"
                    )
                else:
                    row = peer(stored, sample, within(truth, K))
                    if row.build_s is not None and row.steady is not None:
                        built[name] = (
                            f"; building N={n:.0e} took {row.build_s:.0f} s and "
                            f"{row.steady:.0f} B/page of RSS"
                        )
                rows.append(row)
            print_table(n, rows)
            del stored, rows
            gc.collect()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_goals(ours)
    if args.reopen_size:
        bench_reopen(int(args.reopen_size), NEW[0])


if __name__ == "__main__":
    main()
