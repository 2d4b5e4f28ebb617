"""The embedded persistent index: SQLite (WAL) holds every page, a numpy snapshot reopens fast.

Layout of the index directory:
  pages.sqlite3   table ``pages(id, fp, key, added, sig, letters, sketched, tails, sample)``
                  (sig: the confirmation signature; the rest: the page's sentence sketch and
                  sample, see :mod:`nearDupe.store.embedded_sample`) and ``meta`` (header,
                  snapshot info);
                  and ``urls(hash, page, first, changed, body)`` (each URL's newest page,
                  written by the commit that writes that page: see docs/design.md);
                  SQLite in WAL mode is the source of truth and survives ``kill -9``: a crash
                  loses at most the pages added since the last commit (``commit_interval``).
                  The commits run in a thread of the index, on a connection of their own,
                  every ``commit_interval`` seconds: a check never waits for one (with
                  ``commit_interval=0`` every page is committed before its check returns).
  tables.npy      the sorted permuted tables of the first ``snapshot_rows`` pages, written on
                  close, and ``tables-dirs.npy`` their directory; if missing, stale or
                  unreadable the tables are rebuilt from SQLite.
  sample-*.npy    the sentence sample index of the first ``sample_rows`` pages, likewise.
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
import threading
import time
from collections import ChainMap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import numpy as np

from nearDupe.designs import Design
from nearDupe.errors import IndexFileError
from nearDupe.shorttext import Sentences
from nearDupe.store import (
    droplog,
    embedded_bulk,
    embedded_files,
    embedded_sample,
    embedded_sqlite,
    recrawl,
)
from nearDupe.store.base import (
    Holder,
    IndexHeader,
    Match,
    confirmed,
    looked_up,
    sentence_matches,
    storable_key,
    url_hash,
)
from nearDupe.store.embedded_bulk import BulkPages
from nearDupe.store.embedded_sample import committed_holders
from nearDupe.store.embedded_sqlite import to_signed, to_unsigned
from nearDupe.store.embedded_unsaved import INSERT_PAGES, INSERT_URLS, UnsavedPages
from nearDupe.store.sites import SqliteSites
from nearDupe.units import Units

logger = logging.getLogger(__name__)

T = TypeVar("T")

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
        #: Held by every call that reads or changes what is in memory, and by a commit only to
        #: take the batch it writes (re-entrant: a commit with commit_interval=0 runs inside).
        self._lock = threading.RLock()
        #: One commit at a time; held while it writes.
        self._commit_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        try:
            self._db = embedded_sqlite.connect(self.path)
            embedded_sqlite.check_header(self._db, self.path, self.header)
            self.index, tables_of = embedded_files.load_tables(
                self._db, self.path, Design.named(self.header.design)
            )
            #: What the index's sites taught (see nearDupe/sitetemplate.py).
            self.sites = _LockedSites(self._db, self._lock, self._commit_if_due)
            #: The sentences every page is recorded under (base.recorded), by page id.
            self.sample, sample_of = embedded_sample.load_counted(self._db, self.path)
            last = self._db.execute("SELECT COALESCE(MAX(id), 0) FROM pages").fetchone()[0]
            #: The last page the snapshots on disk hold, if they hold every page (else None).
            self._saved: int | None = last if tables_of == sample_of == last else None
            embedded_sqlite.mark_open(self._db, self.path)
            self._writer = embedded_sqlite.connect_writer(self.path)
        except BaseException:
            with contextlib.suppress(Exception):
                self._db.close()
            self._unlock()
            raise
        self._last_commit = time.monotonic()
        self._unsaved = UnsavedPages()
        #: The batch a commit is writing: still found by queries until it is committed.
        self._committing = UnsavedPages()
        self._next_id = last + 1
        self._stop = threading.Event()
        self._committer: threading.Thread | None = None

    def _unlock(self) -> None:
        self._lock_file.close()

    # -- the index -------------------------------------------------------------------------

    def log_drop(self, drop: droplog.Drop) -> None:
        """Remember a drop (durable at the next commit; the last DROP_LOG_LIMIT are kept)."""
        with self._lock:
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
        sentences = Units.of(sentences)
        with self._lock:
            found = list(self._confirmed(fp, self.k if k is None else k, signature))
            if sentences:
                holders = self._holders(sentences)
                found += sentence_matches(sentences, holders, self.sentence_share, fp)
            return found

    def check_and_add(
        self,
        fp: int,
        key: str,
        signature: int | None = None,
        sentences: Sentences = (),
        recrawl_mode: str | None = recrawl.DROP,
        body: int | None = None,
    ) -> Match | None:
        """The nearest stored page within k that ``signature`` confirms, else the page sharing
        the most of ``sentences``; or None after recording the page as new, claiming its URL
        (with ``body``, the exact key of the response it was read from).

        With a ``recrawl_mode``, a URL the index holds is one page: the match is its stored
        version (Match.seen says how the page compares), and nothing is recorded, unless the
        mode is ``changed`` and the page changed: then it is recorded in the version's place
        (``seen.replaced``) if it copies no other stored page (else that page is the match).
        Without one (an unfingerprinted page's exact key) the URL table is left alone."""
        by_url = bool(recrawl_mode and key)  # an item without a URL is no URL's page
        sentences = Units.of(sentences)  # sorted once, its rules read its arrays
        with self._lock:
            held = self._version(key) if by_url else None
            if held is None:
                match, holders = self._copy(fp, signature, sentences)
                if match is None:
                    url = url_hash(key) if by_url else None
                    self._add(fp, key, signature, sentences, holders, url, None, body)
            else:
                seen = recrawl.compare(
                    held,
                    fp,
                    signature,
                    sentences,
                    body,
                    k=self.k,
                    confirm_k=self.confirm_k,
                    share=self.sentence_share,
                )
                stored = storable_key(key)
                match = Match(stored, held.fingerprint, seen.distance, seen.shared, seen)
                if seen.changed and recrawl_mode == recrawl.CHANGED:
                    copy, holders = self._copy(fp, signature, sentences, stored)
                    if copy is None:
                        first = held.first_stored
                        url = url_hash(key)
                        self._add(fp, key, signature, sentences, holders, url, first, body)
                        match = replace(match, seen=replace(seen, replaced=True))
                    else:
                        match = replace(copy, seen=seen)
        self._commit_if_due()
        return match

    def _copy(
        self, fp: int, signature: int | None, sentences: Sentences, other_than: str | None = None
    ) -> tuple[Match | None, list[Holder]]:
        """The nearest stored page (not keyed ``other_than``) that the page copies; if its
        fingerprint copies none, the stored pages recorded under its sentences (their
        verification reads SQLite: a copy found by fingerprint skips it)."""
        match = next(self._confirmed(fp, self.k, signature, other_than), None)
        if match is not None or not sentences:
            return match, []
        holders = self._holders(sentences)
        if not holders:  # judging no holder still reads every sentence of the page
            return None, holders
        found = sentence_matches(sentences, holders, self.sentence_share, fp)
        return next((m for m in found if m.key != other_than), None), holders

    def version(self, key: str) -> recrawl.Version | None:
        """What the index holds under URL ``key``, if it does."""
        with self._lock:
            return self._version(key)

    def _version(self, key: str) -> recrawl.Version | None:
        """See :meth:`version` (under the lock): a claim not yet committed names a page not
        yet committed (they are written together)."""
        signed = to_signed(url_hash(key))
        url = self._unsaved.urls.get(signed) or self._committing.urls.get(signed)
        if url is None:
            return embedded_sqlite.url_version(self._db, key)
        page = self._unsaved.by_id.get(url[1]) or self._committing.by_id.get(url[1])
        return embedded_sqlite.version_of(url, page, key)

    def _confirmed(
        self, fp: int, k: int, signature: int | None, other_than: str | None = None
    ) -> Iterator[Match]:
        """Stored pages within k whose signature confirms ``signature`` (not keyed
        ``other_than``), nearest first (lazily: check-and-add reads the stored keys of the
        first only)."""
        for found, d in _distinct(self.index.query(fp, k)):
            key = self._confirmed_key(found, signature, d, other_than)
            if key is not None:
                yield Match(key, found, d)

    def add(
        self, fp: int, key: str, signature: int | None = None, sentences: Sentences = ()
    ) -> None:
        """Record a page unconditionally (durable at the next commit)."""
        sentences = Units.of(sentences)
        with self._lock:
            holders = self._holders(sentences) if sentences else []
            self._add(fp, key, signature, sentences, holders)
        self._commit_if_due()

    def load(self, chunks: Iterable[BulkPages]) -> int:
        """Record every page of ``chunks`` unconditionally, as :meth:`add` would one by one
        (the same rows and samples); returns their number. Each chunk is committed in one
        transaction and merged into the tables and the sentence sample as one sorted run (the
        snapshots are written at close). A load that starts with a chunk as large as the index
        builds SQLite's index of fingerprints once, at its end (a crash before: at the next
        open)."""
        self.commit()  # the pages added before come first, and their holders are committed
        db = self._writer
        if db is None:
            raise sqlite3.ProgrammingError("the index is closed")
        loaded = 0
        with self._commit_lock, self._lock:
            try:
                for pages in chunks:
                    if not loaded and len(pages) >= len(self):
                        embedded_sqlite.drop_fp_index(db)
                    self._load(db, pages)
                    loaded += len(pages)
            finally:
                embedded_sqlite.create_fp_index(db)
        return loaded

    def distinct(self, pages: BulkPages) -> np.ndarray:
        """Which of ``pages`` can be copies of no stored page and of no other of them, whatever
        their order: fingerprints more than k from every other, no looked-up sentence a stored
        page may be recorded under (by its prefix) or another of them looks up, a URL no other
        claims (its hash). A load records them as checks in feed order would keep them."""
        with self._lock:
            alone = embedded_bulk.distinct(self.index.design, self.k, pages)
            alone &= self.index.found_many(pages.fps, self.k) == 0
            looked, hashes = embedded_bulk.looked_up_units(pages)
            alone[looked[self.sample.counts(hashes) > 0]] = False
            if pages.urls is not None:
                claimed = set(self._unsaved.urls) | set(self._committing.urls)
                claimed |= embedded_sqlite.held_urls(self._db, pages.urls)
                signed = pages.urls.astype(np.uint64).view(np.int64).tolist()
                alone &= np.array([url not in claimed for url in signed], dtype=bool)
        return alone

    def _load(self, db: sqlite3.Connection, pages: BulkPages) -> None:
        """Commit one chunk of :meth:`load`, then add it to the tables and the sample."""
        first_id = self._next_id
        rows, ids, hashes = embedded_bulk.rows(self._db, self.sample, pages, first_id)
        try:
            db.executemany(INSERT_PAGES, rows)
            if pages.urls is not None:
                db.executemany(INSERT_URLS, embedded_bulk.url_rows(rows, pages.urls))
            db.commit()
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.rollback()
            raise
        del rows
        self.index.add_many(pages.fps)
        self.sample.add_many(ids, hashes)
        self._next_id = first_id + len(pages)

    def _add(
        self,
        fp: int,
        key: str,
        signature: int | None,
        sentences: Sentences,
        holders: list[Holder],
        url: int | None = None,
        first: float | None = None,
        body: int | None = None,
    ) -> None:
        """Record a page; with its ``url`` hash, as that URL's newest version (first stored
        at ``first``, if earlier; read from a response of exact key ``body``): in the same
        commit, so a crash never splits them."""
        key = storable_key(key)
        self.index.add(fp)
        page_id, self._next_id = self._next_id, self._next_id + 1
        hashes = self._unsaved.add(page_id, fp, key, signature, sentences, holders)
        if url is not None:
            self._unsaved.claim(url, page_id, first, body)
        self.sample.add(page_id, hashes)

    def _holders(self, sentences: Sentences) -> list[Holder]:
        """The stored pages recorded under one of ``sentences``, oldest first."""
        unsaved = ChainMap(self._unsaved.samples, self._committing.samples)
        return committed_holders(self._db, self.sample, looked_up(sentences), unsaved)

    def _commit_if_due(self) -> None:
        """With commit_interval=0, commit now; else make sure the committer thread runs (called
        without the lock held: a commit takes it)."""
        if self.commit_interval > 0:
            if self._committer is None and (self._unsaved or self.sites.unsaved()):
                with self._lock:
                    if self._committer is None:
                        self._committer = threading.Thread(
                            target=self._commit_every_interval, name="neardupe-commit", daemon=True
                        )
                        self._committer.start()
            return
        # Also called when nothing is added, so a page kept before a run of duplicates does not
        # wait for the next new page to become durable.
        if self._unsaved.pages or self.sites.unsaved():
            self._try_commit()

    def _commit_every_interval(self) -> None:
        """The committer thread: a commit every commit_interval, until the index is closed."""
        while not self._stop.wait(self.commit_interval):
            if self._lock_file.closed:  # let go without a close (tests that mimic a crash)
                return
            # Sites too: a re-crawl that adds no page still learns every host's lines, which
            # leave memory only once they are on disk.
            if self._unsaved.pages or self.sites.unsaved():
                try:
                    self._try_commit()
                except Exception:  # not the disk (that is logged above): keep committing
                    logger.exception("nearDupe: the commit of index %s failed", self.path)

    def _try_commit(self) -> None:
        try:
            self.commit()
        except sqlite3.Error as exc:
            # The pages stay in memory (copies are still caught) and are written by the next
            # commit that succeeds: a full disk must not stop the crawl's decisions.
            logger.warning(
                "nearDupe: cannot write index %s (%s); %d pages kept in memory until it can",
                self.path,
                exc,
                len(self._unsaved.pages),
            )

    def _rows(self, fp: int) -> list[tuple[str, int | None]]:
        """(key, signature) of every page stored with exactly this fingerprint, oldest first."""
        signed = to_signed(fp)
        # The batch being committed first: once committed, its pages are also read below (a
        # page read twice is harmless here).
        committing = self._committing.by_fp.get(signed, [])
        rows = self._db.execute("SELECT key, sig FROM pages WHERE fp = ? ORDER BY id", (signed,))
        unsaved = self._unsaved.by_fp.get(signed, [])
        return [
            (key, None if sig is None else to_unsigned(sig))
            for key, sig in [*rows, *committing, *unsaved]
        ]

    def _confirmed_key(
        self, fp: int, signature: int | None, distance: int, other_than: str | None = None
    ) -> str | None:
        """The first key (not ``other_than``) stored with ``fp`` (at ``distance``) whose
        signature confirms the match, if any."""
        for key, stored in self._rows(fp):
            if key != other_than and confirmed(stored, signature, distance, self.confirm_k):
                return key
        return None

    def pages(self) -> Iterator[tuple[int, str, float]]:
        """Every stored page as (fingerprint, key, time added), oldest first."""
        with self._commit_lock, self._lock:  # no batch half way to the disk
            rows = self._db.execute("SELECT fp, key, added FROM pages ORDER BY id").fetchall()
            unsaved = [(fp, key, added) for _, fp, key, added, *_ in self._unsaved.pages]
        for fp, key, added in rows + unsaved:
            yield to_unsigned(fp), key, added

    def commit(self) -> None:
        """Make every page added so far durable.

        If the disk is full (or the write fails otherwise) the error is raised and the pages
        stay in memory, still found by queries, to be written by the next commit; commits due
        after an add only log it.

        The index's lock is held only to take the batch: checks go on while it is written.
        """
        db = self._writer
        if db is None:
            raise sqlite3.ProgrammingError("the index is closed")
        with self._commit_lock:
            with self._lock:
                batch, self._unsaved = self._unsaved, UnsavedPages()
                self._committing = batch
                sites = self.sites.take()
            try:
                batch.write(db)
                for sql, params in sites:
                    db.execute(sql, params)
                db.commit()
            except BaseException:  # the disk (sqlite3.Error) or anything: the batch is kept
                with contextlib.suppress(sqlite3.Error):
                    db.rollback()
                with self._lock:
                    batch.extend(self._unsaved)
                    self._unsaved, self._committing = batch, UnsavedPages()
                    self.sites.done(committed=False)
                    self._last_commit = time.monotonic()
                raise
            with self._lock:
                self._committing = UnsavedPages()
                self.sites.done(committed=True)
                self._last_commit = time.monotonic()

    def save_snapshot(self) -> None:
        """Write the sorted tables and sentence sample so the next open skips rebuilding them
        (unless the files on disk already hold every page)."""
        self.commit()
        if self._saved is not None and self._saved == self._next_id - 1:
            return
        embedded_files.save_snapshot(self._db, self.path, self.index)
        embedded_sample.save_snapshot(self._db, self.path, self.sample)
        self._saved = self._next_id - 1

    def close(self) -> None:
        """Commit, save the snapshot and release the lock."""
        if self._lock_file.closed:
            return
        self._stop.set()
        if self._committer is not None and self._committer is not threading.current_thread():
            self._committer.join()
        try:
            self.save_snapshot()
            embedded_sqlite.mark_closed(self._db)
        except (sqlite3.Error, OSError) as exc:
            raise IndexFileError(
                f"index {self.path} could not be saved ({exc}): the last "
                f"{len(self._unsaved.pages)} pages added are lost from it, the rest is intact"
            ) from exc
        finally:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            if self._writer is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._writer.close()
                self._writer = None
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


class _LockedSites(SqliteSites):
    """The index's sites, read and counted under its lock (a commit takes their writes from
    its thread and writes them on its own connection); a count is followed by ``counted``
    (the index's commit when due), outside the lock."""

    def __init__(
        self, db: sqlite3.Connection, lock: threading.RLock, counted: Callable[[], None]
    ) -> None:
        super().__init__(db)
        for name, after in (("template", None), ("learn", counted), ("record_host", counted)):
            setattr(self, name, _guarded(getattr(self, name), lock, after))


def _guarded(
    method: Callable[..., T], lock: threading.RLock, after: Callable[[], None] | None = None
) -> Callable[..., T]:
    def call(*args: Any, **kwargs: Any) -> T:
        with lock:
            result = method(*args, **kwargs)
        if after is not None:
            after()
        return result

    return call


def _distinct(matches: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(fingerprint, distance) pairs without repeats (one fingerprint may be stored twice)."""
    return list(dict.fromkeys(matches))
