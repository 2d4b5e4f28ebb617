"""docs/scaling.md's recipe, run: two scrapy-redis processes share one request queue and one
request dupefilter in Redis, and nearDupe's index in another Redis database."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from spiders.demosite.content import PRINT_VIEWS, placements
from spiders.demosite.server import DemoSiteServer, build_routes
from tests.crawl import CrawlResult, run_crawl
from tests.redis_server import REDIS_CLI, RedisServer, require_redis

pytest.importorskip("scrapy_redis")
pytestmark = [pytest.mark.redis, pytest.mark.slow]

#: The article each article page of the demo network shows (its print view included).
ARTICLE_OF = {p.path: p.article.slug for p in placements()} | {
    f"/print/{site}/{slug}": slug for site, slug in PRINT_VIEWS
}

#: The start URLs pushed to Redis: the network's home page and a site's front page.
SEEDS = ("/", "/ledger/")


def test_two_redis_spiders_store_each_article_once(tmp_path: Path) -> None:
    require_redis()
    if REDIS_CLI is None:
        pytest.skip("redis-cli binary not found on PATH")
    with RedisServer(tmp_path / "redis") as redis, DemoSiteServer() as site:
        queue, index = redis.url, redis.url.removesuffix("/0") + "/1"
        # Two start URLs: each process takes CONCURRENT_REQUESTS (here 1) at its start.
        seeds = [json.dumps({"url": f"{site.url}{path}"}) for path in SEEDS]
        lpush = [REDIS_CLI, "-p", str(redis.port), "lpush", "shared:start_urls", *seeds]
        subprocess.run(lpush, check=True, capture_output=True, timeout=10)
        settings = {
            "REDIS_URL": queue,
            "NEARDUPE_INDEX": index,
            # Spread the pages over both: a process takes up to CONCURRENT_REQUESTS requests
            # from the shared queue, and an idle one looks at it every 5 s (the engine's
            # heartbeat).
            "CONCURRENT_REQUESTS": 1,
            "DOWNLOAD_DELAY": 0.2,
            # Close 6 s after the last response (the spider's 10 s), at the next heartbeat.
            "MAX_IDLE_TIME_BEFORE_CLOSE": 6,
        }
        with ThreadPoolExecutor(2) as pool:
            runs = list(
                pool.map(
                    lambda i: run_crawl(tmp_path / f"p{i}", ["crawl", "shared"], settings),
                    range(2),
                )
            )
    for run in runs:
        assert run.returncode == 0, run.log[-3000:]
        assert run.stats["finish_reason"] == "finished", run.log[-3000:]
        assert "Traceback" not in run.log, run.log[-3000:]
        assert run.stats.get("downloader/response_count", 0) >= 1, ("did no work", run.stats)
    # One fetch of each URL across both processes (the shared dupefilter), the start URLs twice
    # (a start URL from Redis is not filtered: a link back to it is fetched again), and every
    # article page decided once: 14 kept (one per article), 14 dropped, as `scrapy crawl demo`.
    fetched = sum(run.stats.get("downloader/response_count", 0) for run in runs)
    assert fetched == len(build_routes()) + len(SEEDS), fetched
    decided = [urlsplit(line["url"]).path for run in runs for line in run.report]
    assert sorted(decided) == sorted(ARTICLE_OF), decided
    kept = [urlsplit(item["url"]).path for run in runs for item in run.items]
    assert sorted(ARTICLE_OF[path] for path in kept) == sorted(set(ARTICLE_OF.values()))
    assert [_total(runs, key) for key in ("seen", "kept", "dropped")] == [28, 14, 14]
    for run in runs:  # each process's summary line: its own counts, the shared index's size
        summary = [line for line in run.log.splitlines() if "items seen" in line][-1]
        seen, kept, dropped = (_total([run], key) for key in ("seen", "kept", "dropped"))
        assert f"nearDupe: {seen} items seen, {kept} kept, {dropped} dropped" in summary
    last = max(runs, key=lambda run: run.stats["finish_time"])
    assert [line for line in last.log.splitlines() if "items seen" in line][-1].endswith(
        "index holds 14 pages"
    )


def _total(runs: list[CrawlResult], key: str) -> int:
    return sum(run.stats.get(f"neardupe/{key}", 0) for run in runs)
