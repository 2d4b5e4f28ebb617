"""Crawl the bundled offline news network, one item per article page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor

from spiders.common import article_item, same_host_links
from spiders.demosite.server import DemoSiteServer


class DemoSpider(Spider):
    """Start the bundled demo site and crawl every page of it."""

    name = "demo"
    allowed_domains = ("127.0.0.1",)
    # deny_extensions=[] so the PNG and PDF links are fetched too (non-HTML responses).
    link_extractor = LinkExtractor(deny_extensions=[])
    server: DemoSiteServer

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DemoSpider:
        """Create the spider, start the demo server and stop it when the spider closes."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.server = DemoSiteServer().start()
        crawler.signals.connect(spider.stop_server, signal=signals.spider_closed)
        return spider

    def stop_server(self) -> None:
        """Shut the demo server down."""
        self.server.stop()

    async def start(self) -> AsyncIterator[Request]:
        """Begin at the network's home page."""
        yield Request(f"{self.server.url}/", callback=self.parse)

    def parse(self, response: Response) -> Iterator[dict[str, str] | Request]:
        """Yield an item for an article page and follow the page's in-site links."""
        if not isinstance(response, HtmlResponse):
            return
        item = article_item(response)
        if item is not None:
            yield item
        links = same_host_links(self.link_extractor, response, self.allowed_domains[0])
        yield from response.follow_all(links, self.parse)
