"""``index_bench.py --whole-check``: the whole check-and-add through the embedded store, as the
pipeline awaits it, for this code and another checkout (``--base``) side by side in one run.

Per size N, an index of N pages (each with a fingerprint and 4 sentences of 130 letters) is
bulk loaded once (``EmbeddedIndex.load``; ``--bulk`` times it beside adds one by one); each
side then gets a copy and, in a subprocess importing nearDupe from its own checkout, awaits
CHECKS calls of ``EmbeddedStore.check_and_add`` one after the other (N >= 10^5: the store's
thread; the side ``this, inline`` runs them on the event loop, to show what the hop to that
thread costs), a third each of: new pages (a new fingerprint, and as many new sentence units as
that checkout's ``shorttext.sentences`` keeps of a text of 30 sentences of 130 letters),
fingerprint copies (a stored or earlier page's fingerprint with 2 bits flipped, its signature
and sentences) and sentence copies (a new fingerprint, a stored page's 4 sentences), each
with its units as that checkout's analysis hands them over. Each await is timed, wall and the
CPU the check took in the thread that ran it (on a shared machine the wall p99 is mostly the
wait for a core). Before the timed checks the compiled kernels are loaded and the process's
objects frozen (gcfreeze), as a crawl has them; the full collections met are counted.

Two commit intervals: 1 s (the default, at the benchmark's ~10^4 checks/s a commit comes every
~10^4 checks) and 0.01 s, which at that rate gives a commit every ~100 checks of ~100 pages: a
crawl of ~100 checks/s with the default interval.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # the workers import another checkout's nearDupe, which may lack it
    from nearDupe.analysis import Analysis
    from nearDupe.commands.importer import Item
    from nearDupe.store.embedded_bulk import BulkPages

#: Timed checks per run (after WARMUP untimed ones).
CHECKS, WARMUP = 10_000, 500
#: Sentences of a stored page, and of a new page; the letters of each.
PER_PAGE, NEW_SENTENCES, LETTERS = 4, 30, 130
#: Pages written to SQLite at a time.
CHUNK = 500_000
INTERVALS = (1.0, 0.01)
#: Runs of each side, alternating which goes first (the machine is shared): timings pooled.
ROUNDS = 2
URL = "https://www.example-news.com/2024/05/story-{:09d}.html"


def _stored(n: int, seed: int, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """(fingerprints, sentence hashes (pages, PER_PAGE) sorted) of one chunk of stored pages."""
    rng = np.random.default_rng((seed, chunk))
    pages = min(CHUNK, n - chunk * CHUNK)
    fps = rng.integers(0, 2**64, pages, dtype=np.uint64)
    hashes = np.sort(rng.integers(0, 2**64, (pages, PER_PAGE), dtype=np.uint64), axis=1)
    return fps, hashes


def chunks(n: int, seed: int) -> Iterator[BulkPages]:
    """The n stored pages as the bulk load takes them, CHUNK at a time."""
    from nearDupe.store.embedded_bulk import BulkPages

    for c in range((n + CHUNK - 1) // CHUNK):
        fps, hashes = _stored(n, seed, c)
        first = c * CHUNK + 1
        yield BulkPages(
            fps=fps,
            keys=[URL.format(first + i) for i in range(len(fps))],
            units=hashes.ravel(),
            letters=np.full(hashes.size, LETTERS),
            counts=np.full(len(fps), PER_PAGE),
        )


def build(path: Path, n: int, seed: int) -> float:
    """An index of n pages, bulk loaded and closed (snapshots); its pages/s."""
    from nearDupe.store.embedded import EmbeddedIndex

    t = time.perf_counter()
    with EmbeddedIndex(path) as index:
        index.load(chunks(n, seed))
    return n / (time.perf_counter() - t)


def bench_bulk(sizes: list[float], one_by_one_cap: int, seed: int = 0) -> None:
    """Pages/s of a bulk load (EmbeddedIndex.load) beside adds one by one (EmbeddedIndex.add,
    up to ``one_by_one_cap`` pages), wall and CPU time, then the open and close of the index."""
    from nearDupe.store.embedded import EmbeddedIndex

    work = Path(tempfile.mkdtemp(prefix="neardupe-bulk-"))
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"pages of {PER_PAGE} sentence units of {LETTERS} letters, {CHUNK:,} a chunk")
    print(
        "| stored pages | how | pages/s (wall) | pages/s (CPU of this process) | load / s "
        "| close (snapshots) s | open s | close s | RSS MB after open |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    try:
        for size in sizes:
            n = int(size)
            hows = ["bulk load", "one by one"] if n <= one_by_one_cap else ["bulk load"]
            for how in hows:
                path = work / how.replace(" ", "-")
                index = EmbeddedIndex(path)
                t_load = cpu_load = 0.0
                for pages in chunks(n, seed):  # the pages are made outside the timed part
                    if how == "one by one":
                        calls = [
                            (fp, key, None, tuple((h, LETTERS) for h in units))
                            for fp, key, units in zip(
                                pages.fps.tolist(),
                                pages.keys,
                                pages.units.reshape(-1, PER_PAGE).tolist(),
                                strict=True,
                            )
                        ]
                    t, cpu = time.perf_counter(), time.process_time()
                    if how == "bulk load":
                        index.load([pages])
                    else:
                        for call in calls:
                            index.add(*call)
                        index.commit()
                    t_load += time.perf_counter() - t
                    cpu_load += time.process_time() - cpu
                t = time.perf_counter()
                index.close()
                t_save = time.perf_counter() - t
                t = time.perf_counter()
                index = EmbeddedIndex(path)
                t_open = time.perf_counter() - t
                rss = _rss_mb()
                t = time.perf_counter()
                index.close()
                t_close = time.perf_counter() - t
                print(
                    f"| {n:.0e} | {how} | {n / t_load:,.0f} | {n / cpu_load:,.0f} "
                    f"| {os.getloadavg()[0]:.1f} | {t_save:.2f} | {t_open:.2f} | {t_close:.2f} "
                    f"| {rss:,.0f} |",
                    flush=True,
                )
                shutil.rmtree(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def _flip(fp: int, rng: np.random.Generator) -> int:
    a, b = rng.choice(64, 2, replace=False).tolist()
    return fp ^ (1 << a) ^ (1 << b)


def new_units() -> int:
    """How many sentence units the code imported as nearDupe keeps of a new page: a text of
    NEW_SENTENCES sentences of LETTERS letters (22 random words of 5 letters and a space)."""
    from nearDupe.shorttext import sentences

    rng = np.random.default_rng(1)
    words = ["".join(rng.choice(list("abcdefghij"), 5)) for _ in range(22 * NEW_SENTENCES)]
    text = " ".join(
        " ".join(words[i : i + 22]).capitalize() + "." for i in range(0, len(words), 22)
    )
    return len(sentences(text))


#: A check's kind, fingerprint, key, signature and sentences.
Call = tuple[str, int, str, int, tuple[tuple[int, int], ...]]


def _calls(n: int, seed: int, units: int) -> list[Call]:
    """(kind, fp, key, signature, sentences) of every check, in order; a new page has
    ``units`` sentence units."""
    rng = np.random.default_rng(seed + 7)
    stored_fps, stored_hashes = _stored(n, seed, 0)  # copies of the first chunk's pages
    added: list[tuple[int, int, tuple[tuple[int, int], ...]]] = []
    calls = []
    for i in range(WARMUP + CHECKS):
        kind = ("new", "fp copy", "sentence copy")[i % 3]
        if kind == "new":
            fp, sig = (int(x) for x in rng.integers(0, 2**64, 2, dtype=np.uint64))
            hashes = rng.integers(0, 2**64, units, dtype=np.uint64).tolist()
            sentences = tuple(sorted((h, LETTERS) for h in hashes))
            added.append((fp, sig, sentences))
        else:
            j = int(rng.integers(0, len(stored_fps)))
            page_sentences = tuple((h, LETTERS) for h in stored_hashes[j].tolist())
            if kind == "fp copy" and added and rng.random() < 0.5:  # a page of this run
                fp, sig, sentences = added[int(rng.integers(0, len(added)))]
                fp = _flip(fp, rng)
            elif kind == "fp copy":
                fp, sig, sentences = _flip(int(stored_fps[j]), rng), 0, page_sentences
            else:
                fp = int(rng.integers(0, 2**64, dtype=np.uint64))
                sig, sentences = int(rng.integers(0, 2**64, dtype=np.uint64)), page_sentences
        calls.append((kind, fp, f"https://copy.example.org/{i}", sig, sentences))
    return calls


def _as_this_algorithm(path: str) -> None:
    """The index's header names the ALGORITHM_VERSION of the code imported as nearDupe: its
    fingerprints and sentence units are random numbers, alike under every version."""
    from nearDupe.simhash import ALGORITHM_VERSION

    with sqlite3.connect(Path(path) / "pages.sqlite3") as db:
        (stored,) = db.execute("SELECT value FROM meta WHERE name = 'header'").fetchone()
        header = {**json.loads(stored), "algorithm": ALGORITHM_VERSION}
        db.execute(
            "UPDATE meta SET value = ? WHERE name = 'header'",
            (json.dumps(header, sort_keys=True),),
        )


def _as_analysed(calls: list[Call]) -> list[Call]:
    """The calls' sentences as the imported code's analysis hands them to the store: Units
    (sorted, with their arrays, made in the analysis's worker), or the pairs themselves in a
    checkout without them."""
    try:
        from nearDupe.units import Units
    except ImportError:
        return calls
    return [(kind, fp, key, sig, Units.of(s)) for kind, fp, key, sig, s in calls]


def worker(path: str, n: int, seed: int, interval: float, inline: bool) -> None:
    """Run the checks on the index at ``path`` and print the timings as JSON (one line);
    ``inline``: the store runs every call on the event loop, never in its thread."""
    import nearDupe
    from nearDupe import gcfreeze, kernels
    from nearDupe.store import EmbeddedStore
    from nearDupe.store.embedded import EmbeddedIndex

    _as_this_algorithm(path)
    calls = _as_analysed(_calls(n, seed, new_units()))
    if kernels.is_ready():  # a crawl has them loaded seconds after it starts, in a thread
        kernels.load_numba()
    commits: list[tuple[str, float]] = []  # (thread, seconds) of every commit
    commit = EmbeddedIndex.commit

    def timed_commit(self: EmbeddedIndex) -> None:
        t = time.perf_counter()
        try:
            commit(self)
        finally:
            commits.append((threading.current_thread().name, time.perf_counter() - t))

    EmbeddedIndex.commit = timed_commit  # type: ignore[method-assign]
    cpu: list[int] = []  # ns of CPU each check took in the thread that ran it
    check = EmbeddedIndex.check_and_add

    def timed_check(self: EmbeddedIndex, *args: Any) -> Any:
        t = time.thread_time_ns()
        try:
            return check(self, *args)
        finally:
            cpu.append(time.thread_time_ns() - t)

    EmbeddedIndex.check_and_add = timed_check  # type: ignore[method-assign]
    collections: list[tuple[int, float]] = []  # (generation, seconds) of each, while timed
    started = [0.0]

    def timed_collection(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            collections.append((info["generation"], time.perf_counter() - started[0]))

    async def run() -> dict[str, object]:
        opening = time.perf_counter()
        index = EmbeddedIndex(path, commit_interval=interval)
        store = (
            EmbeddedStore(index, off_loop_candidates=float("inf"), off_loop_pages=2**62)
            if inline
            else EmbeddedStore(index)
        )
        opened = time.perf_counter() - opening
        gcfreeze.freeze()  # as the pipeline does once its store is open
        ns: list[int] = []
        kinds: list[str] = []
        found = dict.fromkeys(("new", "fp copy", "sentence copy"), 0)
        for i, (kind, fp, key, sig, sentences) in enumerate(calls):
            if i == WARMUP:
                gc.callbacks.append(timed_collection)
            t = time.perf_counter_ns()
            match = await store.check_and_add(fp, key, sig or None, sentences)
            if i >= WARMUP:
                ns.append(time.perf_counter_ns() - t)
                kinds.append(kind)
                found[kind] += match is not None
        gc.callbacks.remove(timed_collection)
        checks = {name for name, _ in commits if "commit" not in name}
        on_path = [d for name, d in commits if name in checks]
        in_thread = [d for name, d in commits if name not in checks]
        closing = time.perf_counter()
        await store.close()
        return {
            "ns": ns,
            "cpu": cpu[WARMUP:],
            "kinds": kinds,
            "found": found,
            "on_path": on_path,
            "in_thread": in_thread,
            "full_collections": [d for generation, d in collections if generation == 2],
            "open": opened,
            "close": time.perf_counter() - closing,
            "code": str(Path(nearDupe.__file__).parent.parent),
            "units": max(len(c[4]) for c in calls),
        }

    print(json.dumps(asyncio.run(run())))


def _side(
    root: Path, index: Path, n: int, seed: int, interval: float, inline: bool
) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    args = [str(index), str(n), str(seed), str(interval), str(int(inline))]
    out = subprocess.run(
        [sys.executable, __file__, *args],
        env=env,
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.splitlines()[-1])


def _pauses(runs: list[dict[str, object]], where: str) -> str:
    """How many pauses of that kind (commits there, full collections) the timed checks met,
    their mean and max ms."""
    d = np.concatenate([np.asarray(r[where], dtype=float) for r in runs]) * 1e3
    return f"{len(d)}, {d.mean():.1f}/{d.max():.1f}" if len(d) else "0"


def run(
    sizes: list[float],
    base: Path,
    keep: Path | None = None,
    intervals: list[float] | None = None,
    seed: int = 0,
) -> None:
    """Both sides at every size and interval; one table. With ``keep``, each size's built
    index is kept in that directory and reused by the next run (its build is seeded)."""
    here = Path(__file__).resolve().parent.parent
    work = Path(tempfile.mkdtemp(prefix="neardupe-whole-check-"))
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"whole check_and_add through EmbeddedStore, {CHECKS} timed checks a run "
        "(1/3 new pages of 30 sentences (as many units as each code keeps of them), "
        "1/3 fingerprint copies, 1/3 sentence copies); "
        f"base: {base}"
    )
    print(
        "| stored pages | commit interval | code | units of a new page | p50 µs "
        "| p50 µs: new / fp copy / sentence copy "
        "| p99 µs (each run) | p99 µs: new / fp copy / sentence copy "
        "| p99 of the check's CPU µs: new / fp copy / sentence copy | p99.9 µs | "
        "max ms | checks/s | found (fp / sentence copies) | open s | close s | "
        "commits inside a check: n, mean/max ms | in the committer thread: n, mean/max ms "
        "| full garbage collections: n, mean/max ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    try:
        for size in sizes:
            n = int(size)
            built = (keep or work) / f"built-{n}-seed-{seed}"
            if not built.exists():
                building = built.with_name(built.name + ".building")
                shutil.rmtree(building, ignore_errors=True)
                rate = build(building, n, seed)
                building.rename(built)
                print(
                    f"(built {n:.0e} pages by a bulk load, {rate:,.0f} pages/s)", file=sys.stderr
                )
            for interval in intervals or INTERVALS:
                order = [
                    ("HEAD", base, False),
                    ("this", here, False),
                    ("this, inline", here, True),
                ]
                sides: dict[str, list[dict[str, object]]] = {name: [] for name, _, _ in order}
                for r in range(ROUNDS):
                    for name, root, inline in order[:: 1 if r % 2 == 0 else -1]:
                        index = work / "run"
                        shutil.rmtree(index, ignore_errors=True)
                        shutil.copytree(built, index)
                        sides[name].append(_side(root, index, n, seed, interval, inline))
                for name, runs in sides.items():
                    a = np.concatenate([np.asarray(r["ns"]) for r in runs]) / 1e3
                    p99s = "/".join(
                        f"{np.percentile(np.asarray(r['ns']), 99) / 1e3:.0f}" for r in runs
                    )
                    kinds = np.concatenate([np.asarray(r["kinds"]) for r in runs])
                    cpu = np.concatenate([np.asarray(r["cpu"]) for r in runs]) / 1e3
                    by_kind, p99_by_kind, cpu_p99_by_kind = (
                        " / ".join(
                            f"{np.percentile(times[kinds == kind], q):.0f}"
                            for kind in ("new", "fp copy", "sentence copy")
                        )
                        for times, q in ((a, 50), (a, 99), (cpu, 99))
                    )
                    found = runs[0]["found"]
                    assert isinstance(found, dict)
                    print(
                        f"| {n:.0e} | {interval:g} s | {name} | {runs[0]['units']} "
                        f"| {np.median(a):.0f} | {by_kind} | "
                        f"{np.percentile(a, 99):.0f} ({p99s}) | {p99_by_kind} | {cpu_p99_by_kind} "
                        f"| {np.percentile(a, 99.9):.0f} | "
                        f"{a.max() / 1e3:.2f} | {len(a) / a.sum() * 1e6:,.0f} | "
                        f"{found['fp copy']} / {found['sentence copy']} | "
                        f"{max(float(r['open']) for r in runs):.2f} | "  # type: ignore[arg-type]
                        f"{max(float(r['close']) for r in runs):.2f} | "  # type: ignore[arg-type]
                        f"{_pauses(runs, 'on_path')} | {_pauses(runs, 'in_thread')} "
                        f"| {_pauses(runs, 'full_collections')} |",
                        flush=True,
                    )
            if keep is None:
                shutil.rmtree(built, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5] == "1")


#: Units of an imported page (LOOKUP_SENTENCES of LETTERS letters: recorded under 4), items
#: made and imported at a time, and the shares of items that copy an earlier one.
IMPORT_UNITS, IMPORT_CHUNK, IMPORT_COPIES = 16, 100_000, (0.0, 0.1)


def _import_items(n: int, first: int, seed: int, share: float) -> list[tuple[Item, Analysis]]:
    """``n`` analysed feed items from number ``first``: new pages, and a ``share`` of copies
    (by fingerprint, 2 bits flipped) of earlier items of the chunk."""
    from nearDupe.analysis import Analysis
    from nearDupe.units import Units

    rng = np.random.default_rng((seed, first))
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    sigs = rng.integers(0, 2**64, n, dtype=np.uint64)
    copies = np.flatnonzero(rng.random(n) < share)
    copies = copies[copies > 0]
    of = (rng.random(len(copies)) * copies).astype(np.int64)
    fps[copies] = fps[of] ^ np.uint64(0b101)
    sigs[copies] = sigs[of]
    hashes = np.sort(rng.integers(0, 2**64, (n, IMPORT_UNITS), dtype=np.uint64), axis=1)
    hashes[copies] = hashes[of]
    items = []
    for i, (fp, sig, row) in enumerate(zip(fps.tolist(), sigs.tolist(), hashes, strict=True)):
        units = Units.of(tuple((h, LETTERS) for h in row.tolist()))
        url = URL.format(first + i)
        items.append(((first + i, url, None), Analysis(fp, signature=sig, sentences=units)))
    return items


def bench_import(sizes: list[float], one_by_one_cap: int, seed: int = 0) -> None:
    """Pages/s of ``scrapy neardupe import``'s decisions (importer.import_feed, the items
    analysed beforehand) into a new embedded index: its bulk path beside check_and_add item by
    item (up to ``one_by_one_cap`` items), wall and CPU time, and what they decided."""
    from nearDupe.commands import importer
    from nearDupe.store import EmbeddedStore
    from nearDupe.store.embedded import EmbeddedIndex

    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"items of {IMPORT_UNITS} sentence units of {LETTERS} letters, some copies of an "
        "earlier item; analysed before the timed part"
    )
    print("| items | copies | how | items/s (wall) | items/s (CPU) | load | kept / dropped |")
    print("|---|---|---|---|---|---|---|")
    feed, progress = Path("feed.jsonl"), importer.ProgressBar(None, sys.stderr, False)

    async def one_by_one(store: EmbeddedStore, items: list[tuple[Item, Analysis]]) -> None:
        for (number, url, _), analysis in items:
            await importer._decide(store, url or "", number, feed, analysis)

    work = Path(tempfile.mkdtemp(prefix="neardupe-import-"))
    try:
        for size, share in ((size, share) for size in sizes for share in IMPORT_COPIES):
            n = int(size)
            for how in ["bulk path", "item by item"] if n <= one_by_one_cap else ["bulk path"]:
                store = EmbeddedStore(EmbeddedIndex(work / "index", commit_interval=5.0))
                wall = cpu = 0.0
                for first in range(0, n, IMPORT_CHUNK):
                    items = _import_items(min(IMPORT_CHUNK, n - first), first, seed, share)
                    t, c = time.perf_counter(), time.process_time()
                    if how == "bulk path":
                        asyncio.run(importer.import_feed(store, iter(items), feed, progress))
                    else:
                        asyncio.run(one_by_one(store, items))
                    wall += time.perf_counter() - t
                    cpu += time.process_time() - c
                t, c = time.perf_counter(), time.process_time()
                kept = len(store.index)
                asyncio.run(store.close())
                wall += time.perf_counter() - t
                cpu += time.process_time() - c
                print(
                    f"| {n:.0e} | {share:.0%} | {how} | {n / wall:,.0f} | {n / cpu:,.0f} "
                    f"| {os.getloadavg()[0]:.1f} | {kept:,} / {n - kept:,} |",
                    flush=True,
                )
                shutil.rmtree(work / "index")
    finally:
        shutil.rmtree(work, ignore_errors=True)
