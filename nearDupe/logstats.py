"""Extension: every LOGSTATS_INTERVAL seconds, one INFO line with nearDupe's counts so far."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from nearDupe.crawlstate import CrawlState

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


def _looping_call(func: Any) -> Any:
    try:
        from scrapy.utils.asyncio import create_looping_call
    except ImportError:  # Scrapy < 2.13
        from twisted.internet.task import LoopingCall

        return LoopingCall(func)
    return create_looping_call(func)


def counts_line(stats: dict[str, Any], rate: float | None = None, final: bool = False) -> str:
    """``nearDupe: 120 items seen (60/min), 80 kept, 30 dropped, 10 skipped (tiny-text 10);
    index holds 80 pages`` (and, when the crawl budget settings saved any, ``; not fetched:
    8 requests to mirror hosts, 30 links of copies``): the progress line, and at the end
    (``final``) the summary, which says ``30 dropped as near-duplicates``, or on a re-crawl
    ``30 dropped (12 as near-duplicates, 18 already stored)``."""
    seen = stats.get("neardupe/seen", 0)
    skipped = {
        name.rsplit("/", 1)[1]: n
        for name, n in sorted(stats.items())
        if name.startswith("neardupe/skipped/")
    }
    line = f"nearDupe: {plural(seen, 'item')} seen"
    if rate is not None:
        line += f" ({rate:,.0f}/min)"
    dropped = stats.get("neardupe/dropped", 0)
    stored = stats.get("neardupe/dropped_by/already-stored", 0)
    line += f", {stats.get('neardupe/kept', 0):,} kept, {dropped:,} dropped"
    if final and stored:
        line += f" ({dropped - stored:,} as near-duplicates, {stored:,} already stored)"
    elif final:
        line += " as near-duplicates"
    line += f", {sum(skipped.values()):,} skipped"
    if skipped:
        line += " (" + ", ".join(f"{reason} {n:,}" for reason, n in skipped.items()) + ")"
    size = stats.get("neardupe/index_size")
    if size is not None:
        line += f"; index holds {plural(size, 'page')}"
    mirrors = stats.get("neardupe/mirror/skipped", 0)
    links = stats.get("neardupe/copy_links/skipped", 0)
    if mirrors or links:
        line += (
            f"; not fetched: {plural(mirrors, 'request')} to mirror hosts, "
            f"{plural(links, 'link')} of copies"
        )
    return line


def plural(n: int, noun: str) -> str:
    """``1 page``, ``2 pages``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


class NearDupeLogStats:
    """Logs e.g. ``nearDupe: 120 items seen (60/min), 80 kept, 30 dropped, 10 skipped``."""

    def __init__(self, stats: StatsCollector, interval: float) -> None:
        self.stats = stats
        self.interval = interval
        self.task: Any = None
        self._seen_before = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupeLogStats:
        """Enabled with nearDupe, at Scrapy's LOGSTATS_INTERVAL (0 disables it)."""
        CrawlState.of(crawler)  # NotConfigured when nearDupe is disabled
        interval = crawler.settings.getfloat("LOGSTATS_INTERVAL", 60.0)
        if interval <= 0:
            raise NotConfigured("LOGSTATS_INTERVAL is 0")
        extension = cls(crawler.stats, interval)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self) -> None:
        """Start logging (the first line after one interval)."""
        self.task = _looping_call(self.log)
        self.task.start(self.interval, now=False)

    def spider_closed(self) -> None:
        """Stop logging (the pipeline logs the final summary)."""
        if self.task is not None and self.task.running:
            self.task.stop()

    def message(self) -> str:
        """The line for the stats as they are now."""
        stats = self.stats.get_stats()
        seen = stats.get("neardupe/seen", 0)
        rate = (seen - self._seen_before) * 60.0 / self.interval
        self._seen_before = seen
        return counts_line(stats, rate)

    def log(self) -> None:
        """Log one line."""
        logger.info(self.message())
