"""A read-only view of an embedded index: pages, header, neighbour searches at any radius."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from scrapy.exceptions import UsageError

from nearDupe._settings import Config
from nearDupe.designs import Design
from nearDupe.features import FeatureSettings
from nearDupe.index import BlockIndex
from nearDupe.sample_index import SampleIndex
from nearDupe.shorttext import Sentences
from nearDupe.simhash import hamming, to_hex
from nearDupe.sitetemplate import SiteTemplate, site_memory, site_of
from nearDupe.store import droplog, embedded_sample
from nearDupe.store.base import (
    Holder,
    IndexHeader,
    SharedSentences,
    confirmed,
    shared_sentences,
)
from nearDupe.store.droplog import Drop
from nearDupe.store.embedded import committed_holders, to_unsigned
from nearDupe.store.embedded_sqlite import url_version
from nearDupe.store.recrawl import Version
from nearDupe.store.sites import read_site

if TYPE_CHECKING:
    from nearDupe.store.redis import RedisStore

T = TypeVar("T")

#: The largest search radius the in-memory designs are built for.
MAX_RADIUS = 16
#: Above this many fingerprints, wider designs (more tables, longer prefixes) keep searches fast.
_WIDE_DESIGN_FROM = 200_000

Neighbours = list[list[tuple[int, int]]]


def design_for(radius: int, n: int) -> Design:
    """A block design answering radius ``radius`` exactly, sized for about n fingerprints."""
    if not 0 <= radius <= MAX_RADIUS:
        raise UsageError(f"a search radius must be within 0..{MAX_RADIUS}, got {radius}")
    if radius == 3:
        return Design.named("4-table" if n < _WIDE_DESIGN_FROM else "10-table")
    return Design.blocks(radius, radius + (1 if n < _WIDE_DESIGN_FROM else 2))


def neighbours(fps: np.ndarray, radius: int, among: np.ndarray | None = None) -> Neighbours:
    """For each of ``fps``: (fingerprint, distance) of ``among`` (default fps) within radius."""
    among = fps if among is None else among
    index = BlockIndex(design_for(radius, len(among)))
    index.add_many(np.unique(among))
    return index.query_many(fps, radius)


class IndexView:
    """Every page of an index in memory, read without its lock (safe while a crawl writes it)."""

    def __init__(
        self,
        source: str,
        header: IndexHeader,
        pages: Sequence[tuple[int, str, float | None, int | None]],
        path: Path | None = None,
        config: Config | None = None,
        drops: list[Drop] | None = None,
    ) -> None:
        self.source = source
        #: The drops the index remembers (see nearDupe.store.droplog), oldest first.
        self.drops = drops or []
        self.path = path
        self.config = config
        self.header = header
        #: The format of the index's storage: an embedded index's files (its header's), or a
        #: Redis index's keys (its layout's: redis_layout.REDIS_FORMAT for a new one).
        self.format = header.format
        self.design = Design.named(header.design)
        self.fps = np.fromiter((p[0] for p in pages), dtype=np.uint64, count=len(pages))
        self.keys: list[str] = [p[1] for p in pages]
        self.added: list[float] = [p[2] for p in pages if p[2] is not None]
        self._signatures: dict[int, int | None] = {}
        for fp, _, _, signature in pages:
            self._signatures.setdefault(fp, signature)
        self._index: BlockIndex | None = None
        #: The sentence samples of an embedded index's pages, read at the first check.
        self._sample: SampleIndex | None = None
        self._among: dict[int, Neighbours] = {}

    @classmethod
    def open(cls, config: Config) -> IndexView:
        """The index the settings name (an embedded directory or a Redis index), judged with
        the settings' confirmation distance and sentence share, as a crawl would."""
        view = cls.from_redis(config) if config.is_redis else cls.from_directory(config.index)
        view.header = replace(
            view.header, confirm_k=config.confirm_k, sentence_share=config.sentence_share
        )
        return view

    @classmethod
    def from_directory(cls, path: str | Path) -> IndexView:
        """An embedded index, read-only."""
        path = Path(path)
        db_path = path / "pages.sqlite3"
        if not db_path.is_file():
            raise UsageError(f"no nearDupe index at {path} (set NEARDUPE_INDEX, or crawl first)")
        db = _read_only(db_path)
        try:
            row = db.execute("SELECT value FROM meta WHERE name = 'header'").fetchone()
            rows = db.execute("SELECT fp, key, added, sig FROM pages ORDER BY id").fetchall()
            drops = droplog.read(db)
        except sqlite3.Error as exc:
            raise UsageError(
                f"index {db_path} is unreadable or was made by another nearDupe version: {exc}"
            ) from exc
        finally:
            db.close()
        if row is None:
            raise UsageError(f"index {path} has no header")
        stored = json.loads(row[0])
        names = {f.name for f in fields(IndexHeader)}
        header = IndexHeader(**{n: v for n, v in stored.items() if n in names})
        pages = [
            (to_unsigned(fp), key, added, None if sig is None else to_unsigned(sig))
            for fp, key, added, sig in rows
        ]
        return cls(str(path), header, pages, path, drops=drops)

    @classmethod
    def from_redis(cls, config: Config) -> IndexView:
        """A Redis index (its header must match the settings), read with SCAN."""

        async def read() -> tuple[list[tuple[int, str, int | None]], list[Drop], int]:
            store = _redis_store(config)
            try:
                return await store.pages(), await store.drops(), store.layout.format
            finally:
                await store.close()

        stored, drops, format_ = asyncio.run(read())
        pages = [(fp, key, None, sig) for fp, key, sig in sorted(stored)]
        source = f"{config.public_index} ({config.index_name})"
        view = cls(source, config.header, pages, config=config, drops=drops)
        view.format = format_
        return view

    def version(self, url: str) -> Version | None:
        """What the index holds under ``url`` (None: no page claims it, or an index written
        before the URL table)."""
        if self.path is None:
            assert self.config is not None, "a Redis view keeps its settings"
            return _on_redis(self.config, lambda store: store.version(url))
        db = _read_only(self.path / "pages.sqlite3")
        try:
            return url_version(db, url)
        except sqlite3.Error:  # an index of an older layout: the next crawl adds the table
            return None
        finally:
            db.close()

    def decisions(self) -> list[dict[str, Any]]:
        """What a decisions report would say of the index's pages: each stored page kept,
        each remembered drop dropped (for indexes crawled without NEARDUPE_REPORT)."""
        kept = [
            {"url": key, "decision": "kept", "fingerprint": to_hex(fp)}
            for fp, key in zip(self.fps.tolist(), self.keys, strict=True)
        ]
        return kept + [drop.to_decision() for drop in self.drops]

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def k(self) -> int:
        """The distance at or below which the index calls two pages near-duplicates."""
        return self.header.k

    def confirms(self, fp: int, signature: int | None, distance: int) -> bool:
        """Whether the page stored with ``fp`` confirms a match at ``distance`` with
        ``signature``."""
        return confirmed(self.signature(fp), signature, distance, self.header.confirm_k)

    def shared_sentences(self, sentences: Sentences, fp: int) -> list[SharedSentences]:
        """Stored pages that share a sentence with ``sentences`` (of fingerprint ``fp``), the
        most first."""
        found = shared_sentences(sentences, self._holders(sentences), fp) if sentences else []
        return sorted(found, key=lambda s: -s.of_both)

    def _holders(self, sentences: Sentences) -> list[Holder]:
        if self.path is None:
            assert self.config is not None, "a Redis view keeps its settings"
            return _on_redis(self.config, lambda store: store.holders(sentences))
        db = _read_only(self.path / "pages.sqlite3")
        try:
            if self._sample is None:
                self._sample = embedded_sample.load(db, self.path)
            return committed_holders(db, self._sample, sentences)
        except sqlite3.Error:  # an index of an older layout: the next crawl migrates it
            return []
        finally:
            db.close()

    def site_template(self, url: str, html: str = "") -> SiteTemplate:
        """What the index learned of the site of the page ``html`` at ``url`` (its host and
        template, see nearDupe/sitetemplate.py)."""
        host = site_memory(site_of(url), html)
        if self.path is None:
            assert self.config is not None, "a Redis view keeps its settings"
            config = self.config

            async def read() -> SiteTemplate:
                store = _redis_store(config)
                try:
                    return await store.site_template(host)
                finally:
                    await store.close()

            return asyncio.run(read())
        db = _read_only(self.path / "pages.sqlite3")
        try:
            return SiteTemplate(read_site(db, host))
        except sqlite3.Error:  # an index written before sites were learned
            return SiteTemplate()
        finally:
            db.close()

    def signature(self, fp: int) -> int | None:
        """The signature of the first page stored with ``fp`` (None if it has none)."""
        return self._signatures.get(fp)

    def signature_distance(self, fp: int, signature: int | None) -> int | None:
        """Bits between ``signature`` and the one stored with ``fp`` (None: either is absent)."""
        stored = self.signature(fp)
        return None if stored is None or signature is None else hamming(stored, signature)

    @property
    def features(self) -> FeatureSettings:
        """The feature settings the stored fingerprints were made with."""
        return FeatureSettings(**self.header.features)

    @property
    def index(self) -> BlockIndex:
        """The index's own tables (its design), built in memory."""
        if self._index is None:
            self._index = BlockIndex(self.design)
            self._index.add_many(self.fps)
            self._index.compact()
        return self._index

    def disk_bytes(self) -> int | None:
        """Bytes of every file in the index directory (None for Redis: it has no files)."""
        if self.path is None:
            return None
        return sum(p.stat().st_size for p in self.path.iterdir() if p.is_file())

    def keys_by_fp(self) -> dict[int, list[str]]:
        """Fingerprint -> the keys (URLs) stored with it, oldest first."""
        found: dict[int, list[str]] = {}
        for fp, key in zip(self.fps.tolist(), self.keys, strict=True):
            found.setdefault(fp, []).append(key)
        return found

    def near(self, fp: int, radius: int) -> list[tuple[int, int]]:
        """(fingerprint, distance) of stored pages within radius of fp, nearest first."""
        if radius <= self.design.k:
            return self.index.query(fp, radius)
        return neighbours(np.array([fp], dtype=np.uint64), radius, self.fps)[0]

    def among_stored(self, radius: int) -> Neighbours:
        """For each distinct stored fingerprint (sorted), the stored ones within radius."""
        if radius not in self._among:
            self._among[radius] = neighbours(np.unique(self.fps), radius)
        return self._among[radius]

    def nearest_other(self, radius: int) -> list[int | None]:
        """Per stored page, the distance of its nearest other stored page within radius."""
        if not len(self):
            return []
        unique, counts = np.unique(self.fps, return_counts=True)
        found = self.among_stored(radius)
        nearest: dict[int, int | None] = {}
        for fp, count, near in zip(unique.tolist(), counts.tolist(), found, strict=True):
            if count > 1:
                nearest[fp] = 0
            else:
                others = [d for other, d in near if other != fp]
                nearest[fp] = min(others) if others else None
        return [nearest[fp] for fp in self.fps.tolist()]


def _read_only(db_path: Path) -> sqlite3.Connection:
    """A read-only connection to an index's SQLite file (no lock: a crawl may be writing)."""
    return sqlite3.connect(db_path.resolve().as_uri() + "?mode=ro", uri=True)


def _redis_store(config: Config) -> RedisStore:
    """The Redis index the settings name (its header must match them)."""
    from nearDupe.store.redis import RedisStore

    return RedisStore.from_url(config.index, config.header, **config.store_options())


def _on_redis(config: Config, read: Callable[[RedisStore], Awaitable[T]]) -> T:
    """What ``read`` answers from the Redis index the settings name (opened and closed)."""

    async def run() -> T:
        store = _redis_store(config)
        try:
            return await read(store)
        finally:
            await store.close()

    return asyncio.run(run())
