"""Pages loaded into an embedded index at once: numpy arrays in, SQLite rows and sample
entries out, with the same rows and samples as adding the pages one by one.

A page one by one is recorded under its sentences that are not crowded (already recorded for
SENTENCE_HOLDERS pages: base.recorded). A bulk load counts, for every sentence its pages look
up, the entries with its prefix in the sample index and its pages in the load: only a
sentence whose count reaches SENTENCE_HOLDERS can become crowded, and only those are followed
page by page, from their exact holders.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from nearDupe.designs import Design
from nearDupe.sample_index import SampleIndex
from nearDupe.shorttext import PROBE_SENTENCES, SENTENCE_PAGE_LETTERS, letters
from nearDupe.store.base import (
    LOOKUP_SENTENCES,
    SAMPLE_SENTENCES,
    SENTENCE_HOLDERS,
    SKETCH_SENTENCES,
    TAIL_BYTES,
    tails_of,
)
from nearDupe.store.embedded_sample import committed_holders
from nearDupe.store.embedded_unsaved import PageRow, UrlRow, page_row


@dataclass(frozen=True)
class BulkPages:
    """Pages to record at once, in order: page i has fingerprint ``fps[i]``, key ``keys[i]``,
    signature ``signatures[i]`` (no signatures: None) and the sentence units (hash, letters)
    ``units[j], letters[j]`` for j in its ``counts[i]`` units, the pages' units one after the
    other; with ``urls`` (base.url_hash of each key), each page claims its URL as a check that
    keeps it does (a URL no page of the index or the load holds)."""

    fps: np.ndarray
    keys: Sequence[str]
    units: np.ndarray
    letters: np.ndarray
    counts: np.ndarray
    signatures: np.ndarray | None = None
    urls: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.fps)
        sizes = {len(self.keys), len(self.counts)}
        for given in (self.signatures, self.urls):
            if given is not None:
                sizes.add(len(given))
        if sizes != {n} or len(self.units) != len(self.letters):
            raise ValueError("bulk pages: the arrays' lengths do not agree")
        if int(np.sum(self.counts)) != len(self.units) or (n and int(np.min(self.counts)) < 0):
            raise ValueError("bulk pages: the unit counts do not add up to the units")

    def __len__(self) -> int:
        return len(self.fps)

    def subset(self, chosen: np.ndarray) -> BulkPages:
        """The pages ``chosen`` (a mask), in order."""
        units = np.repeat(chosen, self.counts)
        return BulkPages(
            fps=self.fps[chosen],
            keys=[key for key, kept in zip(self.keys, chosen.tolist(), strict=True) if kept],
            units=self.units[units],
            letters=self.letters[units],
            counts=self.counts[chosen],
            signatures=None if self.signatures is None else self.signatures[chosen],
            urls=None if self.urls is None else self.urls[chosen],
        )


def rows(
    db: sqlite3.Connection, sample: SampleIndex, pages: BulkPages, first_id: int
) -> tuple[list[PageRow], np.ndarray, np.ndarray]:
    """The rows of ``pages`` (ids from ``first_id``) as one-by-one adds would write them after
    the committed pages of ``db`` (all of ``sample``), and the (page id, hash) entries of the
    sentences they are recorded under.

    A page that looks up a sentence the load may crowd is recorded by base.recorded, in
    order; every other page's row is computed for all of them at once, as base.sketch_of and
    base.recorded (with nothing crowded) compute it."""
    units = _Units(pages)
    crowding = _crowding(db, sample, units)
    added = time.time()
    sketch = units.sketches()
    rec = units.rank < LOOKUP_SENTENCES
    short = sketch.letters < SENTENCE_PAGE_LETTERS
    rec &= short[units.page] | (units.rank < SAMPLE_SENTENCES)
    hot = units.pages_with(np.fromiter(crowding, dtype=np.uint64, count=len(crowding)))
    rec &= ~hot[units.page]
    ids = (units.page[rec] + first_id).astype(np.uint64)
    hashes = units.hashes[rec]
    blobs = _slices(
        hashes.astype("<u8").tobytes(), np.bincount(units.page[rec], minlength=len(pages)) * 8
    )
    tails = _slices(sketch.tails, np.minimum(pages.counts, SKETCH_SENTENCES) * TAIL_BYTES)
    fps = pages.fps.astype(np.uint64).view(np.int64).tolist()
    if pages.signatures is None:
        sigs: list[int | None] = [None] * len(pages)
    else:
        sigs = pages.signatures.astype(np.uint64).view(np.int64).tolist()
    has = (pages.counts > 0).tolist()
    out: list[PageRow] = [
        (i, fp, key, added, sig, n, m, t, b or None)
        if on
        else (i, fp, key, added, sig, None, None, None, None)
        for i, fp, key, sig, n, m, t, b, on in zip(
            range(first_id, first_id + len(pages)),
            fps,
            pages.keys,
            sigs,
            sketch.letters.tolist(),
            sketch.sketched.tolist(),
            tails,
            blobs,
            has,
            strict=True,
        )
    ]
    if not hot.any():
        return out, ids, hashes
    more_ids, more_hashes = _one_by_one(
        pages, np.flatnonzero(hot).tolist(), first_id, crowding, added, out
    )
    return out, np.concatenate([ids, more_ids]), np.concatenate([hashes, more_hashes])


def distinct(design: Design, k: int, pages: BulkPages) -> np.ndarray:
    """Which of ``pages`` are new to each other: a fingerprint more than ``k`` from every
    other's, no looked-up sentence another looks up, a URL hash no other has."""
    alone = ~_near_each_other(design, k, np.asarray(pages.fps, dtype=np.uint64))
    looked, hashes = looked_up_units(pages)
    order = np.lexsort((looked, hashes))
    hashes_in_order, looked_in_order = hashes[order], looked[order]
    two = (hashes_in_order[1:] == hashes_in_order[:-1]) & (
        looked_in_order[1:] != looked_in_order[:-1]
    )  # a sentence looked up by two pages: their entries meet in its run
    alone[looked[np.isin(hashes, hashes_in_order[1:][two])]] = False
    if pages.urls is not None:
        _, first, counts = np.unique(pages.urls, return_inverse=True, return_counts=True)
        alone &= counts[first] == 1
    return alone


def _near_each_other(design: Design, k: int, fps: np.ndarray) -> np.ndarray:
    """Which of ``fps`` are within ``k`` (at most the design's k) of another: such a pair has
    one table's prefix in common, so each table's sorted keys are compared with their
    neighbours while the prefix lasts."""
    near = np.zeros(len(fps), dtype=bool)
    for t, table in enumerate(design.tables):
        keys = design.permute(t, fps)
        order = np.argsort(keys, kind="stable")
        shift = np.uint64(64 - table.prefix_bits)
        prefix = keys[order] >> shift if table.prefix_bits else np.zeros(len(fps), np.uint64)
        ordered = fps[order]
        for d in range(1, len(fps)):
            same = prefix[d:] == prefix[:-d]
            if not same.any():  # sorted: no farther neighbour shares a prefix either
                break
            close = same & (np.bitwise_count(ordered[d:] ^ ordered[:-d]) <= k)
            near[order[d:][close]] = near[order[:-d][close]] = True
    return near


def looked_up_units(pages: BulkPages) -> tuple[np.ndarray, np.ndarray]:
    """(page, hash) of every sentence the pages look up (base.looked_up)."""
    units = _Units(pages)
    looked = units.rank < LOOKUP_SENTENCES
    return units.page[looked], units.hashes[looked]


def url_rows(rows: list[PageRow], urls: np.ndarray) -> list[UrlRow]:
    """The URL table's rows of pages ``rows`` claiming ``urls`` (first stored as they are
    added, never changed, from a response of unknown key)."""
    signed = urls.astype(np.uint64).view(np.int64).tolist()
    return [(url, row[0], row[3], None, None) for url, row in zip(signed, rows, strict=True)]


def _one_by_one(
    pages: BulkPages,
    which: list[int],
    first_id: int,
    crowding: Counter[int],
    added: float,
    out: list[PageRow],
) -> tuple[np.ndarray, np.ndarray]:
    """Record pages ``which`` (in order) by base.recorded, their crowded sentences counted
    in ``crowding`` as they go; their rows replace those in ``out``."""
    crowded = {h for h, n in crowding.items() if n >= SENTENCE_HOLDERS}
    ids: list[int] = []
    hashes: list[int] = []
    signatures = None if pages.signatures is None else pages.signatures.tolist()
    starts = np.concatenate([[0], np.cumsum(pages.counts)]).tolist()
    for i in which:
        a, b = starts[i], starts[i + 1]
        sentences = tuple(zip(pages.units[a:b].tolist(), pages.letters[a:b].tolist(), strict=True))
        signature = None if signatures is None else signatures[i]
        fp, key, page_id = int(pages.fps[i]), pages.keys[i], first_id + i
        out[i], _, recorded = page_row(page_id, fp, key, signature, sentences, crowded, added)
        ids += [page_id] * len(recorded)
        hashes += recorded
        for h in set(recorded).intersection(crowding):
            crowding[h] += 1
            if crowding[h] >= SENTENCE_HOLDERS:
                crowded.add(h)
    return np.array(ids, dtype=np.uint64), np.array(hashes, dtype=np.uint64)


def _slices(data: bytes, sizes: np.ndarray) -> list[bytes]:
    """``data`` cut into consecutive pieces of ``sizes`` bytes."""
    ends = np.cumsum(sizes).tolist()
    return [data[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


class _Sketches(NamedTuple):
    letters: np.ndarray
    sketched: np.ndarray
    tails: bytes


class _Units:
    """Every unit of the pages, each page's sorted as base.sketch_of sorts them."""

    def __init__(self, pages: BulkPages) -> None:
        self.pages = pages
        page = np.repeat(np.arange(len(pages)), pages.counts)
        hashes = np.asarray(pages.units, dtype=np.uint64)
        letters = np.asarray(pages.letters, dtype=np.int64)
        if not _in_order(page, hashes, letters):
            order = np.lexsort((letters, hashes, page))
            page, hashes, letters = page[order], hashes[order], letters[order]
        self.page, self.hashes, self.letters = page, hashes, letters
        self.starts = np.concatenate([[0], np.cumsum(pages.counts)]).astype(np.int64)
        #: Each unit's place in its page's sorted units.
        self.rank = np.arange(len(self.page)) - self.starts[self.page]

    def _sums(self, values: np.ndarray) -> np.ndarray:
        """Per page, the sum of ``values`` (one per unit)."""
        total = np.concatenate([[0], np.cumsum(values)])
        return total[self.starts[1:]] - total[self.starts[:-1]]

    def sketches(self) -> _Sketches:
        """Each page's sketch (base.sketch_of), its tails joined page after page."""
        page_letters = self._sums(self.letters)
        for i in np.flatnonzero(self.pages.counts >= PROBE_SENTENCES).tolist():  # scaled
            a, b = self.starts[i], self.starts[i + 1]
            sentences = zip(self.hashes[a:b].tolist(), self.letters[a:b].tolist(), strict=True)
            page_letters[i] = letters(tuple(sentences))
        chosen = self.rank < SKETCH_SENTENCES
        sketched = self._sums(np.where(chosen, self.letters, 0))
        tails = tails_of(self.hashes[chosen]).tobytes()
        return _Sketches(page_letters, sketched, tails)

    def pages_with(self, wanted: np.ndarray) -> np.ndarray:
        """Whether each page looks up one of the sentences ``wanted``."""
        hit = np.isin(self.hashes, wanted) & (self.rank < LOOKUP_SENTENCES)
        return np.bincount(self.page[hit], minlength=len(self.pages)) > 0


def _crowding(db: sqlite3.Connection, sample: SampleIndex, units: _Units) -> Counter[int]:
    """Holders (committed) of every sentence the load could crowd: one looked up by as many
    of its pages as SENTENCE_HOLDERS less the entries of its prefix (an empty Counter, most
    loads)."""
    looked = units.rank < LOOKUP_SENTENCES
    repeat = np.zeros(len(looked), dtype=bool)  # a page looks a sentence up once
    repeat[1:] = (units.page[1:] == units.page[:-1]) & (units.hashes[1:] == units.hashes[:-1])
    wanted, in_load = np.unique(units.hashes[looked & ~repeat], return_counts=True)
    if not wanted.size:
        return Counter()
    reach = in_load + sample.counts(wanted)
    hot = wanted[reach >= SENTENCE_HOLDERS].tolist()
    crowding: Counter[int] = Counter(dict.fromkeys(hot, 0))
    if hot:
        held = committed_holders(db, sample, tuple((h, 0) for h in hot))
        crowding.update(holder.sentence for holder in held)
    return crowding


def _in_order(page: np.ndarray, hashes: np.ndarray, letters: np.ndarray) -> bool:
    """Whether each page's units are sorted by hash, then letters (most callers' are)."""
    same = page[1:] == page[:-1]
    before = (hashes[:-1] < hashes[1:]) | (
        (hashes[:-1] == hashes[1:]) & (letters[:-1] <= letters[1:])
    )
    return bool(np.all(before | ~same))
