"""In-RAM index of the pages' sentence samples: page ids by the top bits of their sentences.

Each entry is one uint64, ``(sentence hash >> 32) << 32 | page id``: 8 bytes per recorded
sentence, 32 per page recorded under SAMPLE_SENTENCES = 4. A hit on the 32-bit prefix is only a
candidate (at 4 * 10**8 entries a prefix is shared by ~0.1 others): the caller verifies it on
the page's full hashes. Entries live in sorted runs plus an unsorted insert buffer; a full
buffer becomes a run and runs of similar size are merged (a log-structured merge).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

#: Bits of a sentence hash kept in RAM, and of a page id beside them (ids up to 4.29 * 10**9).
PREFIX_BITS = ID_BITS = 32
_ID_MASK = np.uint64((1 << ID_BITS) - 1)
_SHIFT = np.uint64(ID_BITS)
_EMPTY = np.zeros(0, dtype=np.uint64)


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

    Merges concatenate two runs and sort the result in place, so a merge holds at most the
    old runs and the new one at once: its peak stays within twice the steady size.
    """

    def __init__(self, *, buffer_size: int = 4096, fanout: int = 8) -> None:
        self.fanout = fanout
        self._runs: list[np.ndarray] = []
        self._buffer = np.zeros(buffer_size, dtype=np.uint64)
        self._buffered = 0

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs) + self._buffered

    @property
    def nbytes(self) -> int:
        """Bytes held by the runs and the buffer."""
        return sum(run.nbytes for run in self._runs) + self._buffer.nbytes

    def add(self, page_id: int, hashes: Iterable[int]) -> None:
        """Record page ``page_id`` under the sentences ``hashes``."""
        for hash_ in hashes:
            self._buffer[self._buffered] = ((hash_ >> ID_BITS) << ID_BITS) | page_id
            self._buffered += 1
            if self._buffered == len(self._buffer):
                self.flush()

    def add_many(self, ids: np.ndarray, hashes: np.ndarray) -> None:
        """Record pages ``ids[i]`` under sentences ``hashes[i]`` (one sorted run, then merges)."""
        run = entries(ids, hashes)
        if run.size:
            run.sort()
            self._runs.append(run)
            self._merge_small_runs()

    def flush(self) -> None:
        """Turn the insert buffer into a sorted run."""
        if self._buffered:
            self._runs.append(np.sort(self._buffer[: self._buffered]))
            self._buffered = 0
            self._merge_small_runs()

    def lookup(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(which, ids)``: every page recorded under a sentence with the prefix of
        ``hashes[which[j]]`` is ``ids[j]`` (candidates: verify on the full hash). The number of
        holders of sentence i is at most ``np.bincount(which)[i]``."""
        prefixes = np.asarray(hashes, dtype=np.uint64) >> _SHIFT
        low = prefixes << _SHIFT
        high = low | _ID_MASK
        found = [_in_run(run, low, high) for run in self._runs]
        buffered = self._buffer[: self._buffered]
        order = np.argsort(prefixes, kind="stable")
        sorted_prefixes = prefixes[order]
        at = np.searchsorted(sorted_prefixes, buffered >> _SHIFT)
        while True:  # every query sentence with the prefix of a buffered entry
            hit = at < len(order)
            hit[hit] = sorted_prefixes[at[hit]] == buffered[hit] >> _SHIFT
            if not hit.any():
                break
            found.append((order[at[hit]], buffered[hit]))
            buffered, at = buffered[hit], at[hit] + 1
        which = np.concatenate([w for w, _ in found] or [_EMPTY]).astype(np.intp)
        ids = np.concatenate([e for _, e in found] or [_EMPTY]) & _ID_MASK
        return which, ids

    def compact(self) -> np.ndarray:
        """Merge everything into one sorted run and return it (the form saved to disk)."""
        self.flush()
        while len(self._runs) > 1:
            self._merge_last_two()
        return self._runs[0] if self._runs else _EMPTY

    @classmethod
    def from_run(cls, run: np.ndarray) -> SampleIndex:
        """An index over a run made by :meth:`compact`, without re-sorting."""
        if run.ndim != 1 or run.dtype != np.uint64:
            raise ValueError(f"a run of shape {run.shape} and dtype {run.dtype} is not a sample")
        index = cls()
        if run.size:
            index._runs.append(run)
        return index

    def _merge_small_runs(self) -> None:
        runs = self._runs
        while len(runs) > 1 and len(runs[-1]) * self.fanout >= len(runs[-2]):
            self._merge_last_two()

    def _merge_last_two(self) -> None:
        merged = np.concatenate(self._runs[-2:])
        del self._runs[-2:]  # the old runs are freed before the sort (peak: twice the data)
        merged.sort(kind="stable")  # timsort: a linear merge of the two sorted halves
        self._runs.append(merged)


def _in_run(run: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(query positions, entries) of ``run`` within [low[i], high[i]] for each i."""
    start = np.searchsorted(run, low)
    hit = start < len(run)
    hit[hit] = run[start[hit]] <= high[hit]
    if not hit.any():
        return np.zeros(0, dtype=np.intp), _EMPTY
    queries = np.flatnonzero(hit)
    start = start[queries]
    counts = np.searchsorted(run, high[queries], side="right") - start
    which = np.repeat(queries, counts)
    # positions start[q], start[q] + 1, ... for each query q, without a Python loop
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return which, run[np.repeat(start, counts) + offsets]
