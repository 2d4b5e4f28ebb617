"""Fetch the pages of ``-a urls=URL,URL,…`` all at once, and hand no item on before every page
has arrived (and so been analysed): a crawl meeting a new site, whose first pages are analysed
before any of them is decided."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from scrapy import Request, Spider
from scrapy.http import Response


class AtOnceSpider(Spider):
    """One item per page; every page requested at start, every item held until all arrived."""

    name = "at_once"
    custom_settings: ClassVar[dict[str, Any]] = {
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    }

    def __init__(self, urls: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = [u for u in urls.split(",") if u]
        self.arrived = 0
        self.all_arrived = asyncio.Event()

    async def start(self) -> AsyncIterator[Request]:
        """Every page at once."""
        for url in self.urls:
            yield Request(url, callback=self.parse)

    async def parse(self, response: Response) -> AsyncIterator[dict[str, str]]:
        """The page's item, once every page has arrived."""
        self.arrived += 1
        if self.arrived == len(self.urls):
            self.all_arrived.set()
        await self.all_arrived.wait()
        yield {"url": response.url}
