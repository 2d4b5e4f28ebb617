"""A user's first crawls: a fresh virtualenv with nearDupe installed, a fresh ``scrapy
startproject`` enabling the add-on, a tiny spider over the demo site, Scrapy's default log level
(DEBUG). Prints, cold (numba's kernel cache empty, first run in the new venv) and warm (the same
again): log lines in all, from numba and of tracebacks, and seconds from ``Spider opened`` to
the first page decided (the first ``Dropped:`` or ``Scraped from`` line).

Run from the repository root: ``python benchmarks/startup_bench.py [--full-install] [--runs 2]``.
By default the venv is made with ``--system-site-packages`` plus a path to the project's
.venv site-packages, and nearDupe is installed into it with ``pip install --no-deps`` (its
dependencies are the project's); ``--full-install`` installs them from PyPI too (minutes).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Log lines carry milliseconds, so the seconds to the first page can be read from the log.
LOG_FORMAT = "%(asctime)s.%(msecs)03d [%(name)s] %(levelname)s: %(message)s"
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) ")
SPIDER = '''
from scrapy import Spider
from scrapy.http import HtmlResponse


class Tiny(Spider):
    """Every page of a site, one item each."""

    name = "tiny"
    allowed_domains = ["127.0.0.1"]  # as `scrapy genspider tiny 127.0.0.1` writes it

    def __init__(self, start_url, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start_url]

    def parse(self, response):
        if isinstance(response, HtmlResponse):
            yield {"url": response.url, "title": response.css("title::text").get()}
            yield from response.follow_all(css="a", callback=self.parse)
'''


def make_venv(directory: Path, full: bool) -> Path:
    """A new venv with nearDupe installed; its python."""
    flags = [] if full else ["--system-site-packages"]
    subprocess.run([sys.executable, "-m", "venv", *flags, str(directory)], check=True)
    python = directory / "bin" / "python"
    if not full:  # the project's dependencies, without its own editable nearDupe
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        project = sysconfig.get_paths()["purelib"]
        Path(purelib, "_project_deps.pth").write_text(project + "\n")
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *([] if full else ["--no-deps"]), str(ROOT)], check=True)
    return python


def make_project(python: Path, directory: Path) -> Path:
    """``scrapy startproject`` with the add-on enabled and the tiny spider; its directory."""
    scrapy = [str(python), "-m", "scrapy"]
    new = [*scrapy, "startproject", "bench", str(directory)]
    subprocess.run(new, check=True, cwd="/", capture_output=True)
    settings = directory / "bench" / "settings.py"
    settings.write_text(
        settings.read_text()
        + '\nADDONS = {"nearDupe.Addon": 500}\n'
        + f"LOG_FORMAT = {LOG_FORMAT!r}\n"
    )
    (directory / "bench" / "spiders" / "tiny.py").write_text(textwrap.dedent(SPIDER))
    return directory


def free_port() -> int:
    """A TCP port free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def crawl(
    python: Path, project: Path, url: str, cache: Path, index: Path, items: int, log: Path | None
) -> dict[str, object]:
    """One crawl of ``items`` pages; its log's figures (the log itself to ``log``)."""
    env = {**os.environ, "NEARDUPE_KERNEL_CACHE": str(cache)}
    for name in ("PYTHONPATH", "NEARDUPE_KERNELS", "VIRTUAL_ENV"):
        env.pop(name, None)
    command = [str(python), "-m", "scrapy", "crawl", "tiny", "-a", f"start_url={url}/"]
    command += ["-s", f"NEARDUPE_INDEX={index}", "-s", f"CLOSESPIDER_ITEMCOUNT={items}"]
    started = time.perf_counter()
    proc = subprocess.run(
        command,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    wall = time.perf_counter() - started
    lines = (proc.stdout + proc.stderr).splitlines()
    if log is not None:
        log.write_text("\n".join(lines))
    if proc.returncode:
        raise RuntimeError("\n".join(lines[-30:]))
    opened = first = None
    for line in lines:
        stamp = _STAMP.match(line)
        if not stamp:
            continue
        at = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S.%f")
        if opened is None and "Spider opened" in line:
            opened = at
        elif opened is not None and ("Dropped:" in line or "Scraped from" in line):
            first = at
            break
    return {
        "lines": len(lines),
        "numba": sum("numba" in line for line in lines),
        "tracebacks": sum(line.startswith("Traceback") for line in lines),
        "first": (first - opened).total_seconds() if opened and first else float("nan"),
        "wall": wall,
        "nbi": len(list(cache.rglob("*.nbi"))),
    }


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full-install", action="store_true")
    parser.add_argument("--runs", type=int, default=2, help="crawls: 1 cold, then warm")
    parser.add_argument("--items", type=int, default=10, help="pages a crawl stops after")
    parser.add_argument("--logs", type=Path, help="keep each crawl's log in this directory")
    args = parser.parse_args()
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="neardupe-startup-"))
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "spiders.demosite.server", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        started = time.perf_counter()
        python = make_venv(tmp / "venv", args.full_install)
        how = "full install from PyPI" if args.full_install else "pip install --no-deps"
        print(f"venv: {how} ({time.perf_counter() - started:.0f} s); Scrapy's default log level")
        project = make_project(python, tmp / "project")
        time.sleep(1)  # the demo server is up
        cache = tmp / "kernel-cache"
        print(
            "| crawl | log lines | from numba | tracebacks | Spider opened -> first page decided "
            "(s) | whole process (s) | numba cache entries after |"
        )
        print("|---|---|---|---|---|---|---|")
        for run in range(args.runs):
            name = "cold (new venv, empty caches)" if run == 0 else f"warm (run {run + 1})"
            log = args.logs / f"crawl{run + 1}.log" if args.logs else None
            url = f"http://127.0.0.1:{port}"
            got = crawl(python, project, url, cache, tmp / f"index{run}", args.items, log)
            print(
                f"| {name} | {got['lines']} | {got['numba']} | {got['tracebacks']} "
                f"| {got['first']:.2f} "
                f"| {got['wall']:.1f} | {got['nbi']} |"
            )
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
