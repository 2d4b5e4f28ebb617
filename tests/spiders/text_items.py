"""A spider that leaves the main text to nearDupe (NEARDUPE_TEXT_ITEM_FIELD = "body").

Every HTML page yields four items: a dict, an Item declaring ``body``, an Item without it and
a dict whose ``body`` the spider set itself. The first also records what
``nearDupe.main_text`` gave the spider, to compare with what the pipeline adds. Links are
followed with ``meta=response.meta``, as some spiders pass their meta on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scrapy import Field, Item, Spider
from scrapy.http import HtmlResponse, Response

from nearDupe import main_text


class Story(Item):
    url = Field()
    kind = Field()
    body = Field()


class Note(Item):
    url = Field()
    kind = Field()


class TextItemsSpider(Spider):
    """``-a start_url=URL``: four items per HTML page, then every link on it."""

    name = "text_items"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start_url]

    def parse(self, response: Response) -> Iterator[Any]:
        """The page's items, then its links."""
        if not isinstance(response, HtmlResponse):
            return
        url = response.url
        yield {"url": url, "kind": "dict", "spider_text": main_text(response)}
        yield Story(url=url, kind="item")
        yield Note(url=url, kind="note")
        yield {"url": url, "kind": "own", "body": "the spider's own text"}
        yield from response.follow_all(css="a", callback=self.parse, meta=response.meta)
