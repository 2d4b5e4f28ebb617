"""A Redis index read-only, through its store (see nearDupe.store.view)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from nearDupe.shorttext import Sentences
from nearDupe.sitetemplate import SiteTemplate
from nearDupe.store.base import Holder, IndexHeader
from nearDupe.store.droplog import Drop
from nearDupe.store.location import public_location
from nearDupe.store.recrawl import Version
from nearDupe.store.redis import RedisStore
from nearDupe.store.view import StoredPage

T = TypeVar("T")


class RedisView:
    """A Redis index (its stored header must match ``header``), each call on a connection of
    its own; ``options`` are those of :meth:`RedisStore.from_url`."""

    def __init__(self, url: str, header: IndexHeader, **options: Any) -> None:
        self.url = url
        self.header = header
        self.options = options
        self.source = f"{public_location(url)} ({options.get('name', 'neardupe')})"

    def format(self) -> int:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""

        async def read(store: RedisStore) -> int:
            await store.count()  # reads the layout
            return store.layout.format

        return self._run(read)

    def pages(self) -> list[StoredPage]:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        stored = self._run(lambda store: store.pages())
        return [StoredPage(fp, key, None, sig) for fp, key, sig in sorted(stored)]

    def drops(self) -> list[Drop]:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return self._run(lambda store: store.drops())

    def version(self, url: str) -> Version | None:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return self._run(lambda store: store.version(url))

    def holders(self, sentences: Sentences) -> list[Holder]:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return self._run(lambda store: store.holders(sentences))

    def site(self, host: str) -> SiteTemplate:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return self._run(lambda store: store.site_template(host))

    def mirrors(self) -> dict[str, str]:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return self._run(lambda store: store.sites.mirrors())

    def disk_bytes(self) -> int | None:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return None

    def _run(self, read: Callable[[RedisStore], Awaitable[T]]) -> T:
        """What ``read`` answers from the index, opened and closed around it."""

        async def run() -> T:
            store = RedisStore.from_url(self.url, self.header, **self.options)
            try:
                return await read(store)
            finally:
                await store.close()

        return asyncio.run(run())
