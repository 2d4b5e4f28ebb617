"""The main text nearDupe extracts, given to the spider (``nearDupe.main_text``) and to the
items it keeps (NEARDUPE_TEXT_ITEM_FIELD), and kept by nothing once the item is decided."""

from __future__ import annotations

import asyncio
import gc
import logging
import weakref
from pathlib import Path
from typing import Any

import pytest
from scrapy import Field, Item, Selector
from scrapy.http import HtmlResponse, Request
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

import nearDupe
from nearDupe import NearDuplicate, main_text
from nearDupe._settings import Config
from nearDupe.analysis import META_KEY, Analysis, Recheck, analyze_html
from nearDupe.crawlstate import ItemLinks
from nearDupe.features import FeatureSettings
from nearDupe.links import NearDupeSpiderMiddleware
from nearDupe.pipeline import NearDupePipeline
from nearDupe.report import Decision
from tests.crawl import run_crawl
from tests.mockserver import MockServer
from tests.site import TEMPLATES, article, build_site

STORY = article("harbor-bridge")
PAGE = TEMPLATES[0].render("Bridge reopens", STORY, 10, "2024-05-01")


def _response(meta: dict[str, Any] | None) -> HtmlResponse:
    request = Request("http://a/story", meta=meta) if meta is not None else None
    return HtmlResponse("http://a/story", body=PAGE.encode(), request=request)


def test_main_text_is_the_text_of_analysed_pages_only() -> None:
    analysis = analyze_html(PAGE, 200, 2_000_000, FeatureSettings(), url="http://a/story")
    assert analysis.fingerprint is not None and analysis.text is not None
    assert STORY[0][:60] in analysis.text and STORY[-1][-40:] in analysis.text
    assert "Buy fresh coffee today" not in analysis.text  # the ad
    assert "All rights reserved" not in analysis.text  # the footer
    tiny = analyze_html(
        "<html><body><p>Contact us.</p></body></html>", 200, 10**6, FeatureSettings()
    )
    assert tiny.skip_reason == "tiny-text" and tiny.text is None

    assert main_text(_response({META_KEY: analysis})) == analysis.text
    assert main_text(_response({META_KEY: tiny})) is None, "skipped: no text"
    assert main_text(_response({META_KEY: Analysis(None, "not-html")})) is None
    assert main_text(_response({})) is None, "nearDupe did not see it (disabled)"
    assert main_text(_response(None)) is None, "a response of no request has no meta"
    assert main_text(_response({META_KEY: "not an Analysis"})) is None
    assert "main_text" in nearDupe.__all__


def test_follow_up_requests_carry_no_text() -> None:
    """A spider passing its response's meta on (meta=response.meta) queues none of the text."""
    text = "A story. " * 2_000
    analysis = Analysis(5, text=text, recheck=Recheck(text, "Story", "<html>" + text))
    response = _response({META_KEY: analysis})
    item = {"url": response.url}
    follow = [Request(f"http://a/{i}", meta=response.meta) for i in range(3)]
    links = ItemLinks()
    out = list(NearDupeSpiderMiddleware(links).process_spider_output(response, [item, *follow]))
    assert out == [item, *follow]
    assert all(META_KEY not in request.meta for request in follow)
    assert main_text(response) == text, "the spider still reads it from its response"


def test_text_item_field_setting() -> None:
    assert Config.from_settings(Settings()).text_item_field is None
    assert Config.from_settings(Settings({"NEARDUPE_TEXT_ITEM_FIELD": ""})).text_item_field is None
    given = Config.from_settings(Settings({"NEARDUPE_TEXT_ITEM_FIELD": "body"}))
    assert given.text_item_field == "body" and given.text_field is None
    with pytest.raises(ValueError, match=r"NEARDUPE_TEXT_ITEM_FIELD = 5: expected a string"):
        Config.from_settings(Settings({"NEARDUPE_TEXT_ITEM_FIELD": 5}))


class Story(Item):
    url = Field()
    body = Field()


class Note(Item):
    url = Field()


def test_pipeline_gives_kept_items_the_text_and_keeps_no_analysis(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Kept items get their page's text in the field (unless set, or their class lacks it);
    once decided, nothing in the pipeline holds the page's Analysis or text."""
    crawler = get_crawler(
        settings_dict={
            "NEARDUPE_INDEX": str(tmp_path / "index"),
            "NEARDUPE_WORKERS": 0,
            "NEARDUPE_TEXT_ITEM_FIELD": "body",
        }
    )
    pipeline = NearDupePipeline.from_crawler(crawler)
    text = "The bridge reopened on Monday after two years of repairs. " * 20
    items: list[Any] = [
        {"url": "http://a/1"},
        Story(url="http://a/1"),
        Note(url="http://a/1"),
        Note(url="http://a/1"),
        {"url": "http://a/1", "body": "the spider's own"},
    ]
    copy = {"url": "http://b/1"}
    skipped = {"url": "http://a/tiny"}
    checked: list[weakref.ref[Analysis]] = []

    async def crawl() -> list[str]:
        await pipeline.open_spider()
        page = Analysis(0x0123_4567_89AB_CDEF, signature=7, page=1, text=text)
        twin = Analysis(0x0123_4567_89AB_CDEF, signature=7, page=2, text=text)
        tiny = Analysis(None, "tiny-text", page=3)
        checked.extend(weakref.ref(analysis) for analysis in (page, twin))
        for item in items:
            pipeline.links.attach(item, "http://a/1", page)
        pipeline.links.attach(copy, "http://b/1", twin)
        pipeline.links.attach(skipped, "http://a/tiny", tiny)
        del page, twin
        outcomes = []
        for item in [*items, copy, skipped]:
            try:
                await pipeline.process_item(item)
                outcomes.append("kept")
            except NearDuplicate:
                outcomes.append("dropped")
        await pipeline.close_spider()
        return outcomes

    with caplog.at_level(logging.WARNING, logger="nearDupe.pipeline"):
        outcomes = asyncio.run(crawl())
    assert outcomes == ["kept"] * 5 + ["dropped", "kept"]
    assert items[0]["body"] == items[1]["body"] == text
    assert "body" not in items[2] and "body" not in items[3]
    assert items[4]["body"] == "the spider's own", "a field the spider set is left alone"
    assert "body" not in copy and "body" not in skipped, "dropped and skipped pages: no text"
    warnings = [r.getMessage() for r in caplog.records if "NEARDUPE_TEXT_ITEM_FIELD" in r.message]
    assert warnings == [
        "nearDupe: Note items have no text in field 'body' (NEARDUPE_TEXT_ITEM_FIELD); "
        "their page's main text is not added"
    ]
    assert all(isinstance(decision, Decision) for decision in pipeline._decided.values())
    assert len(pipeline.links) == 0
    gc.collect()
    assert [ref() for ref in checked] == [None, None], "no Analysis (nor text) outlives its items"


def test_crawl_gives_kept_items_their_pages_main_text(tmp_path: Path) -> None:
    """A real crawl whose spider extracts no text: NEARDUPE_TEXT_ITEM_FIELD fills it in with
    each kept page's main text (its article, no navigation, ads or footer), the text the
    spider read with main_text(); items of skipped pages get none."""
    pages, _ = build_site()
    with MockServer(pages) as server:
        result = run_crawl(
            tmp_path,
            ["runspider", "tests/spiders/text_items.py", "-a", f"start_url={server.url}/"],
            {"NEARDUPE_TEXT_ITEM_FIELD": "body"},
        )
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log, result.log[-3000:]
    decisions = result.decisions()
    by_page: dict[str, dict[str, dict[str, Any]]] = {}
    for item in result.items:
        by_page.setdefault(item["url"].removeprefix(server.url), {})[item["kind"]] = item

    articles = [p for p in pages if p.endswith(".html") and p != "/tiny.html"]
    kept = [p for p in articles if decisions[server.url + p]["decision"] == "kept"]
    dropped = [p for p in articles if decisions[server.url + p]["decision"] == "dropped"]
    assert len(kept) == 6 and len(dropped) == 3
    assert not set(dropped) & set(by_page)
    for path in kept:
        charset = pages[path].content_type.split("charset=")[1]  # type: ignore[union-attr]
        html = Selector(text=pages[path].body.decode(charset))
        items = by_page[path]
        body = items["dict"]["body"]
        assert body == items["dict"]["spider_text"] == items["item"]["body"], path
        first = " ".join(html.xpath("//article/p[1]//text()").get().split())
        assert first[:40] in " ".join(body.split()), (path, body[:300])
        navigation = html.xpath("//header//li//text()").getall()
        assert not set(body.splitlines()) & set(navigation), path
        ad = html.xpath("//aside//text()").get()
        assert ad not in body and "All rights reserved" not in body, path
        assert "body" not in items["note"]
        assert items["own"]["body"] == "the spider's own text"

    tiny = by_page["/tiny.html"]
    lines = [line for line in result.report if line["url"] == server.url + "/tiny.html"]
    assert [(line["decision"], line["reason"]) for line in lines] == [
        ("skipped", "tiny-text")
    ] * 4, "the items of a skipped response share its decision"
    assert set(tiny) == {"dict", "item", "note", "own"}
    assert "body" not in tiny["dict"] and tiny["dict"]["spider_text"] is None
    assert "body" not in tiny["item"]
    assert result.log.count("Note items have no text in field 'body'") == 1
