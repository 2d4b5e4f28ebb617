"""Scrapy's log formatter with one short line per near-duplicate drop."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.logformatter import LogFormatter, LogFormatterResult

from nearDupe.errors import NearDuplicate

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.http import Response
    from twisted.python.failure import Failure


class NearDupeLogFormatter(LogFormatter):
    """Logs a near-duplicate drop as ``Dropped: near-duplicate of URL (distance d): URL``.

    Scrapy's own formatter prints the whole dropped item after that line, which made most of
    a crawl's log article text. Other drops are logged as Scrapy logs them.
    """

    def dropped(
        self,
        item: Any,
        exception: BaseException,
        response: Response | Failure | None,
        spider: Spider,
    ) -> LogFormatterResult:
        """One line naming both pages and the distance, at INFO."""
        if isinstance(exception, NearDuplicate):
            return {
                "level": logging.INFO,
                "msg": "Dropped: %(exception)s",
                "args": {"exception": exception},
            }
        return super().dropped(item, exception, response, spider)
