"""Benchmark-only extension: a 10 ms heartbeat on the reactor; records the longest stall and
the longest full (generation 2) garbage collection."""

from __future__ import annotations

import gc
import json
import time
from typing import TYPE_CHECKING

from scrapy import signals
from twisted.internet import task

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

_BEAT = 0.01
#: Stalls longer than this are counted.
_LONG = 0.05


class StallMonitor:
    """Writes max_stall_ms, elapsed and counts to STALL_STATS_PATH when the spider closes."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.max_gap = 0.0
        self.gaps: list[float] = []
        self.last = time.perf_counter()
        self.start = self.last
        self.loop = task.LoopingCall(self.beat)
        self.longest_gc = 0.0
        self._gc_start = 0.0
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StallMonitor:
        """Build."""
        return cls(crawler)

    def opened(self) -> None:
        """Start the heartbeat."""
        self.start = self.last = time.perf_counter()
        self.loop.start(_BEAT)
        gc.callbacks.append(self.on_gc)

    def on_gc(self, phase: str, info: dict) -> None:
        """Time full collections."""
        if info["generation"] != 2:
            return
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.longest_gc = max(self.longest_gc, time.perf_counter() - self._gc_start)

    def beat(self) -> None:
        """Record the gap since the previous beat beyond its period."""
        now = time.perf_counter()
        gap = now - self.last - _BEAT
        self.max_gap = max(self.max_gap, gap)
        if gap > _LONG:
            self.gaps.append(gap)
        self.last = now

    def closed(self) -> None:
        """Dump the figures."""
        self.loop.stop()
        gc.callbacks.remove(self.on_gc)
        stats = self.crawler.stats
        figures = {
            "max_stall_ms": self.max_gap * 1e3,
            "longest_full_gc_ms": self.longest_gc * 1e3,
            "stalls_over_50ms": len(self.gaps),
            "elapsed": time.perf_counter() - self.start,
            "response_count": stats.get_value("downloader/response_count", 0),
            "kept": stats.get_value("neardupe/kept", 0),
            "dropped": stats.get_value("neardupe/dropped", 0),
        }
        path = self.crawler.settings.get("STALL_STATS_PATH")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(figures, f)
