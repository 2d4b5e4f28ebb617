"""The embedded persistent index: SQLite (WAL) holds every page, a numpy snapshot reopens fast.

Layout of the index directory:
  pages.sqlite3   table ``pages(id, fp, key, added, sig, letters, sketched, tails, sample)``
                  (sig: the confirmation signature; the rest: the page's sentence sketch and
                  sample, see :mod:`nearDupe.store.embedded_sample`) and ``meta`` (header,
                  snapshot info);
                  SQLite in WAL mode is the source of truth and survives ``kill -9``: a crash
                  loses at most the pages added since the last commit (``commit_interval``).
  tables.npy      the sorted permuted tables of the first ``snapshot_rows`` pages, written on
                  close; if missing, stale or unreadable the tables are rebuilt from SQLite.
  sample.npz      the sentence sample index of the first ``sample_rows`` pages, likewise.
  lock            held (flock) while a process has the index open: one writer at a time.

The SQLite file is read and written by :mod:`nearDupe.store.embedded_sqlite`, the lock and
the snapshot by :mod:`nearDupe.store.embedded_files`; the pages not yet committed are held by
:mod:`nearDupe.store.embedded_unsaved`. The sentence samples are kept in RAM by a
:class:`~nearDupe.sample_index.SampleIndex`, reopened from its snapshot.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import TracebackType

from nearDupe.designs import Design
from nearDupe.errors import IndexFileError
from nearDupe.shorttext import Sentences
from nearDupe.store import droplog, embedded_files, embedded_sample, embedded_sqlite
from nearDupe.store.base import (
    Holder,
    IndexHeader,
    Match,
    confirmed,
    looked_up,
    sentence_matches,
    storable_key,
)
from nearDupe.store.embedded_sample import committed_holders
from nearDupe.store.embedded_sqlite import to_signed, to_unsigned
from nearDupe.store.embedded_unsaved import UnsavedPages
from nearDupe.store.sites import SqliteSites

logger = logging.getLogger(__name__)

__all__ = ["EmbeddedIndex", "committed_holders", "to_signed", "to_unsigned"]


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
        self._lock_file = embedded_files.lock(self.path)
        try:
            self._db = embedded_sqlite.connect(self.path)
            embedded_sqlite.check_header(self._db, self.path, self.header)
            embedded_sample.migrate(self._db, self.path)
            embedded_sample.warn_without_sentences(self._db, self.path, self.k)
            self.index = embedded_files.load_tables(
                self._db, self.path, Design.named(self.header.design)
            )
            #: What the index's sites taught (see nearDupe/sitetemplate.py).
            self.sites = SqliteSites(self._db)
            #: The sentences every page is recorded under (base.recorded), by page id.
            self.sample = embedded_sample.load(self._db, self.path)
            last = self._db.execute("SELECT COALESCE(MAX(id), 0) FROM pages").fetchone()[0]
        except BaseException:
            self._unlock()
            raise
        self._last_commit = time.monotonic()
        self._unsaved = UnsavedPages()
        self._next_id = last + 1

    def _unlock(self) -> None:
        self._lock_file.close()

    # -- the index -------------------------------------------------------------------------

    def log_drop(self, drop: droplog.Drop) -> None:
        """Remember a drop (durable at the next commit; the last DROP_LOG_LIMIT are kept)."""
        self._unsaved.drops.append(replace(drop, url=storable_key(drop.url)))
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
        holders: list[Holder],
    ) -> None:
        key = storable_key(key)
        self.index.add(fp)
        page_id, self._next_id = self._next_id, self._next_id + 1
        hashes = self._unsaved.add(page_id, fp, key, signature, sentences, holders)
        self.sample.add(page_id, hashes)
        self._commit_if_due()

    def _holders(self, sentences: Sentences) -> list[Holder]:
        """The stored pages recorded under one of ``sentences``, oldest first."""
        return committed_holders(
            self._db, self.sample, looked_up(sentences), self._unsaved.samples
        )

    def _commit_if_due(self) -> None:
        # Also called when nothing is added, so a page kept before a run of duplicates does not
        # wait for the next new page to become durable.
        if self._unsaved.pages and time.monotonic() - self._last_commit >= self.commit_interval:
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
                    len(self._unsaved.pages),
                )

    def _rows(self, fp: int) -> list[tuple[str, int | None]]:
        """(key, signature) of every page stored with exactly this fingerprint, oldest first."""
        signed = to_signed(fp)
        rows = self._db.execute("SELECT key, sig FROM pages WHERE fp = ? ORDER BY id", (signed,))
        unsaved = self._unsaved.by_fp.get(signed, [])
        return [(key, None if sig is None else to_unsigned(sig)) for key, sig in [*rows, *unsaved]]

    def _confirmed_key(self, fp: int, signature: int | None, distance: int) -> str | None:
        """The first key stored with ``fp`` (at ``distance``) whose signature confirms the
        match, if any."""
        for key, stored in self._rows(fp):
            if confirmed(stored, signature, distance, self.confirm_k):
                return key
        return None

    def pages(self) -> Iterator[tuple[int, str, float]]:
        """Every stored page as (fingerprint, key, time added), oldest first."""
        rows = self._db.execute("SELECT fp, key, added FROM pages ORDER BY id").fetchall()
        unsaved = [(fp, key, added) for _, fp, key, added, *_ in self._unsaved.pages]
        for fp, key, added in rows + unsaved:
            yield to_unsigned(fp), key, added

    def commit(self) -> None:
        """Make every page added so far durable.

        If the disk is full (or the write fails otherwise) the error is raised and the pages
        stay in memory, still found by queries, to be written by the next commit; commits due
        after an add only log it.
        """
        try:
            self._unsaved.write(self._db)
            self.sites.write()
            self._db.commit()
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                self._db.rollback()
            raise
        self._unsaved.clear()
        self._last_commit = time.monotonic()

    def save_snapshot(self) -> None:
        """Write the sorted tables and sentence sample so the next open skips rebuilding them."""
        self.commit()
        embedded_files.save_snapshot(self._db, self.path, self.index)
        embedded_sample.save_snapshot(self._db, self.path, self.sample)

    def close(self) -> None:
        """Commit, save the snapshot and release the lock."""
        if self._lock_file.closed:
            return
        try:
            self.save_snapshot()
        except (sqlite3.Error, OSError) as exc:
            raise IndexFileError(
                f"index {self.path} could not be saved ({exc}): the last "
                f"{len(self._unsaved.pages)} pages added are lost from it, the rest is intact"
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
