"""A read-only view of an embedded index: pages, header, neighbour searches at any radius."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import fields
from pathlib import Path

import numpy as np
from scrapy.exceptions import UsageError

from nearDupe.designs import Design
from nearDupe.features import FeatureSettings
from nearDupe.index import BlockIndex
from nearDupe.store.base import IndexHeader
from nearDupe.store.embedded import to_unsigned

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
    """Every page of an embedded index, read without its lock (safe while a crawl writes it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        db_path = self.path / "pages.sqlite3"
        if not db_path.is_file():
            raise UsageError(
                f"no nearDupe index at {self.path} (set NEARDUPE_INDEX, or crawl first)"
            )
        db = sqlite3.connect(db_path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE name = 'header'").fetchone()
            rows = db.execute("SELECT fp, key, added FROM pages ORDER BY id").fetchall()
        finally:
            db.close()
        if row is None:
            raise UsageError(f"index {self.path} has no header")
        stored = json.loads(row[0])
        names = {f.name for f in fields(IndexHeader)}
        self.header = IndexHeader(**{n: v for n, v in stored.items() if n in names})
        self.design = Design.named(self.header.design)
        self.fps = np.fromiter((to_unsigned(r[0]) for r in rows), dtype=np.uint64, count=len(rows))
        self.keys: list[str] = [r[1] for r in rows]
        self.added: list[float] = [r[2] for r in rows]
        self._index: BlockIndex | None = None
        self._among: dict[int, Neighbours] = {}

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def k(self) -> int:
        """The distance at or below which the index calls two pages near-duplicates."""
        return self.header.k

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

    def disk_bytes(self) -> int:
        """Bytes of every file in the index directory."""
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
