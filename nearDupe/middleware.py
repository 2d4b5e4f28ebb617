"""Downloader middleware: HTML response -> Analysis in ``response.meta["neardupe"]``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.http import HtmlResponse, Request, Response

from nearDupe._settings import Config
from nearDupe.analysis import META_KEY, Analysis, analyze_html
from nearDupe.workers import WorkerPool

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

def skipped(reason: str) -> Analysis:
    """An Analysis that records why a response was not fingerprinted."""
    return Analysis("", None, "unknown", reason)


class NearDupeDownloaderMiddleware:
    """Extracts and fingerprints every successful HTML response in worker processes."""

    def __init__(self, crawler: Crawler, config: Config) -> None:
        self.crawler = crawler
        self.config = config
        self.stats = crawler.stats
        self.pool = WorkerPool.of(crawler, config.workers, config.features)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupeDownloaderMiddleware:
        """Build from settings (NotConfigured when disabled)."""
        return cls(crawler, Config.from_settings(crawler.settings))

    async def process_response(self, request: Request, response: Response) -> Response:
        """Attach the Analysis to the meta; never fails the response (errors become a skip)."""
        request.meta[META_KEY] = await self.analyze(response)
        return response

    async def analyze(self, response: Response) -> Analysis:
        """The Analysis of one response, or a skip with the reason."""
        reason = self._skip_reason(response)
        if reason is None:
            html = response.text
            if len(html) > self.config.max_html_chars:
                logger.info(
                    "nearDupe: %s has %d characters; analysing the first %d",
                    response.url,
                    len(html),
                    self.config.max_html_chars,
                )
                self.stats.inc_value("neardupe/responses/truncated")
                html = html[: self.config.max_html_chars]
            try:
                analysis = await self.pool.run(
                    analyze_html,
                    html,
                    self.config.min_text_length,
                    self.config.max_html_chars,
                    self.config.features,
                )
            except Exception:
                logger.exception("nearDupe could not analyse %s; keeping it", response.url)
                analysis = skipped("analysis-error")
        else:
            analysis = skipped(reason)
        if analysis.skip_reason:
            self.stats.inc_value(f"neardupe/responses/skipped/{analysis.skip_reason}")
        else:
            self.stats.inc_value("neardupe/responses/analyzed")
        return analysis

    @staticmethod
    def _skip_reason(response: Response) -> str | None:
        if not 200 <= response.status < 300:
            return "status"
        if not isinstance(response, HtmlResponse):
            return "not-html"
        if not response.body.strip():
            return "empty"
        return None
