"""Real crawls of four loopback hosts with NEARDUPE_FOLLOW_COPIES = False: the links a page
dropped as a copy of another host's page yields to its own host are not followed while that
host has shown no page of its own; a kept page's links, a copy's links to other hosts or to
pages marked new, the links of a copy of a page of its own host (a print view, a re-crawled
page) and every link of a host with pages of its own are."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.crawl import CrawlResult, run_crawl
from tests.mockserver import MockServer, Page
from tests.test_crawl_mirrors import story

#: Each host on its own loopback address.
HOSTS = {"orig": "127.0.0.31", "copy": "127.0.0.32", "other": "127.0.0.33", "mixed": "127.0.0.34"}
#: The original's stories, a chain: its home page links to the first, each to the next; the
#: third also to its print view (a copy on its own host), which links to a story of its own.
STORIES = 7
PRINT = {"/p2", "/extra"}


def html(host: str, seed: str | None, links: list[str]) -> Page:
    """A page of ``host``: story ``seed`` in an <article> (none: a listing), and ``links``
    (``rel=new:URL``: a link marked as leading to a new page)."""
    anchors = "".join(
        f"<li><a rel='new' href='{link[8:]}'>more</a></li>"
        if link.startswith("rel=new:")
        else f"<li><a href='{link}'>more</a></li>"
        for link in links
    )
    main = "<p>Latest news</p>"
    if seed is not None:
        title, paragraphs = story(seed)
        body = "".join(f"<p>{p}</p>" for p in paragraphs)
        main = f"<article><h1>{title}</h1>{body}</article>"
    return Page(
        f"<html><head><title>{host} news</title></head><body><header>{host} home</header>"
        f"<main>{main}</main><ul class='links'>{anchors}</ul>"
        f"<footer>Copyright {host} news</footer></body></html>".encode()
    )


def sites(other_url: str) -> dict[str, dict[str, Page]]:
    """host name -> path -> page. The copy host's /cN pages copy the original's story N."""
    orig = {"/": html("orig", None, ["/s0"])}
    for i in range(STORIES):
        orig[f"/s{i}"] = html("orig", f"orig-{i}", [f"/s{i + 1}"] if i + 1 < STORIES else [])
    orig["/s2"] = html("orig", "orig-2", ["/s3", "/p2"])
    orig["/p2"] = html("orig", "orig-2", ["/extra"])
    orig["/extra"] = html("orig", "orig-extra", [])
    copy = {  # only copies of the original's stories
        "/": html("copy", None, ["/c0"]),
        "/c0": html("copy", "orig-0", ["/c1", "rel=new:/c3", f"{other_url}/x"]),
        "/c1": html("copy", "orig-1", ["/c2"]),
        "/c2": html("copy", "orig-2", []),
        "/c3": html("copy", "orig-3", []),
    }
    mixed = {  # stories of its own, and copies
        "/": html("mixed", None, ["/k0", "/m5"]),
        "/k0": html("mixed", "mixed-k0", ["/k1"]),
        "/k1": html("mixed", "mixed-k1", []),
        "/m5": html("mixed", "orig-5", ["/m6", "rel=new:/fresh"]),
        "/m6": html("mixed", "orig-6", []),
        "/fresh": html("mixed", "mixed-fresh", []),
    }
    return {
        "orig": orig,
        "copy": copy,
        "mixed": mixed,
        "other": {"/x": html("other", "other-x", [])},
    }


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """host name -> its server's URL."""
    with ExitStack() as stack:
        pages: dict[str, dict[str, Page]] = {}
        running = {
            host: stack.enter_context(MockServer(pages.setdefault(host, {}), host=address))
            for host, address in HOSTS.items()
        }
        for host, site in sites(running["other"].url).items():
            pages[host].update(site)
        yield {host: server.url for host, server in running.items()}


def crawl(
    tmp_path: Path, servers: dict[str, str], hosts: list[str], **settings: Any
) -> CrawlResult:
    """Each host's home page, and every page its links lead to, one host after the other."""
    phases = ";".join(f"{servers[host]}/" for host in hosts)
    result = run_crawl(
        tmp_path,
        ["runspider", "tests/spiders/phased.py", "-a", f"phases={phases}"],
        {"NEARDUPE_FOLLOW_COPIES": False, **settings},
    )
    assert result.returncode == 0 and result.stats["finish_reason"] == "finished", result.log
    return result


def fetched(result: CrawlResult, servers: dict[str, str], host: str) -> set[str]:
    """The paths of ``host`` the crawl decided a page of."""
    prefix = servers[host]
    return {line["url"][len(prefix) :] for line in result.report if line["url"].startswith(prefix)}


def test_links_of_copies_to_their_host_are_not_followed(
    tmp_path: Path, servers: dict[str, str]
) -> None:
    """The copy host's copies lead nowhere on it; a copy's link marked new and a copy's link
    to another host are followed; a host with pages of its own has every link followed;
    every unique page is kept."""
    result = crawl(tmp_path / "first", servers, ["orig", "copy", "mixed"])
    stories = {f"/s{i}" for i in range(STORIES)}
    # A kept page's links all go through, and so do those of a copy on its own host.
    assert fetched(result, servers, "orig") == stories | PRINT
    assert fetched(result, servers, "copy") == {"/c0", "/c3"}
    assert fetched(result, servers, "mixed") == {"/k0", "/k1", "/m5", "/m6", "/fresh"}
    assert fetched(result, servers, "other") == {"/x"}
    assert result.stats["neardupe/copy_links/skipped"] == 1  # /c0 -> /c1
    assert result.stats["neardupe/dropped"] == 5  # /p2, /c0, /c3, /m5, /m6
    kept = {line["url"] for line in result.report if line["decision"] == "kept"}
    unique = {servers["orig"] + p for p in stories | {"/extra"}} | {
        servers["mixed"] + p for p in ("/k0", "/k1", "/fresh")
    }
    assert kept == unique | {servers["other"] + "/x"}
    assert f"to their own host {HOSTS['copy']} ({servers['copy']}/c0" in result.log

    plain = crawl(
        tmp_path / "plain", servers, ["orig", "copy", "mixed"], NEARDUPE_FOLLOW_COPIES=True
    )
    assert fetched(plain, servers, "copy") - fetched(result, servers, "copy") == {"/c1", "/c2"}
    assert fetched(plain, servers, "mixed") == fetched(result, servers, "mixed")
    assert "neardupe/copy_links/skipped" not in plain.stats
    assert "Disabled nearDupe.copylinks" not in plain.log  # on by default, and quietly

    # A re-crawl: each stored page is a copy of itself, on its own host.
    again = crawl(
        tmp_path / "again", servers, ["orig"], NEARDUPE_INDEX=tmp_path / "first" / "index"
    )
    assert fetched(again, servers, "orig") == stories | PRINT
    assert again.stats["neardupe/dropped"] == STORIES + len(PRINT)
    assert "neardupe/copy_links/skipped" not in again.stats
