"""The embedded index's sentence samples: the pages' columns that hold them, the in-RAM index
rebuilt from them, and the holders of a query's sentences, verified on their full hashes.

Each page row keeps its sketch (``letters`` of all its sentences, ``sketched`` of those in
its sketch, their ``tails``: see base.Sketch) and ``sample``, the hashes it is recorded under
(base.recorded) as 8-byte little-endian unsigned integers; the
:class:`~nearDupe.sample_index.SampleIndex` finds candidate page ids by the hashes' top 32
bits. It is reopened from its one run as of the last close, its directory read from
``sample-dir.npy`` and its entries mapped from ``sample-low.npy`` and ``sample-ids.npy``
(checked as the tables' snapshot is: see :mod:`nearDupe.store.embedded_files`), and the
pages added after them; from all the pages when the files are missing, stale or corrupt
(2.5 s per 10**6 pages read from SQLite). An earlier version's ``sample.npz`` is read whole,
checked by the xxh3 of all its arrays.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np
from xxhash import xxh3_64

from nearDupe.sample_index import Run, SampleIndex
from nearDupe.shorttext import Sentences
from nearDupe.store.base import Holder, Sketch
from nearDupe.store.embedded_files import map_npy, save_npy, spot_checksum
from nearDupe.store.embedded_sqlite import (
    meta,
    set_meta,
    to_unsigned,
)
from nearDupe.units import Units

#: Logged under the index's module name, which logging settings know.
logger = logging.getLogger("nearDupe.store.embedded")

#: Page rows read per batch when the sample index is rebuilt (a few MB of blobs at a time).
_REBUILD_ROWS = 200_000
_HASH = np.dtype("<u8")
_SNAPSHOT = "sample.npz"
#: The snapshot's directory and entries (a run's starts, low and ids).
_DIR, _LOW, _IDS = "sample-dir.npy", "sample-low.npy", "sample-ids.npy"
#: The statement reading pages' samples, up to its WHERE clause.
_SAMPLE_OF = "SELECT id, key, fp, letters, sketched, tails, sample FROM pages WHERE "


class Sampled(NamedTuple):
    """A page as its holders are verified and judged: key, fingerprint, its sketch and the
    hashes it is recorded under."""

    key: str
    fp: int
    sketch: Sketch
    hashes: frozenset[int]


def pack(hashes: np.ndarray) -> bytes | None:
    """The ``sample`` column of a page recorded under ``hashes`` (None: under none)."""
    return hashes.astype(_HASH).tobytes() if hashes.size else None


def load(db: sqlite3.Connection, path: Path) -> SampleIndex:
    """The sample index of every committed page of ``db``: the snapshot's entries in ``path``,
    then those of the pages after it."""
    return load_counted(db, path)[0]


def load_counted(db: sqlite3.Connection, path: Path) -> tuple[SampleIndex, int]:
    """:func:`load`, and the pages the snapshot held (0: rebuilt, or to be saved again in
    this version's form)."""
    after = int(meta(db, "sample_rows") or 0)
    index, current = _read_snapshot(db, path) if after else (None, False)
    if index is None:
        index, after = SampleIndex(), 0
    rows = db.execute("SELECT id, sample FROM pages WHERE id > ? AND sample IS NOT NULL", (after,))
    while batch := rows.fetchmany(_REBUILD_ROWS):
        ids, blobs = zip(*batch, strict=True)
        counts = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs)) // 8
        hashes = np.frombuffer(b"".join(blobs), dtype=_HASH)
        index.add_many(np.repeat(np.array(ids, dtype=np.uint64), counts), hashes)
    index.flush()
    return index, after if current else 0


def _checksum(run: Run) -> str:
    """xxh3-64 of a snapshot's arrays (catches bit rot that keeps their lengths intact)."""
    digest = xxh3_64()
    for array in (run.starts, run.low, run.ids):
        digest.update(np.ascontiguousarray(array).data)
    return digest.hexdigest()


def _read_snapshot(db: sqlite3.Connection, path: Path) -> tuple[SampleIndex | None, bool]:
    """The index saved in the snapshot, or None if it is missing, stale or unreadable;
    whether it is in this version's form."""
    entries = int(meta(db, "sample_entries") or -1)
    spot = meta(db, "sample_spot_xxh3")
    try:
        if spot is not None:
            low = map_npy(path / _LOW, np.dtype(np.uint16), (entries,))
            ids = map_npy(path / _IDS, np.dtype(np.uint32), (entries,))
            starts = np.load(path / _DIR, allow_pickle=False)
            if spot_checksum(starts, (low, ids)) != spot:
                raise ValueError("checksum mismatch")
            return SampleIndex.from_run(Run(starts, low, ids)), True
        with np.load(path / _SNAPSHOT, allow_pickle=False) as arrays:
            run = Run(arrays["starts"], arrays["low"], arrays["ids"])
        if len(run) != entries:
            raise ValueError(f"holds {len(run)} entries, expected otherwise")
        if _checksum(run) != meta(db, "sample_xxh3"):
            raise ValueError("checksum mismatch")
        return SampleIndex.from_run(run), False
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        logger.warning("Rebuilding the sentence sample of index %s from its pages: %s", path, exc)
        return None, False


def save_snapshot(db: sqlite3.Connection, path: Path, index: SampleIndex) -> None:
    """Write the sorted entries of the committed pages (all of ``index``) and record them."""
    rows = db.execute("SELECT COALESCE(MAX(id), 0) FROM pages").fetchone()[0]
    run = index.compact()
    for name, array in ((_DIR, run.starts), (_LOW, run.low), (_IDS, run.ids)):
        save_npy(path / name, array)
    set_meta(db, "sample_rows", str(rows))
    set_meta(db, "sample_entries", str(len(run)))
    set_meta(db, "sample_spot_xxh3", spot_checksum(run.starts, (run.low, run.ids)))
    db.execute("DELETE FROM meta WHERE name = 'sample_xxh3'")
    db.commit()
    (path / _SNAPSHOT).unlink(missing_ok=True)


def committed_holders(
    db: sqlite3.Connection,
    sample: SampleIndex,
    sentences: Sentences,
    unsaved: Mapping[int, Sampled] | None = None,
) -> list[Holder]:
    """The pages of ``sample`` (read from ``unsaved``, else ``db``) recorded under one of
    ``sentences``, in the order of their hashes, oldest first for each."""
    sentences = Units.of(sentences)
    which, ids = sample.lookup(sentences.hashes)
    if not ids.size:
        return []
    unsaved = unsaved or {}
    candidates = sorted(set(zip(which.tolist(), ids.tolist(), strict=True)))
    pages = {i: unsaved[i] for _, i in candidates if i in unsaved}
    missing = {i for _, i in candidates if i not in pages}
    if missing:
        pages.update(_read_samples(db, missing))
    found = []
    for w, i in candidates:  # a prefix shared by another sentence is not a holder
        sentence, page = sentences[w][0], pages.get(i)
        if page is not None and sentence in page.hashes:
            found.append(Holder(sentence, page.key, page.fp, page.sketch))
    return found


def _read_samples(db: sqlite3.Connection, ids: set[int]) -> dict[int, Sampled]:
    """The samples of the committed pages ``ids``."""
    if len(ids) == 1:  # most checks: a plain lookup takes half the time of json_each's
        rows = db.execute(_SAMPLE_OF + "id = ?", tuple(ids))
    else:  # one statement for them all (json_each: no limit on their number)
        rows = db.execute(
            _SAMPLE_OF + "id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(ids)),)
        )
    return {
        i: Sampled(
            key,
            to_unsigned(fp),
            Sketch(n, m, tails),
            frozenset(np.frombuffer(blob, _HASH).tolist()),
        )
        for i, key, fp, n, m, tails, blob in rows
    }
