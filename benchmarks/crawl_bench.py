"""The same local crawl of real pages with and without nearDupe, side by side in one run.

Serves the real pages of ../shared/data (aeb, zh-extract) plus one syndicated copy of each
(a view counter and a timestamp injected) on 127.0.0.1, crawls them with a spider that only
follows the start page's links, and prints pages/s both ways, CPU cores used, the longest
reactor stall seen by a 10 ms heartbeat, the longest full garbage collection (with and without
NEARDUPE_GC_FREEZE), and the per-page CPU cost of extraction, fingerprinting and the index.

    python benchmarks/crawl_bench.py [--copies 1] [--workers 2] [--rounds 2] [--variants]

Plain Scrapy and the plugin crawl in turn, round after round; each plugin crawl's ratio is to
the plain crawl of its round.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from statistics import median

from _data import data_dir

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
    """Run both crawls and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--against",
        type=Path,
        help="another checkout of nearDupe (e.g. a git worktree of an earlier commit): its "
        "crawl runs in each round too, beside this one's",
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds of plain, then plugin")
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
    runs: dict[str, dict[str, float]] = {}
    workers = {"NEARDUPE_WORKERS": args.workers}
    # (name, settings, checkout, round): each run is compared with the plain crawl of its round.
    plans: list[tuple[str, dict[str, object], Path, int]] = []
    for i in range(1, args.rounds + 1):
        plans.append((f"plain, round {i}", {"NEARDUPE_ENABLED": "False"}, ROOT, i))
        plans.append((f"nearDupe ({args.workers} processes), round {i}", workers, ROOT, i))
        if args.against:
            plans.append((f"{args.against.name}, round {i}", workers, args.against, i))
    if args.variants:
        plans.append(("nearDupe (1 thread)", {"NEARDUPE_WORKERS": 0}, ROOT, args.rounds))
        gc: dict[str, object] = {"NEARDUPE_GC_FREEZE": False}
        plans.append(("nearDupe, NEARDUPE_GC_FREEZE=False", gc, ROOT, args.rounds))
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, settings, root, _ in plans:
            workdir = Path(tmp) / str(len(runs))
            workdir.mkdir()
            runs[name] = crawl(url, workdir, settings, root)
    httpd.shutdown()
    header = f"{'run':36} {'pages':>6} {'pages/s':>8} {'ratio':>6} {'cores':>6} {'stall ms':>9}"
    print(header + " >50ms full-GC ms kept/dropped")
    for name, _, _, round_ in plans:
        run, plain = runs[name], runs[f"plain, round {round_}"]
        pages_crawled = run["response_count"]
        rate = pages_crawled / run["elapsed"]
        ratio = rate / (plain["response_count"] / plain["elapsed"])
        kind = name.rsplit(", round", 1)[0]
        ratios.setdefault(kind, []).append(ratio)
        print(
            f"{name:36} {pages_crawled:6d} {rate:8.1f} {ratio:6.2f} "
            f"{run['cpu'] / run['wall']:6.2f} {run['max_stall_ms']:9.1f} "
            f"{run['stalls_over_50ms']:5d} {run['longest_full_gc_ms']:10.1f} "
            f"{run.get('kept', '-')}/{run.get('dropped', '-')}"
        )
    for kind, values in ratios.items():
        if not kind.startswith("plain") and len(values) > 1:
            print(f"{kind}: median {median(values):.2f} of plain Scrapy's pages/s "
                  f"({min(values):.2f}-{max(values):.2f}, {len(values)} rounds)")  # fmt: skip
    if args.against:
        return
    costs = component_costs(pages)
    print(
        "median CPU ms per page (in one process): "
        + ", ".join(f"{k} {v:.2f}" for k, v in costs.items())
    )


def load_average() -> str:
    """The machine's 1-minute load average (crawl rates depend on it)."""
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
