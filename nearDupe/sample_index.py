"""In-RAM index of the pages' sentence samples: page ids by the top bits of their sentences.

An entry is ``(sentence hash >> 32) << 32 | page id`` (a uint64), one per sentence a page is
recorded under. A hit on the 32-bit prefix is only a candidate (at 4 * 10**8 entries a prefix
is shared by ~0.1 others): the caller verifies it on the page's full hashes. Entries live in
sorted runs plus an unsorted insert buffer; a full buffer becomes a run and runs of similar size
are merged (a log-structured merge). A run stores an entry in 6 bytes, not 8: the top 16 bits
of its prefix are the entry's slot in the run's directory (see nearDupe/_sample_kernels.py), so
a page recorded under SAMPLE_SENTENCES = 4 takes 24 bytes (32 as whole uint64s). Its inner loops
are numpy's until it is large enough for numba's compiled ones to pay and they are loaded
(:func:`nearDupe.kernels.choose`).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

import numpy as np

from nearDupe import kernels
from nearDupe._kernels_numpy import LOW_BITS

#: Bits of a sentence hash kept in RAM, and of a page id beside them (ids up to 4.29 * 10**9).
PREFIX_BITS = ID_BITS = 32
#: A run's directory has a slot per value of the prefix's other bits: 2**16 + 1 offsets of
#: 8 bytes (512 KiB per run, ~8 runs at 4 * 10**8 entries).
SLOTS = 1 << (PREFIX_BITS - LOW_BITS)
_ID_MASK = np.uint64((1 << ID_BITS) - 1)
_SHIFT = np.uint64(ID_BITS)
#: Entries the insert buffer holds before they become a run. Every lookup scans it: at 2 * 10**5
#: pages a lookup of 40 sentences with the buffer half full takes 27 µs at 1024, 58 at 4096;
#: adding a page of 4 sentences 10 µs and 9 (runs' directories are built and merged less often).
BUFFER_SIZE = 1024
#: Candidates a lookup's result arrays hold before they are regrown and the lookup run again
#: (a query of 40 sentences rarely has more than a few).
_OUT_CAP = 256


class Run:
    """Sorted entries, split: directory offsets by the prefix's top bits, its low bits, ids."""

    __slots__ = ("ids", "low", "starts")

    def __init__(self, starts: np.ndarray, low: np.ndarray, ids: np.ndarray) -> None:
        if starts.shape != (SLOTS + 1,) or starts.dtype != np.int64 or low.dtype != np.uint16:
            raise ValueError("not a sample run: wrong directory or low-bits array")
        if ids.dtype != np.uint32 or len(ids) != len(low) or starts[-1] != len(low):
            raise ValueError("not a sample run: ids do not match the entries")
        self.starts, self.low, self.ids = starts, low, ids

    @classmethod
    def of(cls, packed: np.ndarray, kern: ModuleType | None = None) -> Run:
        """The run of sorted packed entries (split by ``kern``'s kernels, else by those
        :func:`~nearDupe.kernels.choose` picks for its size: the result is the same)."""
        kern = kern or kernels.choose(len(packed), sample=True)
        starts = np.empty(SLOTS + 1, dtype=np.int64)
        low, ids = np.empty(len(packed), dtype=np.uint16), np.empty(len(packed), dtype=np.uint32)
        kern.split_run(packed, starts, low, ids)
        return cls(starts, low, ids)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        """Bytes of directory and entries."""
        return self.starts.nbytes + self.low.nbytes + self.ids.nbytes


def entries(ids: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """The packed entries of pages ``ids[i]`` recorded under sentences ``hashes[i]``."""
    ids = np.asarray(ids, dtype=np.uint64)
    if ids.size and int(ids.max()) > int(_ID_MASK):
        raise ValueError(f"page id {int(ids.max())} does not fit in {ID_BITS} bits")
    packed = np.asarray(hashes, dtype=np.uint64) >> _SHIFT  # one new array, then in place
    packed <<= _SHIFT
    packed |= ids
    return packed


class SampleIndex:
    """The page ids recorded under each sentence prefix: sorted runs and an insert buffer.

    A merge holds the two old runs and the new one at once: its peak stays within twice the
    steady size.
    """

    def __init__(self, *, buffer_size: int = BUFFER_SIZE, fanout: int = 8) -> None:
        self.fanout = fanout
        self._runs: list[Run] = []
        self._buffer = np.zeros(buffer_size, dtype=np.uint64)
        self._buffered = 0
        self._choice = kernels.Choice(sample=True)

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs) + self._buffered

    @property
    def kernels(self) -> ModuleType:
        """The kernel module its lookups run now (numpy's or numba's)."""
        return self._choice.module

    def _choose_kernels(self) -> ModuleType:
        """Ask which kernels fit the index's size now (runs are the same for both)."""
        self._choice.update(len(self))
        return self._choice.module

    @property
    def nbytes(self) -> int:
        """Bytes held by the runs and the buffer."""
        return sum(run.nbytes for run in self._runs) + self._buffer.nbytes

    def add(self, page_id: int, hashes: Iterable[int]) -> None:
        """Record page ``page_id`` under the sentences ``hashes``."""
        if page_id >> ID_BITS:
            raise ValueError(f"page id {page_id} does not fit in {ID_BITS} bits")
        for hash_ in hashes:
            self._buffer[self._buffered] = ((hash_ >> ID_BITS) << ID_BITS) | page_id
            self._buffered += 1
            if self._buffered == len(self._buffer):
                self.flush()

    def add_many(self, ids: np.ndarray, hashes: np.ndarray) -> None:
        """Record pages ``ids[i]`` under sentences ``hashes[i]`` (one sorted run, then merges)."""
        packed = entries(ids, hashes)
        if packed.size:
            packed.sort()
            self._runs.append(Run.of(packed, self.kernels))
            self._merge_small_runs()

    def flush(self) -> None:
        """Turn the insert buffer into a sorted run."""
        if self._buffered:
            self._runs.append(Run.of(np.sort(self._buffer[: self._buffered]), self.kernels))
            self._buffered = 0
            self._merge_small_runs()

    def lookup(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(which, ids)``: every page recorded under a sentence with the prefix of
        ``hashes[which[j]]`` is ``ids[j]`` (candidates: verify on the full hash). The number of
        holders of sentence i is at most ``np.bincount(which)[i]``."""
        prefixes = np.asarray(hashes, dtype=np.uint64) >> _SHIFT
        query = prefixes.astype(np.uint32)
        order = np.argsort(prefixes)
        ordered = prefixes[order]
        cap = _OUT_CAP
        kern = self._choose_kernels() if self._choice.stale else self._choice.module
        while True:
            which, found = np.empty(cap, dtype=np.intp), np.empty(cap, dtype=np.uint32)
            n = 0
            for run in self._runs:
                n = kern.lookup_run(run.starts, run.low, run.ids, query, which, found, n)
            n = kern.lookup_buffer(self._buffer, self._buffered, ordered, order, which, found, n)
            if n <= cap:
                return which[:n], found[:n].astype(np.uint64)
            cap = n

    def counts(self, hashes: np.ndarray) -> np.ndarray:
        """How many entries have the prefix of each of ``hashes``: at least the number of
        pages recorded under that sentence (vectorised, for many sentences at once)."""
        query = (np.asarray(hashes, dtype=np.uint64) >> _SHIFT).astype(np.uint32)
        found = np.zeros(len(query), dtype=np.int64)
        for run in self._runs:
            slots = np.repeat(np.arange(SLOTS, dtype=np.uint32), np.diff(run.starts))
            prefixes = (slots << np.uint32(LOW_BITS)) | run.low
            del slots
            found += np.searchsorted(prefixes, query, "right")
            found -= np.searchsorted(prefixes, query, "left")
        buffered = np.sort((self._buffer[: self._buffered] >> _SHIFT).astype(np.uint32))
        found += np.searchsorted(buffered, query, "right")
        found -= np.searchsorted(buffered, query, "left")
        return found

    def compact(self) -> Run:
        """Merge everything into one run and return it (the form saved to disk)."""
        self.flush()
        while len(self._runs) > 1:
            self._merge_last_two()
        return self._runs[0] if self._runs else Run.of(np.zeros(0, dtype=np.uint64), self.kernels)

    @classmethod
    def from_run(cls, run: Run) -> SampleIndex:
        """An index over a run made by :meth:`compact`."""
        index = cls()
        if len(run):
            index._runs.append(run)
            index._choose_kernels()
        return index

    def _merge_small_runs(self) -> None:
        runs = self._runs
        while len(runs) > 1 and len(runs[-1]) * self.fanout >= len(runs[-2]):
            self._merge_last_two()
        self._choose_kernels()

    def _merge_last_two(self) -> None:
        a, b = self._runs[-2:]
        n = len(a) + len(b)
        starts = np.empty(SLOTS + 1, dtype=np.int64)
        low, ids = np.empty(n, dtype=np.uint16), np.empty(n, dtype=np.uint32)
        self.kernels.merge_runs(a.starts, a.low, a.ids, b.starts, b.low, b.ids, starts, low, ids)
        self._runs[-2:] = [Run(starts, low, ids)]
