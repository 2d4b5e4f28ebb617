"""End-to-end crawls sharing one real redis-server: concurrency and Redis going away."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from scrapy.settings import Settings

from nearDupe._settings import Config
from nearDupe.store.redis import RedisStore
from tests.crawl import CrawlResult, run_crawl
from tests.mockserver import MockServer
from tests.redis_server import RedisServer, require_redis
from tests.site import build_site

#: The header the plugin asks for with default settings.
PLUGIN_HEADER = Config.from_settings(Settings({"NEARDUPE_INDEX": "redis://h:1/0"})).header

pytestmark = pytest.mark.redis


@pytest.fixture
def redis(tmp_path: Path):
    require_redis()
    with RedisServer(tmp_path / "redis") as server:
        yield server


def _crawl(tmp_path: Path, url: str, redis_url: str, **settings: object) -> CrawlResult:
    return run_crawl(
        tmp_path,
        ["crawl", "pages", "-a", f"start_url={url}/"],
        {"NEARDUPE_INDEX": redis_url, **settings},
    )


def test_concurrent_crawls_keep_one_copy_per_article(redis, tmp_path: Path) -> None:
    pages, clusters = build_site()
    with MockServer(pages) as server, ThreadPoolExecutor(3) as pool:
        runs = list(
            pool.map(lambda i: _crawl(tmp_path / f"crawl{i}", server.url, redis.url), range(3))
        )
    for run in runs:
        assert run.returncode == 0, run.log[-3000:]
        assert run.stats["finish_reason"] == "finished"
    for name, paths in clusters.items():
        urls = {server.url + p for p in paths}
        kept = [
            line
            for run in runs
            for line in run.report
            if line["url"] in urls and line["decision"] == "kept"
        ]
        assert len(kept) == 1, (name, kept)
    assert sum(run.stats.get("neardupe/kept", 0) for run in runs) == len(clusters)


def test_redis_killed_and_restarted_mid_crawl(redis, tmp_path: Path) -> None:
    pages, _ = build_site()
    with MockServer(pages, delay=0.4) as server:

        def outage() -> None:
            report = tmp_path / "report.jsonl"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (
                not report.exists() or len(report.read_text().splitlines()) < 2
            ):
                time.sleep(0.05)
            redis.kill()
            time.sleep(4.0)  # longer than the store's 2 s of retries
            redis.start()

        saboteur = threading.Thread(target=outage)
        saboteur.start()
        result = _crawl(tmp_path, server.url, redis.url, CONCURRENT_REQUESTS=1)
        saboteur.join()
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["finish_reason"] == "finished"
    html_pages = {server.url + p for p in pages if p.endswith((".html", "/"))}
    decided = {line["url"] for line in result.report}
    assert decided == html_pages, "every page got a decision: nothing lost"
    kept = [line for line in result.report if line["decision"] == "kept"]
    dropped_urls = {line["url"] for line in result.report if line["decision"] == "dropped"}
    assert {item["url"] for item in result.items} == html_pages - dropped_urls
    assert result.stats["neardupe/index_errors"] >= 1
    assert any(line["reason"] == "index-unavailable" for line in kept)

    async def stored(fingerprints: list[int]) -> list[bool]:
        store = RedisStore.from_url(redis.url, PLUGIN_HEADER)
        try:
            return [bool(await store.query(fp)) for fp in fingerprints]
        finally:
            await store.close()

    # Every kept page, also those kept while Redis was down, is in the index after the crawl
    # (or, if it turned out to copy a page stored meanwhile, that page is).
    found = asyncio.run(stored([int(line["fingerprint"], 16) for line in kept]))
    assert all(found), [line for line, ok in zip(kept, found, strict=True) if not ok]
