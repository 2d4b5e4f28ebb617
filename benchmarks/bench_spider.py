"""Benchmark spider: fetch every page linked from the start page, one item per HTML page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from scrapy import Request, Spider
from scrapy.http import HtmlResponse, Response


class BenchSpider(Spider):
    """Only the start page's links are followed, so the crawl's own CPU cost stays small."""

    name = "bench"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start_url

    async def start(self) -> AsyncIterator[Request]:
        """The link page."""
        yield Request(self.start_url, callback=self.parse_links)

    def parse_links(self, response: Response) -> Iterator[Request]:
        """Every linked page."""
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse_page)

    def parse_page(self, response: Response) -> Iterator[dict[str, str]]:
        """One item per HTML page."""
        if isinstance(response, HtmlResponse):
            yield {"url": response.url, "title": response.css("title::text").get(default="")}
