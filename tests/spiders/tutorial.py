"""A spider written as Scrapy's tutorial writes one: ``start_urls`` and ``follow_all``.

Its start URL is not filtered (start requests are ``dont_filter``), so the first link back to
it fetches it a second time. Every page yields two items (the page and its title), which
must share one decision.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scrapy import Spider
from scrapy.http import Response


class TutorialSpider(Spider):
    """``-a start_url=URL``: every page and every link on it."""

    name = "tutorial"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start_url]

    def parse(self, response: Response) -> Iterator[Any]:
        """Two items per page, then every link."""
        yield {"url": response.url, "kind": "page"}
        yield {"url": response.url, "kind": "title", "title": response.css("title::text").get()}
        yield from response.follow_all(css="a", callback=self.parse)
