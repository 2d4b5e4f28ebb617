"""The mirror rule (nearDupe/mirrors.py), both backends counting hosts as it does, and the
parking of requests held back (nearDupe/parking.py)."""

from __future__ import annotations

import logging
import random

import pytest
from scrapy import Request, Spider
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from nearDupe import parking
from nearDupe._settings import Config
from nearDupe.errors import SettingsError
from nearDupe.logstats import counts_line
from nearDupe.mirrors import HostCount, MirrorRule, copied_host, counted
from nearDupe.store import EmbeddedStore
from nearDupe.store.sites import read_mirrors
from tests.test_store_contract import Backend, backend, redis_for_contract, run

__all__ = ["backend", "redis_for_contract"]  # fixtures the contract test below uses


DEFAULT = MirrorRule()


def verdict(pages: list[str | None], rule: MirrorRule = DEFAULT) -> str | None:
    """The host a host mirrors after decided pages copying ``pages`` (None: its own page)."""
    count = HostCount()
    for copy_of in pages:
        count = counted(count, copy_of, rule)
    return count.mirror_of


def test_a_host_copying_nine_tenths_of_its_first_pages_is_a_mirror() -> None:
    """18 of the first 20 copies of one host make a mirror, decided at the 18th."""
    assert MirrorRule().needed == 18
    assert verdict(["a.example"] * 18) == "a.example"
    assert verdict([None, None] + ["a.example"] * 18) == "a.example"
    assert verdict([None] + ["a.example"] * 17) is None  # 2 more may still make it one


def test_own_pages_or_copies_of_several_hosts_make_no_mirror() -> None:
    """A partner republishing a third of its stories, a host copying two hosts alike, a host
    with 3 own pages among its first 20: none is a mirror, and later copies do not count."""
    partner = ([None, None, "a.example"] * 7)[:20]
    assert verdict(partner + ["a.example"] * 40) is None
    assert verdict(["a.example", "b.example"] * 20) is None
    assert verdict([None] * 3 + ["a.example"] * 17 + ["a.example"] * 40) is None
    assert verdict(["a.example"] * 9, MirrorRule(0.9, 10)) == "a.example"
    assert verdict(["a.example"] * 8, MirrorRule(0.9, 10)) is None


def test_a_copy_on_its_own_host_is_no_copy_of_another() -> None:
    """Only a drop naming another host's page counts as a copy."""
    assert copied_host("b.example", "http://www.a.example/x") == "a.example"
    assert copied_host("a.example", "https://a.example/y") is None
    assert copied_host("a.example", None) is None


def test_settings_are_checked() -> None:
    """Defaults, and a share or a page count out of range, or a follow that is no boolean,
    refused."""
    config = Config.from_settings(Settings())
    assert (config.skip_mirrors, config.mirror_rule) == (False, MirrorRule(0.9, 20))
    assert config.follow_copies is True and config.mirror_audit == 0.1
    assert Config.from_settings(Settings({"NEARDUPE_FOLLOW_COPIES": "0"})).follow_copies is False
    for name, value in [
        ("NEARDUPE_MIRROR_SHARE", 0),
        ("NEARDUPE_MIRROR_PAGES", 0),
        ("NEARDUPE_MIRROR_AUDIT", 1.5),
        ("NEARDUPE_FOLLOW_COPIES", "sometimes"),
    ]:
        with pytest.raises(SettingsError, match=name):
            Config.from_settings(Settings({name: value}))


def test_the_summary_line_names_the_requests_the_crawl_budget_saved() -> None:
    """``; not fetched: …`` once a mirror's request or a copy's link was not fetched."""
    stats = {"neardupe/seen": 3, "neardupe/kept": 1, "neardupe/dropped": 2}
    assert "not fetched" not in counts_line(stats, final=True)
    stats |= {"neardupe/mirror/skipped": 8, "neardupe/copy_links/skipped": 1}
    assert counts_line(stats, final=True) == (
        "nearDupe: 3 items seen, 1 kept, 2 dropped as near-duplicates, 0 skipped; not "
        "fetched: 8 requests to mirror hosts, 1 link of copies"
    )


def test_hosts_are_counted_as_the_python_rule(backend: Backend) -> None:
    """Random decided pages of several hosts, counted by two stores of one index at once (two
    crawlers): each backend's verdicts are the rule's, seen by both and by a reopened store."""
    rng = random.Random(5)
    rule = MirrorRule(0.9, 10)
    plans: dict[str, list[str | None]] = {
        "mirror.example": ["orig.example"] * 12,
        "late.example": [None] + ["orig.example"] * 9,  # 9 of 10: a mirror
        "partner.example": [rng.choice([None, None, "orig.example"]) for _ in range(30)],
        "odd\udc80.example": ["orig.example"] * 9 + [None],
        "orig.example": [None] * 30,
    }
    pages = [(host, copy_of) for host, plan in plans.items() for copy_of in plan]
    rng.shuffle(pages)

    async def body() -> None:
        first, second = backend.open(), backend.open() if backend.kind == "redis" else None
        for n, (host, copy_of) in enumerate(pages):
            store = second if second is not None and n % 2 else first
            await store.record_host(host, copy_of, rule)
        expected = {host: verdict(plan, rule) for host, plan in plans.items()}
        assert expected["mirror.example"] == expected["odd\udc80.example"] == "orig.example"
        for store in (first, second):
            if store is not None:
                assert {h: await store.mirror_of(h) for h in plans} == expected
        if isinstance(first, EmbeddedStore):
            first.index.commit()
            listed = read_mirrors(first.index._db)
        else:
            listed = await first.sites.mirrors()  # type: ignore[attr-defined]
        assert listed["mirror.example"] == "orig.example"
        assert len(listed) == len([v for v in expected.values() if v]) == 3
        for store in (first, second):
            if store is not None:
                await store.close()
        reopened = backend.open()
        assert await reopened.mirror_of("mirror.example") == "orig.example"
        assert await reopened.mirror_of("partner.example") is None
        await reopened.close()

    run(body)


def test_a_verdict_is_not_undone_by_a_read_sent_before_it(backend: Backend) -> None:
    """A mirror_of read in flight when this crawler learns the verdict answers None: the
    verdict stays (a host is a mirror for good)."""
    if backend.kind != "redis":
        pytest.skip("the embedded index reads its verdicts under its lock")

    async def body() -> None:
        store = backend.open()
        rule = MirrorRule(0.9, 10)
        for _ in range(10):
            await store.record_host("mirror.example", "orig.example", rule)
        sites = store.sites  # type: ignore[attr-defined]
        sites._remember("mirror.example", None)  # the late answer of an earlier read
        assert await store.mirror_of("mirror.example") == "orig.example"
        await store.close()

    run(body)


def test_parking_holds_at_most_its_limit(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Past LIMIT parked requests, more are dropped at once (counted, one WARNING)."""
    monkeypatch.setattr(parking, "LIMIT", 3)
    crawler = get_crawler(Spider)
    crawler.stats.open_spider()
    held = parking.Parking.of(crawler)
    assert parking.Parking.of(crawler) is held
    requests = [Request(f"http://mirror.example/{i}") for i in range(5)]
    with caplog.at_level(logging.WARNING, logger="nearDupe.parking"):
        held.park("mirror.example", requests[:2], "neardupe/mirror/skipped")
        held.park("mirror.example", requests[2:], "neardupe/mirror/skipped")
        held.park("mirror.example", requests[:1], "neardupe/mirror/skipped")
    assert crawler.stats.get_value("neardupe/mirror/skipped") == 6
    assert [r.message for r in caplog.records].count(
        "nearDupe: 3 requests held back from hosts that copy others; more are dropped without "
        "waiting to see whether their host has pages of its own"
    ) == 1
    assert [request for request, _ in held._parked["mirror.example"]] == requests[:3]
