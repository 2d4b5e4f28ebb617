"""Crawl ``-a starts=URL,URL,…`` in phases: each start URL, and every page its links lead to on
any host, once the crawl of the one before went idle (its pages fetched and decided). One item
per page with an ``<article>``; a link with ``rel="new"`` is marked as leading to a new page
(``nearDupe.copylinks.NEW_META_KEY``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.http import HtmlResponse, Response

from nearDupe.copylinks import NEW_META_KEY


class PhasedSpider(Spider):
    """Follows every link; the start URLs one phase at a time."""

    name = "phased"

    def __init__(self, starts: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.starts = [u for u in starts.split(",") if u]

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> PhasedSpider:
        """Connect the idle signal that starts the next phase."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.next_phase, signal=signals.spider_idle)
        return spider

    async def start(self) -> AsyncIterator[Request]:
        """The first phase."""
        if self.starts:
            yield Request(self.starts.pop(0), callback=self.parse)

    def parse(self, response: Response) -> Iterator[dict[str, str] | Request]:
        """The page's item if it is an article, and a request for each of its links."""
        if not isinstance(response, HtmlResponse):
            return
        if response.xpath("//article"):
            yield {"url": response.url}
        yield from response.follow_all(css="a:not([rel=new])", callback=self.parse)
        new = response.follow_all(css="a[rel=new]", callback=self.parse, meta={NEW_META_KEY: True})
        yield from new

    def next_phase(self) -> None:
        """The crawl went idle: the next start URL, if any."""
        if self.starts:
            assert self.crawler.engine is not None
            self.crawler.engine.crawl(Request(self.starts.pop(0), callback=self.parse))
            raise DontCloseSpider
