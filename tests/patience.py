"""Test-only extension: a crawl waits LEASE_PATIENCE seconds, not 30, for buckets other
crawlers keep leased."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nearDupe.store import redis_leases

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class ShortPatience:
    """Sets the leases' patience when the crawler is built."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ShortPatience:
        """Build."""
        redis_leases.BUSY_SECONDS = crawler.settings.getfloat("LEASE_PATIENCE", 30.0)
        return cls()
