"""The bundled demo news network: served over real HTTP, and crawled by the demo spiders."""

from __future__ import annotations

import json
import socket
from collections import Counter
from collections.abc import Iterator
from difflib import SequenceMatcher
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import urlopen

import pytest
from scrapy import Selector

from spiders.demosite.content import SITES, placements
from spiders.demosite.mirrors import ADDRESSES
from spiders.demosite.server import DemoSiteServer
from tests import crawl

ROOT = Path(__file__).resolve().parents[1]

# 28 article pages (27 site pages + 1 print view) of 14 distinct articles: a perfect
# near-duplicate detector keeps 14 and drops 14.
ARTICLE_PAGES = 28
DISTINCT_ARTICLES = 14


@pytest.fixture(scope="module")
def server() -> Iterator[DemoSiteServer]:
    with DemoSiteServer() as running:
        yield running


def fetch(server: DemoSiteServer, path: str) -> tuple[str, bytes]:
    """GET a path; return the Content-Type header and the body bytes."""
    with urlopen(server.url + path, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


def article_tokens(html: str, lang: str) -> list[str]:
    """The words (English) or characters (Chinese) of a page's <article> paragraphs."""
    text = " ".join(Selector(text=html).xpath("//article//p//text()").getall())
    return text.split() if lang == "en" else [c for c in text if not c.isspace()]


def similarity(a: list[str], b: list[str]) -> float:
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def scrapy_items(args: list[str], tmp_path: Path) -> list[dict[str, str]]:
    """Run ``scrapy <args>`` from the repo root without the nearDupe add-on; return the items."""
    out = tmp_path / "out.jsonl"
    command = [*args, "-s", "ADDONS={}", "-O", str(out)]
    command += ["-s", "LOG_LEVEL=WARNING", "-s", "TELNETCONSOLE_ENABLED=False"]
    done = crawl.run_scrapy(command, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_catalog_counts() -> None:
    pages = placements()
    assert len(pages) + 1 == ARTICLE_PAGES  # plus the print view
    assert len({p.article.slug for p in pages}) == DISTINCT_ARTICLES
    per_article = Counter(p.article.slug for p in pages)
    assert sum(1 for n in per_article.values() if n > 1) == 10
    assert sum(1 for n in per_article.values() if n == 1) == 4
    for page in pages:  # every syndication edit applies
        assert page.paragraphs


def test_home_page_links_every_site_and_index_pages_link_their_articles(server) -> None:
    content_type, body = fetch(server, "/")
    assert content_type == "text/html; charset=utf-8"
    links = set(Selector(text=body.decode()).xpath("//a/@href").getall())
    assert {site.prefix for site in SITES} <= links
    assert {"/static/logo.png", "/static/press-kit.pdf", "/api/articles.json", "/contact"} <= links
    for site in SITES:
        _, index = fetch(server, site.prefix)
        index_links = set(Selector(text=index.decode(site.charset)).xpath("//a/@href").getall())
        own = {p.path for p in placements() if p.site is site}
        assert own and own <= index_links


def test_syndicated_article_keeps_its_body_across_sites(server) -> None:
    copies = [p for p in placements() if p.article.slug == "council-budget"]
    assert [p.site.key for p in copies] == ["ledger", "metro", "courier"]
    pages = [fetch(server, p.path)[1].decode() for p in copies]
    pages.append(fetch(server, "/print/ledger/council-budget")[1].decode())
    original = article_tokens(pages[0], "en")
    for page in pages[1:]:
        assert page != pages[0]
        assert similarity(original, article_tokens(page, "en")) > 0.9
    assert "Originally published by The Daily Ledger." in pages[1]
    assert "Originally published by" not in pages[0]
    assert "The council agreed to phase that increase in" not in pages[2]  # dropped sentence
    other = fetch(server, "/ledger/news/community-garden.html")[1].decode()
    assert similarity(original, article_tokens(other, "en")) < 0.5


def test_chinese_copies_match_across_encodings(server) -> None:
    gbk, utf8 = [p for p in placements() if p.article.slug == "rainstorm"][::-1]
    assert (gbk.site.charset, utf8.site.charset) == ("gbk", "utf-8")
    gbk_html = fetch(server, gbk.path)[1].decode("gbk")
    utf8_html = fetch(server, utf8.path)[1].decode("utf-8")
    assert similarity(article_tokens(gbk_html, "zh"), article_tokens(utf8_html, "zh")) > 0.9


def test_gbk_pages_are_encoded_as_gbk(server) -> None:
    hepan = next(site for site in SITES if site.key == "hepan")
    for path in [hepan.prefix, *(p.path for p in placements() if p.site is hepan)]:
        content_type, body = fetch(server, path)
        assert content_type == "text/html; charset=gbk"
        with pytest.raises(UnicodeDecodeError):
            body.decode("utf-8")
        html = body.decode("gbk")
        assert "河畔日报" in html and "charset=gbk" in html


def test_non_html_resources_and_tiny_page(server) -> None:
    content_type, png = fetch(server, "/static/logo.png")
    assert content_type == "image/png" and png.startswith(b"\x89PNG\r\n\x1a\n")
    content_type, pdf = fetch(server, "/static/press-kit.pdf")
    assert content_type == "application/pdf" and pdf.startswith(b"%PDF-")
    content_type, feed = fetch(server, "/api/articles.json")
    assert content_type == "application/json"
    assert len(json.loads(feed)["articles"]) == ARTICLE_PAGES - 1
    _, contact = fetch(server, "/contact")
    assert len(Selector(text=contact.decode()).xpath("normalize-space(//body)").get()) < 40
    with pytest.raises(HTTPError) as missing:
        fetch(server, "/no/such/page")
    assert missing.value.code == 404


def test_server_start_stop() -> None:
    demo = DemoSiteServer().start()
    url = demo.url
    assert fetch(demo, "/")[1]
    demo.stop()
    with pytest.raises(RuntimeError):
        demo.url  # noqa: B018 - the property raises once stopped
    with pytest.raises(OSError):
        urlopen(url + "/", timeout=2)


def test_demo_spider_yields_every_article_page(tmp_path: Path) -> None:
    """Every article page of the network, then of the hosts that copy it (no add-on: none is
    skipped): a full mirror, a near mirror with 2 stories of its own, a partner of 6."""
    crawled = scrapy_items(["crawl", "demo"], tmp_path)
    by_host = Counter(urlsplit(item["url"]).hostname for item in crawled)
    assert by_host == {
        "127.0.0.1": ARTICLE_PAGES,
        ADDRESSES["mirror"]: ARTICLE_PAGES,
        ADDRESSES["near-mirror"]: ARTICLE_PAGES + 2,
        ADDRESSES["partner"]: 6,
    }
    items = [item for item in crawled if urlsplit(item["url"]).hostname == "127.0.0.1"]
    assert len({item["url"] for item in items}) == ARTICLE_PAGES
    for item in items:
        assert set(item) == {"url", "title", "text", "site"}
        assert item["title"] and item["site"] and len(item["text"]) > 400
    by_site = Counter(item["site"] for item in items)
    assert by_site == {
        "The Daily Ledger": 7,
        "Metro Wire": 6,
        "Valley Courier": 6,
        "河畔日报": 5,
        "Metro Wire 中文": 4,
    }
    hepan = [item for item in items if item["site"] == "河畔日报"]
    assert any("地铁五号线" in item["text"] for item in hepan)


def test_pages_spider_yields_every_html_page(server, tmp_path: Path) -> None:
    items = scrapy_items(["crawl", "pages", "-a", f"start_url={server.url}/"], tmp_path)
    # 28 article pages + home + 5 site indexes + contact; the JSON feed is skipped.
    assert len(items) == ARTICLE_PAGES + 7
    assert not any(item["url"].endswith(".json") for item in items)


def test_pages_spider_stops_at_max_pages(server, tmp_path: Path) -> None:
    items = scrapy_items(
        ["crawl", "pages", "-a", f"start_url={server.url}/", "-a", "max_pages=5"], tmp_path
    )
    assert len(items) == 5
    assert all(set(item) == {"url", "title", "text"} for item in items)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ([], "needs an absolute start URL"),
        (["-a", "start_url=example.com"], "needs an absolute start URL"),
        (["-a", "start_url=http://127.0.0.1/", "-a", "max_pages=many"], "got 'many'"),
        (["-a", "start_url=http://127.0.0.1/", "-a", "max_pages=0"], "got '0'"),
    ],
)
def test_pages_spider_with_wrong_arguments_refuses_in_one_line(
    tmp_path: Path, args: list[str], said: str
) -> None:
    result = crawl.run_crawl(tmp_path, ["crawl", "pages", *args])
    crawl.assert_refused_at_start(result)
    assert said in result.log, result.log[-2000:]


def test_a_second_demo_crawl_drops_every_stored_page_as_already_stored(tmp_path: Path) -> None:
    """The demo's hosts keep their port from one crawl to the next, so a second crawl into
    the same index meets the URLs it stored: nothing is kept again, each of them is dropped
    as already stored, and the summary line says how many."""
    with socket.socket() as probe:  # a port free now, for both crawls
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args, index = ["crawl", "demo", "-a", f"port={port}"], {"NEARDUPE_INDEX": tmp_path / "index"}
    first = crawl.run_crawl(tmp_path / "first", args, index)
    assert first.returncode == 0, first.log[-2000:]
    kept = {line["url"] for line in first.report if line["decision"] == "kept"}
    assert kept and all(f":{port}/" in url for url in kept)
    second = crawl.run_crawl(tmp_path / "second", args, index)
    assert second.returncode == 0, second.log[-2000:]
    decisions = {line["url"]: line for line in second.report}
    assert not [line for line in second.report if line["decision"] == "kept"]
    again = [decisions[url] for url in kept if url in decisions]
    assert again and all(line["reason"] == "already-stored" for line in again)
    stored = second.stats["neardupe/dropped_by/already-stored"]
    assert stored == len(again)
    assert f"already stored), 0 skipped; index holds {len(kept)} pages" in second.log
    assert f"{stored} already stored" in second.log


def test_the_demo_spider_refuses_a_port_that_is_not_one(tmp_path: Path) -> None:
    """``-a port=`` takes 0-65535; anything else refuses the crawl in one line."""
    result = crawl.run_crawl(tmp_path, ["crawl", "demo", "-a", "port=http"])
    assert result.returncode == 1
    assert "the demo spider's port must be a whole number" in result.log
    assert "Traceback" not in result.log
