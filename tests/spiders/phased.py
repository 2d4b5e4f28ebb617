"""Crawl ``-a phases=URL,URL;URL,…`` in phases: each phase's start URLs (``,``), and every page
their links lead to on any host, once the crawl of the phase before (``;``) went idle (its pages
fetched and decided). One item
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

    def __init__(self, phases: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.phases = [[u for u in phase.split(",") if u] for phase in phases.split(";")]

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> PhasedSpider:
        """Connect the idle signal that starts the next phase."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.next_phase, signal=signals.spider_idle)
        return spider

    async def start(self) -> AsyncIterator[Request]:
        """The first phase."""
        for url in self.phases.pop(0) if self.phases else []:
            yield Request(url, callback=self.parse)

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
        """The crawl went idle: the next phase's start URLs, if any."""
        if self.phases:
            assert self.crawler.engine is not None
            for url in self.phases.pop(0):
                self.crawler.engine.crawl(Request(url, callback=self.parse))
            raise DontCloseSpider
