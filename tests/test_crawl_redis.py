"""End-to-end crawls sharing one real redis-server: concurrency and Redis going away."""

from __future__ import annotations

import asyncio
import json
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
        warnings = [
            line
            for run in runs
            for line in run.log.splitlines()
            if "WARNING" in line or "ERROR" in line
        ]
        assert len(kept) == 1, f"{name}: {kept}\n" + "\n".join(warnings[-20:])
    assert sum(run.stats.get("neardupe/kept", 0) for run in runs) == len(clusters)


def test_redis_killed_and_restarted_mid_crawl(redis, tmp_path: Path) -> None:
    pages, _ = build_site()
    with MockServer(pages, delay=0.4) as server:

        def decided() -> int:
            report = tmp_path / "report.jsonl"
            return len(report.read_text().splitlines()) if report.exists() else 0

        def outage() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and decided() < 2:
                time.sleep(0.05)
            redis.kill()
            before = decided()
            time.sleep(4.0)  # longer than the store's 2 s of retries
            # and until a page was decided while Redis was away (a loaded machine can leave
            # the crawl without a page to check for that long)
            while time.monotonic() < deadline and decided() == before:
                time.sleep(0.05)
            redis.start()

        saboteur = threading.Thread(target=outage)
        saboteur.start()
        result = _crawl(tmp_path, server.url, redis.url, CONCURRENT_REQUESTS=1)
        saboteur.join()
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["finish_reason"] == "finished"
    html_pages = {server.url + p for p in pages if p.endswith((".html", "/"))}
    decided = {line["url"] for line in result.report}
    assert decided == html_pages, ("nothing lost", html_pages - decided, result.log[-6000:])
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


def test_redis_down_at_start_then_pages_recorded_by_the_next_crawl(
    redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis unreachable for a whole crawl: items are kept, their fingerprints and signatures
    saved at close; the next crawl records them first, so a copy it meets is dropped."""
    import json
    import socket

    from scrapy.utils.test import get_crawler

    import nearDupe.pipeline
    from nearDupe.analysis import Analysis
    from nearDupe.backlog import pending_path
    from nearDupe.errors import NearDuplicate
    from nearDupe.pipeline import NearDupePipeline

    monkeypatch.setattr(nearDupe.pipeline, "_CLOSE_PATIENCE", 0.5)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = f"redis://127.0.0.1:{port}/0"
    name = f"pending-{tmp_path.name}"
    pending = pending_path(dead, name)
    pages = [(0x1234_5678_9ABC_DEF0, 0x0FED_CBA9_8765_4321), (0x0F0F_0F0F_F0F0_F0F0, 77)]
    brief = ((2**63 + 5, 40), (7, 60))  # the second page is short: it keeps its sentences

    async def crawl(index: str, items: list[tuple[str, int, int]]) -> list[str]:
        crawler = get_crawler(
            settings_dict={
                "NEARDUPE_INDEX": index,
                "NEARDUPE_INDEX_NAME": name,
                "NEARDUPE_WORKERS": 0,
                "NEARDUPE_START_WITHOUT_INDEX": True,  # the operator starts it on purpose
            }
        )
        pipeline = NearDupePipeline.from_crawler(crawler)
        await pipeline.open_spider()
        decisions = []
        for url, fp, signature in items:
            item = {"url": url}
            kept = brief if url.endswith("/1") else ()
            analysis = Analysis(fp, signature=signature, sentences=kept)
            pipeline.links.attach(item, url, analysis)
            try:
                await pipeline.process_item(item)
                decisions.append("kept")
            except NearDuplicate as drop:
                decisions.append(str(drop))
        await pipeline.close_spider()
        return decisions

    try:
        first = [(f"http://a/{i}", fp, sig) for i, (fp, sig) in enumerate(pages)]
        assert asyncio.run(crawl(dead, first)) == ["kept", "kept"]
        lines = [json.loads(line) for line in pending.read_text().splitlines()]
        assert lines == [
            [fp, url, sig, [list(s) for s in brief] if url.endswith("/1") else []]
            for url, fp, sig in first
        ]
        with pending.open("a") as f:  # a line from before signatures: still recorded
            f.write(json.dumps([0x5555_0000_5555_0000, "http://old/1"]) + "\n")
            f.write('{"damaged\n[1]\n')  # unreadable lines: skipped with a warning

        (fp, sig), copy = pages[0], ("http://b/0", pages[0][0] ^ 0b101, pages[0][1] ^ 1)
        short_copy = ("http://b/1", 0xABCD, 0xABCD)  # another fingerprint, the same sentences
        # Another index of the same name (an embedded one, another Redis) does not take them.
        assert asyncio.run(crawl(str(tmp_path / "embedded"), [copy])) == ["kept"]
        assert asyncio.run(crawl(redis.url, [copy])) == ["kept"]
        assert len(pending.read_text().splitlines()) == 5
        late = RedisServer(tmp_path / "late", port=port).start()  # the same index, back
        try:
            decisions = asyncio.run(crawl(late.url, [copy, short_copy]))
        finally:
            late.stop()
        assert decisions == [
            "near-duplicate of http://a/0 (distance 2): http://b/0",
            "near-duplicate of http://a/1 (its sentences): http://b/1",
        ]
        assert not pending.exists()

        async def stored() -> list[tuple[int, str, int | None]]:
            late.start()
            try:
                async with RedisStore.from_url(late.url, PLUGIN_HEADER, name=name) as store:
                    return sorted(await store.pages())
            finally:
                late.stop()

        assert asyncio.run(stored()) == sorted(
            [
                (fp, "http://a/0", sig),
                (pages[1][0], "http://a/1", 77),
                (0x5555_0000_5555_0000, "http://old/1", None),
            ]
        )
    finally:
        pending.unlink(missing_ok=True)


def test_a_page_whose_buckets_other_crawlers_keep_leased_is_the_only_one_kept_unchecked(
    redis, tmp_path: Path
) -> None:
    """Another crawler keeps the buckets of one story's fingerprint leased past a check's
    patience: that story's pages are kept unchecked (`index-busy`) and queued for later; every
    other story is decided as on a free index, one page of it kept (the index answers: it is
    not treated as away, and no page is `index-unavailable`)."""
    pages, clusters = build_site()
    with MockServer(pages) as server:
        free = run_crawl(tmp_path / "free", ["crawl", "pages", "-a", f"start_url={server.url}/"])
        assert free.returncode == 0, free.log[-3000:]
        decided = {line["url"]: line for line in free.report}
        story = clusters["A"]
        busy = int(decided[server.url + story[0]]["fingerprint"], 16)

        async def lease(px: int) -> None:
            store = RedisStore.from_url(redis.url, PLUGIN_HEADER, name="neardupe")
            for bucket in store.bucket_keys(busy):
                await store.client.set(bucket + ":lease", b"another crawler", px=px)
            await store.close()

        asyncio.run(lease(60_000))
        extensions = {"tests.stats_dump.StatsDump": 0, "tests.patience.ShortPatience": 0}
        held = _crawl(
            tmp_path / "held",
            server.url,
            redis.url,
            EXTENSIONS=json.dumps(extensions),
            LEASE_PATIENCE=0.5,
        )
    assert held.returncode == 0, held.log[-3000:]
    reasons = {line["url"]: line["reason"] for line in held.report}
    assert reasons[server.url + story[0]] == "index-busy"
    assert "index-unavailable" not in reasons.values()
    for name, paths in clusters.items():
        if name != "A":
            urls = {server.url + path for path in paths}
            kept = [x for x in held.report if x["url"] in urls and x["decision"] == "kept"]
            assert len(kept) == 1, (name, kept)
