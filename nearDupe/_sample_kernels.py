"""Compiled (numba) inner loops of the sentence-sample index: build a run, look up, merge.

A run is (starts, low, ids): entry i holds the low 16 bits of a 32-bit sentence prefix in
``low[i]`` and its page id in ``ids[i]``; the entries whose prefix has top 16 bits s are
``starts[s]:starts[s + 1]``, sorted by (low, id). One call does a whole query (numpy would
spend ~1 µs per array operation, a dozen per run).
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numba import njit

from nearDupe._kernels import lower_bound

#: Bits of a prefix kept in each entry; the others are its slot in the run's directory.
LOW_BITS = 16
_LOW_MASK = (1 << LOW_BITS) - 1
_ID_BITS = np.uint64(32)
_LOW_MASK_U64 = np.uint64(_LOW_MASK)
_ID_MASK = np.uint64((1 << 32) - 1)
_SLOT_SHIFT = np.uint64(32 + LOW_BITS)


@njit(cache=True)
def lookup_run(starts, low, ids, prefixes, which, found, n):  # type: ignore[no-untyped-def]
    """Append (query position, page id) of every entry of the run with one of ``prefixes``
    (uint32) to ``which`` and ``found`` from ``n`` on; returns the new n (if it exceeds their
    length, the caller regrows them and calls again)."""
    for q in range(len(prefixes)):
        p = np.int64(prefixes[q])
        slot = p >> LOW_BITS
        value = p & _LOW_MASK
        end = starts[slot + 1]
        a = lower_bound(low, starts[slot], end, value)  # the slot's first entry >= value
        while a < end and low[a] == value:
            if n < len(found):
                which[n] = q
                found[n] = ids[a]
            n += 1
            a += 1
    return n


@njit(cache=True)
def lookup_buffer(buffer, size, prefixes, order, which, found, n):  # type: ignore[no-untyped-def]
    """:func:`lookup_run` for the first ``size`` packed entries of the insert buffer, with
    the query's ``prefixes`` sorted (``order``: their positions in the query)."""
    for i in range(size):
        entry = buffer[i]
        p = entry >> _ID_BITS
        a = lower_bound(prefixes, 0, len(prefixes), p)
        while a < len(prefixes) and prefixes[a] == p:
            if n < len(found):
                which[n] = order[a]
                found[n] = entry & _ID_MASK
            n += 1
            a += 1
    return n


@njit(cache=True)
def split_run(packed, starts, low, ids):  # type: ignore[no-untyped-def]
    """Fill a run (allocated by the caller) from sorted packed uint64 entries: prefix << 32 |
    page id."""
    starts[:] = 0
    for i in range(len(packed)):
        entry = packed[i]
        starts[(entry >> _SLOT_SHIFT) + 1] += 1
        low[i] = (entry >> _ID_BITS) & _LOW_MASK_U64
        ids[i] = entry & _ID_MASK
    for s in range(1, len(starts)):
        starts[s] += starts[s - 1]


@njit(cache=True)
def merge_runs(sa, la, ia, sb, lb, ib, starts, low, ids):  # type: ignore[no-untyped-def]
    """Merge runs a and b into (starts, low, ids), allocated by the caller."""
    k = 0
    for s in range(len(sa) - 1):
        starts[s] = k
        i, i_end, j, j_end = sa[s], sa[s + 1], sb[s], sb[s + 1]
        while i < i_end and j < j_end:
            if la[i] < lb[j] or (la[i] == lb[j] and ia[i] <= ib[j]):
                low[k], ids[k] = la[i], ia[i]
                i += 1
            else:
                low[k], ids[k] = lb[j], ib[j]
                j += 1
            k += 1
        while i < i_end:
            low[k], ids[k] = la[i], ia[i]
            i += 1
            k += 1
        while j < j_end:
            low[k], ids[k] = lb[j], ib[j]
            j += 1
            k += 1
    starts[len(sa) - 1] = k


@cache
def warm_up() -> None:
    """Load (or compile) the kernels now, not at a crawl's first page."""
    starts = np.zeros(2, dtype=np.int64)
    low, ids = np.zeros(0, dtype=np.uint16), np.zeros(0, dtype=np.uint32)
    which, found = np.zeros(1, dtype=np.intp), np.zeros(1, dtype=np.uint32)
    lookup_run(starts, low, ids, np.zeros(1, dtype=np.uint32), which, found, 0)
    merge_runs(starts, low, ids, starts, low, ids, starts.copy(), low.copy(), ids.copy())
    split_run(np.zeros(0, dtype=np.uint64), starts, low, ids)
    prefixes, order = np.zeros(1, dtype=np.uint64), np.zeros(1, dtype=np.intp)
    lookup_buffer(np.zeros(1, dtype=np.uint64), 1, prefixes, order, which, found, 0)
