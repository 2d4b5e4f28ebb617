"""Spider middleware that links each item to the Analysis of the response it came from."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.http import Request, Response

from nearDupe._settings import Config
from nearDupe.analysis import META_KEY, Analysis

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class ItemLinks:
    """id(item) -> (item, page URL, Analysis) for items on their way to the pipelines."""

    def __init__(self) -> None:
        self._links: dict[int, tuple[Any, str, Analysis | None]] = {}

    def attach(self, item: Any, url: str, analysis: Analysis | None) -> None:
        """Remember where an item came from."""
        self._links[id(item)] = (item, url, analysis)

    def pop(self, item: Any) -> tuple[str, Analysis | None] | None:
        """Where the item came from (and forget it), or None if it did not come from a page."""
        link = self._links.pop(id(item), None)
        if link is None or link[0] is not item:
            return None
        return link[1], link[2]

    def forget(self, item: Any) -> None:
        """Drop the link of an item that left the pipelines."""
        link = self._links.get(id(item))
        if link is not None and link[0] is item:
            del self._links[id(item)]

    def __len__(self) -> int:
        return len(self._links)

    @classmethod
    def of(cls, crawler: Crawler) -> ItemLinks:
        """The one registry of a crawler, shared by the spider middleware and the pipeline."""
        links = getattr(crawler, "_neardupe_links", None)
        if links is None:
            links = cls()
            crawler._neardupe_links = links  # type: ignore[attr-defined]
            for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
                crawler.signals.connect(links._on_item_done, signal=signal, weak=False)
        return links

    def _on_item_done(self, item: Any, **kwargs: Any) -> None:
        self.forget(item)


class NearDupeSpiderMiddleware:
    """Tags every item a spider yields from a response with that response's Analysis."""

    def __init__(self, links: ItemLinks) -> None:
        self.links = links

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupeSpiderMiddleware:
        """Build with the crawler's shared link registry (NotConfigured when disabled)."""
        Config.from_settings(crawler.settings)
        return cls(ItemLinks.of(crawler))

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        """Pass everything through, linking items (not requests) to the response."""
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
        if not isinstance(obj, Request):
            self.links.attach(obj, response.url, response.meta.get(META_KEY))
