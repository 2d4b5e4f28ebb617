"""Test-only extension: writes the crawl's final stats as JSON to STATS_DUMP_PATH."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from scrapy import signals

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class StatsDump:
    """Dump stats on spider_closed."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.path = crawler.settings.get("STATS_DUMP_PATH")
        crawler.signals.connect(self.dump, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatsDump:
        """Build."""
        return cls(crawler)

    def dump(self) -> None:
        """Write the stats."""
        if self.path:
            stats = self.crawler.stats.get_stats()
            with open(self.path, "w", encoding="utf-8") as f:
                json.dump(stats, f, default=str)
