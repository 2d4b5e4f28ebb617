"""Real crawls of four sites on four loopback hosts: a site's template, learned from its
earlier pages, neither joins its different articles nor separates its copies; what was
learned survives a restart (embedded) and is shared by two crawler processes (Redis)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from nearDupe._settings import DEFAULT_K
from nearDupe.analysis import analyze_html
from nearDupe.features import FeatureSettings
from nearDupe.store.base import SENTENCE_SHARE, holders_of, sentence_matches
from tests.crawl import CrawlResult, run_crawl
from tests.mockserver import MockServer, Page
from tests.redis_server import RedisServer, require_redis
from tests.site import article
from tests.template_sites import HOSTS, ORDER, build_sites, essay_page

#: The first crawl teaches each template site three stories; the second brings the pages
#: under test: two different short stories wrapped in teasers (on two sites: one heads its
#: pages with its name), and a copy under a job board.
FIRST = [(site, path) for site, path in ORDER if site == "clean" or path.startswith("/w")]
SECOND = [(site, path) for site, path in ORDER if (site, path) not in FIRST]


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, MockServer]]:
    with ExitStack() as stack:
        yield {
            site: stack.enter_context(MockServer(pages, host=HOSTS[site]))
            for site, pages in build_sites().items()
        }


def _crawl(tmp_path: Path, servers, pages, settings) -> CrawlResult:
    urls = ",".join(servers[site].url + path for site, path in pages)
    result = run_crawl(tmp_path, ["runspider", "tests/spiders/in_order.py", "-a", f"urls={urls}"],
                       settings)  # fmt: skip
    assert result.returncode == 0 and result.stats["finish_reason"] == "finished", result.log
    assert len(result.report) == len(pages), result.log[-3000:]
    return result


def test_without_the_template_the_pages_would_be_judged_wrongly() -> None:
    """The fixture is what the crawl tests claim: judged page by page, the two different
    teaser-site stories share enough sentences (their teasers) to be joined, and the job
    board's copy is beyond the fingerprint's reach."""
    sites = build_sites()

    def analysis(site: str, path: str):
        html = sites[site][path].body.decode()
        return analyze_html(html, 200, 2_000_000, FeatureSettings())

    garden, ferry = analysis("teasers", "/garden"), analysis("teasers", "/ferry")
    assert garden.fingerprint is not None and ferry.fingerprint is not None
    holders = holders_of(garden.sentences, "garden", garden.fingerprint)
    assert sentence_matches(ferry.sentences, holders, SENTENCE_SHARE)
    clean, jobs = analysis("clean", "/bridge"), analysis("jobs", "/bridge")
    assert (clean.fingerprint ^ jobs.fingerprint).bit_count() > DEFAULT_K


def _check(first: CrawlResult, second: CrawlResult, servers) -> None:
    for line in first.report:
        assert line["decision"] in ("kept", "skipped"), line
        assert line["decision"] == "kept" or line["reason"] == "template-text", line
    decisions = second.decisions()
    for site in ("teasers", "logo"):
        for path in ("/garden", "/ferry"):
            assert decisions[servers[site].url + path]["decision"] == "kept", decisions
    copy = decisions[servers["jobs"].url + "/bridge"]
    assert copy["decision"] == "dropped", copy
    assert copy["duplicate_of"] == servers["clean"].url + "/bridge"
    assert first.stats.get("neardupe/skipped/template-text", 0) <= 2


def test_templates_learned_survive_a_restart(servers, tmp_path: Path) -> None:
    settings = {"NEARDUPE_INDEX": str(tmp_path / "index")}
    first = _crawl(tmp_path / "first", servers, FIRST, settings)
    second = _crawl(tmp_path / "second", servers, SECOND, settings)
    _check(first, second, servers)


@pytest.mark.redis
def test_templates_are_shared_through_redis(servers, tmp_path: Path) -> None:
    require_redis()
    with RedisServer(tmp_path / "redis") as redis:
        settings = {"NEARDUPE_INDEX": redis.url, "NEARDUPE_K": 10, "NEARDUPE_CONFIRM_K": 22}
        first = _crawl(tmp_path / "first", servers, FIRST, settings)
        second = _crawl(tmp_path / "second", servers, SECOND, settings)
    _check(first, second, servers)


@pytest.mark.parametrize("backend", ["embedded", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_new_sites_pages_analysed_at_once_are_decided_one_at_a_time(
    backend: str, servers, tmp_path: Path
) -> None:
    """A crawl analyses a new site's first pages before deciding any: all five teaser-site
    stories (each mostly its site's teasers) arrive before one is decided, and each is
    analysed again, without the lines the ones decided before it had, so none is joined to
    another."""
    with ExitStack() as stack:
        settings = {}
        if backend == "redis":
            require_redis()
            settings["NEARDUPE_INDEX"] = stack.enter_context(RedisServer(tmp_path / "redis")).url
        pages = [(site, path) for site, path in ORDER if site == "teasers"]
        urls = ",".join(servers[site].url + path for site, path in pages)
        result = run_crawl(
            tmp_path, ["runspider", "tests/spiders/at_once.py", "-a", f"urls={urls}"], settings
        )
    assert result.returncode == 0 and result.stats["finish_reason"] == "finished", result.log
    assert [line["decision"] for line in result.report] == ["kept"] * len(pages), result.report
    assert result.stats["neardupe/rechecked"] == len(pages) - 1


def _story(title: str, paragraphs: list[str]) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<html><head><title>{title} | The Grown Gazette</title></head><body>"
        f"<article><h1>{title}</h1>{body}</article></body></html>"
    ).encode()


#: A grown site (four stories) whose next two pages extract to the same notice alone.
NOTICE = (
    "All content on this site is provided by its partners under agreement; it may not be "
    "reproduced without the written permission of the rights holder, who is paid as agreed."
)
GROWN = {
    **{
        f"/s{i}": Page(_story(f"Story {slug}", article(slug)))
        for i, slug in enumerate(("flood-warning", "science-fair", "library-app", "harbor-bridge"))
    },
    "/notice-a": Page(_story("Council passes budget", [NOTICE])),
    "/notice-b": Page(_story("Ferry timetable changes", [NOTICE])),
}


@pytest.mark.parametrize("backend", ["embedded", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_grown_sites_pages_in_flight_are_not_joined_by_what_one_teaches(
    backend: str, tmp_path: Path
) -> None:
    """Two different stories of a grown site, fetched at once, extract to the same notice:
    both are fingerprinted before either is decided; the first is kept and teaches its site
    the notice, so the second, finding it as its copy, is its site's text (template-text,
    kept) rather than dropped at distance 0."""
    with ExitStack() as stack:
        server = stack.enter_context(MockServer(GROWN, host="127.0.0.5"))
        index = str(tmp_path / "index")
        if backend == "redis":
            require_redis()
            index = stack.enter_context(RedisServer(tmp_path / "redis")).url
        settings = {"NEARDUPE_INDEX": index}
        stories = ",".join(f"{server.url}/s{i}" for i in range(4))
        grown = run_crawl(tmp_path / "grow", ["runspider", "tests/spiders/in_order.py", "-a",
                                              f"urls={stories}"], settings)  # fmt: skip
        assert [line["decision"] for line in grown.report] == ["kept"] * 4, grown.log
        notices = f"{server.url}/notice-a,{server.url}/notice-b"
        result = run_crawl(
            tmp_path / "notices",
            ["runspider", "tests/spiders/at_once.py", "-a", f"urls={notices}"],
            settings,
        )
    assert result.returncode == 0 and result.stats["finish_reason"] == "finished", result.log
    decisions = sorted((line["decision"], line["reason"]) for line in result.report)
    assert decisions == [("kept", None), ("skipped", "template-text")], result.report


#: Two short stories of a new site, each beside the site's essay, and a plain site's copies.
SHORT = {
    "/harbor": (
        "Harbor bridge reopens",
        [
            "The harbor bridge reopened on Monday after three weeks of repairs to its deck.",
            "Drivers had used the ferry meanwhile; the city thanked them for their patience.",
        ],
    ),
    "/library": (
        "Library lends tools",
        [
            "The town library now lends tools as well as books, from drills to ladders.",
            "Members may borrow one tool for a week, and the first loan is free of charge.",
        ],
    ),
}


@pytest.mark.parametrize("backend", ["embedded", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_new_sites_page_that_became_its_essay_is_read_again_from_its_html(
    backend: str, tmp_path: Path
) -> None:
    """A new site's two short stories, fetched at once, each extract to the essay the site
    shows beside them: the first decided is kept (its site knows nothing yet) and teaches
    the essay; the second, all its site's text at its decision, is read again from its HTML
    without the essay, and is the copy of its story that a plain site stored first (before:
    kept unfingerprinted as template-text)."""

    def pages(with_essay: bool) -> dict[str, Page]:
        return {
            path: Page(essay_page(story, title, with_essay).encode())
            for path, (title, story) in SHORT.items()
        }

    with ExitStack() as stack:
        plain = stack.enter_context(MockServer(pages(False), host="127.0.0.6"))
        essays = stack.enter_context(MockServer(pages(True), host="127.0.0.7"))
        index = str(tmp_path / "index")
        if backend == "redis":
            require_redis()
            index = stack.enter_context(RedisServer(tmp_path / "redis")).url
        settings = {"NEARDUPE_INDEX": index}
        urls = [plain.url + path for path in SHORT]
        stored = run_crawl(tmp_path / "plain", ["runspider", "tests/spiders/in_order.py", "-a",
                                                f"urls={','.join(urls)}"], settings)  # fmt: skip
        assert [line["decision"] for line in stored.report] == ["kept"] * 2, stored.log
        urls = [essays.url + path for path in SHORT]
        result = run_crawl(
            tmp_path / "essays",
            ["runspider", "tests/spiders/at_once.py", "-a", f"urls={','.join(urls)}"],
            settings,
        )
    assert result.returncode == 0 and result.stats["finish_reason"] == "finished", result.log
    first, second = result.report
    assert first["decision"] == "kept", result.report
    assert second["decision"] == "dropped", result.report
    assert second["duplicate_of"] == plain.url + second["url"].removeprefix(essays.url)


@pytest.mark.redis
def test_crawlers_sharing_redis_see_what_a_young_site_taught_at_once(tmp_path: Path) -> None:
    """Two crawlers of one Redis index: what one learns of a young site the other reads at
    its next page (its decisions are ordered after it); a grown site's lines are reused for
    a few seconds."""
    import asyncio

    from nearDupe.sitetemplate import YOUNG_STORIES
    from nearDupe.store import IndexHeader
    from nearDupe.store.redis import RedisStore

    require_redis()

    async def crawl(url: str) -> None:
        one, two = (RedisStore.from_url(url, IndexHeader(), name="shared") for _ in range(2))
        try:
            assert not (await two.site_template("a.example")).lines
            await one.learn_site("a.example", 1, [10, 11])
            assert (await two.site_template("a.example")).lines == {10: (1,), 11: (1,)}
            for story in range(2, YOUNG_STORIES + 1):
                await one.learn_site("a.example", story, [10, 11, 100 + story])
            grown = await two.site_template("a.example")
            assert not grown.young()
            await one.learn_site("a.example", 99, [12])
            assert 12 not in (await two.site_template("a.example")).lines
        finally:
            await one.close()
            await two.close()

    with RedisServer(tmp_path / "redis") as redis:
        asyncio.run(crawl(redis.url))
