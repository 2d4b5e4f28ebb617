"""The embedded index directory's other files: the lock, and the tables' numpy snapshot.

The snapshot is one (tables, n) uint64 ``.npy`` file, written and read one table's row at a
time (a header, then each row), so saving and loading never hold a joined copy of the tables.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from io import BufferedIOBase
from pathlib import Path
from typing import BinaryIO

import numpy as np
from xxhash import xxh3_64

from nearDupe.designs import Design
from nearDupe.errors import IndexFileError, IndexLocked
from nearDupe.index import BlockIndex
from nearDupe.store.embedded_sqlite import meta, set_meta, to_unsigned

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory lock
    fcntl = None  # type: ignore[assignment]

#: Logged under the index's module name, which logging settings know.
logger = logging.getLogger("nearDupe.store.embedded")

_SNAPSHOT, _LOCK = "tables.npy", "lock"
_DTYPE = np.dtype("<u8")


def _checksum(rows: Iterable[np.ndarray]) -> str:
    """xxh3-64 of a snapshot's table bytes (catches bit rot that keeps the shape intact)."""
    digest = xxh3_64()
    for row in rows:
        digest.update(row.data)
    return f"{digest.intdigest():016x}"


def lock(path: Path) -> BinaryIO:
    """The index directory's lock file (created with the directory), held by this process."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        lock_file = open(path / _LOCK, "a+b")  # noqa: SIM115 - held while open
    except OSError as exc:
        raise IndexFileError(f"cannot open index directory {path}: {exc}") from exc
    if fcntl is not None:
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock_file.close()
            raise IndexLocked(
                f"index {path} is open in another process; the embedded index serves "
                "one process at a time: share an index between processes with "
                "NEARDUPE_INDEX='redis://host:port/db'"
            ) from None
    return lock_file


def load_tables(db: sqlite3.Connection, path: Path, design: Design) -> BlockIndex:
    """The tables of every stored page: the snapshot's, then the pages added after it."""
    snapshot_rows = int(meta(db, "snapshot_rows") or 0)
    index = _read_snapshot(db, path, design, snapshot_rows)
    if index is None:
        index, snapshot_rows = BlockIndex(design), 0
    rest = db.execute("SELECT fp FROM pages WHERE id > ?", (snapshot_rows,))
    index.add_many(np.fromiter((to_unsigned(r[0]) for r in rest), dtype=np.uint64))
    return index


def _read_snapshot(
    db: sqlite3.Connection, path: Path, design: Design, rows: int
) -> BlockIndex | None:
    """The tables of the first ``rows`` pages from the snapshot, or None if it is unusable."""
    snapshot = path / _SNAPSHOT
    if not rows:
        return None
    # Its length, recorded beside it (counting the pages takes ~0.4 s a 10**6 of them).
    pages = meta(db, "snapshot_pages")
    if pages is None:  # saved by a version that did not record it
        pages = db.execute("SELECT COUNT(*) FROM pages WHERE id <= ?", (rows,)).fetchone()[0]
    checksum = meta(db, "snapshot_xxh3")
    try:
        with open(snapshot, "rb") as f:
            keys = read_rows(f, len(design.tables), int(pages))
        if checksum is not None and _checksum(keys) != checksum:
            raise ValueError("checksum mismatch")
        return BlockIndex.from_run(design, keys)
    except (OSError, ValueError, EOFError) as exc:
        logger.warning("Rebuilding the tables of index %s from its pages: %s", path, exc)
        return None


def read_rows(f: BufferedIOBase, tables: int, n: int) -> list[np.ndarray]:
    """The rows of a (tables, n) uint64 ``.npy`` file, read one at a time."""
    version = np.lib.format.read_magic(f)
    shape, fortran, dtype = (
        np.lib.format.read_array_header_1_0(f)
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0(f)
    )
    if shape != (tables, n) or fortran or dtype != _DTYPE:
        raise ValueError(f"holds {dtype} {shape}, expected {_DTYPE} {(tables, n)}")
    rows = []
    for _ in range(tables):
        row = np.empty(n, dtype=_DTYPE)
        if f.readinto(row.data.cast("B")) != row.nbytes:
            raise ValueError("truncated")
        rows.append(row)
    return rows


def save_snapshot(db: sqlite3.Connection, path: Path, index: BlockIndex) -> None:
    """Write the sorted tables of the committed pages and record them in ``db``."""
    rows = db.execute("SELECT COALESCE(MAX(id), 0) FROM pages").fetchone()[0]
    keys = index.compact()
    write_atomically(path / _SNAPSHOT, lambda f: write_rows(f, keys))
    set_meta(db, "snapshot_rows", str(rows))
    set_meta(db, "snapshot_pages", str(len(keys[0])))
    set_meta(db, "snapshot_xxh3", _checksum(keys))
    db.commit()


def write_atomically(target: Path, write: Callable[[BufferedIOBase], object]) -> None:
    """Write ``target`` whole or not at all: ``write`` fills a temporary file beside it,
    synced to disk, which then replaces it."""
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)


def write_rows(f: BufferedIOBase, rows: Sequence[np.ndarray]) -> None:
    """Write equal-length uint64 rows as one (len(rows), n) ``.npy`` array, row by row."""
    header = {
        "descr": np.lib.format.dtype_to_descr(_DTYPE),
        "fortran_order": False,
        "shape": (len(rows), len(rows[0])),
    }
    np.lib.format.write_array_header_1_0(f, header)
    for row in rows:
        f.write(row.data)
