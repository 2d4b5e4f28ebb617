"""Run a real Scrapy crawl in a subprocess and collect its items, report, stats and log."""

from __future__ import annotations

import contextlib
import fcntl
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.mockserver import MockServer, Page

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class CrawlResult:
    """What a finished crawl left behind."""

    returncode: int
    items: list[dict[str, Any]]
    report: list[dict[str, Any]]
    stats: dict[str, Any]
    log: str

    def decisions(self) -> dict[str, dict[str, Any]]:
        """The last report line of each URL."""
        return {line["url"]: line for line in self.report}


def run_crawl(
    tmp_path: Path,
    args: list[str],
    settings: dict[str, Any] | None = None,
    timeout: float = 120,
    max_file_bytes: int | None = None,
) -> CrawlResult:
    """``scrapy <args>`` from the repo root, with items to a feed and a JSON stats dump.

    ``max_file_bytes`` caps the size of every file the crawl writes (RLIMIT_FSIZE): writes
    beyond it fail as on a full disk.
    """
    tmp_path.mkdir(parents=True, exist_ok=True)
    items, report, stats = (
        tmp_path / "items.jsonl",
        tmp_path / "report.jsonl",
        tmp_path / "stats.json",
    )
    merged = {
        "NEARDUPE_REPORT": str(report),
        "NEARDUPE_INDEX": str(tmp_path / "index"),
        "NEARDUPE_WORKERS": 0,
        "EXTENSIONS": json.dumps({"tests.stats_dump.StatsDump": 0}),
        "STATS_DUMP_PATH": str(stats),
        "LOG_LEVEL": "INFO",
        **(settings or {}),
    }
    command = [sys.executable, "-m", "scrapy", *args, "-O", f"{items}:jsonlines"]
    for name, value in merged.items():
        command += ["-s", f"{name}={value}"]
    proc = run_scrapy(command[3:], timeout=timeout, max_file_bytes=max_file_bytes)
    return _result(tmp_path, proc.returncode, proc.stderr)


class ScrapyProcess:
    """``scrapy ARGS`` from the repo root in a fresh process, stdout and stderr to files; the
    parts of :class:`subprocess.Popen` the tests use (pid, poll, wait, kill, returncode).

    The process is forked from a server that imported Scrapy and nearDupe once
    (``tests/_preload.py``: ~2 s of CPU saved a process), never from this threaded test
    process; it runs ``scrapy.cmdline.execute`` as ``python -m scrapy`` would.
    """

    def __init__(
        self, args: list[str], out: Path, err: Path, max_file_bytes: int | None = None
    ) -> None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["tests._preload"])
        self.args = ["scrapy", *args]
        self._process = context.Process(
            target=_scrapy_main, args=(args, str(out), str(err), max_file_bytes)
        )
        self._process.start()
        self.pid = self._process.pid

    @property
    def returncode(self) -> int | None:
        """The exit code (-N: killed by signal N), None while it runs."""
        return self._process.exitcode

    def poll(self) -> int | None:
        """The exit code if it ended, else None."""
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for it to end; TimeoutExpired if it is still running after ``timeout`` s."""
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self._process.exitcode

    def kill(self) -> None:
        """SIGKILL it."""
        self._process.kill()


def run_scrapy(
    args: list[str], timeout: float = 120, max_file_bytes: int | None = None
) -> subprocess.CompletedProcess[str]:
    """``scrapy ARGS`` in a fresh process (see ScrapyProcess): exit code, stdout, stderr."""
    with tempfile.TemporaryDirectory() as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        process = ScrapyProcess(args, out, err, max_file_bytes)
        try:
            code = process.wait(timeout)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        return subprocess.CompletedProcess(
            process.args,
            code,
            out.read_text(errors="replace") if out.exists() else "",
            err.read_text(errors="replace") if err.exists() else "",
        )


def _scrapy_main(args: list[str], out: str, err: str, max_file_bytes: int | None) -> None:
    """The forked process: stdout and stderr to files, then Scrapy's command line."""
    os.chdir(ROOT)
    os.environ["PYTHONPATH"] = str(ROOT)
    for fd, path in ((1, out), (2, err)):
        if fd == 2 and err == out:
            os.dup2(1, 2)  # one log: one file offset
            continue
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    if max_file_bytes is not None:
        _limit_files(max_file_bytes)
    from scrapy.cmdline import execute

    execute(["scrapy", *args])


def _result(directory: Path, returncode: int, log: str) -> CrawlResult:
    """What the crawl run in ``directory`` left behind."""
    stats = directory / "stats.json"
    return CrawlResult(
        returncode,
        _lines(directory / "items.jsonl"),
        _lines(directory / "report.jsonl"),
        json.loads(stats.read_text()) if stats.exists() else {},
        log,
    )


def shared_crawl(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    args: list[str],
    settings: dict[str, Any] | None = None,
    site: dict[str, Page] | None = None,
    timeout: float = 120,
) -> tuple[Path, CrawlResult, str]:
    """One crawl for the whole test run, shared by every test (and every xdist worker) that
    asks for ``name``: the first caller runs it, the others wait for it and read what it left
    (pytest-xdist's recipe for a session fixture run once). ``site``: pages served on a
    :class:`MockServer` during the crawl, given to the spider as ``-a start_url=<server>/``.

    (directory, result, the server's URL or ""). The tests sharing it must only read its
    directory (index, report, items): what they write goes to their own tmp_path.
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's directory, shared by the workers
    directory = base / f"shared-{name}"
    done = directory / "crawl.json"
    with open(base / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            with MockServer(site) if site is not None else contextlib.nullcontext() as server:
                url = server.url if server is not None else ""
                start = ["-a", f"start_url={url}/"] if server is not None else []
                result = run_crawl(directory, [*args, *start], settings, timeout)
            finished = {"returncode": result.returncode, "log": result.log, "url": url}
            done.write_text(json.dumps(finished))
    finished = json.loads(done.read_text())
    result = _result(directory, finished["returncode"], finished["log"])
    return directory, result, finished["url"]


def _limit_files(size: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def assert_refused_at_start(result: CrawlResult) -> None:
    """The crawl did not start because its index is unusable: one clear ERROR, a non-zero
    exit, no traceback, nothing crawled."""
    assert result.returncode != 0, result.log[-3000:]
    refusals = [line for line in result.log.splitlines() if "the crawl does not start" in line]
    assert len(refusals) == 1 and "ERROR" in refusals[0], result.log[-3000:]
    assert "Spider opened" not in result.log and not result.stats.get("finish_reason")
    assert result.items == [] and result.report == []
    assert "Traceback" not in result.log and "never retrieved" not in result.log, result.log
