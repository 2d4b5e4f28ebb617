"""Downloader middleware: HTML response -> Analysis in ``response.meta["neardupe"]``."""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from scrapy.http import HtmlResponse, Request, Response

from nearDupe.analysis import META_KEY, Analysis, analyze_html, detect_encoding
from nearDupe.crawlstate import CrawlState

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: C0 controls other than \t \n \f \r: text never has them, binary files are full of them.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f]")
#: Characters of a page's start inspected for binary content.
_SNIFF_CHARS = 8192
#: Skip reasons that are anomalies of the page (logged at INFO), not just unwanted responses.
_NOTABLE = frozenset({"binary", "bad-encoding", "analysis-error"})


def skipped(reason: str) -> Analysis:
    """An Analysis that records why a response was not fingerprinted."""
    return Analysis("", None, "unknown", reason)


class NearDupeDownloaderMiddleware:
    """Extracts and fingerprints every successful HTML response in worker processes."""

    def __init__(self, crawler: Crawler, state: CrawlState) -> None:
        self.crawler = crawler
        self.config = state.config
        self.stats = crawler.stats
        self.pool = state.pool
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
        reason = self._skip_reason(response)
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
            logger.log(
                logging.INFO if analysis.skip_reason in _NOTABLE else logging.DEBUG,
                "nearDupe: not fingerprinting %s (%s); its items are kept unchecked",
                response.url,
                analysis.skip_reason,
            )
        else:
            self.stats.inc_value("neardupe/responses/analyzed")
        return replace(analysis, page=next(self._page_serials))

    @staticmethod
    def _skip_reason(response: Response) -> str | None:
        if not 200 <= response.status < 300:
            return "status"
        if not isinstance(response, HtmlResponse):
            return "not-html"
        if not response.body.strip():
            return "empty"
        return None

    async def _decode(self, response: HtmlResponse) -> tuple[str, str | None]:
        """(text, None), or ("", a skip reason) for binary data or text in an unknown encoding.

        A body that is valid UTF-8 but declared as another charset is read as UTF-8; one full
        of undecodable bytes in its declared charset is decoded in the detected one instead
        (detection is slow: it runs in the worker pool).
        """
        text, body = response.text, response.body
        head = text[:_SNIFF_CHARS]
        if len(_CONTROL.findall(head)) > max(4, len(head) // 100):
            return "", "binary"
        declared = codecs.lookup(response.encoding).name
        if not declared.startswith("utf") and not body.isascii():
            try:
                return self._redecoded(response, body.decode("utf-8"), "utf-8"), None
            except UnicodeDecodeError:
                pass
        if text.count("\ufffd") <= max(8, len(text) // 200):
            return text, None
        try:
            body.decode(declared)
            return text, None  # the page really contains U+FFFD characters
        except UnicodeDecodeError:
            pass
        detected = await self.pool.run(detect_encoding, body)
        if detected is not None and codecs.lookup(detected).name != declared:
            fixed = body.decode(detected, "replace")
            if fixed.count("\ufffd") <= max(8, len(fixed) // 200):
                return self._redecoded(response, fixed, detected), None
        return "", "bad-encoding"

    def _redecoded(self, response: HtmlResponse, text: str, encoding: str) -> str:
        logger.info(
            "nearDupe: %s is not %s as declared; analysing it as %s",
            response.url,
            response.encoding,
            encoding,
        )
        self.stats.inc_value("neardupe/responses/redecoded")
        return text
