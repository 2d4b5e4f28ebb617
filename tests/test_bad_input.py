"""Bad responses, odd items and unusable index files, through real crawls: nothing is lost."""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import pytest
from scrapy.http import HtmlResponse

from nearDupe.decoding import decode
from nearDupe.features import FeatureSettings
from nearDupe.store import EmbeddedIndex, IndexHeader
from tests.crawl import CrawlResult, assert_refused_at_start, run_crawl, shared_crawl
from tests.mockserver import MockServer, Page
from tests.site import article

pytestmark = pytest.mark.slow

HTML = "text/html; charset=utf-8"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8


def _html(paragraphs: list[str], title: str = "story") -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<html><head><title>{title}</title></head><body><article>{body}</article></body></html>"
    )


def _bad_site() -> tuple[dict[str, Page], dict[str, tuple[str, str | None]]]:
    """(path -> Page, HTML path -> (expected decision, expected skip reason or None))."""
    rng = random.Random(7)
    zh_a, zh_b, zh_c = (article(s, "zh") for s in ("metro-line", "night-market", "rainstorm"))
    flood, bridge, budget = (
        article(s) for s in ("flood-warning", "harbor-bridge", "council-budget")
    )
    big = _html(article("science-fair"), "big").replace(
        "</body>", "<script>var blob = '" + "x" * 5_200_000 + "';</script></body>"
    )
    deep = "<html><body>" + "<div>" * 5000 + _html(budget) + "</div>" * 5000 + "</body></html>"
    malformed = (
        "<html><body><table><tr><td><p>"
        + "<b><i>".join(flood)
        + "</td></table></div></span><<>>&&#xZZ;&nbsp<p <p>> <!-- never closed"
    )
    frameset = "<html><frameset><frame src='/a.html'><frame src='/b.html'></frameset></html>"
    no_blocks = "<html><body>" + "<br>".join(f"<span>{p}</span>" for p in bridge) + "</body>"
    punct = "<html><body><p>" + " ".join("!?.,;:-*#" for _ in range(60)) + "</p></body></html>"
    digits = "<html><body><p>" + " ".join(str(i) for i in range(300)) + "</p></body></html>"
    gbk_meta = "<meta http-equiv='Content-Type' content='text/html; charset=gbk'>"
    pages: dict[str, Page] = {
        "/files/report": Page(
            b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n", "application/pdf"
        ),
        "/logo": Page(PNG, "image/png"),
        "/api.json": Page(json.dumps({"text": " ".join(flood)}).encode(), "application/json"),
        "/missing.html": Page(b"<html><body><p>gone</p></body></html>", HTML, status=404),
    }
    expected: dict[str, tuple[str, str | None]] = {}

    def add(
        path: str, body: bytes, want: tuple[str, str | None], ctype: str | None = HTML
    ) -> None:
        pages[path] = Page(body, ctype)
        expected[path] = want

    add("/png-as-html.html", PNG, ("skipped", "binary"))
    add("/noise.html", rng.randbytes(6000), ("skipped", "binary"))
    add("/empty.html", b"", ("skipped", "empty"))
    add("/blank.html", b" \r\n\t  \n" * 50, ("skipped", "empty"))
    add("/tiny.html", b"<p>Hi</p>", ("skipped", "tiny-text"))
    add("/frameset.html", frameset.encode(), ("skipped", "no-text"))
    add("/punct.html", punct.encode(), ("skipped", "tiny-text"))
    add("/digits.html", digits.encode(), ("skipped", "no-words"))
    add("/big.html", big.encode(), ("kept", None))
    # Its story behind 5 MB of inline script (a shop's or an app's JSON): the cut keeps the
    # story, which is the same, so the page is dropped as a copy.
    script_first = _html(article("science-fair"), "big").replace(
        "</head>", "<script>var state = '" + "y" * 5_200_000 + "';</script></head>"
    )
    add("/big-script-first.html", script_first.encode(), ("dropped", None))
    add("/malformed.html", malformed.encode(), ("kept", None))
    add("/no-blocks.html", no_blocks.encode(), ("kept", None))
    # Deeper than libxml2's 2,048 levels (with huge_tree): the text is lost to the parser,
    # the item is kept; 400 levels deep (past libxml2's default 256) the text is read.
    add("/deep.html", deep.encode(), ("skipped", "no-text"))
    nested = "<html><body>" + "<div>" * 400 + _html(budget) + "</div>" * 400 + "</body></html>"
    add("/nested.html", nested.encode(), ("kept", None))
    # Three Chinese stories, each served once correctly and once with a wrong or no charset:
    # the mislabelled copy must be read right, so it is dropped as a copy of the right one.
    add("/zh/a.html", _html(zh_a).encode(), ("kept", None))
    add("/zh/a-gbk-says-utf8.html", _html(zh_a).encode("gbk"), ("dropped", None))
    add("/zh/b.html", _html(zh_b).encode("gbk"), ("kept", None), "text/html; charset=gbk")
    add(
        "/zh/b-utf8-says-gbk.html",
        _html(zh_b).encode(),
        ("dropped", None),
        "text/html; charset=gbk",
    )
    add("/zh/c.html", _html(zh_c).encode(), ("kept", None))
    add("/zh/c-gbk-no-charset.html", _html(zh_c).encode("gbk"), ("dropped", None), "text/html")
    # Chinese in a sea of markup and no charset: Scrapy's detection takes it for Czech.
    links = "<div class='nav'><a href='/'>more</a></div>\n" * 600
    padded = _html(zh_b).replace("<body>", f"<body>{links}")
    add("/zh/b-gbk-no-charset.html", padded.encode("gbk"), ("dropped", None), "text/html")
    add(
        "/zh/c-gbk-meta-utf8.html",
        _html(zh_c).replace("<head>", "<head>" + gbk_meta.replace("gbk", "utf-8")).encode("gbk"),
        ("dropped", None),
        None,
    )
    add(
        "/zh/a-gbk-meta.html",
        _html(zh_a).replace("<head>", "<head>" + gbk_meta).encode("gbk"),
        ("dropped", None),
        None,
    )
    links = "".join(f'<a href="{p}">{p}</a> ' for p in pages if p != "/")
    pages["/"] = Page(f"<html><body><nav>{links}</nav></body></html>".encode())
    expected["/"] = ("skipped", "no-text")
    return pages, expected


@pytest.fixture(scope="session")
def bad_crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[CrawlResult, str, dict]:
    """One crawl of a site made of every bad page (the slow part, shared by the asserts)."""
    pages, expected = _bad_site()
    # The order of the copies matters for the "kept" one: crawl one page at a time, FIFO.
    _, result, url = shared_crawl(
        tmp_path_factory,
        "bad-pages",
        ["crawl", "pages"],
        {
            "LOG_LEVEL": "DEBUG",
            "CONCURRENT_REQUESTS": 1,
            "DEPTH_PRIORITY": 1,
            "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        },
        site=pages,
        timeout=150,
    )
    return result, url, expected


def test_bad_pages_crawl_finishes_cleanly(bad_crawl) -> None:
    result, _, _ = bad_crawl
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["finish_reason"] == "finished"
    errors = [
        line for line in result.log.splitlines() if " ERROR: " in line or "Traceback" in line
    ]
    assert not errors, errors


def test_every_bad_html_page_keeps_its_item_with_a_reason(bad_crawl) -> None:
    result, url, expected = bad_crawl
    decisions = result.decisions()
    item_urls = {item["url"] for item in result.items}
    for path, (want, reason) in expected.items():
        got = decisions.get(url + path)
        assert got is not None, f"{path}: no decision"
        assert (got["decision"], got["reason"]) == (want, reason), (path, got)
        if want == "dropped":
            assert url + path not in item_urls
            assert got["duplicate_of"] == url + path.split("-")[0].removesuffix(".html") + ".html"
        else:
            assert url + path in item_urls, f"{path}: item lost"
    kept_or_skipped = sum(1 for want, _ in expected.values() if want != "dropped")
    assert len(result.items) == kept_or_skipped


def test_bad_pages_are_counted_and_logged(bad_crawl) -> None:
    result, url, expected = bad_crawl
    stats, log = result.stats, result.log
    reasons: dict[str, int] = {}
    for want, reason in expected.values():
        if want == "skipped":
            reasons[reason] = reasons.get(reason, 0) + 1  # type: ignore[index]
    for reason, count in reasons.items():
        assert stats[f"neardupe/skipped/{reason}"] == count, reason
    # Responses: three non-HTML types and one 404 never reach the spider, but are counted.
    assert stats["neardupe/responses/skipped/not-html"] == 3
    assert stats["neardupe/responses/skipped/status"] == 1
    assert stats["neardupe/responses/skipped/binary"] == 2
    assert stats["neardupe/responses/skipped/empty"] == 2
    assert stats["neardupe/responses/truncated"] == 2
    assert stats["neardupe/responses/redecoded"] == 4
    assert f"nearDupe: {url}/big.html has " in log and "analysing the first 2000000 without" in log
    for path, reason in [
        ("/png-as-html.html", "binary"),
        ("/empty.html", "empty"),
        ("/files/report", "not-html"),
        ("/missing.html", "status"),
        ("/deep.html", "no-text"),
        ("/punct.html", "tiny-text"),
    ]:
        assert f"not fingerprinting {url}{path} ({reason})" in log, path
    assert f"nearDupe: kept {url}/tiny.html unchecked (tiny-text)" in log
    assert re.search(
        rf"{url}/zh/a-gbk-says-utf8.html does not read as utf-8; analysing it as "
        r"gb(k|18030|2312)",
        log,
    )
    assert f"{url}/zh/b-utf8-says-gbk.html does not read as gb18030; analysing it as utf-8" in log
    assert re.search(
        rf"{url}/zh/b-gbk-no-charset.html does not read as (?!gb)\S+; analysing it as gb18030", log
    )


ODD_ITEMS_SPIDER = """
from __future__ import annotations

import dataclasses

import scrapy


class Story(scrapy.Item):
    url = scrapy.Field()
    text = scrapy.Field()


@dataclasses.dataclass
class Note:
    url: str
    body: str = ""


class OddItems(scrapy.Spider):
    name = "odd_items"
    story = {story!r}

    async def start(self):
        for i, text in enumerate([
            None, 42, ["a list"], {{"a": "dict"}}, ("a", "tuple"), "", "   \\n\\t ", "short",
            "!?.,;:- " * 60, "x" * 3_000_000, self.story, self.story, self.story + " The end.",
        ]):
            yield {{"url": f"https://example.com/{{i}}", "text": text}}
        yield {{"url": "https://example.com/no-field"}}
        yield {{"text": self.story.upper()}}
        yield Story(url="https://example.com/story")
        yield Note("https://example.com/note", self.story)
"""


def test_odd_items_in_text_field_mode(tmp_path: Path) -> None:
    story = " ".join(article("ferry-timetable"))
    spider = tmp_path / "odd_items.py"
    spider.write_text(textwrap.dedent(ODD_ITEMS_SPIDER.format(story=story)))
    result = run_crawl(tmp_path, ["runspider", str(spider)], {"NEARDUPE_TEXT_FIELD": "text"})
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["finish_reason"] == "finished"
    assert " ERROR: " not in result.log, result.log[-3000:]
    got = {d["url"].rsplit("/", 1)[-1]: (d["decision"], d["reason"]) for d in result.report}
    assert len(got) == len(result.report) == 17
    no_field = ("skipped", "no-text-field")
    for name in ["0", "1", "2", "3", "4", "no-field", "story", "note"]:
        assert got[name] == no_field, name
    assert got["5"] == got["6"] == ("skipped", "no-text")
    assert got["7"] == ("skipped", "tiny-text")
    assert got["8"] == ("skipped", "tiny-text")
    assert got["9"] == ("kept", None)
    # The same story four times (the last without a URL, upper-cased): one kept, three dropped.
    copies = sorted(got[name][0] for name in ["10", "11", "12", ""])
    assert copies == ["dropped", "dropped", "dropped", "kept"]
    assert result.stats["neardupe/items/truncated"] == 1
    assert len(result.items) == 17 - 3
    unchecked = "have no text in field 'text' (NEARDUPE_TEXT_FIELD); they are kept unchecked"
    assert result.log.count(unchecked) == 3, "one warning per item class: dict, Story, Note"


def _start_on_index(tmp_path: Path, index: Path | str, settings: dict[str, Any] | None = None):
    pages = {"/": Page(_html(article("library-app")).encode())}
    with MockServer(pages) as server:
        return run_crawl(
            tmp_path,
            ["crawl", "pages", "-a", f"start_url={server.url}/"],
            {"NEARDUPE_INDEX": str(index), **(settings or {})},
        )


def _assert_refused(result: CrawlResult, *fragments: str) -> None:
    assert_refused_at_start(result)
    lines = [ln for ln in result.log.splitlines() if "nearDupe cannot open its index" in ln]
    assert lines, result.log[-3000:]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_corrupt_index_file_stops_the_crawl(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    garbage = random.Random(3).randbytes(8192)
    (index / "pages.sqlite3").write_bytes(garbage)
    result = _start_on_index(tmp_path, index)
    _assert_refused(result, str(index / "pages.sqlite3"), "is unusable", "not a database")
    assert (index / "pages.sqlite3").read_bytes() == garbage  # never replaced by a fresh index


def test_index_built_with_other_settings_stops_the_crawl(tmp_path: Path) -> None:
    # Fingerprints of other features are not comparable (another design only re-tables).
    index = tmp_path / "index"
    shingles = FeatureSettings(kind="shingles").to_dict()
    with EmbeddedIndex(index, IndexHeader(design="4-table", k=3, features=shingles)) as built:
        built.add(12345, "https://example.com/old")
    result = _start_on_index(tmp_path, index, {"NEARDUPE_DESIGN": "10-table", "NEARDUPE_K": 3})
    _assert_refused(
        result,
        str(index / "pages.sqlite3"),
        "built with other settings",
        "features: index has {",
        "'kind': 'shingles'",
    )
    with sqlite3.connect(index / "pages.sqlite3") as db:
        assert db.execute("SELECT key FROM pages").fetchall() == [("https://example.com/old",)]


def test_index_under_a_file_stops_the_crawl(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    result = _start_on_index(tmp_path, blocker / "index")
    _assert_refused(result, f"cannot open index directory {blocker / 'index'}", "Not a directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_read_only_index_stops_the_crawl(tmp_path: Path) -> None:
    index = tmp_path / "index"
    with EmbeddedIndex(index, IndexHeader()) as built:
        built.add(12345, "https://example.com/old")
    for path in [index, *index.iterdir()]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        result = _start_on_index(tmp_path, index)
    finally:
        for path in [index, *index.iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    _assert_refused(result, str(index))


def test_a_page_that_takes_too_long_is_skipped_in_time(tmp_path: Path) -> None:
    """400,000 <p> hold a worker for seconds; past NEARDUPE_ANALYSIS_TIMEOUT the page is
    skipped as too-slow and the worker goes on with the next page. 20,000 headings never
    closed do not: the headline is looked for within a bounded reach (before, each was read
    to the end of the page, 0.8 s)."""
    unclosed = _html(article("harbor-bridge")).replace(
        "<article>", "<p>" + "<h1" * 20_000 + "</p><article>"
    )
    pages = {
        "/flood.html": Page(("<html><body>" + "<p>x</p>" * 400_000 + "</body></html>").encode()),
        "/article.html": Page(_html(article("library-app")).encode()),
        "/unclosed.html": Page(unclosed.encode()),
    }
    links = "".join(f'<a href="{p}">{p}</a> ' for p in pages)
    pages["/"] = Page(f"<html><body><nav>{links}</nav></body></html>".encode())
    with MockServer(pages) as server:
        result = run_crawl(
            tmp_path,
            ["crawl", "pages", "-a", f"start_url={server.url}/"],
            {"NEARDUPE_WORKERS": 1, "NEARDUPE_ANALYSIS_TIMEOUT": 0.5},
        )
    assert result.returncode == 0, result.log[-3000:]
    decisions = result.decisions()
    flood, kept = decisions[server.url + "/flood.html"], decisions[server.url + "/article.html"]
    assert (flood["decision"], flood["reason"]) == ("skipped", "too-slow")
    assert kept["decision"] == "kept"
    assert decisions[server.url + "/unclosed.html"]["decision"] == "kept"
    assert result.stats["neardupe/responses/skipped/too-slow"] == 1
    assert "not fingerprinting" in result.log and "(too-slow)" in result.log


_UNDECLARED = [
    ("中国的首都是北京。北京有很多人居住，每天都有许多人乘坐地铁上下班。", "gbk", True),
    (
        "대한민국의 수도는 서울이다. 서울은 한강을 끼고 있으며 인구는 약 천만 명이다.",
        "euc_kr",
        False,
    ),
    (
        "日本の首都は東京です。東京には多くの人が住んでいて、毎日電車で通勤しています。",
        "euc_jp",
        False,
    ),
    (
        "日本の首都は東京です。東京には多くの人が住んでいて、毎日電車で通勤しています。",
        "shift_jis",
        False,
    ),
    ("台灣的首都是台北。台北有很多人居住，每天都有許多人搭乘捷運上下班。", "big5", False),
    ("Столица России Москва. В Москве живёт много людей, они ездят на метро.", "cp1251", False),
    (
        "Η πρωτεύουσα της Ελλάδας είναι η Αθήνα. Πολλοί άνθρωποι ζουν στην Αθήνα.",
        "iso8859_7",
        False,
    ),
    ("Le café était très agréable, près de la fenêtre, où l'on voyait la forêt.", "cp1252", False),
]


@pytest.mark.parametrize(("text", "encoding", "chinese"), _UNDECLARED)
def test_a_page_without_charset_is_read_as_chinese_only_when_it_is(
    text: str, encoding: str, chinese: bool
) -> None:
    # In much markup, Scrapy's detection misreads a GBK page; other CJK and single-byte pages
    # read as GB18030 give rare hanzi or short runs, and stay as Scrapy read them.
    links = "<div class='nav'><a href='/'>more</a></div>\n" * 600
    body = f"<html><body>{links}<p>{text * 20}</p></body></html>".encode(encoding)
    response = HtmlResponse("http://127.0.0.1/", body=body, headers={"Content-Type": "text/html"})
    decoded = decode(response)
    assert decoded is not None
    assert (decoded.redecoded_as == "gb18030") is chinese
    if chinese:
        assert text in decoded.html
