"""What the commands read of an index: the same blocking, read-only calls on both backends."""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from nearDupe.shorttext import Sentences
from nearDupe.sitetemplate import SiteTemplate
from nearDupe.store.base import Holder, IndexHeader
from nearDupe.store.droplog import Drop
from nearDupe.store.location import is_redis_url, redis_client_required
from nearDupe.store.recrawl import Version


class StoredPage(NamedTuple):
    """A stored page: its fingerprint, key (URL), when it was added (None: Redis keeps no
    time) and signature (None: it has none)."""

    fp: int
    key: str
    added: float | None
    signature: int | None


class ReadOnlyIndex(Protocol):
    """A read-only door to an index, taking no lock (a crawl may be writing it); every call
    blocks (the commands run outside the reactor). An index that lacks what a call reads
    (one written before that was kept) answers as an index that holds none of it."""

    #: Where the index lives, as it may be shown (no credentials).
    source: str
    #: The index's header: the stored one (embedded), or the settings' own, which a Redis
    #: index checks against its stored one.
    header: IndexHeader

    def format(self) -> int:
        """The format of its storage: an embedded index's files (its header's), or a Redis
        index's keys (its layout's)."""

    def pages(self) -> list[StoredPage]:
        """Every stored page, oldest first (Redis keeps no order: by fingerprint, then key)."""

    def drops(self) -> list[Drop]:
        """The drops the index remembers (see nearDupe.store.droplog), oldest first."""

    def version(self, url: str) -> Version | None:
        """What the index holds under ``url`` (None: no page claims it)."""

    def holders(self, sentences: Sentences) -> list[Holder]:
        """The stored pages recorded under one of ``sentences``."""

    def site(self, host: str) -> SiteTemplate:
        """What the index learned of ``host`` (as nearDupe.sitetemplate.site_memory names it)."""

    def mirrors(self) -> dict[str, str]:
        """Mirror host -> the host it mirrors (nearDupe/mirrors.py)."""

    def disk_bytes(self) -> int | None:
        """Bytes of the index's files (None: a Redis index has none)."""


def open_view(location: str, header: IndexHeader, **options: Any) -> ReadOnlyIndex:
    """The index at ``location`` (a directory or ``redis://``), read-only; ``header`` and
    ``options`` (those of ``open_store``) are a Redis index's, an embedded one has its own."""
    if is_redis_url(location):
        with redis_client_required():
            from nearDupe.store.redis_view import RedisView

        return RedisView(location, header, **options)
    from nearDupe.store.embedded_view import EmbeddedView

    return EmbeddedView(location)
