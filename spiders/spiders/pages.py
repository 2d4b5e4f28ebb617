"""Crawl any site from a start URL, one item per HTML page: its URL, title and main text."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.exceptions import CloseSpider
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor

from nearDupe.refusal import refuse
from spiders.common import page_text, page_title, same_host_links


class PagesSpider(Spider):
    """Follow same-host links from ``-a start_url=URL``; ``-a max_pages=N`` caps the items."""

    name = "pages"

    def __init__(
        self, start_url: str | None = None, max_pages: str | int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        host = urlsplit(start_url or "").hostname
        if not start_url or not host:
            raise refuse(
                "the pages spider needs an absolute start URL, as in "
                "scrapy crawl pages -a start_url=https://example.com/; the crawl does not start"
            )
        self.start_url = start_url
        self.host = host
        self.allowed_domains = [host]
        self.link_extractor = LinkExtractor()
        self.max_pages = _positive(max_pages)
        self.page_count = 0

    async def start(self) -> AsyncIterator[Request]:
        """Begin at the start URL."""
        yield Request(self.start_url, callback=self.parse)

    def parse(self, response: Response) -> Iterator[dict[str, str] | Request]:
        """Yield an item for an HTML page and follow its same-host links; skip anything else."""
        if not isinstance(response, HtmlResponse) or self._limit_reached():
            return
        self.page_count += 1
        # page_text: the main text nearDupe extracted, the spider's own when it has none.
        yield {"url": response.url, "title": page_title(response), "text": page_text(response)}
        if self._limit_reached():
            raise CloseSpider("max_pages reached")
        links = same_host_links(self.link_extractor, response, self.host)
        yield from response.follow_all(links, self.parse)

    def _limit_reached(self) -> bool:
        return self.max_pages is not None and self.page_count >= self.max_pages


def _positive(max_pages: str | int | None) -> int | None:
    """``-a max_pages=N`` as a whole number of at least 1 (None where not given)."""
    if max_pages is None:
        return None
    try:
        number = int(max_pages)
    except ValueError:
        number = 0
    if number < 1:
        raise refuse(
            "the pages spider's max_pages must be a whole number of at least 1, got %r; "
            "the crawl does not start",
            max_pages,
        )
    return number
