"""Unit tests of the plugin's small parts: add-on, settings, item links, report lines."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Request
from scrapy.settings import Settings
from scrapy.utils.misc import load_object

from nearDupe import Addon, NearDuplicate
from nearDupe._settings import (
    DEFAULT_CONFIRM_K,
    DEFAULT_K,
    Config,
)
from nearDupe.addon import COMPONENTS
from nearDupe.analysis import META_KEY, Analysis, Recheck
from nearDupe.crawlstate import ItemLinks
from nearDupe.features import FeatureSettings
from nearDupe.links import NearDupeSpiderMiddleware
from nearDupe.logformatter import NearDupeLogFormatter
from nearDupe.pipeline import NearDupePipeline
from nearDupe.report import Decision, ReportWriter, read_report


def test_addon_enables_every_component_once() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    for component, (setting, priority) in COMPONENTS.items():
        assert settings.getdict(setting)[load_object(component)] == priority
    for own in (NearDupePipeline, "nearDupe.pipeline.NearDupePipeline"):
        user = Settings({"ITEM_PIPELINES": {own: 700}})
        Addon().update_settings(user)
        pipelines = user.getdict("ITEM_PIPELINES")
        assert pipelines == {own: 700}, "the user's own entry is kept, not doubled"


def test_addon_installs_its_log_formatter_unless_the_project_has_its_own() -> None:
    settings = Settings()
    settings.setmodule("scrapy.settings.default_settings", priority="default")
    Addon().update_settings(settings)
    assert settings["LOG_FORMATTER"] is NearDupeLogFormatter
    for chosen in ("myproject.logs.Formatter", "scrapy.logformatter.LogFormatter"):
        own = Settings({"LOG_FORMATTER": chosen})  # a project's settings.py
        Addon().update_settings(own)
        assert own["LOG_FORMATTER"] == chosen


def test_config_defaults_and_typed_getters(tmp_path: Path) -> None:
    config = Config.from_settings(Settings({"NEARDUPE_INDEX": str(tmp_path)}))
    assert (config.k, config.design) == (DEFAULT_K, "4-table") == (3, "4-table")
    assert config.header.confirm_k == config.confirm_k == DEFAULT_CONFIRM_K == 22
    assert config.header.sentence_share == config.sentence_share == 0.3
    assert config.min_text_length == 200 and config.report is None and not config.is_redis
    typed = Config.from_settings(Settings({"NEARDUPE_K": "10", "NEARDUPE_WORKERS": "0"}))
    assert (typed.k, typed.design, typed.workers) == (10, "blocks-10-11", 0)
    redis = Config.from_settings(Settings({"NEARDUPE_INDEX": "redis://127.0.0.1:6379/0"}))
    assert redis.is_redis and (redis.k, redis.header.design, redis.confirm_k) == (3, "4-table", 22)
    assert redis.store_options() == {
        "name": "neardupe",
        "cluster": False,
        "pages": 0,
        "must_answer": True,
    }
    big = Config.from_settings(Settings({"NEARDUPE_REDIS_PAGES": "100000000"}))
    assert big.redis_pages == 10**8
    shingles = Config.from_settings(
        Settings({"NEARDUPE_FEATURES": '{"kind": "shingles", "shingle": 3, "top_n": 128}'})
    )
    assert shingles.features == FeatureSettings(kind="shingles", shingle=3, top_n=128)
    assert shingles.header.features["kind"] == "shingles" != config.header.features["kind"]


def test_config_rejects_disabled_and_bad_settings() -> None:
    with pytest.raises(NotConfigured):
        Config.from_settings(Settings({"NEARDUPE_ENABLED": "False"}))
    with pytest.raises(ValueError, match=r"NEARDUPE_K = '10': expected .* within 0\.\.3"):
        Config.from_settings(Settings({"NEARDUPE_DESIGN": "4-table", "NEARDUPE_K": "10"}))
    with pytest.raises(ValueError, match=r"NEARDUPE_CONFIRM_K = '129': expected .* 0\.\.128"):
        Config.from_settings(Settings({"NEARDUPE_CONFIRM_K": "129"}))
    with pytest.raises(ValueError, match=r"NEARDUPE_SENTENCE_SHARE = '0': expected .* \(0, 1\]"):
        Config.from_settings(Settings({"NEARDUPE_SENTENCE_SHARE": "0"}))
    with pytest.raises(ValueError, match=r"NEARDUPE_REDIS_PAGES = '-1': expected .* within 0\."):
        Config.from_settings(Settings({"NEARDUPE_REDIS_PAGES": "-1"}))
    with pytest.raises(ValueError, match="NEARDUPE_DESIGN = '5-table': expected 4-table"):
        Config.from_settings(Settings({"NEARDUPE_DESIGN": "5-table"}))
    for features, error in [
        ({"kind": "letters"}, "kind='letters' must be one of"),
        ({"shingels": 2}, "unknown field 'shingels'"),
        ({"shingle": 0}, "shingle must be at least 1"),
        ({"top_n": -5}, "top_n=-5 must be a whole number"),
        ({"full_line": "20"}, "full_line='20' must be a whole number"),
        ({"digits": "yes"}, "digits must be true or false"),
    ]:
        with pytest.raises(ValueError, match=f"NEARDUPE_FEATURES = .*: {re.escape(error)}"):
            Config.from_settings(Settings({"NEARDUPE_FEATURES": features}))


@dataclass
class Article:
    url: str


def test_item_links_follow_the_item_object_not_equal_ones() -> None:
    links = ItemLinks()
    analysis = Analysis(5)
    item, twin = {"url": "u"}, {"url": "u"}
    links.attach(item, "http://a/", analysis)
    assert links.pop(twin) is None, "an equal dict is another item"
    assert links.pop(item) == ("http://a/", analysis)
    assert links.pop(item) is None and len(links) == 0
    dataclass_item = Article("u")
    links.attach(dataclass_item, "http://b/", None)
    links.forget(dataclass_item)
    assert len(links) == 0


def test_items_are_linked_to_their_response_and_requests_carry_none_of_it() -> None:
    """A spider passing its response's meta on to its next requests (meta=response.meta) does
    not queue the page's Analysis, which for a young site's page holds its text and HTML."""
    links = ItemLinks()
    analysis = Analysis(5, recheck=Recheck("text", "headline", "<html>" + "x" * 10_000))
    request = Request("http://a/", meta={META_KEY: analysis})
    response = HtmlResponse("http://a/", body=b"<html></html>", request=request)
    item = {"url": "http://a/"}
    follow = Request("http://a/next", meta=response.meta)
    out = list(NearDupeSpiderMiddleware(links).process_spider_output(response, [item, follow]))
    assert out == [item, follow]
    assert META_KEY not in follow.meta and response.meta[META_KEY] is analysis
    assert links.pop(item) == ("http://a/", analysis)


def test_report_lines_and_drop_message(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "report.jsonl"
    writer = ReportWriter(path)
    writer.write(Decision("http://a/", "kept", 0xAB))
    dropped = Decision("http://b/", "dropped", 0xAC, "http://a/", 1)
    writer.write(dropped)
    writer.write(Decision("http://c/", "skipped", reason="not-html"))
    writer.close()
    lines = read_report(path)
    assert lines[0] == {
        "url": "http://a/",
        "decision": "kept",
        "fingerprint": "00000000000000ab",
        "duplicate_of": None,
        "distance": None,
        "reason": None,
        "recrawl": None,
        "stored_distance": None,
        "stored_shared": None,
        "first_stored": None,
        "last_changed": None,
    }
    assert lines[1]["duplicate_of"] == "http://a/" and lines[1]["distance"] == 1
    assert lines[2]["reason"] == "not-html" and lines[2]["fingerprint"] is None
    assert json.loads(path.read_text().splitlines()[1])["decision"] == "dropped"
    assert dropped.message == "near-duplicate of http://a/ (distance 1): http://b/"
    assert issubclass(NearDuplicate, Exception)


@pytest.mark.parametrize("freeze", [True, False])
def test_pipeline_freezes_long_lived_objects_for_the_crawl(tmp_path: Path, freeze: bool) -> None:
    """Full garbage collections skip what is alive at open (the index kernels, the crawler);
    close hands it back to the collector. NEARDUPE_GC_FREEZE=False leaves the collector be."""
    import asyncio
    import gc

    from scrapy.utils.test import get_crawler

    settings = {
        "NEARDUPE_INDEX": str(tmp_path / "index"),
        "NEARDUPE_WORKERS": 0,
        "NEARDUPE_GC_FREEZE": freeze,
    }
    pipeline = NearDupePipeline.from_crawler(get_crawler(settings_dict=settings))
    frozen: list[int] = []

    async def crawl() -> None:
        await pipeline.open_spider()
        frozen.append(gc.get_freeze_count())
        await pipeline.close_spider()

    assert gc.get_freeze_count() == 0
    asyncio.run(crawl())
    assert (frozen[0] > 10_000) is freeze
    assert gc.get_freeze_count() == 0


def test_backlog_spills_to_its_file_and_loses_nothing(tmp_path: Path) -> None:
    from nearDupe.backlog import Backlog

    pages = [(i, f"http://a/{i}\udc80", None if i % 2 else i, ((i, 9),)) for i in range(7)]
    backlog = Backlog(tmp_path / "pending.jsonl", limit=2)
    for page in pages[:5]:
        backlog.append(page)
    assert len(backlog) == 5 and len(backlog.path.read_text().splitlines()) == 3
    assert backlog.first() == pages[0]
    backlog.pop()
    assert backlog.save()  # at close: memory ahead of the spilled pages
    again = Backlog(backlog.path, limit=2)
    assert again.load() == 4
    for page in pages[5:]:
        again.append(page)
    drained = []
    while (page := again.first()) is not None:
        drained.append(page)
        again.pop()
    assert drained == pages[1:] and not again.path.exists()


def test_replays_asked_for_at_once_record_each_page_once(tmp_path: Path) -> None:
    """Items decided in one event-loop turn each ask for a replay of the backlog: one replay
    drains it, each page recorded once (two at once popped one page twice: IndexError)."""
    import asyncio

    from nearDupe.backlog import Backlog
    from nearDupe.store import EmbeddedIndex, EmbeddedStore

    backlog = Backlog(tmp_path / "pending.jsonl")
    fps = [0x0123_4567_89AB_CDEF * i % 2**64 for i in range(1, 6)]  # pairwise far apart
    pages = [(fp, f"http://a/{i}", None, ()) for i, fp in enumerate(fps)]
    for page in pages:
        backlog.append(page)
    index = EmbeddedIndex(tmp_path / "index")
    store = EmbeddedStore(index, off_loop_pages=0)  # every call in the store's thread: awaits
    stats = _Stats()

    async def body() -> None:
        replays = (backlog.replay(store, stats) for _ in range(4))  # type: ignore[arg-type]
        await asyncio.gather(*replays)
        assert await store.count() == len(pages) and len(backlog) == 0
        await store.close()

    asyncio.run(body())


class _Stats:
    """A replay's stats: it counts pages set aside or found to be copies (none here)."""

    def inc_value(self, key: str) -> None:
        raise AssertionError(f"no page is set aside or a copy: {key}")


def test_workers_load_jieba_only_for_chinese_and_outside_the_time_limit() -> None:
    """A worker warmed up for English has no jieba (115 MB instead of 304); its first Chinese
    page loads it (about a second) before the page's time limit starts, so a limit shorter
    than that load still analyses the page."""
    code = textwrap.dedent(
        """
        import sys
        from nearDupe.analysis import analyze_text, warm_up
        from nearDupe.features import FeatureSettings
        from nearDupe.workers import analyze_within
        warm_up(FeatureSettings())
        assert "jieba" not in sys.modules, "warm-up loaded jieba"
        text = "城市图书馆本周起延长开放时间，周末开放到晚上十点，读者可以在线预约座位。" * 6
        analysis = analyze_within(0.3, analyze_text, text, 200, FeatureSettings())
        assert analysis.fingerprint is not None and "jieba" in sys.modules
        print("ok")
        """
    )
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert proc.stdout.strip() == "ok", proc.stderr[-2000:]
