"""The embedded index directory's other files: the lock, and the tables' numpy snapshot.

The snapshot is one (tables, n) uint64 ``.npy`` file, written one table's row at a time (a
header, then each row), so saving never holds a joined copy of the tables, and its directory
(``tables-dirs.npy``). An open maps the rows (copy on write: nothing is written back) and
reads the directory: it reads nothing that grows with the index, and the kernel pages the
rows in as the lookups touch them (asked to read them ahead at once). What is read is checked
at open: the file's length, and an xxh3 (recorded in ``meta``) of its shape, its directory
and the first and last SPOT_ROWS values of each row, which a stale, truncated or swapped file
fails. A snapshot of an earlier version (no directory) is read whole and checked by the xxh3
of all its rows.
"""

from __future__ import annotations

import logging
import math
import mmap
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

_SNAPSHOT, _DIRS, _LOCK = "tables.npy", "tables-dirs.npy", "lock"
_DTYPE = np.dtype("<u8")
#: Values at each end of every row that the check at open reads.
SPOT_ROWS = 512


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


def load_tables(db: sqlite3.Connection, path: Path, design: Design) -> tuple[BlockIndex, int]:
    """The tables of every stored page: the snapshot's, then the pages added after it; and
    the pages the snapshot held (0: rebuilt, or to be saved again in this version's form)."""
    snapshot_rows = int(meta(db, "snapshot_rows") or 0)
    index, current = _read_snapshot(db, path, design, snapshot_rows)
    if index is None:
        index, snapshot_rows = BlockIndex(design), 0
    rest = db.execute("SELECT fp FROM pages WHERE id > ?", (snapshot_rows,))
    index.add_many(np.fromiter((to_unsigned(r[0]) for r in rest), dtype=np.uint64))
    return index, snapshot_rows if current else 0


def _read_snapshot(
    db: sqlite3.Connection, path: Path, design: Design, rows: int
) -> tuple[BlockIndex | None, bool]:
    """The tables of the first ``rows`` pages from the snapshot, or None if it is unusable;
    whether it is in this version's form."""
    snapshot = path / _SNAPSHOT
    if not rows:
        return None, False
    # Its length, recorded beside it (counting the pages takes ~0.4 s a 10**6 of them).
    pages = meta(db, "snapshot_pages")
    if pages is None:  # saved by a version that did not record it
        pages = db.execute("SELECT COUNT(*) FROM pages WHERE id <= ?", (rows,)).fetchone()[0]
    shape = (len(design.tables), int(pages))
    spot = meta(db, "snapshot_spot_xxh3")
    checksum = meta(db, "snapshot_xxh3")
    try:
        if spot is not None:
            mapped = tuple(map_npy(snapshot, _DTYPE, shape))
            dirs = np.load(path / _DIRS, allow_pickle=False)
            if spot_checksum(dirs, mapped) != spot:
                raise ValueError("checksum mismatch")
            return BlockIndex.from_run(design, mapped, dirs), True
        with open(snapshot, "rb") as f:
            keys = read_rows(f, *shape)
        if checksum is not None and _checksum(keys) != checksum:
            raise ValueError("checksum mismatch")
        return BlockIndex.from_run(design, keys), False
    except (OSError, ValueError, EOFError) as exc:
        logger.warning("Rebuilding the tables of index %s from its pages: %s", path, exc)
        return None, False


def spot_checksum(directory: np.ndarray, rows: Sequence[np.ndarray]) -> str:
    """xxh3-64 of a snapshot's shape, its directory and the SPOT_ROWS values at each end of
    each of its rows."""
    digest = xxh3_64(repr((len(rows), *(len(row) for row in rows))).encode())
    digest.update(np.ascontiguousarray(directory).data)
    for row in rows:
        digest.update(np.ascontiguousarray(row[:SPOT_ROWS]).data)
        digest.update(np.ascontiguousarray(row[-SPOT_ROWS:]).data)
    return f"{digest.intdigest():016x}"


def map_npy(file: Path, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The array of a ``.npy`` file of ``dtype`` and ``shape`` (else ValueError), mapped copy
    on write (the process may change it; the file never changes), its pages asked for ahead."""
    with open(file, "rb") as f:
        _read_header(f, dtype, shape)
        offset, size = f.tell(), os.fstat(f.fileno()).st_size
        nbytes = dtype.itemsize * math.prod(shape)
        if size != offset + nbytes:
            raise ValueError(f"{file.name} holds {size - offset} bytes, expected {nbytes}")
        if not nbytes:
            return np.zeros(shape, dtype=dtype)
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    if hasattr(mapped, "madvise"):
        mapped.madvise(mmap.MADV_WILLNEED)
    return np.frombuffer(mapped, dtype, math.prod(shape), offset).reshape(shape)


def read_rows(f: BufferedIOBase, tables: int, n: int) -> list[np.ndarray]:
    """The rows of a (tables, n) uint64 ``.npy`` file, read one at a time."""
    _read_header(f, _DTYPE, (tables, n))
    rows = []
    for _ in range(tables):
        row = np.empty(n, dtype=_DTYPE)
        if f.readinto(row.data.cast("B")) != row.nbytes:
            raise ValueError("truncated")
        rows.append(row)
    return rows


def _read_header(f: BinaryIO | BufferedIOBase, dtype: np.dtype, shape: tuple[int, ...]) -> None:
    """Read a ``.npy`` file's header; ValueError unless it holds ``dtype`` of ``shape``."""
    version = np.lib.format.read_magic(f)
    found, fortran, stored = (
        np.lib.format.read_array_header_1_0(f)
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0(f)
    )
    if found != shape or fortran or stored != dtype:
        raise ValueError(f"holds {stored} {found}, expected {dtype} {shape}")


def save_snapshot(db: sqlite3.Connection, path: Path, index: BlockIndex) -> None:
    """Write the sorted tables of the committed pages and record them in ``db``."""
    rows = db.execute("SELECT COALESCE(MAX(id), 0) FROM pages").fetchone()[0]
    keys, dirs = index.compact_run()
    write_atomically(path / _SNAPSHOT, lambda f: write_rows(f, keys))
    save_npy(path / _DIRS, dirs)
    set_meta(db, "snapshot_rows", str(rows))
    set_meta(db, "snapshot_pages", str(len(keys[0])))
    set_meta(db, "snapshot_spot_xxh3", spot_checksum(dirs, keys))
    db.execute("DELETE FROM meta WHERE name = 'snapshot_xxh3'")
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


def save_npy(target: Path, array: np.ndarray) -> None:
    """Write ``array`` as the ``.npy`` file ``target``, whole or not at all."""
    write_atomically(target, lambda f: np.save(f, array, allow_pickle=False))


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
