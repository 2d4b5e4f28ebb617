"""Every page of an index in memory, searched at any radius (the commands' view of it)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from scrapy.exceptions import UsageError

from nearDupe._settings import Config
from nearDupe.designs import Design
from nearDupe.errors import IndexFileError
from nearDupe.features import FeatureSettings
from nearDupe.index import BlockIndex
from nearDupe.shorttext import Sentences
from nearDupe.simhash import hamming, to_hex
from nearDupe.sitetemplate import SiteTemplate, site_memory, site_of
from nearDupe.store.base import SharedSentences, confirmed, shared_sentences
from nearDupe.store.recrawl import Version
from nearDupe.store.view import ReadOnlyIndex, open_view

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
    """Every page of an index in memory, read through its read-only door (safe while a crawl
    writes it): its fingerprints searched at any radius, the rest asked of the index."""

    def __init__(self, index: ReadOnlyIndex) -> None:
        #: The index itself, for what the commands ask of it page by page.
        self.reader = index
        self.source = index.source
        #: The drops the index remembers (see nearDupe.store.droplog), oldest first.
        self.drops = index.drops()
        self.header = index.header
        #: The format of the index's storage (see ReadOnlyIndex.format).
        self.format = index.format()
        self.design = Design.named(self.header.design)
        pages = index.pages()
        self.fps = np.fromiter((p.fp for p in pages), dtype=np.uint64, count=len(pages))
        self.keys: list[str] = [p.key for p in pages]
        self.added: list[float] = [p.added for p in pages if p.added is not None]
        self._signatures: dict[int, int | None] = {}
        for page in pages:
            self._signatures.setdefault(page.fp, page.signature)
        self._index: BlockIndex | None = None
        self._among: dict[int, Neighbours] = {}

    @classmethod
    def open(cls, config: Config) -> IndexView:
        """The index the settings name (an embedded directory or a Redis index), judged with
        the settings' confirmation distance and sentence share, as a crawl would."""
        try:
            view = cls(open_view(config.index, config.header, **config.store_options()))
        except IndexFileError as exc:
            if config.is_redis:
                raise
            raise UsageError(str(exc)) from exc  # no index there: the settings to fix
        view.header = replace(
            view.header, confirm_k=config.confirm_k, sentence_share=config.sentence_share
        )
        return view

    def version(self, url: str) -> Version | None:
        """What the index holds under ``url`` (None: no page claims it, or an index written
        before the URL table)."""
        return self.reader.version(url)

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
        if not sentences:
            return []
        found = shared_sentences(sentences, self.reader.holders(sentences), fp)
        return sorted(found, key=lambda s: -s.of_both)

    def site_template(self, url: str, html: str = "") -> SiteTemplate:
        """What the index learned of the site of the page ``html`` at ``url`` (its host and
        template, see nearDupe/sitetemplate.py)."""
        return self.reader.site(site_memory(site_of(url), html))

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
