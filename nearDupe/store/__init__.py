"""Where fingerprints live: the embedded on-disk index or a shared Redis, behind one contract."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from nearDupe.mirrors import MirrorRule
from nearDupe.shorttext import Sentences
from nearDupe.sitetemplate import SiteTemplate
from nearDupe.store import recrawl
from nearDupe.store.base import IndexHeader, Match, storable_key
from nearDupe.store.droplog import Drop
from nearDupe.store.location import is_redis_url, redis_client_required

if TYPE_CHECKING:
    from nearDupe.store.embedded import EmbeddedIndex

T = TypeVar("T")

__all__ = ["EmbeddedIndex", "EmbeddedStore", "IndexHeader", "Match", "Store", "open_store"]


class Store(Protocol):
    """The asynchronous contract the Scrapy plugin uses; every backend passes one test suite."""

    header: IndexHeader

    async def check_and_add(
        self,
        fp: int,
        key: str,
        signature: int | None = None,
        sentences: Sentences = (),
        recrawl_mode: str | None = recrawl.DROP,
        body: int | None = None,
    ) -> Match | None:
        """The nearest stored page within k that ``signature`` confirms (the header's
        confirm_k), else the page sharing the most of ``sentences`` (at least the
        header's sentence_share of both); or None after recording the page atomically,
        with its URL ``key`` (and ``body``, the exact key of the response it was read
        from: the same response again is unchanged whatever its analysis).

        A URL the store holds is one page (``recrawl_mode`` set): its stored version is the
        match, with ``Match.seen`` (nearDupe/store/recrawl.py); in mode ``changed`` a changed page
        that copies no other stored page is recorded in the version's place, atomically
        (``seen.replaced``). ``recrawl_mode=None`` (an unfingerprinted page's exact key)
        neither reads nor claims the URL."""

    async def version(self, key: str) -> recrawl.Version | None:
        """What the store holds under URL ``key`` (None: no page claims it)."""

    async def query(
        self,
        fp: int,
        k: int | None = None,
        signature: int | None = None,
        sentences: Sentences = (),
    ) -> list[Match]:
        """Stored pages within distance k (confirmed by ``signature`` if given), nearest first,
        then the pages that share enough of ``sentences``."""

    async def site_template(self, host: str) -> SiteTemplate:
        """What the pages of a site (host) taught: the lines they had (sitetemplate.py)."""

    async def learn_site(self, host: str, identity: int, lines: Sequence[int]) -> None:
        """Count the lines of a decided page of ``host`` (its identity: its title)."""

    async def record_host(self, host: str, copy_of: str | None, rule: MirrorRule) -> None:
        """Count a decided page of ``host`` (``copy_of``: the other host whose page it copies)
        for the mirror rule, atomically; the verdict is kept for every crawler."""

    async def mirror_of(self, host: str) -> str | None:
        """The host that ``host`` mirrors (nearDupe/mirrors.py), or None."""

    async def log_drop(self, drop: Drop) -> None:
        """Remember a drop for the inspect commands (the last DROP_LOG_LIMIT are kept)."""

    async def count(self) -> int:
        """How many pages are stored."""

    async def close(self) -> None:
        """Flush and release."""


#: Pages from which an embedded index's calls leave the event loop whatever its k: a check of
#: a page with sentences reads its candidates' sketches from SQLite, ~85 µs at 10^5 pages
#: (benchmarks/sample_bench.py).
OFF_LOOP_PAGES = 100_000


class EmbeddedStore:
    """:class:`Store` over an :class:`EmbeddedIndex`.

    Its calls run inline while a lookup is cheap. Once the index is big enough for a lookup to
    scan ``off_loop_candidates`` fingerprints (about 70 µs: k=10 past ~250,000 pages) or
    holds ``off_loop_pages`` pages (OFF_LOOP_PAGES), they run, in order, in one thread of
    their own, so lookups stay off the event loop (the compiled search releases the GIL) and
    check-and-add stays atomic. The switch is one way. Without a running asyncio loop (a
    Twisted reactor that is not asyncio's) calls always run inline. The index commits in a
    thread of its own (with a commit interval of 0, inside each check).
    """

    def __init__(
        self,
        index: EmbeddedIndex,
        *,
        off_loop_candidates: float = 50_000,
        off_loop_pages: int = OFF_LOOP_PAGES,
    ) -> None:
        self.index = index
        self.header = index.header
        self._off_loop_candidates = off_loop_candidates
        self._off_loop_pages = off_loop_pages
        self._thread: ThreadPoolExecutor | None = None

    async def _run(self, func: Callable[..., T], *args: Any) -> T:
        if self._thread is None:
            design, pages = self.index.index.design, len(self.index)
            if (
                pages < self._off_loop_pages
                and design.expected_candidates(pages) < self._off_loop_candidates
            ):
                return func(*args)
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="neardupe-index")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return func(*args)
        return await loop.run_in_executor(self._thread, func, *args)

    async def check_and_add(
        self,
        fp: int,
        key: str,
        signature: int | None = None,
        sentences: Sentences = (),
        recrawl_mode: str | None = recrawl.DROP,
        body: int | None = None,
    ) -> Match | None:
        """See :class:`Store`."""
        return await self._run(
            self.index.check_and_add, fp, key, signature, sentences, recrawl_mode, body
        )

    async def version(self, key: str) -> recrawl.Version | None:
        """See :class:`Store`."""
        return await self._run(self.index.version, key)

    async def query(
        self,
        fp: int,
        k: int | None = None,
        signature: int | None = None,
        sentences: Sentences = (),
    ) -> list[Match]:
        """See :class:`Store`."""
        return await self._run(self.index.query, fp, k, signature, sentences)

    async def site_template(self, host: str) -> SiteTemplate:
        """See :class:`Store`."""
        return await self._run(self.index.sites.template, host)

    async def learn_site(self, host: str, identity: int, lines: Sequence[int]) -> None:
        """See :class:`Store`."""
        await self._run(self.index.sites.learn, host, identity, lines)

    async def record_host(self, host: str, copy_of: str | None, rule: MirrorRule) -> None:
        """See :class:`Store`."""
        await self._run(self.index.sites.record_host, host, copy_of, rule)

    async def mirror_of(self, host: str) -> str | None:
        """See :class:`Store` (a dict read: never waits for the index's thread)."""
        return self.index.sites.mirrors.get(storable_key(host))

    async def log_drop(self, drop: Drop) -> None:
        """See :class:`Store`."""
        await self._run(self.index.log_drop, drop)

    async def count(self) -> int:
        """See :class:`Store`."""
        return await self._run(len, self.index)

    async def close(self) -> None:
        """See :class:`Store`."""
        try:
            await self._run(self.index.close)
        finally:
            if self._thread is not None:
                self._thread.shutdown(wait=True)


def open_store(location: str, header: IndexHeader, **options: Any) -> Store:
    """Open the store at ``location``: ``redis://host:port/db`` or a directory path."""
    if is_redis_url(location):
        with redis_client_required():
            from nearDupe.store.redis import RedisStore
        return RedisStore.from_url(location, header, **options)
    from nearDupe.store.embedded import EmbeddedIndex

    return EmbeddedStore(EmbeddedIndex(location, header, **options))  # type: ignore[arg-type]


def __getattr__(name: str) -> object:
    """``EmbeddedIndex`` on first use: reading settings or a header must not load the kernels."""
    if name == "EmbeddedIndex":
        from nearDupe.store.embedded import EmbeddedIndex

        return EmbeddedIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
