"""Groups of near-duplicate pages: union-find over every pair within k, each page once."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from nearDupe.commands._index import IndexView, neighbours
from nearDupe.simhash import hamming, to_hex
from nearDupe.store.base import NO_CONFIRMATION, confirmed

#: Above this many distinct fingerprints a cluster's max_distance is taken over its edges only.
_PAIRWISE_LIMIT = 200


@dataclass(frozen=True)
class Page:
    """One page: its URL, fingerprint, whether the index stores it (it was kept), and its
    signature (a dropped page from a report: that of the page it duplicates, named too)."""

    url: str
    fingerprint: int
    stored: bool
    signature: int | None = None
    duplicate_of: str | None = None


@dataclass(frozen=True)
class Cluster:
    """Pages connected by chains of near-duplicate pairs; stored (kept) pages first."""

    pages: tuple[Page, ...]
    max_distance: int

    @property
    def size(self) -> int:
        """Number of pages."""
        return len(self.pages)

    def to_json(self) -> dict[str, Any]:
        """The JSON line written by ``scrapy neardupe clusters``."""
        return {
            "size": self.size,
            "pages": [p.url for p in self.pages],
            "fingerprints": [to_hex(p.fingerprint) for p in self.pages],
            "max_distance": self.max_distance,
            "kept": [p.url for p in self.pages if p.stored],
        }


def pages_of(view: IndexView, decisions: list[dict[str, Any]] | None = None) -> list[Page]:
    """Stored pages, then pages of a report that carry a fingerprint (each URL once)."""
    pages, seen = [], set()
    signature_of: dict[str, int | None] = {}
    for fp, key in zip(view.fps.tolist(), view.keys, strict=True):
        if key not in seen:
            seen.add(key)
            signature_of[key] = view.signature(fp)
            pages.append(Page(key, fp, True, signature_of[key]))
    for line in decisions or []:
        url, fp = line.get("url"), line.get("fingerprint")
        if url and fp and url not in seen:
            seen.add(url)
            original = line.get("duplicate_of")
            signature = signature_of.get(original or "")
            pages.append(Page(url, int(fp, 16), False, signature, original))
    return pages


def find_clusters(
    pages: list[Page], k: int, min_size: int = 2, confirm_k: int = NO_CONFIRMATION
) -> list[Cluster]:
    """Connected groups of pages within distance k of each other that their signatures (where
    known) confirm (see :func:`~nearDupe.store.base.confirmed`), as the index decides, with
    each dropped page joined to the one it duplicates (pages matched by their
    sentences are not within k), biggest first."""
    if not pages:
        return []
    fps = np.array([p.fingerprint for p in pages], dtype=np.uint64)
    unique = np.unique(fps)
    slot = {fp: i for i, fp in enumerate(unique.tolist())}
    parent = list(range(len(unique)))
    signature: dict[int, int | None] = {}
    for page in pages:
        signature.setdefault(page.fingerprint, page.signature)

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    edge_max = [0] * len(unique)

    def join(i: int, j: int, d: int) -> None:
        a, b = root(i), root(j)
        if a != b:
            parent[b] = a
            edge_max[a] = max(edge_max[a], edge_max[b])
        edge_max[a] = max(edge_max[a], d)

    for i, near in enumerate(neighbours(unique, k)):
        for other, d in near:
            if confirmed(signature[int(unique[i])], signature[other], d, confirm_k):
                join(i, slot[other], d)
    fingerprint_of = {page.url: page.fingerprint for page in pages}
    for page in pages:
        original = fingerprint_of.get(page.duplicate_of or "")
        if original is not None:
            join(slot[original], slot[page.fingerprint], hamming(original, page.fingerprint))
    groups: dict[int, list[Page]] = {}
    for page in pages:
        groups.setdefault(root(slot[page.fingerprint]), []).append(page)
    clusters = [
        Cluster(_ordered(members), _max_distance(members, edge_max[r]))
        for r, members in groups.items()
        if len(members) >= min_size
    ]
    clusters.sort(key=lambda c: (-c.size, -c.max_distance, c.pages[0].url))
    return clusters


def _ordered(members: list[Page]) -> tuple[Page, ...]:
    first = next((p for p in members if p.stored), members[0])
    rest = sorted(
        (p for p in members if p is not first),
        key=lambda p: (not p.stored, hamming(p.fingerprint, first.fingerprint), p.url),
    )
    return (first, *rest)


def _max_distance(members: list[Page], edges: int) -> int:
    distinct = list({p.fingerprint for p in members})
    if len(distinct) > _PAIRWISE_LIMIT:
        return edges
    return max((hamming(a, b) for a, b in combinations(distinct, 2)), default=0)


def size_histogram(clusters: list[Cluster]) -> dict[int, int]:
    """Cluster size -> how many clusters have it."""
    return dict(sorted(Counter(c.size for c in clusters).items()))
