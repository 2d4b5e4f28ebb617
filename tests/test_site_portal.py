"""A portal: many templates on one loopback host, copies of a story across its sections; the
same portal crawled in two orders, through either index, gives the same decisions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.crawl import CrawlResult, run_crawl
from tests.mockserver import MockServer
from tests.redis_server import RedisServer, require_redis
from tests.template_sites import ORDER, portal_pages

#: The portal's pages in the template sites' crawl order, then the republished story.
PATHS = [f"/{site}{path}" for site, path in ORDER] + ["/teasers/bridge-again"]
#: The one story served in three sections (two templates and another headline).
COPIES = {"/clean/bridge", "/jobs/bridge", "/teasers/bridge-again"}


@pytest.fixture(scope="module")
def portal() -> Iterator[MockServer]:
    with MockServer(portal_pages(), host="127.0.0.5") as server:
        yield server


def _crawl(tmp_path: Path, portal: MockServer, paths: list[str], settings) -> CrawlResult:
    urls = ",".join(portal.url + path for path in paths)
    result = run_crawl(tmp_path, ["runspider", "tests/spiders/in_order.py", "-a", f"urls={urls}"],
                       settings)  # fmt: skip
    assert result.returncode == 0 and result.stats["finish_reason"] == "finished", result.log
    assert len(result.report) == len(paths), result.log[-3000:]
    return result


def stories(result: CrawlResult, portal: MockServer) -> set[frozenset[str]]:
    """The crawl's decisions as the stories it told apart: each page kept (fingerprinted, or
    ``template-text``: all its lines are the site's other pages') with the pages dropped as
    its copies (paths)."""
    joined: dict[str, set[str]] = {}
    for line in result.report:
        path = line["url"].removeprefix(portal.url)
        assert line["decision"] != "skipped" or line["reason"] == "template-text", line
        if line["decision"] != "dropped":
            joined.setdefault(path, set()).add(path)
    for line in result.report:
        if line["decision"] == "dropped":
            joined[line["duplicate_of"].removeprefix(portal.url)].add(
                line["url"].removeprefix(portal.url)
            )
    return {frozenset(paths) for paths in joined.values()}


@pytest.mark.parametrize("backend", ["embedded", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_portals_sections_keep_their_stories_apart_in_any_order(
    backend: str, portal: MockServer, tmp_path: Path
) -> None:
    """Four templates on one host (teasers, a job board, a heading that is the portal's name),
    one story in three sections (once under another headline): every other story is kept,
    the three copies are one story, whichever section is crawled first."""
    found, reports = [], []
    for n, paths in enumerate((PATHS, PATHS[::-1])):
        with ExitStack() as stack:
            settings = {"NEARDUPE_INDEX": str(tmp_path / f"index{n}")}
            if backend == "redis":
                require_redis()
                redis = stack.enter_context(RedisServer(tmp_path / f"redis{n}"))
                settings["NEARDUPE_INDEX"] = redis.url
            result = _crawl(tmp_path / f"crawl{n}", portal, paths, settings)
            reports.append(result.report)
            found.append(stories(result, portal))
    expected = {frozenset(COPIES)} | {frozenset([p]) for p in PATHS if p not in COPIES}
    assert found[0] == expected, reports[0]
    assert found[1] == expected, reports[1]
