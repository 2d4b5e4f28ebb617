"""kill -9 in the middle of a crawl, restart on the same index: nothing kept is forgotten."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import re
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from nearDupe._settings import DEFAULT_K, Config
from nearDupe.analysis import analyze_text
from nearDupe.features import FeatureSettings
from nearDupe.simhash import hamming
from nearDupe.store import EmbeddedIndex
from spiders.demosite.content import ARTICLES_DIR, load_article
from tests.crawl import CrawlResult, ScrapyProcess, assert_refused_at_start, run_crawl
from tests.mockserver import MockServer, Page
from tests.site import TEMPLATES

#: The header the plugin asks for with default settings.
PLUGIN_HEADER = Config.from_settings(Settings()).header

pytestmark = pytest.mark.slow

ARTICLES = 100
#: The first run is killed once its report holds this many decisions (about a third).
KILL_AT = 100


def _sentences() -> list[str]:
    sentences: list[str] = []
    for path in sorted((ARTICLES_DIR / "en").glob("*.txt")):
        for paragraph in load_article(path).paragraphs:
            sentences += [s for s in re.split(r"(?<=[.!?])\s+", paragraph) if len(s) > 30]
    return sentences


def _reordered(sentence: str, rng: random.Random) -> str:
    words = sentence.rstrip(".!?").split()
    rng.shuffle(words)
    return " ".join(words) + "."


def build_network(articles: int, copies: int) -> tuple[dict[str, Page], dict[str, str]]:
    """(path -> Page, path -> cluster): distinct stories recombined from the demo's sentences,
    each sentence told as the story's own, its words in an order of the story's (distinct
    stories share none of their sentences, nor their runs of words)."""
    pool = _sentences()
    stories = []
    for i in range(articles):
        rng = random.Random(i)
        chosen = [f"In story {i}, {_reordered(s, rng)}" for s in rng.sample(pool, 12)]
        stories.append([" ".join(chosen[j : j + 3]) for j in range(0, 12, 3)])
    fps = [analyze_text("\n".join(s), 200, FeatureSettings()).fingerprint for s in stories]
    assert min(hamming(a, b) for a, b in itertools.combinations(fps, 2)) > DEFAULT_K + 2  # type: ignore[arg-type]
    pages: dict[str, Page] = {}
    cluster_of: dict[str, str] = {}
    for copy, i in itertools.product(range(copies), range(articles)):
        path = f"/s{copy}/story-{i}.html"
        html = TEMPLATES[copy % len(TEMPLATES)].render(f"Story {i}", stories[i], i * 7 + copy, "")
        pages[path] = Page(html.encode())
        cluster_of[path] = f"story-{i}"
    links = "".join(f'<a href="{p}">{p}</a> ' for p in pages)
    pages["/"] = Page(f"<html><body><nav>{links}</nav></body></html>".encode())
    return pages, cluster_of


def _settings(tmp_path: Path, index: Path, extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "NEARDUPE_REPORT": str(tmp_path / "report.jsonl"),
        "NEARDUPE_INDEX": str(index),
        "NEARDUPE_WORKERS": 0,
        "LOG_LEVEL": "INFO",
        **extra,
    }


def start_crawl(tmp_path: Path, url: str, settings: dict[str, Any]) -> ScrapyProcess:
    """``scrapy crawl pages`` in the background, its log in tmp_path/log.txt."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    args = ["crawl", "pages", "-a", f"start_url={url}"]
    for name, value in settings.items():
        args += ["-s", f"{name}={value}"]
    return ScrapyProcess(args, tmp_path / "log.txt", tmp_path / "log.txt")


def report_lines(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a report (a killed writer may leave half a line)."""
    if not path.exists():
        return []
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError):
            lines.append(json.loads(line))
    return lines


def wait_for_report(proc: ScrapyProcess, report: Path, lines: int) -> None:
    """Return once the report holds ``lines`` decisions (fail if the crawl ends before)."""
    deadline = time.monotonic() + 90
    while len(report_lines(report)) < lines:
        assert proc.poll() is None, "the crawl ended before it could be interrupted"
        assert time.monotonic() < deadline, "the crawl is too slow"
        time.sleep(0.02)


def kill_mid_crawl(tmp_path: Path, url: str, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """Start a crawl, kill -9 it once KILL_AT pages are decided; the report it left."""
    proc = start_crawl(tmp_path, url, settings)
    try:
        wait_for_report(proc, tmp_path / "report.jsonl", KILL_AT)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    return report_lines(tmp_path / "report.jsonl")


def _clean(result: CrawlResult) -> None:
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["finish_reason"] == "finished"
    assert " ERROR: " not in result.log, result.log[-3000:]


def _kept_by_cluster(report: list[dict[str, Any]], base: str, cluster_of: dict[str, str]):
    kept: dict[str, list[str]] = {}
    for line in report:
        if line["decision"] == "kept":
            kept.setdefault(cluster_of[line["url"].removeprefix(base)], []).append(line["url"])
    return kept


@pytest.fixture(scope="module")
def network() -> tuple[dict[str, Page], dict[str, str]]:
    return build_network(ARTICLES, 3)


def test_kill_9_then_restart_with_and_without_jobdir(network, tmp_path: Path) -> None:
    pages, cluster_of = network
    index = tmp_path / "index"
    with MockServer(pages) as server:
        url = server.url
        # Slow enough to be interrupted; every add committed at once (NEARDUPE_COMMIT_INTERVAL=0).
        first = kill_mid_crawl(
            tmp_path / "first",
            f"{url}/",
            _settings(
                tmp_path / "first",
                index,
                {
                    "NEARDUPE_COMMIT_INTERVAL": 0,
                    "DOWNLOAD_DELAY": 0.02,
                    "JOBDIR": str(tmp_path / "job"),
                },
            ),
        )
        assert KILL_AT <= len(first) < len(pages) - 50
        kept_first = _kept_by_cluster(first, url, cluster_of)
        assert kept_first and all(len(urls) == 1 for urls in kept_first.values()), kept_first
        # Two restarts from the same crashed state: a fresh crawl, and a JOBDIR resume.
        shutil.copytree(index, tmp_path / "index-copy")
        fresh = run_crawl(
            tmp_path / "fresh",
            ["crawl", "pages", "-a", f"start_url={url}/"],
            {"NEARDUPE_INDEX": str(index)},
        )
        resumed = run_crawl(
            tmp_path / "resumed",
            ["crawl", "pages", "-a", f"start_url={url}/?resumed"],
            {"NEARDUPE_INDEX": str(tmp_path / "index-copy"), "JOBDIR": str(tmp_path / "job")},
        )
    for restart, index_dir in [(fresh, index), (resumed, tmp_path / "index-copy")]:
        _clean(restart)
        # Every kept page committed before the kill is there (at most one more: a page whose
        # commit happened but whose report line had not been written yet).
        assert held_before(restart) - len(kept_first) in (0, 1), held_before(restart)
        kept_again = _kept_by_cluster(restart.report, url, cluster_of)
        assert not set(kept_again) & set(kept_first), "a cluster kept twice across the crash"
        assert all(len(urls) == 1 for urls in kept_again.values())
        decided = {line["url"]: line for line in restart.report}
        for (kept_url,) in kept_first.values():
            if kept_url in decided:
                assert decided[kept_url]["decision"] == "dropped"
                assert decided[kept_url]["duplicate_of"] == kept_url
                assert decided[kept_url]["reason"] == "already-stored"
                assert decided[kept_url]["stored_distance"] == 0
        with EmbeddedIndex(index_dir, PLUGIN_HEADER) as reopened:
            stored = [key.removeprefix(url) for _, key, _ in reopened.pages()]
        # Articles, and the unfingerprinted pages (the home page) recorded by their URL and body.
        clusters = [cluster_of[path] for path in stored if path in cluster_of]
        assert len(clusters) == len(set(clusters)), "two pages of one cluster in the index"
        if restart is fresh:
            unfingerprinted = [path for path in stored if path not in cluster_of]
    # The fresh crawl sees every page again: then every cluster is in the index exactly once.
    assert len(fresh.report) == len(pages)
    assert fresh.stats["neardupe/index_size"] == ARTICLES + len(unfingerprinted)
    assert fresh.stats["neardupe/kept"] == ARTICLES + len(unfingerprinted) - held_before(fresh)


def held_before(result: CrawlResult) -> int:
    """How many pages the index held when the crawl started."""
    return int(re.search(r"holds (\d+) pages", result.log).group(1))  # type: ignore[union-attr]


def test_second_crawl_on_a_busy_index_is_refused(network, tmp_path: Path) -> None:
    pages, cluster_of = network
    small = {p: page for p, page in pages.items() if p.startswith(("/s0/", "/s1/"))}
    small = {p: page for p, page in small.items() if int(p.split("-")[1].split(".")[0]) < 25}
    links = "".join(f'<a href="{p}">{p}</a> ' for p in small)
    small["/"] = Page(f"<html><body><nav>{links}</nav></body></html>".encode())
    index = tmp_path / "index"
    # The stories wait behind the gate: the first crawl is busy (its index open, its home page
    # decided) for as long as the second takes to start, however slow the machine.
    gate = threading.Event()
    with MockServer(small, gate=gate) as server:
        busy = start_crawl(
            tmp_path / "busy", f"{server.url}/", _settings(tmp_path / "busy", index, {})
        )
        try:
            wait_for_report(busy, tmp_path / "busy" / "report.jsonl", 1)
            second = run_crawl(
                tmp_path / "second",
                ["crawl", "pages", "-a", f"start_url={server.url}/"],
                {"NEARDUPE_INDEX": str(index)},
            )
            assert busy.poll() is None, "the first crawl ended too soon to test the lock"
            gate.set()
            busy.wait(120)
        finally:
            gate.set()
            if busy.poll() is None:
                busy.kill()
                busy.wait()
    assert_refused_at_start(second)
    refusal = [ln for ln in second.log.splitlines() if "nearDupe cannot open its index" in ln]
    assert refusal, second.log[-3000:]
    assert f"index {index} is open in another process" in refusal[0]
    assert "NEARDUPE_INDEX='redis://host:port/db'" in refusal[0]
    # The first crawl did not notice: it finished and decided every page.
    log = (tmp_path / "busy" / "log.txt").read_text()
    assert busy.returncode == 0 and "Spider closed (finished)" in log and " ERROR: " not in log
    report = report_lines(tmp_path / "busy" / "report.jsonl")
    assert len(report) == len(small)
    kept = _kept_by_cluster(report, server.url, cluster_of)
    assert len(kept) == 25 and all(len(urls) == 1 for urls in kept.values())


def _children(pid: int) -> set[int]:
    """The live processes whose parent is ``pid`` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_exit_when_the_crawl_is_killed(network, tmp_path: Path) -> None:
    pages, _ = network
    with MockServer(pages) as server:
        settings = _settings(tmp_path, tmp_path / "index", {"NEARDUPE_WORKERS": 2})
        proc = start_crawl(tmp_path, f"{server.url}/", {**settings, "DOWNLOAD_DELAY": 0.1})
        try:
            wait_for_report(proc, tmp_path / "report.jsonl", 3)
            workers = _children(proc.pid)
            assert len(workers) >= 2, workers  # the two workers (and the resource tracker)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)], "workers outlived the crawl"
