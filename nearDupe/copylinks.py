"""Links of copies (NEARDUPE_FOLLOW_COPIES = False): the requests a page dropped as a copy of
another host's page yields to its own host are not scheduled, unless that host has pages of its
own: they are parked (nearDupe/parking.py), and scheduled after all once a page of the host is
kept as its own.

A spider yields a page's requests before the pipeline decides the page's items, so this spider
middleware holds the requests to the page's own host until the first of its items is decided:
dropped as a copy of another host's page, they are not scheduled (counted, one INFO line per
host); anything else (kept, skipped, a copy of a page of its own host such as a print view or a
re-crawled page, dropped by another pipeline, an item error) schedules them.
Requests to other hosts, requests whose ``meta`` marks their target as new (:data:`NEW_META_KEY`)
and every request of a page nearDupe did not fingerprint, or that yields no item, pass at
once. Holding costs no CPU: nothing is looked up, the item signals carry the verdict.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response

from nearDupe.analysis import META_KEY
from nearDupe.crawlstate import CrawlState
from nearDupe.errors import NearDuplicate
from nearDupe.mirrors import copied_host
from nearDupe.parking import Parking
from nearDupe.sitetemplate import site_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: ``Request.meta`` key a spider sets to True on a request whose target it knows to be new (a
#: feed's or a sitemap's entry): it is followed from a copy too.
NEW_META_KEY = "neardupe_new"


@dataclass(eq=False)
class _Page:
    """A fingerprinted response whose items are on their way through the pipelines."""

    url: str
    host: str
    items: int = 0  # items yielded and not yet out of the pipelines
    decided: bool = False
    copy_of: str | None = None  # the other host's page it was dropped as a copy of
    held: list[Request] = field(default_factory=list)  # waiting for the verdict


class CopyLinksMiddleware:
    """Spider middleware: a page's requests to its own host wait for its verdict, and are not
    scheduled if it was dropped as a copy of another host's page."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self._parking = Parking.of(crawler)
        # id(item) -> (item, its page) for items in the pipelines.
        self._items: dict[int, tuple[Any, _Page]] = {}
        # Pages whose output ended with requests held and no verdict yet.
        self._waiting: set[_Page] = set()
        self._logged: set[str] = set()
        crawler.signals.connect(self._scraped, signal=signals.item_scraped)
        crawler.signals.connect(self._dropped, signal=signals.item_dropped)
        crawler.signals.connect(self._failed, signal=signals.item_error)
        crawler.signals.connect(self._idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CopyLinksMiddleware:
        """Build for a crawl with NEARDUPE_FOLLOW_COPIES = False (else NotConfigured)."""
        if CrawlState.of(crawler).config.follow_copies:
            raise NotConfigured  # no message: Scrapy would log a WARNING on every crawl
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        """Pass items and other requests on; hold a fingerprinted page's own-host requests
        until its verdict (yielded here if it came, or when it comes)."""
        analysis = response.meta.get(META_KEY)
        if analysis is None or analysis.fingerprint is None or analysis.skip_reason:
            async for obj in result:
                yield obj
            return
        page = _Page(response.url, site_of(response.url))
        held: list[Request] = []
        async for obj in result:
            if not isinstance(obj, Request):
                self._items[id(obj)] = (obj, page)
                page.items += 1
                yield obj
            elif obj.meta.get(NEW_META_KEY) or site_of(obj.url) != page.host:
                yield obj
            else:
                held.append(obj)
        if not held:
            return
        if page.decided or not page.items:  # no item: nothing decides the page a copy
            for request in self._verdict_allows(page, held):
                yield request
        else:
            page.held = held
            self._waiting.add(page)

    def _verdict_allows(self, page: _Page, held: list[Request]) -> list[Request]:
        """The held requests to schedule: all, unless the page is a copy and its host has
        shown no page of its own (then they are parked)."""
        if page.copy_of is None or self._parking.has_own(page.host):
            return held
        self._parking.park(page.host, held, "neardupe/copy_links/skipped")
        if page.host not in self._logged:
            self._logged.add(page.host)
            logger.info(
                "nearDupe: not following the links of copies to their own host %s (%s is a "
                "copy of %s) unless a page of its own is kept",
                page.host,
                page.url,
                page.copy_of,
            )
        return []

    def _done(self, item: Any, final: bool, exception: BaseException | None = None) -> None:
        """One item of a page left the pipelines: if ``final``, its outcome is the page's
        verdict (a copy if ``exception`` drops it as a copy of another host's page); else the
        page's last item decides."""
        entry = self._items.get(id(item))
        if entry is None or entry[0] is not item:
            return
        del self._items[id(item)]
        page = entry[1]
        page.items -= 1
        if page.decided or not (final or page.items == 0):
            return
        page.decided = True
        if isinstance(exception, NearDuplicate) and copied_host(page.host, exception.duplicate_of):
            page.copy_of = exception.duplicate_of
        if page in self._waiting:
            self._waiting.discard(page)
            self._schedule(self._verdict_allows(page, page.held))

    def _schedule(self, requests: list[Request]) -> None:
        engine = self.crawler.engine
        assert engine is not None, "items come from a running crawl"
        for request in requests:
            engine.crawl(request)

    def _scraped(self, item: Any, **kwargs: Any) -> None:
        """Signal handler: a kept (or skipped) item: its page is no copy."""
        self._done(item, final=True)

    def _dropped(self, item: Any, exception: BaseException, **kwargs: Any) -> None:
        """Signal handler: nearDupe's drop is the page's verdict; another pipeline's leaves
        it to the page's other items."""
        self._done(item, isinstance(exception, NearDuplicate), exception)

    def _failed(self, item: Any, **kwargs: Any) -> None:
        """Signal handler: an item error leaves the verdict to the page's other items."""
        self._done(item, final=False)

    def _idle(self) -> None:
        """Signal handler: with nothing in the pipelines, pages still waiting lost their items
        on the way (another spider middleware dropped them): their requests are scheduled."""
        self._items.clear()
        waiting, self._waiting = self._waiting, set()
        for page in waiting:
            self._schedule(page.held)
