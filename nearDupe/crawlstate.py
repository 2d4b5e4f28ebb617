"""What nearDupe's components of one crawler share: the settings read once, the item links
and the worker pool, reached through the crawler (no attributes set on it)."""

from __future__ import annotations

import itertools
import logging
from functools import cached_property
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary, WeakSet

from scrapy import signals
from scrapy.exceptions import NotConfigured

from nearDupe._settings import Config, unknown_settings
from nearDupe.analysis import Analysis
from nearDupe.errors import SettingsError
from nearDupe.refusal import refuse
from nearDupe.store import Store
from nearDupe.workers import WorkerPool

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class ItemLinks:
    """id(item) -> (item, page URL, Analysis) for items on their way to the pipelines."""

    def __init__(self) -> None:
        self._links: dict[int, tuple[Any, str, Analysis | None]] = {}

    def attach(self, item: Any, url: str, analysis: Analysis | None) -> None:
        """Remember where an item came from."""
        self._links[id(item)] = (item, url, analysis)

    def pop(self, item: Any) -> tuple[str, Analysis | None] | None:
        """Where the item came from (and forget it), or None if it did not come from a page."""
        link = self._links.pop(id(item), None)
        if link is None or link[0] is not item:
            return None
        return link[1], link[2]

    def forget(self, item: Any) -> None:
        """Drop the link of an item that left the pipelines."""
        link = self._links.get(id(item))
        if link is not None and link[0] is item:
            del self._links[id(item)]

    def __len__(self) -> int:
        return len(self._links)

    def on_item_done(self, item: Any, **kwargs: Any) -> None:
        """Signal handler: an item left the pipelines (scraped, dropped or failed)."""
        self.forget(item)


_STATES: WeakKeyDictionary[Crawler, CrawlState] = WeakKeyDictionary()
#: Crawlers told, in one INFO line, that nearDupe is disabled.
_DISABLED: WeakSet[Crawler] = WeakSet()


class CrawlState:
    """One crawler's nearDupe state; built by the first component that asks for it."""

    def __init__(self, crawler: Crawler, config: Config) -> None:
        self.crawler = crawler
        self.config = config
        #: Serial numbers of the pages analysed in this crawl (see ``Analysis.page``).
        self.page_serials = itertools.count(1)
        #: The index, once the pipeline opened it (the middleware reads sites' templates).
        self.store: Store | None = None

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlState:
        """The crawler's state, its settings read and checked once (NotConfigured when
        disabled; CrawlRefused, after one ERROR line, when a setting is wrong)."""
        state = _STATES.get(crawler)
        if state is None:
            for warning in unknown_settings(crawler.settings):
                logger.warning("nearDupe: %s", warning)
            try:
                config = Config.from_settings(crawler.settings)
            except SettingsError as exc:
                raise refuse("nearDupe: setting %s; the crawl does not start", exc) from None
            except NotConfigured:
                # Bare: Scrapy logs a WARNING for each component whose NotConfigured says why.
                if crawler not in _DISABLED:
                    _DISABLED.add(crawler)
                    logger.info("nearDupe: disabled (NEARDUPE_ENABLED = False)")
                raise NotConfigured from None
            state = _STATES[crawler] = cls(crawler, config)
        return state

    @cached_property
    def links(self) -> ItemLinks:
        """The item -> page registry shared by the spider middleware and the pipeline."""
        links = ItemLinks()
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            self.crawler.signals.connect(links.on_item_done, signal=signal, weak=False)
        return links

    @cached_property
    def pool(self) -> WorkerPool:
        """The one pool of analysis workers, stopped with the engine."""
        if self.config.workers > 0:
            logger.info(
                "nearDupe: starting %d analysis worker processes (each loads the extractor "
                "and the English IDF table while the crawl starts, and jieba's tables before "
                "its first Chinese page)",
                self.config.workers,
            )
        pool = WorkerPool(self.config.workers, self.config.features)
        self.crawler.signals.connect(pool.close, signal=signals.engine_stopped, weak=False)
        return pool
