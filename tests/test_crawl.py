"""End-to-end: real crawls of a local site through Scrapy's engine with the add-on enabled."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.crawl import CrawlResult, run_crawl
from tests.mockserver import MockServer
from tests.redis_server import RedisServer, require_redis
from tests.site import build_site


@pytest.fixture(scope="module")
def site() -> tuple[MockServer, dict[str, list[str]]]:
    pages, clusters = build_site()
    with MockServer(pages) as server:
        yield server, clusters


def _check_clusters(result, server: MockServer, clusters: dict[str, list[str]]) -> None:
    decisions = result.decisions()
    for name, paths in clusters.items():
        urls = [server.url + p for p in paths]
        kept = [u for u in urls if decisions[u]["decision"] == "kept"]
        dropped = [u for u in urls if decisions[u]["decision"] == "dropped"]
        assert len(kept) == 1, (name, [decisions[u] for u in urls])
        assert len(dropped) == len(urls) - 1, name
        for url in dropped:
            assert decisions[url]["duplicate_of"] == kept[0]
            assert 0 <= decisions[url]["distance"] <= 8
            assert len(decisions[url]["fingerprint"]) == 16


def test_crawl_keeps_one_copy_per_article(site, tmp_path: Path) -> None:
    server, clusters = site
    result = run_crawl(tmp_path, ["crawl", "pages", "-a", f"start_url={server.url}/"])
    assert result.returncode == 0, result.log[-3000:]
    _check_clusters(result, server, clusters)
    item_urls = {item["url"] for item in result.items}
    dropped = {d["url"] for d in result.report if d["decision"] == "dropped"}
    assert dropped and not dropped & item_urls
    stats = result.stats
    assert stats["neardupe/dropped"] == len(dropped) == 3
    assert stats["neardupe/kept"] == 6
    assert stats["item_dropped_reasons_count/NearDuplicate"] == 3
    assert stats["neardupe/responses/skipped/not-html"] >= 1
    assert stats["neardupe/skipped/tiny-text"] >= 1
    assert "near-duplicate of" in result.log
    assert "nearDupe: " in result.log and "dropped as near-duplicates" in result.log
    # One line per drop: the dropped item (its text) is not printed after it.
    log = result.log.splitlines()
    drops = [i for i, line in enumerate(log) if "Dropped: near-duplicate of" in line]
    assert len(drops) == 3 and all(log[i + 1].startswith("20") for i in drops), drops
    assert "'text':" not in result.log


def test_second_crawl_on_same_index_drops_everything_already_stored(site, tmp_path) -> None:
    server, _ = site
    args = ["crawl", "pages", "-a", f"start_url={server.url}/"]
    first = run_crawl(tmp_path / "one", args, {"NEARDUPE_INDEX": str(tmp_path / "index")})
    second = run_crawl(tmp_path / "two", args, {"NEARDUPE_INDEX": str(tmp_path / "index")})
    assert first.returncode == second.returncode == 0, second.log[-3000:]
    skipped = [line["url"] for line in first.report if line["decision"] == "skipped"]
    assert skipped and first.stats["neardupe/kept"] == 6
    # Pages kept unfingerprinted (too short, ...) are recorded by their URL and body too.
    assert first.stats["neardupe/index_size"] == 6 + len(skipped)
    assert second.items == [], "a re-crawl of unchanged pages stores nothing again"
    assert second.stats["neardupe/dropped"] == 9 + len(skipped)
    assert "neardupe/kept" not in second.stats and "neardupe/skipped" not in second.stats
    # A URL is one page: the kept pages and the skipped ones are dropped as already stored.
    kept = [line["url"] for line in first.report if line["decision"] == "kept"]
    stored = {line["url"]: line for line in second.report if line["reason"] == "already-stored"}
    assert set(stored) == set(skipped) | set(kept)
    assert all(line["duplicate_of"] == url for url, line in stored.items())
    assert all(line["recrawl"] == "unchanged" for line in stored.values())
    assert second.stats["neardupe/dropped_by/already-stored"] == len(skipped) + len(kept)
    assert second.stats["neardupe/index_size"] == first.stats["neardupe/index_size"]
    assert f"Dropped: already stored (unchanged, distance 0): {skipped[0]}" in second.log


def test_text_field_mode_with_worker_processes(site, tmp_path: Path) -> None:
    server, clusters = site
    result = run_crawl(
        tmp_path,
        ["crawl", "pages", "-a", f"start_url={server.url}/"],
        {
            "ADDONS": "{}",
            "ITEM_PIPELINES": '{"nearDupe.pipeline.NearDupePipeline": 100}',
            "NEARDUPE_TEXT_FIELD": "text",
            "NEARDUPE_WORKERS": 2,
        },
    )
    assert result.returncode == 0, result.log[-3000:]
    _check_clusters(result, server, clusters)


def test_disabled_plugin_is_not_configured(site, tmp_path: Path) -> None:
    server, _ = site
    result = run_crawl(
        tmp_path,
        ["crawl", "pages", "-a", f"start_url={server.url}/"],
        {"NEARDUPE_ENABLED": "False"},
    )
    assert result.returncode == 0, result.log[-3000:]
    assert not any(k.startswith("neardupe/") for k in result.stats)
    assert len(result.items) == 11  # every HTML page: 9 articles, the home page, a tiny one
    assert result.log.count("nearDupe: disabled (NEARDUPE_ENABLED = False)") == 1
    assert "Disabled <class 'nearDupe" not in result.log, "no WARNING per component"


def _brief_crawl(
    tmp_path: Path, titles: tuple[str, str, str], bodies: tuple[list[str], list[str], list[str]]
) -> tuple[CrawlResult, dict, dict]:
    """Crawl a brief, its copy and another brief (title and paragraphs each), each in another
    site's template: the first two's decisions, kept one first, after checking that one of
    them was dropped and the other brief kept."""
    from tests.mockserver import Page
    from tests.site import TEMPLATES

    html = {
        f"/{site}/brief.html": template.render(title, body, views, stamp)
        for site, template, title, body, views, stamp in zip(
            ("ledger", "metro", "courier"),
            TEMPLATES[:3],
            titles,
            bodies,
            (12, 345, 7),
            ("2024-05-01", "May 2", "today"),
            strict=True,
        )
    }
    pages = {path: Page(page.encode()) for path, page in html.items()}
    links = "".join(f'<a href="{p}">{p}</a> ' for p in html)
    pages["/"] = Page(f"<html><body><nav>{links}</nav></body></html>".encode())
    with MockServer(pages) as server:
        result = run_crawl(tmp_path, ["crawl", "pages", "-a", f"start_url={server.url}/"])
    assert result.returncode == 0, result.log[-3000:]
    decisions = result.decisions()
    first, copy, other = (decisions[server.url + p] for p in html)
    assert other["decision"] == "kept", other
    kept, dropped = sorted((first, copy), key=lambda line: line["decision"] != "kept")
    assert (kept["decision"], dropped["decision"]) == ("kept", "dropped"), (first, copy)
    return result, kept, dropped


def test_short_copy_with_a_sentence_added_is_dropped_by_its_sentences(tmp_path: Path) -> None:
    """A brief under 200 letters and its copy with a sentence added: no fingerprint joins
    them (the brief is decided by an exact hash), their shared sentences do. A brief of the
    same words in another order is kept."""
    brief = [
        "The city council approved the harbor budget on Monday evening.",
        "Ferries will run every twenty minutes from June.",
    ]
    added = [*brief, "Critics said the vote was rushed."]
    shuffled = [
        "The harbor council approved the city budget on Monday evening.",
        "Ferries will run from June every twenty minutes.",
    ]
    result, kept, dropped = _brief_crawl(tmp_path, ("Harbor vote",) * 3, (brief, added, shuffled))
    assert dropped["duplicate_of"] == kept["url"]
    assert (dropped["reason"], dropped["distance"]) == ("shared-sentences", None)
    assert f"near-duplicate of {kept['url']} (its sentences)" in result.log


def test_one_sentence_chinese_brief_with_a_typo_is_dropped_by_its_clauses(tmp_path: Path) -> None:
    """A Chinese brief of one long sentence and its copy with one character changed: the exact
    hash and the only sentence differ, the clauses are shared. A brief sharing one stock
    clause with it is kept."""
    brief = (
        "市图书馆昨天宣布，总投资约三亿元的新馆将于下月一日正式对外开放，馆内共设阅览座位八百个，"
        "纸质藏书超过六十万册，另有电子期刊两万余种，还专门设置了儿童阅读区和自习室，"
        "开放时间为每天上午九点到晚上九点，市民凭身份证即可免费办理借书证。"
    )
    typo = brief.replace("六十万册", "六十万删")
    other = (
        "市体育中心昨天宣布，游泳馆经过三个月的改造将于下周一重新开放，馆内更换了全部水处理设备，"
        "新增了恒温训练池和无障碍更衣室，开放时间为每天上午九点到晚上九点，年卡价格保持不变。"
    )
    titles = ("新馆开放", "新馆开放", "游泳馆开放")
    _result, kept, dropped = _brief_crawl(tmp_path, titles, ([brief], [typo], [other]))
    assert (dropped["reason"], dropped["duplicate_of"]) == ("shared-sentences", kept["url"])


@pytest.mark.parametrize("backend", ["embedded", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_page_fetched_twice_in_one_crawl_is_stored_once(backend: str, tmp_path: Path) -> None:
    """The tutorial's spider fetches its start URL again from the first link back to it: the
    second response is its URL's stored page (already stored, unchanged, distance 0), in one
    crawl as in the next, while the two items of each response share that response's
    decision."""
    from tests.mockserver import Page
    from tests.site import TEMPLATES, article

    home = TEMPLATES[0].render("Front page", article("harbor-bridge"), 1, "today")
    home = home.replace("</main>", '<a href="/a.html">a</a> <a href="/b.html">b</a></main>')
    pages = {"/": Page(home.encode())}
    for path, slug in [("/a.html", "council-budget"), ("/b.html", "flood-warning")]:
        html = TEMPLATES[1].render(slug, article(slug), 2, "today")
        pages[path] = Page(html.replace("</main>", '<a href="/">home</a></main>').encode())
    with ExitStack() as stack:
        server = stack.enter_context(MockServer(pages))
        settings = {}
        if backend == "redis":
            require_redis()
            redis = stack.enter_context(RedisServer(tmp_path / "redis"))
            settings["NEARDUPE_INDEX"] = redis.url
        result = run_crawl(
            tmp_path,
            ["runspider", "tests/spiders/tutorial.py", "-a", f"start_url={server.url}/"],
            settings,
        )
    assert result.returncode == 0, result.log[-3000:]
    home_url = server.url + "/"
    lines = [line for line in result.report if line["url"] == home_url]
    # The two responses race (on Redis neither waits for the other's decision): which one is
    # kept varies, so the lines are told apart by decision, not by order; the items stored
    # show that both items of one response share its decision.
    assert sorted(line["decision"] for line in lines) == ["dropped", "dropped", "kept", "kept"]
    drops = {
        (line["duplicate_of"], line["reason"], line["recrawl"], line["stored_distance"])
        for line in lines
        if line["decision"] == "dropped"
    }
    assert drops == {(home_url, "already-stored", "unchanged", 0)}
    stored = [(item["url"], item["kind"]) for item in result.items]
    assert sorted(stored) == sorted(
        (server.url + path, kind) for path in pages for kind in ("page", "title")
    )
    assert result.stats["neardupe/dropped"] == 2 and result.stats["neardupe/kept"] == 6


@pytest.mark.parametrize("backend", ["embedded", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_url_with_a_lone_surrogate_costs_nothing(backend: str, tmp_path: Path) -> None:
    """One item URL no UTF-8 store accepts: every page still reaches the index (the odd URL
    percent-escaped), so the next crawl drops every page again."""
    from tests.mockserver import Page

    with ExitStack() as stack:
        server = stack.enter_context(MockServer({"/": Page(b"<html><body>x</body></html>")}))
        settings: dict[str, object] = {
            "ADDONS": "{}",
            "ITEM_PIPELINES": '{"nearDupe.pipeline.NearDupePipeline": 100}',
            "NEARDUPE_TEXT_FIELD": "text",
            "NEARDUPE_INDEX": str(tmp_path / "index"),
            "CONCURRENT_ITEMS": 1,  # the articles before their copies
        }
        if backend == "redis":
            require_redis()
            settings["NEARDUPE_INDEX"] = stack.enter_context(RedisServer(tmp_path / "redis")).url
        args = ["runspider", "tests/spiders/odd_urls.py", "-a", f"start_url={server.url}/"]
        first, second = (run_crawl(tmp_path / run, args, settings) for run in ("one", "two"))
    for result in (first, second):
        assert result.returncode == 0, result.log[-3000:]
        # (Scrapy's own feed export fails on that item; nearDupe must not.)
        errors = [ln for ln in result.log.splitlines() if " ERROR: " in ln and "nearDupe" in ln]
        assert not errors, errors
    assert (first.stats["neardupe/kept"], first.stats["neardupe/dropped"]) == (6, 6)
    assert second.stats["neardupe/dropped"] == 12 and "neardupe/kept" not in second.stats
    odd = next(line for line in second.report if line["url"] == "http://127.0.0.1/a1\udc80")
    assert odd["duplicate_of"] == "http://127.0.0.1/a1%ED%B2%80"


def test_listing_pages_sharing_headlines_are_not_copies(tmp_path: Path) -> None:
    """The demo site crawled page by page: its section pages list some of the same headlines
    (lines, not sentences), so none is dropped as a copy of another (a section listing only
    headlines the site's other pages had is its template text, kept unfingerprinted); every
    syndicated article is, as a copy of its own story, by fingerprint or by sentences."""
    from spiders.demosite.content import PRINT_VIEWS, placements
    from spiders.demosite.server import DemoSiteServer

    story = {page.path: page.article.slug for page in placements()}
    story |= {f"/print/{key}/{slug}": slug for key, slug in PRINT_VIEWS}
    with DemoSiteServer() as server:
        base = server.url
        result = run_crawl(tmp_path, ["crawl", "pages", "-a", f"start_url={base}/"])
    assert result.returncode == 0, result.log[-3000:]
    drops = [d for d in result.report if d["decision"] == "dropped"]
    for drop in drops:
        url, original = (d[len(base) :] for d in (drop["url"], drop["duplicate_of"]))
        assert story[url] == story[original], drop
    assert any(d["reason"] == "shared-sentences" for d in drops)
    stats = result.stats
    listings = [d["url"] for d in result.report if d["reason"] == "template-text"]
    assert stats["neardupe/dropped"] == 14
    assert stats["neardupe/kept"] + len(listings) == 20  # which, depends on the crawl's order
    assert all(url.endswith("/") for url in listings), listings
