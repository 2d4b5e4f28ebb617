"""Crawl the bundled offline news network, then the hosts that copy it, one item per article
page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor

from nearDupe.refusal import refuse
from spiders.common import article_item, same_host_links
from spiders.demosite.mirrors import ADDRESSES, mirror_servers
from spiders.demosite.server import DemoSiteServer

#: The demo hosts' port when it is free (``-a port=N`` chooses another), so that a second
#: crawl meets the same URLs.
PORT = 8731


class DemoSpider(Spider):
    """Start the bundled demo site and crawl every page of it; then its mirror hosts', which
    nearDupe's crawl budget settings stop fetching."""

    name = "demo"
    allowed_domains = ("127.0.0.1", *ADDRESSES.values())
    # One request at a time: each page is decided before the one after the next is fetched,
    # so the pages a mirror verdict saves are the same in every run.
    custom_settings: dict[Any, Any] | None = {  # noqa: RUF012 (Spider declares it so)
        "NEARDUPE_SKIP_MIRRORS": True,
        "NEARDUPE_FOLLOW_COPIES": False,
        "CONCURRENT_REQUESTS": 1,
    }
    # deny_extensions=[] so the PNG and PDF links are fetched too (non-HTML responses).
    link_extractor = LinkExtractor(deny_extensions=[])
    server: DemoSiteServer
    mirrors: dict[str, DemoSiteServer]
    mirrors_crawled = False

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DemoSpider:
        """Create the spider, start the demo servers and stop them when the spider closes."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        port = _port(kwargs.get("port", PORT))
        spider.server = DemoSiteServer(port=port, any_port_if_taken=True).start()
        spider.mirrors = {kind: server.start() for kind, server in mirror_servers(port).items()}
        crawler.signals.connect(spider.stop_server, signal=signals.spider_closed)
        crawler.signals.connect(spider.crawl_mirrors, signal=signals.spider_idle)
        return spider

    def stop_server(self) -> None:
        """Shut the demo servers down."""
        for server in (self.server, *self.mirrors.values()):
            server.stop()

    def crawl_mirrors(self) -> None:
        """Once the network is crawled: its mirror hosts' home pages (one crawl meeting the
        copies of a site it knows)."""
        if not self.mirrors_crawled:
            self.mirrors_crawled = True
            assert self.crawler.engine is not None
            for server in self.mirrors.values():
                self.crawler.engine.crawl(Request(f"{server.url}/", callback=self.parse))
            raise DontCloseSpider

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
        host = urlsplit(response.url).hostname or ""
        links = same_host_links(self.link_extractor, response, host)
        yield from response.follow_all(links, self.parse)


def _port(port: str | int) -> int:
    """``-a port=N`` as a TCP port (0: any free one)."""
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise refuse(
            "the demo spider's port must be a whole number from 0 to 65535, got %r; "
            "the crawl does not start",
            port,
        )
    return number
