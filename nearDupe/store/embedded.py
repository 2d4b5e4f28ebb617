"""The embedded persistent index: SQLite (WAL) holds every page, a numpy snapshot reopens fast.

Layout of the index directory:
  pages.sqlite3   table ``pages(id, fp, key, added, sig)`` (sig: the confirmation signature),
                  ``sentences(sentence, fp, letters, key)`` (the sentences of short pages: a
                  hash, and the page's fingerprint, sentence letters and key) and ``meta``
                  (header, snapshot info);
                  SQLite in WAL mode is the source of truth and survives ``kill -9``: a crash
                  loses at most the pages added since the last commit (``commit_interval``).
  tables.npy      the sorted permuted tables of the first ``snapshot_rows`` pages, written on
                  close; if missing, stale or unreadable the tables are rebuilt from SQLite.
  lock            held (flock) while a process has the index open: one writer at a time.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import TracebackType

import numpy as np
from xxhash import xxh3_64_intdigest

from nearDupe.designs import Design
from nearDupe.errors import IndexFileError, IndexLocked, IndexSettingsMismatch
from nearDupe.index import BlockIndex
from nearDupe.shorttext import Sentences, letters
from nearDupe.store import droplog
from nearDupe.store.base import (
    SENTENCE_HOLDERS,
    IndexHeader,
    Match,
    confirmed,
    sentence_matches,
    storable_key,
)
from nearDupe.store.sites import SqliteSites

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory lock
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

_SIGN = 1 << 63
_DB, _SNAPSHOT, _LOCK = "pages.sqlite3", "tables.npy", "lock"


def _checksum(keys: np.ndarray) -> str:
    """xxh3-64 of a snapshot's table bytes (catches bit rot that keeps the shape intact)."""
    return f"{xxh3_64_intdigest(np.ascontiguousarray(keys).data):016x}"


def to_signed(fp: int) -> int:
    """A uint64 fingerprint as SQLite's signed 64-bit INTEGER."""
    return fp - (1 << 64) if fp >= _SIGN else fp


def to_unsigned(value: int) -> int:
    """Inverse of :func:`to_signed`."""
    return value + (1 << 64) if value < 0 else value


class EmbeddedIndex:
    """A persistent near-duplicate index in one directory, for one process at a time."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: IndexHeader | None = None,
        *,
        commit_interval: float = 1.0,
    ) -> None:
        self.path = Path(path)
        self.header = header or IndexHeader()
        self.k = self.header.k
        self.confirm_k = self.header.confirm_k
        self.sentence_share = self.header.sentence_share
        self.commit_interval = commit_interval
        self._lock_file = self._lock()
        try:
            self._db = self._connect()
            self._check_header()
            self.index = self._load_tables()
            #: What the index's sites taught (see nearDupe/sitetemplate.py).
            self.sites = SqliteSites(self._db)
        except BaseException:
            self._unlock()
            raise
        self._last_commit = time.monotonic()
        #: (signed fp, key, time, signed signature or None) of the pages not yet committed.
        self._unsaved: list[tuple[int, str, float, int | None]] = []
        #: signed fp -> (key, signed signature) of its uncommitted pages (a full disk can make
        #: the list above long; matches look here).
        self._unsaved_by_fp: dict[int, list[tuple[str, int | None]]] = {}
        #: signed sentence -> (signed sentence, signed fp, letters, key) of its uncommitted
        #: holders, oldest first (the rows the next commit inserts).
        self._unsaved_by_sentence: dict[int, list[tuple[int, int, int, str]]] = {}
        self._unsaved_drops: list[droplog.Drop] = []

    # -- opening ---------------------------------------------------------------------------

    def _lock(self):
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            lock_file = open(self.path / _LOCK, "a+b")  # noqa: SIM115 - held while open
        except OSError as exc:
            raise IndexFileError(f"cannot open index directory {self.path}: {exc}") from exc
        if fcntl is not None:
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                lock_file.close()
                raise IndexLocked(
                    f"index {self.path} is open in another process; the embedded index serves "
                    "one process at a time: share an index between processes with "
                    "NEARDUPE_INDEX='redis://host:port/db'"
                ) from None
        return lock_file

    def _unlock(self) -> None:
        self._lock_file.close()

    def _connect(self) -> sqlite3.Connection:
        db_path = self.path / _DB
        db = None
        try:
            db = sqlite3.connect(db_path, isolation_level="DEFERRED", check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(
                """
                CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS pages (
                    id INTEGER PRIMARY KEY, fp INTEGER NOT NULL, key TEXT NOT NULL,
                    added REAL NOT NULL, sig INTEGER);
                CREATE INDEX IF NOT EXISTS pages_fp ON pages(fp);
                CREATE TABLE IF NOT EXISTS sentences (
                    sentence INTEGER NOT NULL, fp INTEGER NOT NULL, letters INTEGER NOT NULL,
                    key TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS sentences_sentence ON sentences(sentence);
                """
                + droplog.SCHEMA
            )
            db.execute("PRAGMA quick_check").fetchone()
        except sqlite3.Error as exc:
            if db is not None:
                db.close()
            raise IndexFileError(f"index file {db_path} is unusable: {exc}") from exc
        return db

    def _meta(self, name: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, name: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))

    def _check_header(self) -> None:
        db_path = self.path / _DB
        stored = self._meta("header")
        if stored is None:
            if self._db.execute("SELECT 1 FROM pages LIMIT 1").fetchone():
                raise IndexFileError(f"index file {db_path} has pages but no header")
            self._set_meta("header", json.dumps(self.header.to_dict(), sort_keys=True))
            self._db.commit()
            return
        try:
            stored_header = json.loads(stored)
        except ValueError as exc:
            raise IndexFileError(f"index file {db_path} has an unreadable header") from exc
        problems = self.header.mismatches(stored_header, design=False)
        if problems:
            raise IndexSettingsMismatch(
                f"index {db_path} was built with other settings: {'; '.join(problems)}. "
                "Open it with its own settings or point NEARDUPE_INDEX at a new location."
            )
        if stored_header.get("design") != self.header.design:
            # The tables are derived from the pages: rebuilt for the new design, once.
            logger.info(
                "Index %s: rebuilding its tables for design %s (was %s)",
                self.path,
                self.header.design,
                stored_header.get("design"),
            )
            self._set_meta("header", json.dumps(self.header.to_dict(), sort_keys=True))
            self._set_meta("snapshot_rows", "0")
            self._db.commit()

    def _load_tables(self) -> BlockIndex:
        design = Design.named(self.header.design)
        snapshot_rows = int(self._meta("snapshot_rows") or 0)
        index = self._read_snapshot(design, snapshot_rows)
        if index is None:
            index, snapshot_rows = BlockIndex(design), 0
        rest = self._db.execute("SELECT fp FROM pages WHERE id > ?", (snapshot_rows,))
        index.add_many(np.fromiter((to_unsigned(r[0]) for r in rest), dtype=np.uint64))
        return index

    def _read_snapshot(self, design: Design, rows: int) -> BlockIndex | None:
        snapshot = self.path / _SNAPSHOT
        if not rows:
            return None
        expected = self._db.execute("SELECT COUNT(*) FROM pages WHERE id <= ?", (rows,))
        checksum = self._meta("snapshot_xxh3")
        try:
            keys = np.load(snapshot, allow_pickle=False)
            if keys.ndim != 2 or keys.shape[-1] != expected.fetchone()[0]:
                raise ValueError(f"holds {keys.shape[-1]} fingerprints, expected otherwise")
            if checksum is not None and _checksum(keys) != checksum:
                raise ValueError("checksum mismatch")
            return BlockIndex.from_run(design, keys)
        except (OSError, ValueError, EOFError) as exc:
            logger.warning("Rebuilding the tables of index %s from its pages: %s", self.path, exc)
            return None

    # -- the index -------------------------------------------------------------------------

    def log_drop(self, drop: droplog.Drop) -> None:
        """Remember a drop (durable at the next commit; the last DROP_LOG_LIMIT are kept)."""
        self._unsaved_drops.append(replace(drop, url=storable_key(drop.url)))
        self._commit_if_due()

    def __len__(self) -> int:
        return len(self.index)

    def query(
        self,
        fp: int,
        k: int | None = None,
        signature: int | None = None,
        sentences: Sentences = (),
    ) -> list[Match]:
        """Stored pages within distance k (default: the index's k), nearest first, then the
        pages that share enough of ``sentences``.

        With a ``signature``, only pages it confirms (see :func:`~nearDupe.store.base.confirmed`).
        """
        found = list(self._confirmed(fp, self.k if k is None else k, signature))
        if sentences:
            found += sentence_matches(sentences, self._holders(sentences), self.sentence_share)
        return found

    def check_and_add(
        self, fp: int, key: str, signature: int | None = None, sentences: Sentences = ()
    ) -> Match | None:
        """The nearest stored page within k that ``signature`` confirms, else the page sharing
        the most of ``sentences``; or None after recording the page as new."""
        match = next(self._confirmed(fp, self.k, signature), None)
        if match is None:
            holders = self._holders(sentences) if sentences else []
            found = sentence_matches(sentences, holders, self.sentence_share) if holders else []
            if not found:
                self._add(fp, key, signature, sentences, holders)
                return None
            match = found[0]
        self._commit_if_due()
        return match

    def _confirmed(self, fp: int, k: int, signature: int | None) -> Iterator[Match]:
        """Stored pages within k whose signature confirms ``signature``, nearest first (lazily:
        check-and-add reads the stored keys of the first only)."""
        for found, d in _distinct(self.index.query(fp, k)):
            key = self._confirmed_key(found, signature, d)
            if key is not None:
                yield Match(key, found, d)

    def add(
        self, fp: int, key: str, signature: int | None = None, sentences: Sentences = ()
    ) -> None:
        """Record a page unconditionally (durable at the next commit)."""
        self._add(fp, key, signature, sentences, self._holders(sentences) if sentences else [])

    def _add(
        self,
        fp: int,
        key: str,
        signature: int | None,
        sentences: Sentences,
        holders: list[tuple[int, str, int, int]],
    ) -> None:
        key = storable_key(key)
        self.index.add(fp)
        sig = None if signature is None else to_signed(signature)
        self._unsaved.append((to_signed(fp), key, time.time(), sig))
        self._unsaved_by_fp.setdefault(to_signed(fp), []).append((key, sig))
        held = Counter(sentence for sentence, *_ in holders)
        total = letters(sentences)
        for sentence, _ in sentences:
            if held[sentence] < SENTENCE_HOLDERS:
                row = (to_signed(sentence), to_signed(fp), total, key)
                self._unsaved_by_sentence.setdefault(row[0], []).append(row)
        self._commit_if_due()

    def _holders(self, sentences: Sentences) -> list[tuple[int, str, int, int]]:
        """(sentence, key, fp, sentence letters) of the stored pages with one of ``sentences``,
        oldest first."""
        unsaved = [
            (sentence, key, to_unsigned(fp), n)
            for sentence, _ in sentences
            for _, fp, n, key in self._unsaved_by_sentence.get(to_signed(sentence), [])
        ]
        return committed_holders(self._db, sentences, unsaved)

    def _commit_if_due(self) -> None:
        # Also called when nothing is added, so a page kept before a run of duplicates does not
        # wait for the next new page to become durable.
        if self._unsaved and time.monotonic() - self._last_commit >= self.commit_interval:
            try:
                self.commit()
            except sqlite3.Error as exc:
                # The pages stay in memory (copies are still caught) and are written by the
                # next commit that succeeds: a full disk must not stop the crawl's decisions.
                self._last_commit = time.monotonic()
                logger.warning(
                    "nearDupe: cannot write index %s (%s); %d pages kept in memory until it can",
                    self.path,
                    exc,
                    len(self._unsaved),
                )

    def _rows(self, fp: int) -> list[tuple[str, int | None]]:
        """(key, signature) of every page stored with exactly this fingerprint, oldest first."""
        signed = to_signed(fp)
        rows = self._db.execute("SELECT key, sig FROM pages WHERE fp = ? ORDER BY id", (signed,))
        unsaved = self._unsaved_by_fp.get(signed, [])
        return [(key, None if sig is None else to_unsigned(sig)) for key, sig in [*rows, *unsaved]]

    def _confirmed_key(self, fp: int, signature: int | None, distance: int) -> str | None:
        """The first key stored with ``fp`` (at ``distance``) whose signature confirms the
        match, if any."""
        for key, stored in self._rows(fp):
            if confirmed(stored, signature, distance, self.confirm_k):
                return key
        return None

    def keys_of(self, fp: int) -> list[str]:
        """Every key stored with exactly this fingerprint, oldest first."""
        return [key for key, _ in self._rows(fp)]

    def pages(self) -> Iterator[tuple[int, str, float]]:
        """Every stored page as (fingerprint, key, time added), oldest first."""
        rows = self._db.execute("SELECT fp, key, added FROM pages ORDER BY id").fetchall()
        for fp, key, added, *_ in rows + self._unsaved:
            yield to_unsigned(fp), key, added

    def commit(self) -> None:
        """Make every page added so far durable.

        If the disk is full (or the write fails otherwise) the error is raised and the pages
        stay in memory, still found by queries, to be written by the next commit; commits due
        after an add only log it.
        """
        try:
            self._db.executemany(
                "INSERT INTO pages (fp, key, added, sig) VALUES (?, ?, ?, ?)", self._unsaved
            )
            self._db.executemany(
                "INSERT INTO sentences (sentence, fp, letters, key) VALUES (?, ?, ?, ?)",
                (row for rows in self._unsaved_by_sentence.values() for row in rows),
            )
            droplog.insert(self._db, self._unsaved_drops)
            self.sites.write()
            self._db.commit()
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                self._db.rollback()
            raise
        self._unsaved.clear()
        self._unsaved_by_fp.clear()
        self._unsaved_by_sentence.clear()
        self._unsaved_drops.clear()
        self._last_commit = time.monotonic()

    def save_snapshot(self) -> None:
        """Write the sorted tables so the next open skips rebuilding them."""
        self.commit()
        rows = self._db.execute("SELECT COALESCE(MAX(id), 0) FROM pages").fetchone()[0]
        keys = self.index.compact()
        tmp = self.path / (_SNAPSHOT + ".tmp")
        with open(tmp, "wb") as f:
            np.save(f, keys, allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path / _SNAPSHOT)
        self._set_meta("snapshot_rows", str(rows))
        self._set_meta("snapshot_xxh3", _checksum(keys))
        self._db.commit()

    def close(self) -> None:
        """Commit, save the snapshot and release the lock."""
        if self._lock_file.closed:
            return
        try:
            self.save_snapshot()
        except (sqlite3.Error, OSError) as exc:
            raise IndexFileError(
                f"index {self.path} could not be saved ({exc}): the last "
                f"{len(self._unsaved)} pages added are lost from it, the rest is intact"
            ) from exc
        finally:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._unlock()

    def __enter__(self) -> EmbeddedIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _distinct(matches: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(fingerprint, distance) pairs without repeats (one fingerprint may be stored twice)."""
    return list(dict.fromkeys(matches))


def committed_holders(
    db: sqlite3.Connection,
    sentences: Sentences,
    unsaved: list[tuple[int, str, int, int]] | None = None,
) -> list[tuple[int, str, int, int]]:
    """(sentence, key, fp, sentence letters) of the pages in ``db`` (then ``unsaved``) that
    have one of ``sentences``, in the order of ``sentences``, oldest first for each."""
    wanted = [to_signed(sentence) for sentence, _ in sentences]
    rows = db.execute(
        f"SELECT sentence, key, fp, letters FROM sentences WHERE sentence IN "
        f"({','.join('?' * len(wanted))}) ORDER BY rowid",
        wanted,
    ).fetchall()
    found = [(to_unsigned(s), key, to_unsigned(fp), n) for s, key, fp, n in rows]
    found += unsaved or []
    position = {sentence: i for i, (sentence, _) in enumerate(sentences)}
    return sorted(found, key=lambda row: position[row[0]])  # stable: oldest first
