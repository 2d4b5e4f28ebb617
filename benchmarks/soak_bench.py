"""Soak: 10^6 pages through the pipeline's decision path; is memory flat after warm-up?

Run ``python benchmarks/soak_bench.py [--pages 1000000] [--every 100000]``. No HTTP and no text
analysis: each item is linked (as the spider middleware does) to an Analysis carrying a
fingerprint, then ``NearDupePipeline.process_item`` decides it against the embedded index and
writes the JSONL report, exactly as in a crawl. About 30% of the pages are near-duplicates
(1-3 bits away from an earlier page). Every ``--every`` pages it prints the process RSS, the
RSS again after glibc's ``malloc_trim`` (the allocator keeps a few MB of freed run-merge
buffers otherwise), the index's own arrays (``BlockIndex.nbytes``: 8 B per fingerprint and
table plus run directories) and trimmed RSS minus those arrays, which must stay flat once
warm (SQLite's page cache and the pipeline's bounded page memory fill up during the first
interval).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _harness import Column, Table, arguments
from scrapy.utils.test import get_crawler

from nearDupe.analysis import Analysis
from nearDupe.errors import NearDuplicate
from nearDupe.pipeline import NearDupePipeline

MB = 1 << 20
_MASK = (1 << 64) - 1
#: Offset of the page numbers whose splitmix64 are the signatures.
_SIGNATURES = 1 << 40


def rss() -> int:
    """Current resident set size in bytes (psutil if installed, else /proc/self/statm)."""
    try:
        import psutil

        return psutil.Process().memory_info().rss
    except ImportError:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def trim() -> bool:
    """Give the allocator's free pages back to the OS (glibc's malloc_trim); False elsewhere."""
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0) or True)
    except (OSError, AttributeError):
        return False


def splitmix64(n: int) -> int:
    """A well-mixed 64-bit value for n: the n-th original page, recomputed instead of stored."""
    z = (n * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def fingerprints(pages: int, dup_share: float, seed: int = 1) -> Iterator[tuple[int, int, bool]]:
    """(fingerprint, signature, is_near_duplicate): new pages, and copies of earlier ones with
    1-3 bits of each changed.

    The originals are recomputed from their number, so the generator itself uses no memory.
    """
    rng = random.Random(seed)
    originals = 0
    for _ in range(pages):
        if originals and rng.random() < dup_share:
            n = rng.randrange(originals)
            fp, signature = splitmix64(n), splitmix64(n + _SIGNATURES)
            for bit in rng.sample(range(64), rng.randint(1, 3)):
                fp ^= 1 << bit
            for bit in rng.sample(range(64), rng.randint(1, 3)):
                signature ^= 1 << bit
            yield fp, signature, True
        else:
            originals += 1
            yield splitmix64(originals - 1), splitmix64(originals - 1 + _SIGNATURES), False


async def soak(pages: int, every: int, directory: Path) -> None:
    """Feed the pipeline and print one line of figures per ``every`` pages."""
    crawler = get_crawler(
        settings_dict={
            "NEARDUPE_INDEX": str(directory / "index"),
            "NEARDUPE_REPORT": str(directory / "report.jsonl"),
            "NEARDUPE_WORKERS": 0,
        }
    )
    pipeline = NearDupePipeline.from_crawler(crawler)
    await pipeline.open_spider()
    store = pipeline.store
    index = store.index.index  # type: ignore[union-attr]
    links = pipeline.links
    start, base = time.perf_counter(), rss()
    print(f"start: RSS {base / MB:.1f} MB")
    table = Table(
        Column("pages", 9, ",d"),
        *(Column(name, 8, ",d") for name in ("kept", "dropped")),
        Column("missed", 6, "d"),
        Column("pages/s", 8, ",.0f"),
        *(Column(name, 8, ".1f") for name in ("RSS MB", "trimmed", "index MB", "B/fp idx")),
        Column("RSS-idx", 8, ".1f"),
        Column("Δ", 6, "+.1f"),
    )
    table.heading()
    kept = dropped = missed = 0
    previous = None
    for n, (fp, signature, is_dup) in enumerate(fingerprints(pages, 0.3), 1):
        url = f"https://site{n % 97}.example/page/{n}"
        item = {"url": url, "title": "t"}
        links.attach(item, url, Analysis(fp, signature=signature))
        try:
            await pipeline.process_item(item)
            kept += 1
            missed += is_dup
        except NearDuplicate:
            dropped += 1
        if n % every == 0:
            rate = n / (time.perf_counter() - start)
            now = rss()
            trimmed = rss() if trim() else now
            own = index.nbytes
            rest = (trimmed - own) / MB
            delta = "" if previous is None else rest - previous
            previous = rest
            table.row(
                n, kept, dropped, missed, rate, now / MB, trimmed / MB, own / MB,
                own / len(index), rest, delta,
            )  # fmt: skip
    await pipeline.close_spider()
    report = directory / "report.jsonl"
    print(
        f"done in {time.perf_counter() - start:.0f} s; links left {len(links)}; "
        f"report {report.stat().st_size / MB:.0f} MB; "
        f"sqlite {(directory / 'index' / 'pages.sqlite3').stat().st_size / MB:.0f} MB"
    )


def main() -> None:
    """Parse arguments and run the soak in a temporary directory."""
    parser = arguments(__doc__)
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--every", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="neardupe-soak-") as tmp:
        asyncio.run(soak(args.pages, args.every, Path(tmp)))


if __name__ == "__main__":
    main()
