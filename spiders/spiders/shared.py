"""The demo crawl for many processes: a scrapy-redis ``RedisSpider`` reading its start URL
from Redis and sharing its request queue through Redis (docs/scaling.md)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

from scrapy import Request, Spider
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor

from spiders.common import article_item, same_host_links

try:
    from scrapy_redis.spiders import RedisSpider
except ImportError:  # scrapy-redis is the demo's and the tests' dependency, not nearDupe's

    class RedisSpider(Spider):  # type: ignore[no-redef]
        """Stands in for scrapy-redis's spider, so that the project's other spiders load."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ImportError("the shared spider needs scrapy-redis: pip install scrapy-redis")


class SharedSpider(RedisSpider):
    """The ``demo`` spider's crawl for any number of processes: start with
    ``redis-cli lpush shared:start_urls '{"url": "http://127.0.0.1:8000/"}'``."""

    name = "shared"
    redis_key = "shared:start_urls"
    allowed_domains = ("127.0.0.1",)
    link_extractor = LinkExtractor(deny_extensions=[])
    custom_settings: ClassVar[dict[str, Any]] = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        # Keep the queue and the seen requests at close (False: the first process to finish
        # deletes them under the others).
        "SCHEDULER_PERSIST": True,
        # Close after 10 s without a response or a start URL (0, scrapy-redis's default:
        # wait for start URLs for ever).
        "MAX_IDLE_TIME_BEFORE_CLOSE": 10,
    }

    async def start(self) -> AsyncIterator[Any]:
        """Read the start URLs waiting in Redis now, and count idle time from now.

        scrapy-redis 0.9.1 reads them in ``start_requests()``, which Scrapy 2.19 no longer
        calls (2.13 made ``start()`` the entry point and deprecated it; 2.14 still calls it),
        so they would wait for the spider's first idle signal. And it counts idle time from
        its module's import and the last start URLs it found, so a process would close while
        the others still fill the shared queue: here it counts from the last response.
        """
        self.spider_idle_start_time = int(time.time())
        for request in self.next_requests():
            yield request

    def parse(self, response: Response) -> Iterator[dict[str, str] | Request]:
        """Yield an item for an article page and follow the page's in-site links."""
        self.spider_idle_start_time = int(time.time())  # busy: idle time counts from here
        if not isinstance(response, HtmlResponse):
            return
        item = article_item(response)
        if item is not None:
            yield item
        links = same_host_links(self.link_extractor, response, self.allowed_domains[0])
        yield from response.follow_all(links, self.parse)
