"""Spider middleware that links each item to the Analysis of the response it came from."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy.http import Request, Response

from nearDupe.analysis import META_KEY
from nearDupe.crawlstate import CrawlState, ItemLinks

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class NearDupeSpiderMiddleware:
    """Tags every item a spider yields from a response with that response's Analysis."""

    def __init__(self, links: ItemLinks) -> None:
        self.links = links

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupeSpiderMiddleware:
        """Build with the crawler's shared link registry (NotConfigured when disabled)."""
        return cls(CrawlState.of(crawler).links)

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        """Pass everything through, linking items to the response (requests carry none of its
        Analysis)."""
        for obj in result:
            self._link(response, obj)
            yield obj

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        """Async twin of :meth:`process_spider_output`."""
        async for obj in result:
            self._link(response, obj)
            yield obj

    def _link(self, response: Response, obj: Any) -> None:
        if isinstance(obj, Request):
            # A spider that passes its response's meta on (meta=response.meta) would queue the
            # page's Analysis (its main text; a young site's page: its HTML too) with every
            # request.
            obj.meta.pop(META_KEY, None)
        else:
            self.links.attach(obj, response.url, response.meta.get(META_KEY))
