"""The embedded index's SQLite file: schema, header check, and fingerprints as SQLite integers."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nearDupe.errors import IndexFileError, IndexSettingsMismatch
from nearDupe.store import droplog, recrawl
from nearDupe.store.base import IndexHeader, Sketch, storable_key, url_hash

#: Logged under the index's module name, which logging settings know.
logger = logging.getLogger("nearDupe.store.embedded")

_SIGN = 1 << 63
#: The SQLite file in the index directory.
DB = "pages.sqlite3"
#: The meta entry "1" from an open until the clean close that sets it to "0": found "1" (or
#: missing from an index that has pages) at open, the last process crashed or was killed, and
#: the file gets SQLite's whole-file check, which grows with the index (seconds at 10**7 pages);
#: a clean close skips it (the snapshots read at open are checked by their checksums).
IN_USE = "in_use"


#: SQLite's index of the pages by fingerprint (the keys of a match are read by it).
_FP_INDEX = "CREATE INDEX IF NOT EXISTS pages_fp ON pages(fp)"


def drop_fp_index(db: sqlite3.Connection) -> None:
    """Drop the index of the pages by fingerprint (a bulk load builds it again at its end)."""
    db.execute("DROP INDEX IF EXISTS pages_fp")
    db.commit()


def create_fp_index(db: sqlite3.Connection) -> None:
    """Build the index of the pages by fingerprint, if it is missing."""
    db.execute(_FP_INDEX)
    db.commit()


def to_signed(fp: int) -> int:
    """A uint64 fingerprint as SQLite's signed 64-bit INTEGER."""
    return fp - (1 << 64) if fp >= _SIGN else fp


def to_unsigned(value: int) -> int:
    """Inverse of :func:`to_signed`."""
    return value + (1 << 64) if value < 0 else value


def connect(path: Path) -> sqlite3.Connection:
    """The index directory's SQLite file, opened in WAL mode with its tables created."""
    db_path = path / DB
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
                added REAL NOT NULL, sig INTEGER, letters INTEGER, sketched INTEGER,
                tails BLOB, sample BLOB);
            CREATE TABLE IF NOT EXISTS urls (
                hash INTEGER PRIMARY KEY, page INTEGER NOT NULL, first REAL NOT NULL,
                changed REAL, body INTEGER);
            """
            + _FP_INDEX
            + ";"
            + droplog.SCHEMA
        )
        _check_after_crash(db, db_path)
    except sqlite3.Error as exc:
        if db is not None:
            db.close()
        raise _unusable(db_path, exc) from exc
    return db


def _unusable(db_path: Path, exc: sqlite3.Error) -> IndexFileError:
    """The error of an index file SQLite cannot read or write."""
    return IndexFileError(f"index file {db_path} is unusable: {exc}")


def _check_after_crash(db: sqlite3.Connection, db_path: Path) -> None:
    """SQLite's check of the whole file (about a second per 10**6 pages), only when the last
    process that opened it did not close it (see :data:`IN_USE`)."""
    state = meta(db, IN_USE)
    if state is None:  # a new index, or one an earlier version wrote (checked once)
        state = "1" if db.execute("SELECT 1 FROM pages LIMIT 1").fetchone() else "0"
    if state == "0":
        return
    logger.info("Index file %s was not closed cleanly: checking it whole", db_path)
    problems = [row[0] for row in db.execute("PRAGMA quick_check(3)")]
    if problems != ["ok"]:
        raise sqlite3.DatabaseError("; ".join(problems))


def mark_open(db: sqlite3.Connection, path: Path) -> None:
    """Record that a process has the index open, before it adds a page (see :data:`IN_USE`)."""
    try:
        set_meta(db, IN_USE, "1")
        db.commit()
    except sqlite3.Error as exc:
        db.rollback()
        raise _unusable(path / DB, exc) from exc


def mark_closed(db: sqlite3.Connection) -> None:
    """Record a clean close (everything committed, snapshots saved): the next open skips
    SQLite's whole-file check."""
    set_meta(db, IN_USE, "0")
    db.commit()


def connect_writer(path: Path) -> sqlite3.Connection:
    """A second connection to the index's SQLite file (opened by :func:`connect`), for the
    commits: they write the WAL, and checkpoint it, while the first one goes on reading."""
    db = sqlite3.connect(path / DB, isolation_level="DEFERRED", check_same_thread=False)
    try:
        db.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error:
        db.close()
        raise
    return db


def held_urls(db: sqlite3.Connection, hashes: np.ndarray) -> set[int]:
    """The signed ``hashes`` (URL hashes) the committed URL table holds."""
    signed = json.dumps(hashes.astype(np.uint64).view(np.int64).tolist())
    rows = db.execute(
        "SELECT hash FROM urls WHERE hash IN (SELECT value FROM json_each(?))", (signed,)
    )
    return {url for (url,) in rows}


def url_version(db: sqlite3.Connection, key: str) -> recrawl.Version | None:
    """What the committed URL table holds under URL ``key`` (see :func:`version_of`)."""
    row = db.execute(
        "SELECT u.hash, u.page, u.first, u.changed, u.body, p.id, p.fp, p.key, p.added, p.sig,"
        " p.letters, p.sketched, p.tails FROM urls u JOIN pages p ON p.id = u.page"
        " WHERE u.hash = ?",
        (to_signed(url_hash(key)),),
    ).fetchone()
    return None if row is None else version_of(row[:5], row[5:], key)


def version_of(url: Sequence[Any], page: Sequence[Any] | None, key: str) -> recrawl.Version | None:
    """URL ``key``'s version from its row in the URL table (hash, page id, first stored, last
    changed, body key) and the row of the page it names (id, fp, key, added, sig, letters,
    sketched, tails): None if that page does not carry the URL (a hash two URLs share)."""
    if page is None or page[2] != storable_key(key):
        return None
    _, _, first, changed, body = url
    _, fp, _, _, sig, letters, sketched, tails = page[:8]
    sketch = None if letters is None else Sketch(letters, sketched or 0, tails or b"")
    return recrawl.Version(
        to_unsigned(fp),
        None if sig is None else to_unsigned(sig),
        sketch,
        first,
        changed,
        None if body is None else to_unsigned(body),
    )


def meta(db: sqlite3.Connection, name: str) -> str | None:
    """The value stored under ``name`` in the meta table, if any."""
    row = db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


def set_meta(db: sqlite3.Connection, name: str, value: str) -> None:
    """Store ``value`` under ``name`` in the meta table (uncommitted)."""
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))


def check_header(db: sqlite3.Connection, path: Path, header: IndexHeader) -> None:
    """Write ``header`` into a new index, or check it against the stored one (a new design
    only has the tables rebuilt)."""
    db_path = path / DB
    stored = meta(db, "header")
    if stored is None:
        if db.execute("SELECT 1 FROM pages LIMIT 1").fetchone():
            raise IndexFileError(f"index file {db_path} has pages but no header")
        set_meta(db, "header", json.dumps(header.to_dict(), sort_keys=True))
        db.commit()
        return
    try:
        stored_header = json.loads(stored)
    except ValueError as exc:
        raise IndexFileError(f"index file {db_path} has an unreadable header") from exc
    problems = header.mismatches(stored_header, design=False)
    if problems:
        raise IndexSettingsMismatch(
            f"index {db_path} was built with other settings: {'; '.join(problems)}. "
            "Open it with its own settings or point NEARDUPE_INDEX at a new location."
        )
    redesigned = stored_header.get("design") != header.design
    if redesigned:
        # The tables are derived from the pages: rebuilt for the new design, once.
        logger.info(
            "Index %s: rebuilding its tables for design %s (was %s)",
            path,
            header.design,
            stored_header.get("design"),
        )
    if redesigned:
        try:
            set_meta(db, "snapshot_rows", "0")
            set_meta(db, "header", json.dumps(header.to_dict(), sort_keys=True))
            db.commit()
        except sqlite3.Error as exc:
            db.rollback()
            raise layout_error(path, exc) from exc


def layout_error(path: Path, exc: sqlite3.Error) -> IndexFileError:
    """The error of an index whose layout could not be brought up to date (nothing changed)."""
    return IndexFileError(
        f"index {path} could not be brought to this version's layout ({exc}); its files are "
        "unchanged: free disk space and open it again, or crawl into a new NEARDUPE_INDEX"
    )
