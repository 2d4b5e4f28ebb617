"""Re-crawls of a real local site that changes between crawls: changed pages kept and stored
in their URL's place, unchanged ones dropped, on both backends."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from nearDupe._settings import Config
from spiders.demosite import edition
from spiders.demosite.content import placements
from spiders.demosite.server import DemoSiteServer
from tests.crawl import CrawlResult, run_crawl, run_scrapy
from tests.redis_server import RedisServer, require_redis
from tests.test_crash_resume import report_lines, start_crawl, wait_for_report

BACKENDS = ["embedded", pytest.param("redis", marks=pytest.mark.redis)]


def _path(key: str, slug: str) -> str:
    return next(p.path for p in placements() if (p.site.key, p.article.slug) == (key, slug))


#: The article pages the second edition rewrote, and those it added.
REWRITTEN = {_path(*page) for page in edition.REWRITTEN}
ADDED = {page.path for page in edition.added()}
#: The page that now carries a copy of another site's story, and that story's page.
((_REPLACED, _SOURCE),) = edition.REPLACED.items()
REPLACED, SOURCE = _path(*_REPLACED), _path(*_SOURCE)


def _index(backend: str, tmp_path: Path, stack: ExitStack) -> dict[str, Any]:
    """Settings for an index of ``backend`` (a Redis started in ``stack``)."""
    if backend == "embedded":
        return {"NEARDUPE_INDEX": str(tmp_path / "index")}
    require_redis()
    return {"NEARDUPE_INDEX": stack.enter_context(RedisServer(tmp_path / "redis")).url}


def _crawl(tmp_path: Path, server: DemoSiteServer, settings: dict[str, Any]) -> CrawlResult:
    args = ["crawl", "pages", "-a", f"start_url={server.url}/"]
    result = run_crawl(tmp_path, args, {"NEARDUPE_RECRAWL": "changed", **settings})
    assert result.returncode == 0, result.log[-3000:]
    assert " ERROR: " not in result.log, result.log[-3000:]
    return result


def _by_path(result: CrawlResult, base: str) -> dict[str, dict[str, Any]]:
    return {line["url"].removeprefix(base): line for line in result.report}


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_edition_keeps_exactly_the_edited_and_the_new_pages(
    backend: str, tmp_path: Path
) -> None:
    with ExitStack() as stack:
        settings = _index(backend, tmp_path, stack)
        server = stack.enter_context(DemoSiteServer())
        base = server.url
        first = _crawl(tmp_path / "one", server, settings)
        server.serve_edition(2)
        second = _crawl(tmp_path / "two", server, settings)
        third = _crawl(tmp_path / "three", server, settings)
        index = ["-s", f"NEARDUPE_INDEX={settings['NEARDUPE_INDEX']}"]
        checks = {
            path: run_scrapy(["neardupe", "check", base + path, "--json", *index])
            for path in (*sorted(REWRITTEN)[:1], *sorted(ADDED)[:1])
        }
    before, after = _by_path(first, base), _by_path(second, base)
    stored = {path for path, line in before.items() if line["decision"] == "kept"}
    assert stored >= REWRITTEN and REPLACED in stored and SOURCE in stored
    kept = {path for path, line in after.items() if line["decision"] == "kept"}
    assert kept == REWRITTEN | ADDED
    for path in REWRITTEN:
        line = after[path]
        assert (line["recrawl"], line["reason"]) == ("changed", None)
        assert line["stored_distance"] > 3 and line["stored_shared"] < 0.3
        assert line["first_stored"] is not None and line["last_changed"] is None
    assert all(after[path]["recrawl"] is None for path in ADDED)
    # Every other page stored by the first crawl: only its counters and dates moved.
    for path in stored - REWRITTEN - {REPLACED}:
        line = after[path]
        assert (line["decision"], line["reason"], line["recrawl"]) == (
            "dropped",
            "already-stored",
            "unchanged",
        ), line
    # The page that now carries another site's story is dropped as a copy of that story.
    line = after[REPLACED]
    assert (line["decision"], line["recrawl"]) == ("dropped", "changed")
    assert line["duplicate_of"] == base + SOURCE
    assert second.stats["neardupe/recrawl/changed"] == len(REWRITTEN) + 1
    unchanged = [line for line in second.report if line["recrawl"] == "unchanged"]
    assert second.stats["neardupe/recrawl/unchanged"] == len(unchanged) >= len(stored) - 3
    assert f"Dropped: near-duplicate of {base}{SOURCE}" in second.log
    assert second.stats["neardupe/index_size"] == first.stats["neardupe/index_size"] + len(kept)
    # The next crawl compares with the newest versions: nothing is news any more.
    again = _by_path(third, base)
    assert "neardupe/kept" not in third.stats and third.items == []
    for path in REWRITTEN:
        line = again[path]
        assert (line["reason"], line["recrawl"], line["stored_distance"]) == (
            "already-stored",
            "unchanged",
            0,
        )
        assert line["last_changed"] is not None
        assert line["first_stored"] == after[path]["first_stored"]
    # `scrapy neardupe check URL` tells when a URL was first stored and last changed.
    for path, done in checks.items():
        assert done.returncode == 0, done.stderr[-3000:]
        checked = json.loads(done.stdout)
        assert checked["stored"] and checked["first_stored"] == again[path]["first_stored"]
        if path in REWRITTEN:
            assert checked["last_changed"] == again[path]["last_changed"] is not None
        else:
            assert checked["last_changed"] is None


def test_a_crash_between_a_changed_page_and_its_commit_loses_nothing(tmp_path: Path) -> None:
    """kill -9 once the changed pages are decided, before their commit: the next crawl finds
    them changed again and keeps them, and stores them in their URL's place."""
    index = tmp_path / "index"
    with DemoSiteServer() as server:
        base = server.url
        _crawl(tmp_path / "one", server, {"NEARDUPE_INDEX": str(index)})
        server.serve_edition(2)
        report = tmp_path / "killed" / "report.jsonl"
        settings = {
            "NEARDUPE_RECRAWL": "changed",
            "NEARDUPE_INDEX": str(index),
            "NEARDUPE_REPORT": str(report),
            "NEARDUPE_WORKERS": 0,
            "NEARDUPE_COMMIT_INTERVAL": 3600,  # nothing committed before the kill
            "DOWNLOAD_DELAY": 0.3,
            "LOG_LEVEL": "INFO",
        }
        proc = start_crawl(tmp_path / "killed", f"{server.url}/", settings)
        try:
            seen = 0
            while seen < len(REWRITTEN):
                wait_for_report(proc, report, len(report_lines(report)) + 1)
                seen = sum(
                    (line["recrawl"], line["decision"]) == ("changed", "kept")
                    for line in report_lines(report)
                )
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(30)
        killed = report_lines(report)
        assert proc.returncode == -signal.SIGKILL
        restart = _crawl(tmp_path / "restart", server, {"NEARDUPE_INDEX": str(index)})
    changed = {
        line["url"]
        for line in killed
        if (line["recrawl"], line["decision"]) == ("changed", "kept")
    }
    assert {url.removeprefix(base) for url in changed} >= REWRITTEN
    after = _by_path(restart, base)
    for path in REWRITTEN:
        assert (after[path]["decision"], after[path]["recrawl"]) == ("kept", "changed")
    kept = {path for path, line in after.items() if line["decision"] == "kept"}
    assert kept == REWRITTEN | ADDED


@pytest.mark.redis
def test_two_crawlers_racing_through_redis_store_no_url_twice(tmp_path: Path) -> None:
    """Two crawl processes over one site at once, on one redis-server: each URL is kept by
    one of them at most, and each kept page is its URL's version."""
    from tests.crawl import ScrapyProcess

    require_redis()
    with ExitStack() as stack:
        redis = stack.enter_context(RedisServer(tmp_path / "redis"))
        server = stack.enter_context(DemoSiteServer())
        procs = []
        for name in ("a", "b"):
            directory = tmp_path / name
            directory.mkdir()
            args = ["crawl", "pages", "-a", f"start_url={server.url}/"]
            settings = {
                "NEARDUPE_INDEX": redis.url,
                "NEARDUPE_REPORT": str(directory / "report.jsonl"),
                "NEARDUPE_WORKERS": 0,
                "NEARDUPE_RECRAWL": "changed",
                "CONCURRENT_REQUESTS": 32,
                "LOG_LEVEL": "INFO",
            }
            for setting, value in settings.items():
                args += ["-s", f"{setting}={value}"]
            log = directory / "log.txt"
            procs.append(ScrapyProcess(args, log, log))
        for proc in procs:
            assert proc.wait(120) == 0, (tmp_path / "a" / "log.txt").read_text()[-3000:]
        reports = [report_lines(tmp_path / name / "report.jsonl") for name in ("a", "b")]
        stored = asyncio.run(_versions(redis.url, [line["url"] for line in reports[0]]))
    kept = Counter(
        line["url"] for lines in reports for line in lines if line["decision"] == "kept"
    )
    assert kept and max(kept.values()) == 1, kept
    # Both crawlers decided every page: what one kept, the other dropped as already stored
    # (or, deciding it before the claim was written, skipped it: its view of the site made
    # the page template-only text).
    assert {line["url"] for line in reports[0]} == {line["url"] for line in reports[1]}
    for url in kept:
        lines = [line for report in reports for line in report if line["url"] == url]
        other = next(line for line in lines if line["decision"] != "kept")
        assert other["decision"] == "skipped" or (other["reason"], other["recrawl"]) == (
            "already-stored",
            "unchanged",
        ), other
    # The index holds each kept page once, as its URL's version (and each skipped page once,
    # by its URL and body).
    count, versions = stored
    skipped = {line["url"] for lines in reports for line in lines if line["decision"] == "skipped"}
    assert count == len(kept) + len(skipped)
    assert {url for url, fp in versions.items() if fp is not None} == set(kept)


async def _versions(url: str, pages: list[str]) -> tuple[int, dict[str, int | None]]:
    """How many pages the Redis index at ``url`` holds, and each page URL's version."""
    from nearDupe.store.redis import RedisStore

    header = Config.from_settings(Settings({"NEARDUPE_INDEX": url})).header
    store = RedisStore.from_url(url, header)
    try:
        versions = {page: await store.version(page) for page in pages}
        count = await store.count()
    finally:
        await store.close()
    return count, {page: v and v.fingerprint for page, v in versions.items()}
