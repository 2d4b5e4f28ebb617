"""In-memory exact Hamming-ball index: block-permuted sorted runs plus a small insert buffer."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from nearDupe import kernels
from nearDupe.designs import Design

#: Matches a query's result buffer holds before it is regrown and the query run again (a
#: fingerprint rarely has more than a few stored pages within k).
_OUT_CAP = 64


#: A run of n rows gets a directory of 2**(bit_length(n) - 4) slots: n/16 to n/8 entries, at
#: most 0.5 B per fingerprint (uint32 offsets) beside its 8 B key (4-table: 34 B/fp at worst,
#: 36.3 at 1e5 with n/8 to n/4),
_ROWS_PER_SLOT_BITS = 4
#: and at most 2**24 slots (64 MiB per table), whatever the run's size.
_MAX_DIRECTORY_BITS = 24
#: Directory offsets are uint32 (half of int64's 8 B), so a run holds fewer than 2**32 rows.
_MAX_RUN = 2**32 - 1

#: One sorted row per table; separate arrays, so a merge replaces one table at a time.
Rows = tuple[np.ndarray, ...]


def directory_bits(design: Design, n: int) -> int:
    """The top bits a run of n rows has a directory slot for."""
    prefix = min(t.prefix_bits for t in design.tables)
    return max(0, min(prefix, n.bit_length() - _ROWS_PER_SLOT_BITS, _MAX_DIRECTORY_BITS))


@dataclass(frozen=True)
class Run:
    """Sorted permuted fingerprints, one row per table, with a directory on the top bits."""

    keys: Rows
    dirs: np.ndarray
    bits: int
    #: The rows as the kernels take them (for numba's, a typed list: one compiled signature
    #: whatever the table count).
    rows: Any

    @classmethod
    def build(
        cls, design: Design, keys: Rows, kern: ModuleType, dirs: np.ndarray | None = None
    ) -> Run:
        """Wrap sorted rows, adding a directory of about n/8 entries per table (<= 0.5 B/fp),
        or the ``dirs`` saved with them (checked for shape only); ``kern``: the kernel module
        that will query it."""
        n = len(keys[0])
        if n > _MAX_RUN:
            raise ValueError(f"a run holds at most {_MAX_RUN} fingerprints, not {n}")
        bits = directory_bits(design, n)
        shape = (len(keys), (1 << bits) + 1)
        if dirs is None:
            dirs = np.empty(shape, dtype=np.uint32)
            for row, out in zip(keys, dirs, strict=True):
                kern.directory(row, bits, out)
        elif dirs.shape != shape or dirs.dtype != np.uint32:
            raise ValueError(f"a directory of {dirs.dtype} {dirs.shape}, expected {shape}")
        return cls(keys, dirs, bits, kern.row_list(keys))

    def for_kernels(self, kern: ModuleType) -> Run:
        """The same run for another kernel module (the directory is the same)."""
        return Run(self.keys, self.dirs, self.bits, kern.row_list(self.keys))

    def __len__(self) -> int:
        return len(self.keys[0])

    @property
    def nbytes(self) -> int:
        """Bytes of keys and directory."""
        return sum(row.nbytes for row in self.keys) + self.dirs.nbytes


class BlockIndex:
    """All stored fingerprints within Hamming distance k of a query, exactly.

    Each run holds one uint64 row per table: row t holds every fingerprint of the run under
    table t's permutation, sorted, so a query binary-searches its own prefix in each row.
    New fingerprints go to an unsorted buffer that queries scan directly; a full buffer becomes
    a run, and runs of similar size are merged (a log-structured merge), so an insert never
    re-sorts everything. A merge builds one table's row at a time and frees the merged runs'
    row before the next, so it needs one table's row beyond the index (1 + 1/tables).

    Its inner loops are numpy's until the index is large enough for numba's compiled ones to
    pay and they are loaded (:func:`nearDupe.kernels.choose`, asked again after each new run
    and when the compiled ones become available).
    """

    def __init__(self, design: Design, *, buffer_size: int = 1024, fanout: int = 8) -> None:
        self.design = design
        self.fanout = fanout
        self._perm = design.packed
        self._out = np.zeros((2, _OUT_CAP), dtype=np.uint64)
        self._runs: list[Run] = []
        self._buffer = np.zeros(buffer_size, dtype=np.uint64)
        self._buffered = 0
        self._choice = kernels.Choice()

    @property
    def k(self) -> int:
        """The largest distance this index's design answers exactly."""
        return self.design.k

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs) + self._buffered

    @property
    def nbytes(self) -> int:
        """Bytes held by the runs and the buffer."""
        return sum(run.nbytes for run in self._runs) + self._buffer.nbytes

    def add(self, fp: int) -> None:
        """Store one fingerprint."""
        self._buffer[self._buffered] = fp
        self._buffered += 1
        if self._buffered == len(self._buffer):
            self.flush()

    def add_many(self, fps: Iterable[int] | np.ndarray) -> None:
        """Store many fingerprints at once (one sorted run, then merges)."""
        fps = np.ascontiguousarray(fps, dtype=np.uint64)  # the kernels are compiled for C order
        if fps.size:
            self._runs.append(self._build_run(fps))
            self._merge_small_runs()

    def flush(self) -> None:
        """Turn the insert buffer into a sorted run."""
        if self._buffered:
            self._runs.append(self._build_run(self._buffer[: self._buffered]))
            self._buffered = 0
            self._merge_small_runs()

    def compact(self) -> Rows:
        """Merge everything into one run and return its rows (the form saved to disk)."""
        return self.compact_run()[0]

    def compact_run(self) -> tuple[Rows, np.ndarray]:
        """Merge everything into one run and return its rows and directory."""
        self.flush()
        if not self._runs:
            empty = tuple(np.zeros(0, dtype=np.uint64) for _ in self.design.tables)
            run = Run.build(self.design, empty, self.kernels)
            return run.keys, run.dirs
        if len(self._runs) > 1:
            self._merge_last(len(self._runs))
        return self._runs[0].keys, self._runs[0].dirs

    @classmethod
    def from_run(
        cls,
        design: Design,
        rows: Sequence[np.ndarray] | np.ndarray,
        dirs: np.ndarray | None = None,
        **kwargs: int,
    ) -> BlockIndex:
        """An index over the rows made by :meth:`compact` (same design), without re-sorting;
        with the directory :meth:`compact_run` gave with them, without rebuilding it."""
        keys = tuple(np.ascontiguousarray(row) for row in rows)
        shapes = {row.shape for row in keys}
        if len(keys) != len(design.tables) or len(shapes) != 1 or len(next(iter(shapes))) != 1:
            raise ValueError(
                f"{len(keys)} rows of shapes {sorted(shapes)} do not fit design "
                f"{design.name} ({len(design.tables)} tables of uint64)"
            )
        if any(row.dtype != np.uint64 for row in keys):
            raise ValueError(f"rows of dtype {keys[0].dtype} do not fit design {design.name}")
        index = cls(design, **kwargs)
        if len(keys[0]):
            index._runs.append(Run.build(design, keys, index.kernels, dirs))
            index._choose_kernels()
        return index

    @property
    def kernels(self) -> ModuleType:
        """The kernel module its queries run now (numpy's or numba's)."""
        return self._choice.module

    def _choose_kernels(self) -> ModuleType:
        """Ask which kernels fit the index's size now; rewrap the runs if they change."""
        if self._choice.update(len(self)):
            self._runs = [run.for_kernels(self._choice.module) for run in self._runs]
        return self._choice.module

    def fingerprints(self) -> np.ndarray:
        """Every stored fingerprint (unsorted)."""
        parts = [self.design.unpermute(0, run.keys[0]) for run in self._runs]
        parts.append(self._buffer[: self._buffered].copy())
        return np.concatenate(parts)

    def query(self, fp: int, k: int | None = None) -> list[tuple[int, int]]:
        """(fingerprint, distance) of every stored fingerprint within k, nearest first."""
        k = self._check_k(k)
        q = np.uint64(fp)
        out = self._out
        kern = self._choose_kernels() if self._choice.stale else self._choice.module
        while True:
            n = 0
            for run in self._runs:
                n = kern.query_run(run.rows, run.dirs, q, k, self._perm, out, n)
            n = kern.query_buffer(self._buffer, self._buffered, q, k, out, n)
            if n <= out.shape[1]:
                return _sorted_matches(out[:, :n])
            out = np.zeros((2, n), dtype=np.uint64)

    def query_many(
        self, fps: Iterable[int] | np.ndarray, k: int | None = None
    ) -> list[list[tuple[int, int]]]:
        """:meth:`query` for many fingerprints, one compiled loop per run."""
        return _batch_matches(*self._query_many(fps, k))

    def found_many(self, fps: Iterable[int] | np.ndarray, k: int | None = None) -> np.ndarray:
        """How many stored fingerprints are within k of each of ``fps``."""
        return self._query_many(fps, k)[1]

    def _query_many(
        self, fps: Iterable[int] | np.ndarray, k: int | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(out, n): the n[i] matches of query i are out[i, :, :n[i]] (fingerprints, distances)."""
        k = self._check_k(k)
        qs = np.asarray(fps, dtype=np.uint64)
        cap = _OUT_CAP
        kern = self._choose_kernels() if self._choice.stale else self._choice.module
        while True:
            out = np.empty((len(qs), 2, cap), dtype=np.uint64)  # only out[i, :, :n[i]] is read
            n = np.zeros(len(qs), dtype=np.int64)
            for run in self._runs:
                kern.query_run_many(run.rows, run.dirs, qs, k, self._perm, out, n)
            kern.query_buffer_many(self._buffer, self._buffered, qs, k, out, n)
            if n.size == 0 or n.max() <= cap:
                return out, n
            cap = int(n.max())

    def _check_k(self, k: int | None) -> int:
        if k is None:
            return self.design.k
        if not 0 <= k <= self.design.k:
            raise ValueError(f"k={k} is outside 0..{self.design.k} for design {self.design.name}")
        return k

    def _build_run(self, fps: np.ndarray) -> Run:
        keys = []
        for p in self._perm:
            row = np.empty(len(fps), dtype=np.uint64)
            self.kernels.permute(fps, p, row)
            row.sort()  # in place
            keys.append(row)
        return Run.build(self.design, tuple(keys), self.kernels)

    def _merge_last(self, count: int) -> None:
        """Replace the last ``count`` runs by their merge, one table at a time."""
        by_size = sorted(self._runs[-count:], key=len)  # smallest first: less copying
        if sum(map(len, by_size)) > _MAX_RUN:  # checked before any run is taken apart
            raise ValueError(f"a run holds at most {_MAX_RUN} fingerprints")
        del self._runs[-count:]
        per_table = [list(rows) for rows in zip(*(run.keys for run in by_size), strict=True)]
        del by_size  # now only ``per_table`` holds the rows
        merged = []
        for t, parts in enumerate(per_table):
            per_table[t] = []
            row = parts.pop(0)
            while parts:
                part = parts.pop(0)
                out = np.empty(len(row) + len(part), dtype=np.uint64)
                self.kernels.merge(row, part, out)
                row = out
                del part, out  # free the merged rows before building the next table's row
            merged.append(row)
        self._runs.append(Run.build(self.design, tuple(merged), self.kernels))

    def _merge_small_runs(self) -> None:
        runs = self._runs
        while len(runs) > 1 and len(runs[-1]) * self.fanout >= len(runs[-2]):
            self._merge_last(2)
        self._choose_kernels()


def _sorted_matches(out: np.ndarray) -> list[tuple[int, int]]:
    if out.shape[1] == 0:
        return []
    fps, dists = out.tolist()
    return sorted(zip(fps, dists, strict=True), key=lambda m: (m[1], m[0]))


def _batch_matches(out: np.ndarray, n: np.ndarray) -> list[list[tuple[int, int]]]:
    """Per query, its matches nearest first; one tolist() for the whole batch."""
    results: list[list[tuple[int, int]]] = [[] for _ in range(len(n))]
    hit = np.flatnonzero(n)
    if hit.size == 0:
        return results
    counts = n[hit].tolist()
    rows = out[hit, :, : max(counts)].tolist()
    for i, c, (fps, dists) in zip(hit.tolist(), counts, rows, strict=True):
        pairs = list(zip(fps[:c], dists[:c], strict=True))
        if c > 1:
            pairs.sort(key=lambda m: (m[1], m[0]))
        results[i] = pairs
    return results
