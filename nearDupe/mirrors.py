"""Mirror hosts: a host whose first decided pages are nearly all copies of one other host's
pages is that host's mirror, and its further pages are not fetched (NEARDUPE_SKIP_MIRRORS).

Not fetched, but not forgotten: a mirror's requests are parked (nearDupe/parking.py), and a
share of them (``NEARDUPE_MIRROR_AUDIT``, chosen by a hash of the URL, so every crawler and
every crawl picks the same) is fetched as an audit. A page of the mirror kept as its own, an
audited one or any other, releases every request parked for it: a near mirror with stories of
its own loses none of them as soon as one is seen.

The rule counts a host's first ``MirrorRule.pages`` decided pages (kept, or dropped as a copy)
and, per other host, how many were copies of that host's pages: once one other host has
``share`` of them (18 of 20 by default; decided as soon as 18 are, since the rest cannot
change it), the host is its mirror, for every crawler of the index and every later crawl. A
host whose own pages are not copies (a partner republishing a third of its stories) never
reaches the share; after its first ``pages`` pages it is no longer counted.
"""

from __future__ import annotations

import logging
import math
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nearDupe.sitetemplate import site_of

# Scrapy is imported where it is used: the stores import the rule, and need no Scrapy.
if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request

    from nearDupe.crawlstate import CrawlState

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MirrorRule:
    """When a host is a mirror: ``share`` of its first ``pages`` decided pages copy one host."""

    share: float = 0.9
    pages: int = 20

    @property
    def needed(self) -> int:
        """Copies of one other host's pages that make a mirror (at least one)."""
        return max(1, math.ceil(self.share * self.pages - 1e-9))


@dataclass(frozen=True)
class HostCount:
    """A host's first decided pages: how many, how many copied each other host, the verdict."""

    pages: int = 0
    copies: dict[str, int] = field(default_factory=dict)
    mirror_of: str | None = None

    def decided(self, rule: MirrorRule) -> bool:
        """Whether counting is over: a mirror, or past the rule's pages."""
        return self.mirror_of is not None or self.pages >= rule.pages


def counted(count: HostCount, copy_of: str | None, rule: MirrorRule) -> HostCount:
    """``count`` after one more decided page (``copy_of``: the other host it copies, if any)."""
    if count.decided(rule):
        return count
    copies = dict(count.copies)
    verdict = None
    if copy_of:
        copies[copy_of] = copies.get(copy_of, 0) + 1
        verdict = copy_of if copies[copy_of] >= rule.needed else None
    after = HostCount(count.pages + 1, copies, verdict)
    return HostCount(after.pages, {}, verdict) if after.decided(rule) else after


def copied_host(host: str, duplicate_of: str | None) -> str | None:
    """The other host a decided page of ``host`` copies (None: kept, or a copy on its own host)."""
    other = site_of(duplicate_of) if duplicate_of else ""
    return other if other and other != host else None


def audited(url: str, share: float) -> bool:
    """Whether a mirror's request for ``url`` is one of the ``share`` fetched as an audit."""
    return zlib.crc32(url.encode("utf-8", "surrogatepass")) < share * 2**32


class MirrorSkipMiddleware:
    """Downloader middleware: requests to a mirror host are parked (ignored unless the host
    turns out to have pages of its own), counted, logged once; a share of them is fetched."""

    def __init__(self, crawler: Crawler, state: CrawlState) -> None:
        from nearDupe.parking import Parking

        self.stats = crawler.stats
        self._state = state
        self._parking = Parking.of(crawler)
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MirrorSkipMiddleware:
        """Build from the crawler's shared state (NotConfigured unless NEARDUPE_SKIP_MIRRORS)."""
        from scrapy.exceptions import NotConfigured

        from nearDupe.crawlstate import CrawlState

        state = CrawlState.of(crawler)
        if not state.config.skip_mirrors:
            raise NotConfigured  # no message: Scrapy would log a WARNING on every crawl
        return cls(crawler, state)

    async def process_request(self, request: Request) -> None:
        """Raise IgnoreRequest for a mirror host's page, parked; let every other request (and
        the mirror's audited ones) through."""
        from scrapy.exceptions import IgnoreRequest

        store = self._state.store
        host = site_of(request.url)
        if store is None or not host or self._parking.has_own(host):
            return
        try:
            original = await store.mirror_of(host)
        except Exception as exc:  # an aid: when the index cannot tell, the page is fetched
            logger.debug("nearDupe: mirror of %s not read: %s", host, exc)
            return
        if original is None:
            return
        if audited(request.url, self._state.config.mirror_audit):
            self.stats.inc_value("neardupe/mirror/audited")
            return
        # The scheduler has seen it: released, it must pass the duplicate filter again.
        self._parking.park(host, [request.replace(dont_filter=True)], "neardupe/mirror/skipped")
        if host not in self._logged:
            self._logged.add(host)
            logger.info(
                "nearDupe: %s mirrors %s (most of its first pages are copies of its pages); "
                "its pages are not fetched, but for a sample that checks it has none of its own",
                host,
                original,
            )
        raise IgnoreRequest(f"mirror of {original}: {request.url}")
