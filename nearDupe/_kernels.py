"""Compiled (numba) inner loops of the block-permutation index: permute, search, popcount.

numpy spends about 1 µs of call overhead per array operation and a query needs about six per
table; these loops do a whole query in one call (see benchmarks/index_bench.py). Arguments are
packed into few arrays because numba's per-argument dispatch cost dominates a single query.
All values are uint64: numba, like numpy, turns uint64 mixed with signed ints into floats.

Layouts: ``keys`` = a typed list (:func:`row_list`) of one sorted uint64 row per table
(separate arrays, so a merge replaces one table at a time); ``dirs`` = uint32 (tables,
2**bits + 1) row offsets; ``perm[t]`` = [segments, prefix_shift, src_0.., dst_0..,
mask_0..] for table t (see Design.packed); ``out`` = uint64 (2, cap): matched fingerprints
in row 0, distances in row 1.
Every output array is allocated by the caller (numpy), so tracemalloc sees it.
Import them through :func:`nearDupe.kernels.load_numba` (their cache, quiet logs); an index
runs them only when large (nearDupe/_kernels_numpy.py has the same functions in numpy).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
from numba import njit, types
from numba.typed import List

_ONE = np.uint64(1)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_S56 = np.uint64(56)
#: The type of a row: a contiguous uint64 array.
_ROW_TYPE = types.Array(types.uint64, 1, "C")


@njit(cache=True, inline="always")
def popcount(x: np.uint64) -> int:
    """Number of set bits (SWAR)."""
    x = x - ((x >> _ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return int((x * _H01) >> _S56)


@njit(cache=True, inline="always")
def _permute(x, p, inverse):
    n = p[0]
    y = np.uint64(0)
    for s in range(n):
        src, dst, mask = p[2 + s], p[2 + n + s], p[2 + 2 * n + s]
        if inverse:
            src, dst = dst, src
        y |= ((x >> src) & mask) << dst
    return y


@njit(cache=True, inline="always")
def _record(fp, d, out, n_out):
    cap = out.shape[1]
    for j in range(min(n_out, cap)):
        if out[0, j] == fp:
            return n_out
    if n_out < cap:
        out[0, n_out] = fp
        out[1, n_out] = d
    return n_out + 1


@njit(cache=True, nogil=True)
def directory(row, bits, out):
    """Fill ``out`` (2**bits + 1 entries) with the start offset in the sorted row of every value
    of its top ``bits`` bits, plus the end."""
    size = out.shape[0] - 1
    out[0] = 0
    out[size] = row.shape[0]
    if bits == 0:
        return
    shift = np.uint64(64 - bits)
    j = 0
    for top in range(size):
        while j < row.shape[0] and (row[j] >> shift) < np.uint64(top):
            j += 1
        out[top] = j


@njit(cache=True, nogil=True)
def permute(fps, p, out):
    """out[i] = fps[i] under table permutation p (no temporaries, unlike numpy's shifts)."""
    for i in range(fps.shape[0]):
        out[i] = _permute(fps[i], p, False)


@njit(cache=True, nogil=True)
def merge(a, b, out):
    """Merge sorted rows a and b into out (len(a) + len(b) entries)."""
    i = j = o = 0
    while i < a.shape[0] and j < b.shape[0]:
        if b[j] < a[i]:
            out[o] = b[j]
            j += 1
        else:
            out[o] = a[i]
            i += 1
        o += 1
    while i < a.shape[0]:
        out[o] = a[i]
        i += 1
        o += 1
    while j < b.shape[0]:
        out[o] = b[j]
        j += 1
        o += 1


@njit(cache=True, inline="always")
def _directory_bits(dirs):
    size = dirs.shape[1] - 1
    bits = 0
    while (1 << bits) < size:
        bits += 1
    return bits


@njit(cache=True, inline="always")
def lower_bound(values, lo, hi, x):
    """The first position in sorted values[lo:hi] whose value is not below x (hi if none).

    Shared by the sentence-sample kernels: numba's cache does not see a change here from
    there (clear the kernel cache, :func:`nearDupe.kernels.cache_dir`, after editing it)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _scan(row, lo, hi, qp, p, k, out, n_out):
    """Binary-search qp's prefix in row[lo:hi] (its directory range), then compare them all."""
    sh = p[1]
    lo_key = (qp >> sh) << sh
    hi_key = lo_key | ((_ONE << sh) - _ONE)
    i = lower_bound(row, lo, hi, lo_key)
    while i < row.shape[0] and row[i] <= hi_key:
        d = popcount(row[i] ^ qp)
        if d <= k:
            n_out = _record(_permute(row[i], p, True), d, out, n_out)
        i += 1
    return n_out


@njit(cache=True, nogil=True)
def query_run(keys, dirs, q, k, perm, out, n_out):
    """Add to ``out`` the fingerprints of one sorted run within distance k of q.

    keys[t] holds table t's permuted fingerprints, sorted; dirs[t] maps their top bits to
    offsets. Returns the new match count, which exceeds out's capacity when it overflowed
    (the caller retries with more room).
    """
    bits = _directory_bits(dirs)
    dshift = np.uint64(64 - bits)
    for t in range(len(keys)):
        p = perm[t]
        qp = _permute(q, p, False)
        top = (qp >> dshift) if bits else np.uint64(0)
        lo, hi = np.int64(dirs[t, top]), np.int64(dirs[t, top + _ONE])
        n_out = _scan(keys[t], lo, hi, qp, p, k, out, n_out)
    return n_out


@njit(cache=True, nogil=True)
def query_buffer(buf, n, q, k, out, n_out):
    """Add to ``out`` the first n fingerprints of an unsorted buffer within distance k of q."""
    for i in range(n):
        d = popcount(buf[i] ^ q)
        if d <= k:
            n_out = _record(buf[i], d, out, n_out)
    return n_out


@njit(cache=True, nogil=True)
def query_run_many(keys, dirs, qs, k, perm, out, n_out):
    """query_run for each qs[i], into out[i] and n_out[i], one table at a time.

    A first pass reads every query's directory range (independent loads, so the CPU overlaps
    their cache misses), a second pass searches and scans: large runs are memory-bound.
    """
    bits = _directory_bits(dirs)
    dshift = np.uint64(64 - bits)
    nq = qs.shape[0]
    qp = np.empty(nq, dtype=np.uint64)
    lo = np.empty(nq, dtype=np.int64)
    hi = np.empty(nq, dtype=np.int64)
    for t in range(len(keys)):
        p = perm[t]
        for i in range(nq):
            qp[i] = _permute(qs[i], p, False)
            top = (qp[i] >> dshift) if bits else np.uint64(0)
            lo[i], hi[i] = np.int64(dirs[t, top]), np.int64(dirs[t, top + _ONE])
        row = keys[t]
        for i in range(nq):
            n_out[i] = _scan(row, lo[i], hi[i], qp[i], p, k, out[i], n_out[i])


@njit(cache=True, nogil=True)
def query_buffer_many(buf, n, qs, k, out, n_out):
    """query_buffer for each qs[i], into out[i] and n_out[i]."""
    for i in range(qs.shape[0]):
        n_out[i] = query_buffer(buf, n, qs[i], k, out[i], n_out[i])


def row_list(rows: Sequence[np.ndarray]) -> Any:
    """A run's rows as the query kernels take them: a typed list, whose type (unlike a
    tuple's) does not depend on the number of tables, so one compiled kernel serves every
    design (a cold compile costs seconds per table count)."""
    out = _empty_rows()
    for row in rows:
        _append_row(out, row)
    return out


# Built by cached kernels: List.empty_list and List.append called from Python compile numba's
# own list helpers in every process (~1 s of CPU at each crawl's and each command's start).
@njit(cache=True)
def _empty_rows() -> Any:
    return List.empty_list(_ROW_TYPE)


@njit(cache=True)
def _append_row(rows: Any, row: np.ndarray) -> None:
    rows.append(row)


@cache
def warm_up() -> None:
    """Load (or compile) every kernel now, not on a crawl's first page (~0.1-2 s)."""
    row = np.zeros(1, dtype=np.uint64)
    keys = row_list((row,))
    dirs = np.zeros((1, 2), dtype=np.uint32)
    directory(row, 0, dirs[0])
    permute(row, np.zeros(2, dtype=np.uint64), row.copy())
    merge(row, row, np.zeros(2, dtype=np.uint64))
    perm = np.array([[1, 0, 0, 0, np.iinfo(np.uint64).max]], dtype=np.uint64)
    out = np.zeros((2, 1), dtype=np.uint64)
    query_run(keys, dirs, np.uint64(0), 0, perm, out, 0)
    query_buffer(row, 1, np.uint64(0), 0, out, 0)
    qs = np.zeros(1, dtype=np.uint64)
    many_out, n = np.zeros((1, 2, 1), dtype=np.uint64), np.zeros(1, dtype=np.int64)
    query_run_many(keys, dirs, qs, 0, perm, many_out, n)
    query_buffer_many(row, 1, qs, 0, many_out, n)
