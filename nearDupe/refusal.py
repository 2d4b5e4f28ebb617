"""Refusing to start a crawl: one ERROR line, a non-zero exit, and no traceback.

Scrapy's ``crawl`` command exits 1 when a crawler fails to start, and the asyncio loop (or
Twisted, for a Deferred) then logs the exception with its traceback. A refusal is a setting
or an index to fix, already said in one line, so that second report is filtered out.
"""

from __future__ import annotations

import logging

from nearDupe.errors import CrawlRefused

logger = logging.getLogger(__name__)

#: The loggers through which asyncio and Twisted report a failed crawl's exception.
_REPORTING_LOGGERS = ("asyncio", "twisted")


class _RefusalFilter(logging.Filter):
    """Drops the traceback report of a crawl nearDupe refused (it logged the reason)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], CrawlRefused):
            return False
        return CrawlRefused.__name__ not in str(record.msg)


_FILTER = _RefusalFilter()


def refuse(message: str, *args: object) -> CrawlRefused:
    """Log ``message`` as the one ERROR line of a refused crawl; return the exception to
    raise from a component's start, which stops the crawl with a non-zero exit."""
    logger.error(message, *args)
    for name in _REPORTING_LOGGERS:
        if _FILTER not in logging.getLogger(name).filters:
            logging.getLogger(name).addFilter(_FILTER)
    return CrawlRefused(message % args)
