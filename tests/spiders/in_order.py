"""Fetch the pages of ``-a urls=URL,URL,…`` one at a time, in that order: each page is
requested once the item of the one before has been decided (kept or dropped), so what a site
learns from its earlier pages is known when its next page is analysed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Response


class InOrderSpider(Spider):
    """One item per page, the pages strictly in the given order."""

    name = "in_order"

    def __init__(self, urls: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = [u for u in urls.split(",") if u]

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> InOrderSpider:
        """Connect the item signals that pace the crawl."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        for signal in (signals.item_scraped, signals.item_dropped):
            crawler.signals.connect(spider.next_page, signal=signal)
        return spider

    async def start(self) -> AsyncIterator[Request]:
        """The first page."""
        if self.urls:
            yield Request(self.urls.pop(0), callback=self.parse)

    def parse(self, response: Response) -> Iterator[dict[str, str]]:
        """The page's item."""
        yield {"url": response.url}

    def next_page(self, **kwargs: Any) -> None:
        """After an item is decided: the next page."""
        if self.urls:
            assert self.crawler.engine is not None
            self.crawler.engine.crawl(Request(self.urls.pop(0), callback=self.parse))
