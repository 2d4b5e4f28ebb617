"""The same local crawl of real pages with and without nearDupe, side by side in one run.

Serves the real pages of ../shared/data (aeb, zh-extract) plus one syndicated copy of each
(a view counter and a timestamp injected) on 127.0.0.1, crawls them with a spider that only
follows the start page's links, and prints pages/s both ways, CPU cores used, the longest
reactor stall seen by a 10 ms heartbeat, the longest full garbage collection (with and without
NEARDUPE_GC_FREEZE), and the per-page CPU cost of extraction, fingerprinting and the index.

    python benchmarks/crawl_bench.py [--copies 1] [--workers 2] [--rounds 2] [--variants]

Plain Scrapy and the plugin crawl in turn, round after round, the order reversed every other
round; each plugin crawl's ratio is to the plain crawl of its round.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from statistics import median

from _data import data_dir
from _harness import Column, Table, alternating, arguments

ROOT = Path(__file__).resolve().parents[1]
DATA = data_dir()


def load_pages(copies: int) -> dict[str, bytes]:
    """path -> raw bytes: every real page, plus ``copies`` edited copies of each."""
    originals: dict[str, bytes] = {}
    for path in sorted((DATA / "aeb" / "html").glob("*.html.gz")):
        originals[f"/aeb/{path.name[:-8]}.html"] = gzip.decompress(path.read_bytes())
    for path in sorted((DATA / "zh-extract" / "original").glob("*.html")):
        originals[f"/zh/{path.stem}.html"] = path.read_bytes()
    pages = dict(originals)
    for copy in range(1, copies + 1):
        for path, body in originals.items():
            noise = f"<div class='views'>{copy * 7919 % 10000} views · 2024-0{copy}-1{copy}</div>"
            pages[f"/copy{copy}{path}"] = body.replace(b"</body>", noise.encode() + b"</body>", 1)
    links = "".join(f'<a href="{p}">{p}</a><br>' for p in pages)
    pages["/"] = f"<html><body>{links}</body></html>".encode()
    return pages


def serve(pages: dict[str, bytes]) -> ThreadingHTTPServer:
    """Start a loopback server for the pages (no charset header: Scrapy detects it)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "text/html")
            body = body or b""
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def crawl(
    url: str, workdir: Path, settings: dict[str, object], root: Path = ROOT
) -> dict[str, float]:
    """One crawl in a subprocess (of the nearDupe checkout at ``root``); its wall time, CPU
    time (with workers) and stats."""
    stats_path = workdir / "stats.json"
    spider = Path(__file__).with_name("bench_spider.py")
    command = [sys.executable, "-m", "scrapy", "runspider", str(spider), "-a", f"start_url={url}/"]
    merged = {
        "LOG_LEVEL": "WARNING",
        "EXTENSIONS": json.dumps({"stall_monitor.StallMonitor": 0}),
        "STALL_STATS_PATH": str(stats_path),
        "NEARDUPE_INDEX": str(workdir / "index"),
        "CONCURRENT_REQUESTS": 16,
        **settings,
    }
    for name, value in merged.items():
        command += ["-s", f"{name}={value}"]
    env = {**os.environ, "PYTHONPATH": f"{root}:{Path(__file__).parent}"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=root, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stats = json.loads(stats_path.read_text())
    return {"wall": wall, "cpu": cpu, **stats}


def component_costs(pages: dict[str, bytes], limit: int = 150) -> dict[str, float]:
    """Median CPU ms per page of extraction, fingerprinting and the index, in this process."""
    from scrapy.http import HtmlResponse

    from nearDupe.features import FeatureSettings
    from nearDupe.simhash import fingerprint
    from nearDupe.store import EmbeddedIndex
    from nearDupe.text import extract_main_text

    settings = FeatureSettings()
    fingerprint("warm up 预热 " * 30, settings)
    extract_t, fp_t, index_t = [], [], []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedIndex(tmp) as index:
        for i, (path, body) in enumerate(list(pages.items())[:limit]):
            html = HtmlResponse(f"http://x{path}", body=body).text
            t0 = time.process_time()
            text = extract_main_text(html)
            t1 = time.process_time()
            fp = fingerprint(text, settings)
            t2 = time.process_time()
            index.check_and_add(fp, str(i))
            t3 = time.process_time()
            extract_t.append(t1 - t0)
            fp_t.append(t2 - t1)
            index_t.append(t3 - t2)
    return {
        "extract_ms": median(extract_t) * 1e3,
        "fingerprint_ms": median(fp_t) * 1e3,
        "index_ms": median(index_t) * 1e3,
    }


def main() -> None:
    """Run both crawls, round after round, and print the comparison."""
    parser = arguments(__doc__, rounds=2)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--against",
        type=Path,
        help="another checkout of nearDupe (e.g. a git worktree of an earlier commit): its "
        "crawl runs in each round too, beside this one's",
    )
    parser.add_argument(
        "--variants",
        action="store_true",
        help="also crawl once in one thread and once without NEARDUPE_GC_FREEZE",
    )
    args = parser.parse_args()
    pages = load_pages(args.copies)
    httpd = serve(pages)
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    print(f"{len(pages) - 1} pages on {url}, {os.cpu_count()} cores, load {load_average()}")
    workers = {"NEARDUPE_WORKERS": args.workers}
    sides: dict[str, tuple[dict[str, object], Path]] = {
        "plain": ({"NEARDUPE_ENABLED": "False"}, ROOT),
        f"nearDupe ({args.workers} processes)": (workers, ROOT),
    }
    if args.against:
        sides[args.against.name] = (workers, args.against)
    variants: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdirs = (Path(tmp) / str(i) for i in itertools.count())

        def side(settings: dict[str, object], root: Path) -> Callable[[], dict[str, float]]:
            def run() -> dict[str, float]:
                workdir = next(workdirs)
                workdir.mkdir()
                return crawl(url, workdir, settings, root)

            return run

        runs = alternating({name: side(*plan) for name, plan in sides.items()}, args.rounds)
        if args.variants:
            variants["nearDupe (1 thread)"] = side({"NEARDUPE_WORKERS": 0}, ROOT)()
            gc: dict[str, object] = {"NEARDUPE_GC_FREEZE": False}
            variants["nearDupe, NEARDUPE_GC_FREEZE=False"] = side(gc, ROOT)()
    httpd.shutdown()
    # Each run is compared with the plain crawl of its round (a variant: the last round's).
    plain = [rate(run) for run in runs["plain"]]
    rows = [
        (f"{name}, round {i}", run, plain[i - 1])
        for name, results in runs.items()
        for i, run in enumerate(results, 1)
    ]
    rows += [(name, run, plain[-1]) for name, run in variants.items()]
    table = Table(
        Column("run", 36),
        Column("pages", 6, "d"),
        Column("pages/s", 8, ".1f"),
        Column("ratio", 6, ".2f"),
        Column("cores", 6, ".2f"),
        Column("stall ms", 9, ".1f"),
        Column(">50ms", 5, "d"),
        Column("full-GC ms", 10, ".1f"),
        Column("kept/dropped", 12),
    )
    table.heading()
    for name, run, plain_rate in rows:
        table.row(
            name, int(run["response_count"]), rate(run), rate(run) / plain_rate,
            run["cpu"] / run["wall"], run["max_stall_ms"], int(run["stalls_over_50ms"]),
            run["longest_full_gc_ms"], f"{run.get('kept', '-')}/{run.get('dropped', '-')}",
        )  # fmt: skip
    for name, results in runs.items():
        ratios = [rate(run) / p for run, p in zip(results, plain, strict=True)]
        if name != "plain" and len(ratios) > 1:
            print(f"{name}: median {median(ratios):.2f} of plain Scrapy's pages/s "
                  f"({min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} rounds)")  # fmt: skip
    if args.against:
        return
    costs = component_costs(pages)
    print(
        "median CPU ms per page (in one process): "
        + ", ".join(f"{k} {v:.2f}" for k, v in costs.items())
    )


def rate(run: dict[str, float]) -> float:
    """A crawl's pages a second."""
    return run["response_count"] / run["elapsed"]


def load_average() -> str:
    """The machine's 1-minute load average (crawl rates depend on it)."""
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
