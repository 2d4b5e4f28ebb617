"""Downloader middleware: HTML response -> Analysis in ``response.meta["neardupe"]``."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from scrapy.http import HtmlResponse, Request, Response

from nearDupe.analysis import META_KEY, Analysis, analyze_html, detect_encoding
from nearDupe.crawlstate import CrawlState
from nearDupe.decoding import decode, redecode, skip_reason
from nearDupe.simhash import stored_copy_key
from nearDupe.sitetemplate import SiteTemplate, site_memory, site_of
from nearDupe.text import CODE_SCAN
from nearDupe.workers import AnalysisTimeout, analyze_within

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Skip reasons that are anomalies of the page (logged at INFO), not just unwanted responses.
_NOTABLE = frozenset({"binary", "bad-encoding", "analysis-error", "too-slow"})


def skipped(reason: str) -> Analysis:
    """An Analysis that records why a response was not fingerprinted."""
    return Analysis(None, reason)


class NearDupeDownloaderMiddleware:
    """Extracts and fingerprints every successful HTML response in worker processes."""

    def __init__(self, crawler: Crawler, state: CrawlState) -> None:
        self.crawler = crawler
        self.config = state.config
        self.stats = crawler.stats
        self.pool = state.pool
        self._state = state
        self._page_serials = state.page_serials

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupeDownloaderMiddleware:
        """Build from the crawler's shared state (NotConfigured when disabled)."""
        return cls(crawler, CrawlState.of(crawler))

    async def process_response(self, request: Request, response: Response) -> Response:
        """Attach the Analysis to the meta; never fails the response (errors become a skip)."""
        request.meta[META_KEY] = await self.analyze(response)
        return response

    async def analyze(self, response: Response) -> Analysis:
        """The Analysis of one response, or a skip with the reason."""
        reason = skip_reason(response)
        html = ""
        if reason is None:
            assert isinstance(response, HtmlResponse)
            try:
                html, reason = await self._decode(response)
            except Exception:
                logger.exception("nearDupe could not decode %s; keeping it", response.url)
                reason = "analysis-error"
        if reason is None:
            if len(html) > self.config.max_html_chars:
                logger.info(
                    "nearDupe: %s has %d characters; analysing the first %d without its "
                    "scripts, styles and comments",
                    response.url,
                    len(html),
                    self.config.max_html_chars,
                )
                self.stats.inc_value("neardupe/responses/truncated")
                html = html[: CODE_SCAN * self.config.max_html_chars]  # cut in the worker
            if not self.pool.started:
                self.stats.inc_value("neardupe/responses/before_workers")
            site = site_memory(site_of(response.url), html)
            try:
                analysis = await self.pool.run(
                    analyze_within,
                    self.config.analysis_timeout,
                    analyze_html,
                    html,
                    self.config.min_text_length,
                    self.config.max_html_chars,
                    self.config.features,
                    await self._site_template(site),
                    response.url,
                )
                analysis = replace(analysis, site=site)
            except AnalysisTimeout:
                analysis = skipped("too-slow")
            except Exception:
                logger.exception("nearDupe could not analyse %s; keeping it", response.url)
                analysis = skipped("analysis-error")
        else:
            analysis = skipped(reason)
        analysis = replace(analysis, stored_key=stored_copy_key(response.url, response.body))
        if analysis.skip_reason:
            self.stats.inc_value(f"neardupe/responses/skipped/{analysis.skip_reason}")
            logger.log(
                logging.INFO if analysis.skip_reason in _NOTABLE else logging.DEBUG,
                "nearDupe: not fingerprinting %s (%s); its items are kept unchecked",
                response.url,
                analysis.skip_reason,
            )
        else:
            self.stats.inc_value("neardupe/responses/analyzed")
        return replace(analysis, page=next(self._page_serials))

    async def _site_template(self, site: str) -> SiteTemplate:
        """What the index learned of a page's ``site`` (sitetemplate.site_memory; nothing if
        it cannot tell)."""
        store = self._state.store
        if store is None:
            return SiteTemplate()
        try:
            return await store.site_template(site)
        except Exception as exc:  # an aid: without it the page is judged whole
            logger.debug("nearDupe: no site template for %s: %s", site, exc)
            return SiteTemplate()

    async def _decode(self, response: HtmlResponse) -> tuple[str, str | None]:
        """(html, None) or ("", a skip reason); charset detection (slow) runs in the pool."""
        decoded = decode(response)
        if decoded is None:
            decoded = redecode(response, await self.pool.run(detect_encoding, response.body))
        if decoded.redecoded_as:
            logger.info(
                "nearDupe: %s does not read as %s; analysing it as %s",
                response.url,
                response.encoding,
                decoded.redecoded_as,
            )
            self.stats.inc_value("neardupe/responses/redecoded")
        return decoded.html, decoded.skip_reason
