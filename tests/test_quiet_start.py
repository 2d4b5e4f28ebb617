"""A crawl at LOG_LEVEL=DEBUG with numba's cache empty: nothing of nearDupe's dependencies logs
below WARNING (numba, jieba, readability, charset_normalizer), and nothing compiles on its path."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path

from nearDupe import kernels
from tests.mockserver import MockServer
from tests.site import build_site

ROOT = Path(__file__).resolve().parents[1]
#: Loggers allowed below WARNING: the crawl's own (Scrapy, Twisted, asyncio's reactor loop,
#: the project's spiders) and nearDupe's.
_OWN = {"scrapy", "twisted", "asyncio", "py.warnings", "spiders", "tests", "nearDupe"}
_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[([^\]]+)\] (DEBUG|INFO):", re.MULTILINE)
#: What jieba prints through its own handler (straight to stderr, not Scrapy's format).
_JIEBA = ("Building prefix dict", "Loading model from cache", "Prefix dict has been built")


def test_debug_crawl_on_a_cold_kernel_cache_logs_nothing_of_the_dependencies(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "kernel-cache"
    pages, _ = build_site()
    with MockServer(pages) as server:
        command = [sys.executable, "-m", "scrapy", "crawl", "pages"]
        command += ["-a", f"start_url={server.url}/"]
        settings = {
            "LOG_LEVEL": "DEBUG",
            "NEARDUPE_WORKERS": 0,  # every page analysed in the crawl's process
            "NEARDUPE_INDEX": tmp_path / "index",
            "NEARDUPE_REPORT": tmp_path / "report.jsonl",
        }
        for name, value in settings.items():
            command += ["-s", f"{name}={value}"]
        env = {**os.environ, "PYTHONPATH": str(ROOT), kernels.CACHE_ENV: str(cache)}
        env.pop(kernels.BACKEND_ENV, None)
        proc = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
    log = proc.stderr + proc.stdout
    assert proc.returncode == 0, log[-3000:]
    assert "Dropped: near-duplicate of" in log and "Scraped from" in log
    assert "ZH" in (tmp_path / "report.jsonl").read_text() or "zh.html" in log  # jieba ran
    foreign = {name for name, _ in _LINE.findall(log) if name.split(".")[0] not in _OWN}
    assert not foreign, [line for line in log.splitlines() if any(f in line for f in foreign)][:20]
    assert "numba" not in log and not any(text in log for text in _JIEBA)
    assert not list(cache.rglob("*.nbi")), "numba compiled during the crawl"


def test_one_background_compile_at_a_time(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(kernels.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(kernels, "_spawned", False)
    with open(tmp_path / "compile.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running compile holds it
        assert kernels.spawn_compile() is None
        # The compile itself gives way too, at once (no import of numba, no cache written).
        env = {**os.environ, "PYTHONPATH": str(ROOT), kernels.CACHE_ENV: str(tmp_path)}
        subprocess.run(
            [sys.executable, "-m", "nearDupe.kernels"], env=env, cwd=ROOT, check=True, timeout=60
        )
    assert not list(tmp_path.rglob("*.nbi")) and not kernels.is_ready()


def test_the_kernel_cache_follows_its_environment_variables(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(kernels.CACHE_ENV, str(tmp_path / "given"))
    assert kernels.cache_dir() == tmp_path / "given"
    monkeypatch.delenv(kernels.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert kernels.cache_dir() == tmp_path / "nearDupe" / "numba"
