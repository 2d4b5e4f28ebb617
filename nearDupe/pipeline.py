"""Item pipeline: keep the first copy of each page, drop its near-duplicates before storage."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred, DeferredLock

from nearDupe import gcfreeze
from nearDupe.analysis import Analysis, analyze_page, analyze_text
from nearDupe.backlog import Backlog, Page, pending_path
from nearDupe.crawlstate import CrawlState
from nearDupe.errors import NearDupeError, NearDuplicate, StoreBusy, StoreUnavailable
from nearDupe.logstats import counts_line, plural
from nearDupe.mirrors import copied_host
from nearDupe.refusal import refuse
from nearDupe.report import Decision, ReportWriter, record
from nearDupe.sitetemplate import site_of
from nearDupe.store import Store, open_store
from nearDupe.store.base import storable_key
from nearDupe.store.recrawl import Version
from nearDupe.workers import AnalysisTimeout, analyze_within

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Pages whose decision is remembered, so every item of a page gets the same one.
_PAGE_MEMORY = 10_000
#: After an index failure, items are kept without asking it for this long.
_RETRY_AFTER = 5.0
#: At close, how long to keep trying to record the fingerprints kept while the index was down.
_CLOSE_PATIENCE = 15.0


class NearDupePipeline:
    """Decides each item from its page's fingerprint (or NEARDUPE_TEXT_FIELD) and the index."""

    def __init__(self, crawler: Crawler, state: CrawlState) -> None:
        self.crawler = crawler
        self.config = state.config
        self.stats = crawler.stats
        self.links = state.links
        self._state = state
        self.store: Store | None = None
        self.report: ReportWriter | None = None
        # Decisions by page (URL, fingerprint or stored key, Analysis.page): one per response
        # or item text.
        self._decided: OrderedDict[tuple[str, int, int], Decision] = OrderedDict()
        self._deciding: dict[tuple[str, int, int], list[Deferred[Decision]]] = {}
        # Young sites (sitetemplate.YOUNG_STORIES) whose pages are being decided, one at a time.
        self._young_sites: dict[str, DeferredLock] = {}
        self._backlog = Backlog(pending_path(self.config.index, self.config.index_name))
        self._down_until = 0.0
        self._frozen = False
        # (setting, item class) pairs already warned about: a field the class lacks.
        self._warned: set[tuple[str, type]] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupePipeline:
        """Build from the crawler's shared state and open the index (NotConfigured when
        disabled; CrawlRefused when the index cannot be used)."""
        pipeline = cls(crawler, CrawlState.of(crawler))
        pipeline._open_report()
        pipeline._open_store()
        return pipeline

    def _open_report(self) -> None:
        """Open NEARDUPE_REPORT before the crawl starts: a file that cannot be written (a
        directory, no permission) refuses the crawl rather than lose its decisions."""
        if not self.config.report:
            return
        try:
            self.report = ReportWriter(self.config.report)
        except OSError as exc:
            raise refuse(
                "nearDupe cannot write its report %s (%s); the crawl does not start",
                self.config.report,
                exc.strerror or exc,
            ) from None

    def _open_store(self) -> None:
        """Open the index before the crawl starts. One that cannot be used (corrupt, locked,
        refusing these credentials) or does not answer refuses the crawl: one ERROR line and
        a non-zero exit (NEARDUPE_START_WITHOUT_INDEX starts without an absent Redis)."""
        index = self.config.public_index
        logger.info("nearDupe: opening index %s", index)
        try:
            self.store = open_store(
                self.config.index, self.config.header, **self.config.store_options()
            )
        except NearDupeError as exc:
            hint = ""
            if isinstance(exc, StoreUnavailable):
                hint = " (NEARDUPE_START_WITHOUT_INDEX = True crawls while it is away)"
            raise refuse(
                "nearDupe cannot open its index %s: %s; the crawl does not start%s",
                index,
                exc,
                hint,
            ) from None
        self._state.store = self.store

    async def open_spider(self) -> None:
        """Load the pages an earlier crawl could not record."""
        assert self.store is not None
        self._backlog.load_earlier(self.config.index_name)
        if self.config.gc_freeze:
            gcfreeze.freeze()
            self._frozen = True
        try:
            size = await self.store.count()
        except StoreUnavailable as exc:
            # Started without its index on purpose: keep items, record them when it answers.
            logger.error(
                "nearDupe: index %s unreachable (%s); keeping items unchecked for %.0f s and "
                "recording their fingerprints later",
                self.config.public_index,
                exc,
                _RETRY_AFTER,
            )
            self._down_until = time.monotonic() + _RETRY_AFTER
            return
        self.stats.set_value("neardupe/index_size", size)
        logger.info(
            "nearDupe: index %s (%s, k=%d) holds %s",
            self.config.public_index,
            self.config.design,
            self.config.k,
            plural(size, "page"),
        )
        if self._backlog:  # pages kept by an earlier crawl go in before this crawl's copies
            await self._backlog.replay(self.store, self.stats)

    async def close_spider(self) -> None:
        """Replay what the index missed, close it and the report, log one summary line."""
        if self.store is not None:
            await self._backlog.replay(self.store, self.stats, patience=_CLOSE_PATIENCE)
            self._backlog.save_for_next_crawl(self.config.public_index)
            try:
                self.stats.set_value("neardupe/index_size", await self.store.count())
                await self.store.close()
            except Exception as exc:
                logger.error(
                    "nearDupe: closing index %s failed: %s", self.config.public_index, exc
                )
        if self.report is not None:
            self.report.close()
        if self._frozen:
            gcfreeze.unfreeze()
            self._frozen = False
        logger.info("%s", counts_line(self.stats.get_stats(), final=True))

    async def process_item(self, item: Any) -> Any:
        """Return the item (given its page's main text in NEARDUPE_TEXT_ITEM_FIELD), or raise
        NearDuplicate naming the page it duplicates."""
        decision, text = await self._decide(item)
        record(self.stats, self.report, decision)
        if decision.decision == "dropped":
            raise NearDuplicate(decision.message, "INFO", decision.duplicate_of)
        if text is not None and self.config.text_item_field:
            self._give_text(item, self.config.text_item_field, text)
        return item

    async def decide(self, item: Any) -> Decision:
        """The decision for one item."""
        decision, _ = await self._decide(item)
        return decision

    async def _decide(self, item: Any) -> tuple[Decision, str | None]:
        """The decision for one item, and its page's main text (None if nearDupe skipped the
        page): the Analysis that carries it is not kept past the decision."""
        link = self.links.pop(item)
        url, analysis = link if link else ("", None)
        text = analysis.text if analysis is not None else None
        adapter = ItemAdapter(item) if ItemAdapter.is_item(item) else None
        if not url and adapter is not None:
            url = str(adapter.get("url") or "")
        if self.config.text_field:
            analysis = await self._analyze_field(self.config.text_field, adapter, analysis)
        if analysis is None:
            return Decision(url, "skipped", reason="no-page"), None
        if analysis.recheck is None:
            return await self._judge(url, analysis), text
        # A young site's pages are decided one at a time, each with what the ones before taught.
        host = _site(url, analysis)
        turn = self._young_sites.setdefault(host, DeferredLock())
        await maybe_deferred_to_future(turn.acquire())
        try:
            again = await self._rechecked(url, analysis)
            return await self._judge(url, again), again.text
        finally:
            turn.release()
            if not turn.locked:
                del self._young_sites[host]

    def _give_text(self, item: Any, field: str, text: str) -> None:
        """Put ``text`` in the item's ``field`` unless the spider set it (an item class without
        that field is left as it is, with one WARNING per class)."""
        if not ItemAdapter.is_item(item):
            return
        adapter = ItemAdapter(item)
        if adapter.get(field) is not None:
            return
        try:
            adapter[field] = text
        except KeyError:
            self._warn_once(
                "NEARDUPE_TEXT_ITEM_FIELD", field, item, "their page's main text is not added"
            )

    def _warn_once(self, setting: str, field: str, item: Any, consequence: str) -> None:
        """One WARNING per item class without text in the ``field`` that ``setting`` names."""
        kind = type(item)
        if (setting, kind) in self._warned:
            return
        self._warned.add((setting, kind))
        logger.warning(
            "nearDupe: %s items have no text in field %r (%s); %s",
            kind.__qualname__,
            field,
            setting,
            consequence,
        )

    async def _judge(self, url: str, analysis: Analysis) -> Decision:
        """The decision for a page's analysis: skipped unless fingerprinted, else the index's."""
        if analysis.fingerprint is not None and not analysis.skip_reason:
            return await self._page_decision(url, analysis)
        if analysis.stored_key is None:  # nothing to record: each item is decided alike
            return await self._unfingerprinted(url, analysis)
        # The first item of a response records its stored key (and teaches its site): the
        # others share its decision rather than find the page already stored.
        page = (url, analysis.stored_key[0], analysis.page)
        decision, _ = await self._once(page, lambda: self._unfingerprinted(url, analysis))
        return decision

    async def _unfingerprinted(self, url: str, analysis: Analysis) -> Decision:
        """Skipped, or dropped as stored: its URL's page is (a URL is one page), or this very
        response was (see :meth:`_stored_before`)."""
        if analysis.skip_reason == "template-text":
            await self._learn(url, analysis)
        version = await self._held(url, analysis)
        if version is not None:
            return Decision.held(url, version, analysis.stored_key and analysis.stored_key[0])
        if await self._stored_before(url, analysis):
            return Decision.stored(url)
        return Decision(url, "skipped", reason=analysis.skip_reason or "no-fingerprint")

    async def _held(self, url: str, analysis: Analysis) -> Version | None:
        """The version the index holds under the URL of an unfingerprinted response, if any
        (an aid: an index that does not answer holds none)."""
        if analysis.stored_key is None or not url or self.store is None:
            return None
        if time.monotonic() < self._down_until:
            return None
        try:
            return await self.store.version(url)
        except Exception as exc:
            self.stats.inc_value("neardupe/index_errors")
            logger.debug("nearDupe: the URL of %s was not looked up: %s", url, exc)
            return None

    async def _stored_before(self, url: str, analysis: Analysis) -> bool:
        """Whether an earlier crawl recorded this unfingerprinted page under its URL and body
        (its stored key, recorded now if not): a re-crawl drops what the index holds. The key
        is exact and claims no URL: an error page or a template-only response is not its
        URL's page, and would otherwise hide the page from every later crawl."""
        if analysis.stored_key is None or not url or self.store is None:
            return False
        if time.monotonic() < self._down_until:
            return False
        key, signature = analysis.stored_key
        try:
            match = await self.store.check_and_add(key, url, signature, (), None)
        except Exception as exc:  # kept unchecked, as when the index is away
            self.stats.inc_value("neardupe/index_errors")
            logger.debug("nearDupe: the stored key of %s was not recorded: %s", url, exc)
            return False
        return match is not None and match.key == url and match.distance == 0

    async def _rechecked(self, url: str, analysis: Analysis) -> Analysis:
        """A young site's page analysed again when its site taught more of its lines while it
        waited: a crawl analyses a new site's first pages at once, before any is decided."""
        if analysis.recheck is None or self.store is None:
            return analysis
        try:
            site = await self.store.site_template(_site(url, analysis))
            if not analysis.outdated(site):
                return analysis
            again = await self._state.pool.run(
                analyze_within,
                self.config.analysis_timeout,
                analyze_page,
                analysis.recheck.text,
                analysis.recheck.html,
                self.config.min_text_length,
                self.config.features,
                site,
                analysis.identity,
                analysis.recheck.headline,
                self.config.max_html_chars,
            )
        except (Exception, AnalysisTimeout) as exc:  # an aid: the first analysis stands
            self.stats.inc_value("neardupe/site_errors")
            logger.debug("nearDupe: %s was not analysed again: %s", url, exc)
            return analysis
        self.stats.inc_value("neardupe/rechecked")
        return analysis.redone(again)

    async def _analyze_field(
        self, field: str, adapter: ItemAdapter | None, page: Analysis | None
    ) -> Analysis | None:
        text = adapter.get(field) if adapter is not None else None
        if not isinstance(text, str):
            if adapter is not None:
                self._warn_once(
                    "NEARDUPE_TEXT_FIELD",
                    field,
                    adapter.item,
                    "they are decided by their page"
                    if page is not None
                    else "they are kept unchecked (no-text-field)",
                )
            return page if page is not None else Analysis(None, "no-text-field")
        if len(text) > self.config.max_html_chars:
            self.stats.inc_value("neardupe/items/truncated")
            text = text[: self.config.max_html_chars]
        try:
            analysis = await self._state.pool.run(
                analyze_within,
                self.config.analysis_timeout,
                analyze_text,
                text,
                self.config.min_text_length,
                self.config.features,
            )
        except AnalysisTimeout:
            return Analysis(None, "too-slow")
        except Exception:
            logger.exception("nearDupe could not analyse an item's %s", field)
            return Analysis(None, "analysis-error")
        # Items of one response share its decision; an item from no response is a page itself.
        if page is None:
            return replace(analysis, page=next(self._state.page_serials))
        return replace(analysis, page=page.page, site=page.site)

    async def _page_decision(self, url: str, analysis: Analysis) -> Decision:
        assert analysis.fingerprint is not None
        record = Page(analysis.fingerprint, url, analysis.signature, analysis.sentences)
        page = (url, analysis.fingerprint, analysis.page)
        decision, made = await self._once(page, lambda: self._check(record, analysis))
        if made and (
            decision.reason == "template-text"
            or (decision.decision == "kept" and decision.reason is None)
        ):
            await self._learn(url, analysis)
        if made and self.config.skip_mirrors:
            await self._record_host(decision)
        return decision

    async def _record_host(self, decision: Decision) -> None:
        """Count a page the index decided (kept, or dropped as a copy) for its host's mirror
        rule (nearDupe/mirrors.py)."""
        if self.store is None or decision.reason not in (None, "shared-sentences"):
            return
        if decision.recrawl is not None:  # counted when its URL was first decided
            return
        host = site_of(decision.url)
        try:
            await self.store.record_host(
                host, copied_host(host, decision.duplicate_of), self.config.mirror_rule
            )
        except Exception as exc:  # an aid: the page's decision stands
            self.stats.inc_value("neardupe/site_errors")
            logger.debug("nearDupe: the host of %s was not counted: %s", decision.url, exc)

    async def _once(
        self, page: tuple[str, int, int], decide: Callable[[], Awaitable[Decision]]
    ) -> tuple[Decision, bool]:
        """The decision on ``page`` (URL, key, Analysis.page), made by ``decide`` for its
        first item and shared by the others; and whether this call made it."""
        if page in self._decided:
            self._decided.move_to_end(page)
            return self._decided[page], False
        if page in self._deciding:
            waiter: Deferred[Decision] = Deferred()
            self._deciding[page].append(waiter)
            return await maybe_deferred_to_future(waiter), False
        self._deciding[page] = []
        try:
            decision = await decide()
        finally:
            waiters = self._deciding.pop(page)
        self._decided[page] = decision
        if len(self._decided) > _PAGE_MEMORY:
            self._decided.popitem(last=False)
        for waiter in waiters:
            waiter.callback(decision)
        return decision, True

    async def _became_template(self, url: str, analysis: Analysis, copy_of: str) -> bool:
        """Whether a page found its copy on its own site only because that copy's decision
        taught the site the page's lines while the page was in flight: two of a site's pages
        extracted to the same new template text (a notice), neither a copy of the other."""
        if self.store is None or site_of(copy_of) != site_of(url):
            return False
        try:
            return analysis.became_template(await self.store.site_template(_site(url, analysis)))
        except Exception as exc:  # an aid: the drop stands
            self.stats.inc_value("neardupe/site_errors")
            logger.debug("nearDupe: the site of %s was not read again: %s", url, exc)
            return False

    async def _learn(self, url: str, analysis: Analysis) -> None:
        """Count a kept (or template-text) page's lines for its site: only pages that are no
        copies of one another teach what a site's different pages share."""
        if self.store is None:
            return
        try:
            for identity, lines in analysis.lessons():
                await self.store.learn_site(_site(url, analysis), identity, lines)
        except Exception as exc:  # an aid: the page's decision stands
            self.stats.inc_value("neardupe/site_errors")
            logger.debug("nearDupe: the lines of %s were not learned: %s", url, exc)

    async def _check(self, record: Page, analysis: Analysis) -> Decision:
        assert self.store is not None, "open_spider opens the store"
        fp, url = record.fingerprint, record.url
        if time.monotonic() < self._down_until:
            return self._keep_unchecked(record)
        try:
            body = analysis.stored_key[0] if analysis.stored_key else None
            match = await self.store.check_and_add(*record, self.config.recrawl, body)
        except StoreBusy as exc:  # this check only: the index answers the next one
            logger.warning("nearDupe: %s kept unchecked, to be checked later: %s", url, exc)
            return self._keep_unchecked(record, "index-busy")
        except Exception as exc:
            logger.error(
                "nearDupe: index %s failed (%s); keeping items unchecked for %.0f s and "
                "recording their fingerprints later",
                self.config.public_index,
                exc,
                _RETRY_AFTER,
            )
            self._down_until = time.monotonic() + _RETRY_AFTER
            return self._keep_unchecked(record)
        if self._backlog:
            await self._backlog.replay(self.store, self.stats)
        if match is None:
            self.stats.inc_value("neardupe/index_size")
            return Decision(url, "kept", fp)
        seen = match.seen
        if seen is not None and seen.replaced:
            self.stats.inc_value("neardupe/index_size")
            return Decision.changed(url, fp, seen)
        if match.key == storable_key(url):  # its URL's version, or one stored before
            return Decision.stored(url, fp, match)
        if seen is None and await self._became_template(url, analysis, match.key):
            if await self._stored_before(url, analysis):
                return Decision.stored(url)
            return Decision(url, "skipped", reason="template-text")
        decision = Decision.drop(url, fp, match)
        try:
            await self.store.log_drop(decision.to_drop())
        except Exception as exc:  # the drop log explains; it never decides
            self.stats.inc_value("neardupe/drop_log_errors")
            logger.debug("nearDupe: drop of %s not logged in the index: %s", url, exc)
        return decision

    def _keep_unchecked(self, record: Page, reason: str = "index-unavailable") -> Decision:
        self._backlog.append(record)
        self.stats.inc_value("neardupe/index_errors")
        return Decision(record.url, "kept", record.fingerprint, reason=reason)


def _site(url: str, analysis: Analysis) -> str:
    """The site memory a page at ``url`` was judged by and teaches: its analysis's (host and
    template), else its URL's host."""
    return analysis.site or site_of(url)
