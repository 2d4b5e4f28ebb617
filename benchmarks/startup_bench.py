"""Start-up cost: ``import nearDupe`` and the time from ``Spider opened`` to the first page
decided, on the offline demo crawl, with the plugin (worker processes, one thread) and
without it, measured side by side.

Run from the repository root: ``python benchmarks/startup_bench.py [--runs 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

ROOT = Path(__file__).resolve().parents[1]
#: What each crawl measures (see FirstPage).
KEYS = ("open", "first", "total")


class FirstPage:
    """Extension: writes the seconds from the crawler's start and from spider_opened to the
    first item that left the pipelines (scraped or dropped), to STARTUP_BENCH_OUT."""

    def __init__(self, crawler: Crawler) -> None:
        self.out = Path(crawler.settings["STARTUP_BENCH_OUT"])
        self.created = time.perf_counter()
        self.opened = 0.0
        self.first: float | None = None
        for signal in (signals.item_scraped, signals.item_dropped):
            crawler.signals.connect(self.item, signal=signal)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FirstPage:
        """Scrapy's constructor."""
        return cls(crawler)

    def spider_opened(self) -> None:
        """The clock starts."""
        self.opened = time.perf_counter()

    def item(self, **kwargs: Any) -> None:
        """The first item's time."""
        if self.first is None:
            self.first = time.perf_counter() - self.opened

    def spider_closed(self) -> None:
        """Write the times."""
        assert self.first is not None, "no item left the pipelines"
        now = time.perf_counter()
        self.out.write_text(
            json.dumps(
                {
                    "open": self.opened - self.created,
                    "first": self.first,
                    "total": now - self.opened,
                }
            )
        )


def import_seconds(runs: int) -> float:
    """Median wall time of ``python -c "import nearDupe"`` (a fresh interpreter each run)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import nearDupe"], check=True, cwd=ROOT)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def crawl(settings: dict[str, Any]) -> dict[str, float]:
    """One demo crawl on a fresh index; its first-item and total seconds after opening."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "times.json"
        merged = {
            "NEARDUPE_INDEX": str(Path(tmp) / "index"),
            "EXTENSIONS": json.dumps({"benchmarks.startup_bench.FirstPage": 0}),
            "STARTUP_BENCH_OUT": str(out),
            "LOG_LEVEL": "WARNING",
            **settings,
        }
        command = [sys.executable, "-m", "scrapy", "crawl", "demo"]
        for name, value in merged.items():
            command += ["-s", f"{name}={value}"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
        return json.loads(out.read_text())


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"python -c 'import nearDupe': {import_seconds(args.runs):.2f} s (median)\n")
    runs = {
        "nearDupe, worker processes (default)": {},
        "nearDupe, one thread (NEARDUPE_WORKERS=0)": {"NEARDUPE_WORKERS": 0},
        "plugin disabled (NEARDUPE_ENABLED=False)": {"NEARDUPE_ENABLED": "False"},
    }
    results: dict[str, list[dict[str, float]]] = {name: [] for name in runs}
    for _ in range(args.runs):  # interleaved, so that a noisy moment hits every variant
        for name, settings in runs.items():
            results[name].append(crawl(settings))
    print(
        "| demo crawl | crawler start -> Spider opened (s) | -> first page decided (s) "
        "| whole crawl after Spider opened (s) |"
    )
    print("|---|---|---|---|")
    for name, times in results.items():
        opened, first, total = (statistics.median(t[k] for t in times) for k in KEYS)
        print(f"| {name} | {opened:.2f} | {first:.2f} | {total:.2f} |")


if __name__ == "__main__":
    main()
