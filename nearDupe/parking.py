"""Requests held back from a host that copies another's (the crawl budget's mirror hosts and
links of copies), fetched after all if the host shows a page of its own.

A request the crawl budget would not fetch is parked, not forgotten: counted under its stat as
not fetched, and kept per host. When a page of that host shows it has pages of its own (a
fingerprinted page kept, or dropped as a copy of a page of the same host, such as a page an
earlier crawl stored under the same URL), the host is no mere copy: its parked requests
are scheduled again, counted under
``neardupe/parked/released``, and it is parked no more in this crawl. What is still parked when
the crawl has nothing else to do is dropped for good. At most :data:`LIMIT` requests are parked
at once; past it a request is dropped at once (one WARNING).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy import signals

from nearDupe.analysis import META_KEY
from nearDupe.errors import NearDuplicate
from nearDupe.sitetemplate import site_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)

#: Requests parked at most, over every host (a request is about 1 KB in memory).
LIMIT = 100_000

_PARKINGS: WeakKeyDictionary[Crawler, Parking] = WeakKeyDictionary()


class Parking:
    """One crawler's parked requests, per host, and the hosts that showed a page of their own."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self._parked: defaultdict[str, list[tuple[Request, str]]] = defaultdict(list)
        self._count = 0
        self._own: set[str] = set()
        self._warned = False
        crawler.signals.connect(self._scraped, signal=signals.item_scraped)
        crawler.signals.connect(self._dropped, signal=signals.item_dropped)
        crawler.signals.connect(self._idle, signal=signals.spider_idle)

    @classmethod
    def of(cls, crawler: Crawler) -> Parking:
        """The crawler's parking, shared by the components that park."""
        parking = _PARKINGS.get(crawler)
        if parking is None:
            parking = _PARKINGS[crawler] = cls(crawler)
        return parking

    def has_own(self, host: str) -> bool:
        """Whether a page of ``host`` was kept as its own in this crawl."""
        return host in self._own

    def park(self, host: str, requests: list[Request], stat: str) -> None:
        """Hold ``requests`` to ``host`` back, counted under ``stat`` as not fetched (a request
        the scheduler has already seen comes with ``dont_filter`` set)."""
        self.stats.inc_value(stat, len(requests))
        room = max(0, LIMIT - self._count)
        if len(requests) > room and not self._warned:
            self._warned = True
            logger.warning(
                "nearDupe: %d requests held back from hosts that copy others; more are dropped "
                "without waiting to see whether their host has pages of its own",
                LIMIT,
            )
        self._parked[host].extend((request, stat) for request in requests[:room])
        self._count += min(room, len(requests))

    def _scraped(self, item: Any, response: Response, **kwargs: Any) -> None:
        """Signal handler: a kept page's host has pages of its own."""
        analysis = getattr(response, "meta", {}).get(META_KEY)
        if analysis is not None and analysis.fingerprint is not None and not analysis.skip_reason:
            self._owns(site_of(response.url), response.url)

    def _dropped(
        self, item: Any, response: Response, exception: BaseException, **kwargs: Any
    ) -> None:
        """Signal handler: a page dropped as a copy of a page of its own host (stored under
        the same URL, or a print view) shows that host has pages of its own."""
        copy_of = getattr(exception, "duplicate_of", None)
        host = site_of(response.url)
        if isinstance(exception, NearDuplicate) and copy_of and site_of(copy_of) == host:
            self._owns(host, response.url)

    def _owns(self, host: str, url: str) -> None:
        """``host`` has pages of its own (``url`` one of them): release what it parked."""
        if not host or host in self._own:
            return
        self._own.add(host)
        parked = self._parked.pop(host, [])
        if not parked:
            return
        self._count -= len(parked)
        logger.info(
            "nearDupe: %s has pages of its own (%s): its %d requests held back are fetched",
            host,
            url,
            len(parked),
        )
        engine = self.crawler.engine
        assert engine is not None, "items come from a running crawl"
        for request, stat in parked:
            self.stats.inc_value(stat, -1)
            self.stats.inc_value("neardupe/parked/released")
            engine.crawl(request)

    def _idle(self) -> None:
        """Signal handler: the crawl has nothing else to do; what is parked is not fetched."""
        self._parked.clear()
        self._count = 0
