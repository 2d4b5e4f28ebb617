"""Where fingerprints live: the embedded on-disk index or a shared Redis, behind one contract."""

from __future__ import annotations

from typing import Protocol

from nearDupe.store.base import IndexHeader, Match
from nearDupe.store.embedded import EmbeddedIndex

__all__ = ["EmbeddedIndex", "EmbeddedStore", "IndexHeader", "Match", "Store", "open_store"]


class Store(Protocol):
    """The asynchronous contract the Scrapy plugin uses; every backend passes one test suite."""

    header: IndexHeader

    async def check_and_add(self, fp: int, key: str, signature: int | None = None) -> Match | None:
        """The nearest stored page within k whose signature is within the header's confirm_k,
        or None after recording (fp, key, signature) atomically."""

    async def query(
        self, fp: int, k: int | None = None, signature: int | None = None
    ) -> list[Match]:
        """Stored pages within distance k (confirmed by ``signature`` if given), nearest first."""

    async def count(self) -> int:
        """How many pages are stored."""

    async def close(self) -> None:
        """Flush and release."""


class EmbeddedStore:
    """:class:`Store` over an :class:`EmbeddedIndex` (its calls take microseconds: run inline)."""

    def __init__(self, index: EmbeddedIndex) -> None:
        self.index = index
        self.header = index.header

    async def check_and_add(self, fp: int, key: str, signature: int | None = None) -> Match | None:
        """See :class:`Store`."""
        return self.index.check_and_add(fp, key, signature)

    async def query(
        self, fp: int, k: int | None = None, signature: int | None = None
    ) -> list[Match]:
        """See :class:`Store`."""
        return self.index.query(fp, k, signature)

    async def count(self) -> int:
        """See :class:`Store`."""
        return len(self.index)

    async def close(self) -> None:
        """See :class:`Store`."""
        self.index.close()


def open_store(location: str, header: IndexHeader, **options: object) -> Store:
    """Open the store at ``location``: ``redis://host:port/db`` or a directory path."""
    if location.startswith(("redis://", "rediss://", "unix://")):
        from nearDupe.store.redis import RedisStore

        return RedisStore.from_url(location, header, **options)
    return EmbeddedStore(EmbeddedIndex(location, header, **options))  # type: ignore[arg-type]
