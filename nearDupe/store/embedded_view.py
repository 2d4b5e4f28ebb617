"""An embedded index read-only, through its SQLite file (see nearDupe.store.view)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import TypeVar

from nearDupe.errors import IndexFileError
from nearDupe.sample_index import SampleIndex
from nearDupe.shorttext import Sentences
from nearDupe.sitetemplate import SiteTemplate
from nearDupe.store import droplog, embedded_sample
from nearDupe.store.base import Holder, IndexHeader
from nearDupe.store.embedded_sqlite import DB, to_unsigned, url_version
from nearDupe.store.recrawl import Version
from nearDupe.store.sites import read_mirrors, read_site
from nearDupe.store.view import StoredPage

T = TypeVar("T")


class EmbeddedView:
    """An embedded index directory, each call on a read-only connection of its own."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.source = str(self.path)
        if not (self.path / DB).is_file():
            raise IndexFileError(
                f"no nearDupe index at {self.path} (set NEARDUPE_INDEX, or crawl first)"
            )
        row = self._unreadable_fails(
            lambda db: db.execute("SELECT value FROM meta WHERE name = 'header'").fetchone()
        )
        if row is None:
            raise IndexFileError(f"index {self.path} has no header")
        try:
            stored = json.loads(row[0])
        except ValueError as exc:
            raise IndexFileError(f"index {self.path} has an unreadable header") from exc
        names = {f.name for f in fields(IndexHeader)}
        self.header = IndexHeader(**{n: v for n, v in stored.items() if n in names})
        #: The sentence samples of the index's pages, read at the first lookup.
        self._sample: SampleIndex | None = None

    def format(self) -> int:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return self.header.format

    def pages(self) -> list[StoredPage]:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        rows = self._unreadable_fails(
            lambda db: db.execute("SELECT fp, key, added, sig FROM pages ORDER BY id").fetchall()
        )
        return [
            StoredPage(to_unsigned(fp), key, added, None if sig is None else to_unsigned(sig))
            for fp, key, added, sig in rows
        ]

    def drops(self) -> list[droplog.Drop]:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return self._unreadable_fails(droplog.read)

    def version(self, url: str) -> Version | None:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return self._older_answers(None, lambda db: url_version(db, url))

    def holders(self, sentences: Sentences) -> list[Holder]:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""

        def read(db: sqlite3.Connection) -> list[Holder]:
            if self._sample is None:
                self._sample = embedded_sample.load(db, self.path)
            return embedded_sample.committed_holders(db, self._sample, sentences)

        return self._older_answers([], read)

    def site(self, host: str) -> SiteTemplate:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return self._older_answers(SiteTemplate(), lambda db: SiteTemplate(read_site(db, host)))

    def mirrors(self) -> dict[str, str]:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return self._older_answers({}, read_mirrors)

    def disk_bytes(self) -> int | None:
        """See :class:`~nearDupe.store.view.ReadOnlyIndex`."""
        return sum(p.stat().st_size for p in self.path.iterdir() if p.is_file())

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection (no lock: a crawl may be writing), closed after use."""
        db = sqlite3.connect((self.path / DB).resolve().as_uri() + "?mode=ro", uri=True)
        try:
            yield db
        finally:
            db.close()

    def _unreadable_fails(self, read: Callable[[sqlite3.Connection], T]) -> T:
        """What ``read`` answers; an SQLite error is an index this version cannot read."""
        try:
            with self._connection() as db:
                return read(db)
        except sqlite3.Error as exc:
            raise IndexFileError(
                f"index {self.path / DB} is unreadable or was made by another nearDupe "
                f"version: {exc}"
            ) from exc

    def _older_answers(self, missing: T, read: Callable[[sqlite3.Connection], T]) -> T:
        """What ``read`` answers, or ``missing`` from an index written before what it reads
        was kept (the next crawl adds it)."""
        try:
            with self._connection() as db:
                return read(db)
        except sqlite3.Error:
            return missing
