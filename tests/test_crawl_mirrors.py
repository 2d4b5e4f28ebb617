"""Real crawls of four hosts (NEARDUPE_SKIP_MIRRORS): an original, its full mirror, a partner
republishing a third of its stories and a near mirror (18 of its first 20 pages copies). The
full mirror's later pages are not fetched but for the audited sample, on both backends and in
the next crawl; the near mirror, which has pages of its own, loses none of them."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from nearDupe.mirrors import audited
from spiders.demosite.content import ARTICLES_DIR
from tests.crawl import CrawlResult, run_crawl, run_scrapy
from tests.mockserver import MockServer, Page
from tests.redis_server import RedisServer, require_redis

#: Each host on its own loopback address (all reach the listeners on 127.0.0.1's interface).
HOSTS = {
    "orig": "127.0.0.21",
    "mirror": "127.0.0.22",
    "partner": "127.0.0.23",
    "near": "127.0.0.24",
}
#: Stories per host.
PAGES = 30
#: The pages of the near mirror that are its own (the rest copy the original's).
NEAR_OWN = {5, 12, 21, 24, 26, 28, 29}
#: The words of the demo project's articles, which the synthetic stories are drawn from.
WORDS = sorted(
    {w for p in (ARTICLES_DIR / "en").iterdir() for w in re.findall(r"[a-z]{3,}", p.read_text())}
)


def story(seed: str) -> tuple[str, list[str]]:
    """A headline and five paragraphs of two sentences, all its own."""
    rng = random.Random(seed)

    def sentence(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."

    return sentence(6)[:-1], [f"{sentence(14)} {sentence(12)}" for _ in range(5)]


def page(host: str, seed: str) -> Page:
    """A story in the host's own template (its navigation and footer)."""
    title, paragraphs = story(seed)
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    html = (
        f"<html><head><title>{title} | {host} news</title></head><body>"
        f"<header><ul class='nav'><li><a href='/'>{host} home</a></li><li>{host} world</li>"
        f"</ul></header><main><article><h1>{title}</h1>{body}</article></main>"
        f"<footer class='footer'>Copyright {host} news, all rights reserved</footer>"
        "</body></html>"
    )
    return Page(html.encode())


def own(host: str, i: int) -> bool:
    """Whether page i of a host is its own story (else a copy of the original's story i)."""
    return {
        "orig": True,
        "mirror": False,
        "partner": i % 3 != 0,
        "near": i in NEAR_OWN,
    }[host]


def sites() -> dict[str, dict[str, Page]]:
    """host name -> path -> page."""
    return {
        host: {
            f"/{i}": page(host, f"{host}-{i}" if own(host, i) else f"orig-{i}")
            for i in range(PAGES)
        }
        for host in HOSTS
    }


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """host name -> its server's URL."""
    with ExitStack() as stack:
        yield {
            host: stack.enter_context(MockServer(pages, host=HOSTS[host])).url
            for host, pages in sites().items()
        }


def crawl(tmp_path: Path, servers: dict[str, str], **settings: Any) -> CrawlResult:
    """The original's pages, then the three others' in turn, one page at a time."""
    order = [servers["orig"] + f"/{i}" for i in range(PAGES)]
    order += [servers[h] + f"/{i}" for i in range(PAGES) for h in ("mirror", "partner", "near")]
    result = run_crawl(
        tmp_path,
        ["runspider", "tests/spiders/paced.py", "-a", f"urls={','.join(order)}"],
        {"NEARDUPE_SKIP_MIRRORS": True, **settings},
    )
    assert result.returncode == 0 and result.stats["finish_reason"] == "finished", result.log
    return result


def fetched(result: CrawlResult, servers: dict[str, str], host: str) -> list[int]:
    """The page numbers of ``host`` the crawl fetched and decided, in order."""
    prefix = servers[host] + "/"
    urls = [line["url"] for line in result.report]
    return [int(url[len(prefix) :]) for url in urls if url.startswith(prefix)]


def kept_own(result: CrawlResult, servers: dict[str, str], host: str) -> set[int]:
    """The pages of ``host`` that are its own stories and were kept."""
    prefix = servers[host] + "/"
    return {
        int(line["url"][len(prefix) :])
        for line in result.report
        if line["url"].startswith(prefix) and line["decision"] == "kept"
    } & {i for i in range(PAGES) if own(host, i)}


def sampled(servers: dict[str, str], host: str, pages: range) -> list[int]:
    """The pages of ``host`` among ``pages`` that a mirror's audit fetches."""
    return [i for i in pages if audited(f"{servers[host]}/{i}", 0.1)]


def check_first_crawl(result: CrawlResult, servers: dict[str, str]) -> None:
    """What a crawl that meets the mirrors does: the full mirror fetched until its 18th copy,
    then only its audited sample; the near mirror, whose own pages are kept, fetched whole."""
    mirror_log = re.findall(r"nearDupe: (\S+) mirrors (\S+) ", result.log)
    assert mirror_log == [(HOSTS["mirror"], HOSTS["orig"])]
    assert fetched(result, servers, "orig") == list(range(PAGES))
    assert kept_own(result, servers, "orig") == set(range(PAGES))  # every unique page kept
    later = sampled(servers, "mirror", range(18, PAGES))
    assert fetched(result, servers, "mirror") == list(range(18)) + later
    assert fetched(result, servers, "near") == list(range(PAGES))  # it has pages of its own
    assert kept_own(result, servers, "near") == NEAR_OWN
    assert fetched(result, servers, "partner") == list(range(PAGES))  # never a mirror
    assert kept_own(result, servers, "partner") == {i for i in range(PAGES) if own("partner", i)}
    assert result.stats["neardupe/mirror/skipped"] == PAGES - 18 - len(later)
    assert result.stats.get("neardupe/mirror/audited", 0) == len(later)
    mirror_items = [i for i in result.items if i["url"].startswith(servers["mirror"])]
    assert mirror_items == []  # every fetched page of the mirror was a copy, dropped


def check_next_crawl(result: CrawlResult, servers: dict[str, str]) -> None:
    """The next crawl of the index fetches the full mirror's audited sample only; the near
    mirror's requests wait until an audited page shows it has pages of its own (stored by
    the first crawl under its URL), then are all fetched."""
    audit = sampled(servers, "mirror", range(PAGES))
    assert fetched(result, servers, "mirror") == audit
    near_audit = sampled(servers, "near", range(PAGES))
    if NEAR_OWN & set(near_audit):
        assert sorted(fetched(result, servers, "near")) == list(range(PAGES))
        # Held back until then, and fetched after all: only the full mirror's are not.
        assert result.stats["neardupe/mirror/skipped"] == PAGES - len(audit)
    else:  # no audited page of its own: the near mirror is skipped as a mirror
        assert fetched(result, servers, "near") == near_audit
    assert len(fetched(result, servers, "partner")) == PAGES


def test_mirrors_are_not_fetched_embedded(tmp_path: Path, servers: dict[str, str]) -> None:
    """Embedded index: the first crawl stops fetching the mirrors, the next fetches none,
    ``scrapy neardupe stats`` lists them; without skipping every page is fetched."""
    first = crawl(tmp_path / "first", servers)
    check_first_crawl(first, servers)
    index = tmp_path / "first" / "index"
    stats = run_scrapy(["neardupe", "stats", "--json", "-s", f"NEARDUPE_INDEX={index}"])
    assert json.loads(stats.stdout)["mirrors"] == {
        HOSTS["mirror"]: HOSTS["orig"],
        HOSTS["near"]: HOSTS["orig"],
    }, stats.stderr[-2000:]
    text = run_scrapy(["neardupe", "stats", "-s", f"NEARDUPE_INDEX={index}"]).stdout
    assert f"mirrors       {HOSTS['mirror']} (of {HOSTS['orig']})" in text
    second = crawl(tmp_path / "second", servers, NEARDUPE_INDEX=str(index))
    check_next_crawl(second, servers)
    plain = crawl(tmp_path / "plain", servers, NEARDUPE_SKIP_MIRRORS=False)
    assert "neardupe/mirror/skipped" not in plain.stats
    assert "Disabled nearDupe.mirrors" not in plain.log  # off by default, and quietly
    assert plain.stats["downloader/response_count"] == 4 * PAGES
    skipped = first.stats["neardupe/mirror/skipped"]
    assert first.stats["downloader/response_count"] == 4 * PAGES - skipped


@pytest.mark.redis
def test_mirrors_are_not_fetched_redis(tmp_path: Path, servers: dict[str, str]) -> None:
    """A real redis-server: the same, and the next crawl (another process) fetches no mirror
    page; ``stats`` lists the mirrors from the index's hash."""
    require_redis()
    with RedisServer(tmp_path / "redis") as redis:
        first = crawl(tmp_path / "first", servers, NEARDUPE_INDEX=redis.url)
        check_first_crawl(first, servers)
        second = crawl(tmp_path / "second", servers, NEARDUPE_INDEX=redis.url)
        check_next_crawl(second, servers)
        stats = run_scrapy(["neardupe", "stats", "--json", "-s", f"NEARDUPE_INDEX={redis.url}"])
        assert json.loads(stats.stdout)["mirrors"] == {
            HOSTS["mirror"]: HOSTS["orig"],
            HOSTS["near"]: HOSTS["orig"],
        }, stats.stderr[-2000:]
