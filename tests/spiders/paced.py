"""Fetch the pages of ``-a urls=URL,URL,…`` one at a time, in that order: each page is
requested once the one before was decided (its item kept or dropped) or not fetched (ignored:
a mirror host's), so what the index learned of a host is known at its next page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.python.failure import Failure


class PacedSpider(Spider):
    """One item per page, the pages strictly in the given order, skipped ones passed over."""

    name = "paced"

    def __init__(self, urls: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = [u for u in urls.split(",") if u]

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> PacedSpider:
        """Connect the item signals that pace the crawl."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        for signal in (signals.item_scraped, signals.item_dropped):
            crawler.signals.connect(spider.next_page, signal=signal)
        return spider

    def _request(self) -> Request:
        return Request(self.urls.pop(0), callback=self.parse, errback=self.failed)

    async def start(self) -> AsyncIterator[Request]:
        """The first page."""
        if self.urls:
            yield self._request()

    def parse(self, response: Response) -> Iterator[dict[str, str]]:
        """The page's item."""
        yield {"url": response.url}

    def failed(self, failure: Failure) -> None:
        """A page not fetched: the next one."""
        self.next_page()

    def next_page(self, **kwargs: Any) -> None:
        """After an item is decided or a page skipped: the next page."""
        if self.urls:
            assert self.crawler.engine is not None
            self.crawler.engine.crawl(self._request())
