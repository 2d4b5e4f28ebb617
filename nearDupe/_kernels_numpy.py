"""Plain-numpy twins of the compiled index kernels (nearDupe/_kernels.py and
nearDupe/_sample_kernels.py): same names, same arguments, same results, nothing to compile.

A crawl starts on these: importing numba and loading its cached kernels costs ~2 s of CPU,
compiling them 15-45 s, while a query here costs tens of microseconds more than a compiled one,
which matters only for large indexes (see nearDupe/kernels.py, which picks the module).
Results match the compiled kernels exactly, including the order of matches in ``out`` and the
counts returned on overflow (a count above the output's capacity: the caller regrows it and
calls again). Queries read only the sorted rows: ``dirs`` is accepted, and filled by
:func:`directory`, so that a run serves both modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

#: Bits of a prefix kept in each sample entry (as in nearDupe/_sample_kernels.py).
LOW_BITS = 16
_LOW_MASK = (1 << LOW_BITS) - 1
_ID_MASK = np.uint64((1 << 32) - 1)
_U32 = np.uint64(32)
_U64_MASK = (1 << 64) - 1
#: Entries a merge or a directory handles per numpy pass (bounds its temporaries).
_CHUNK = 1 << 20


def _moves(p: list[int], inverse: bool = False) -> list[tuple[int, int, int]]:
    """One table's permutation (a row of ``perm`` as a list) as (source, destination, mask)."""
    n = p[0]
    moves = [(p[2 + s], p[2 + n + s], p[2 + 2 * n + s]) for s in range(n)]
    return [(dst, src, mask) for src, dst, mask in moves] if inverse else moves


def _permute_int(x: int, moves: list[tuple[int, int, int]]) -> int:
    y = 0
    for src, dst, mask in moves:
        y |= ((x >> src) & mask) << dst
    return y & _U64_MASK


def _permute_array(xs: np.ndarray, moves: list[tuple[int, int, int]]) -> np.ndarray:
    out = np.zeros(len(xs), dtype=np.uint64)
    tmp = np.empty(len(xs), dtype=np.uint64)
    for src, dst, mask in moves:
        np.right_shift(xs, np.uint64(src), out=tmp)
        tmp &= np.uint64(mask)
        tmp <<= np.uint64(dst)
        out |= tmp
    return out


def _ranges(starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, position) of every element of the ranges starts[i]:starts[i] + lens[i], in
    order: owner i repeated lens[i] times beside its range's positions."""
    total = int(lens.sum())
    owner = np.repeat(np.arange(len(lens)), lens)
    ends = np.cumsum(lens)
    pos = np.arange(total, dtype=np.int64) + np.repeat(starts.astype(np.int64) - ends + lens, lens)
    return owner, pos


def _record(out: np.ndarray, n_out: int, fps: list[int], dists: list[int]) -> int:
    """Append the matches not yet in ``out`` (checked among its first ``cap`` entries, as the
    compiled kernels do); returns the new count, above cap if it overflowed."""
    if not fps:
        return n_out
    cap = out.shape[1]
    seen = set(out[0, : min(n_out, cap)].tolist())
    for fp, d in zip(fps, dists, strict=True):
        if fp in seen:
            continue
        if n_out < cap:
            out[0, n_out] = fp
            out[1, n_out] = d
            seen.add(fp)
        n_out += 1
    return n_out


def directory(row: np.ndarray, bits: int, out: np.ndarray) -> None:
    """Fill ``out`` (2**bits + 1 entries) with the start offset in the sorted row of every value
    of its top ``bits`` bits, plus the end."""
    size = out.shape[0] - 1
    out[0] = 0
    out[size] = row.shape[0]
    if bits == 0:
        return
    shift = np.uint64(64 - bits)
    for lo in range(0, size, _CHUNK):
        tops = np.arange(lo, min(size, lo + _CHUNK), dtype=np.uint64) << shift
        out[lo : lo + len(tops)] = np.searchsorted(row, tops, side="left")


def permute(fps: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
    """out[i] = fps[i] under table permutation p (in chunks: small temporaries)."""
    moves = _moves(p.tolist())
    for lo in range(0, len(fps), _CHUNK):
        out[lo : lo + _CHUNK] = _permute_array(fps[lo : lo + _CHUNK], moves)


def merge(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """Merge sorted rows a and b into out (len(a) + len(b) entries)."""
    out[: len(a)] = a
    out[len(a) :] = b
    out.sort(kind="stable")  # timsort: two sorted runs, merged in one linear pass


#: A directory slot of at most this many entries is compared in Python (no numpy calls).
_SCAN = 64
#: Per table of a packed permutation: (moves, inverse moves, prefix shift), by its bytes.
_TABLES: dict[bytes, list[tuple[list[tuple[int, int, int]], list[tuple[int, int, int]], int]]] = {}


def _tables(perm: np.ndarray) -> list[tuple[list[tuple[int, int, int]], list, int]]:
    key = perm.tobytes() + str(perm.shape).encode()
    tables = _TABLES.get(key)
    if tables is None:
        if len(_TABLES) > 64:
            _TABLES.clear()
        rows = perm.tolist()
        tables = _TABLES[key] = [(_moves(p), _moves(p, inverse=True), p[1]) for p in rows]
    return tables


def query_run(
    keys: Sequence[np.ndarray],
    dirs: np.ndarray,
    q: int | np.uint64,
    k: int,
    perm: np.ndarray,
    out: np.ndarray,
    n_out: int,
) -> int:
    """Add to ``out`` the fingerprints of one sorted run within distance k of q; returns the new
    match count, above out's capacity when it overflowed (the caller retries with more room).

    The entries sharing q's prefix in a table lie in its directory slot (a run's directory has
    no more bits than the shortest prefix): a slot of a few entries is compared in Python."""
    q, k = int(q), int(k)
    bits = (dirs.shape[1] - 1).bit_length() - 1
    dshift = 64 - bits
    fps: list[int] = []
    dists: list[int] = []
    for t, (row, (moves, inverse, sh)) in enumerate(zip(keys, _tables(perm), strict=False)):
        qp = _permute_int(q, moves)
        top = qp >> dshift if bits else 0
        lo, hi = int(dirs[t, top]), int(dirs[t, top + 1])
        if hi - lo <= _SCAN and dshift >= sh:
            prefix = qp >> sh
            for x in row[lo:hi].tolist():
                if x >> sh == prefix:
                    d = (x ^ qp).bit_count()
                    if d <= k:
                        fps.append(_permute_int(x, inverse))
                        dists.append(d)
        else:
            _matches(row, lo, hi, qp, sh, k, inverse, fps, dists)
    return _record(out, n_out, fps, dists)


def _matches(
    row: np.ndarray,
    lo: int,
    hi: int,
    qp: int,
    sh: int,
    k: int,
    inverse: list[tuple[int, int, int]],
    fps: list[int],
    dists: list[int],
) -> None:
    """Append the fingerprints (unpermuted) and distances of the row's entries within k of
    permuted query qp that share its prefix, in row order: the first not below the prefix's
    lowest key in row[lo:hi] (its directory slot), up to the last not above its highest."""
    lo_key = (qp >> sh) << sh
    hi_key = lo_key | ((1 << sh) - 1)
    i0 = lo + int(np.searchsorted(row[lo:hi], np.uint64(lo_key), side="left"))
    i1 = i0 + int(np.searchsorted(row[i0:], np.uint64(hi_key), side="right"))
    if i1 <= i0:
        return
    cand = row[i0:i1]
    d = np.bitwise_count(cand ^ np.uint64(qp))
    sel = np.flatnonzero(d <= k)
    fps.extend(_permute_int(x, inverse) for x in cand[sel].tolist())
    dists.extend(d[sel].tolist())


def query_buffer(
    buf: np.ndarray, n: int, q: int | np.uint64, k: int, out: np.ndarray, n_out: int
) -> int:
    """Add to ``out`` the first n fingerprints of an unsorted buffer within distance k of q."""
    if n <= 0:
        return n_out
    head = buf[:n]
    d = np.bitwise_count(head ^ np.uint64(q))
    sel = np.flatnonzero(d <= k)
    if not sel.size:
        return n_out
    return _record(out, n_out, head[sel].tolist(), d[sel].tolist())


def _record_many(
    out: np.ndarray, n_out: np.ndarray, which: np.ndarray, fps: np.ndarray, dists: np.ndarray
) -> None:
    """Record matches of many queries (``which[j]`` is match j's query), in their order."""
    if not which.size:
        return
    order = np.argsort(which, kind="stable")
    owners, matched, d = which[order].tolist(), fps[order].tolist(), dists[order].tolist()
    start = 0
    while start < len(owners):
        i = owners[start]
        end = start
        while end < len(owners) and owners[end] == i:
            end += 1
        n_out[i] = _record(out[i], int(n_out[i]), matched[start:end], d[start:end])
        start = end


def query_run_many(
    keys: Sequence[np.ndarray],
    dirs: np.ndarray,
    qs: np.ndarray,
    k: int,
    perm: np.ndarray,
    out: np.ndarray,
    n_out: np.ndarray,
) -> None:
    """query_run for each qs[i], into out[i] and n_out[i]."""
    if not len(qs):
        return
    qs = np.asarray(qs, dtype=np.uint64)
    which: list[np.ndarray] = []
    fps: list[np.ndarray] = []
    dists: list[np.ndarray] = []
    for row, p in zip(keys, perm.tolist(), strict=False):
        qp = _permute_array(qs, _moves(p))
        sh = np.uint64(p[1])
        lo_key = (qp >> sh) << sh
        hi_key = lo_key | np.uint64((1 << p[1]) - 1)
        i0 = np.searchsorted(row, lo_key, side="left")
        lens = np.searchsorted(row, hi_key, side="right") - i0
        np.maximum(lens, 0, out=lens)
        if not lens.any():
            continue
        owner, pos = _ranges(i0, lens)
        d = np.bitwise_count(row[pos] ^ qp[owner])
        sel = np.flatnonzero(d <= k)
        if sel.size:
            which.append(owner[sel])
            fps.append(_permute_array(row[pos[sel]], _moves(p, inverse=True)))
            dists.append(d[sel])
    if which:
        _record_many(out, n_out, np.concatenate(which), np.concatenate(fps), np.concatenate(dists))


def query_buffer_many(
    buf: np.ndarray, n: int, qs: np.ndarray, k: int, out: np.ndarray, n_out: np.ndarray
) -> None:
    """query_buffer for each qs[i], into out[i] and n_out[i]."""
    if n <= 0 or not len(qs):
        return
    head = buf[:n]
    qs = np.asarray(qs, dtype=np.uint64)
    step = max(1, _CHUNK // n)
    for lo in range(0, len(qs), step):
        d = np.bitwise_count(head[None, :] ^ qs[lo : lo + step, None])
        which, j = np.nonzero(d <= k)  # row-major: per query, in buffer order
        if which.size:
            _record_many(out, n_out, which + lo, head[j], d[which, j])


def row_list(rows: Sequence[np.ndarray]) -> Any:
    """A run's rows as the query kernels take them (here, a tuple)."""
    return tuple(rows)


@cache
def warm_up() -> None:
    """Nothing to load or compile (the compiled module's warm_up loads its kernels)."""


# Sentence-sample index (nearDupe/_sample_kernels.py).


def lookup_run(
    starts: np.ndarray,
    low: np.ndarray,
    ids: np.ndarray,
    prefixes: np.ndarray,
    which: np.ndarray,
    found: np.ndarray,
    n: int,
) -> int:
    """Append (query position, page id) of every entry of the run with one of ``prefixes``
    (uint32) to ``which`` and ``found`` from ``n`` on; returns the new n (if it exceeds their
    length, the caller regrows them and calls again)."""
    if not len(prefixes):
        return n
    p = prefixes.astype(np.int64)
    slot, value = p >> LOW_BITS, p & _LOW_MASK
    s0 = starts[slot]
    lens = starts[slot + 1] - s0
    if int(lens.sum()) <= _CHUNK // 16:  # small slots: compare every entry of each
        owner, pos = _ranges(s0, lens)
        hit = np.flatnonzero(low[pos] == value[owner])
        q_hit, pos_hit = owner[hit], pos[hit]
    else:  # large slots: binary-search each query's value in its slot
        qs_, ps_ = [], []
        ends = (s0 + lens).tolist()
        for q, (a, b, v) in enumerate(zip(s0.tolist(), ends, value.tolist(), strict=True)):
            seg = low[a:b]
            lo = int(np.searchsorted(seg, v, side="left"))
            hi = int(np.searchsorted(seg, v, side="right"))
            if hi > lo:
                qs_.append(np.full(hi - lo, q, dtype=np.int64))
                ps_.append(np.arange(a + lo, a + hi, dtype=np.int64))
        if not qs_:
            return n
        q_hit, pos_hit = np.concatenate(qs_), np.concatenate(ps_)
    return _append(which, found, n, q_hit, ids[pos_hit])


def _append(
    which: np.ndarray, found: np.ndarray, n: int, new_which: np.ndarray, new_found: np.ndarray
) -> int:
    room = max(0, min(len(new_which), len(found) - n))
    if room:
        which[n : n + room] = new_which[:room]
        found[n : n + room] = new_found[:room]
    return n + len(new_which)


def lookup_buffer(
    buffer: np.ndarray,
    size: int,
    prefixes: np.ndarray,
    order: np.ndarray,
    which: np.ndarray,
    found: np.ndarray,
    n: int,
) -> int:
    """:func:`lookup_run` for the first ``size`` packed entries of the insert buffer, with
    the query's ``prefixes`` sorted (``order``: their positions in the query)."""
    if size <= 0 or not len(prefixes):
        return n
    head = buffer[:size]
    p = head >> _U32
    a0 = np.searchsorted(prefixes, p, side="left")
    lens = np.searchsorted(prefixes, p, side="right") - a0
    if not lens.any():
        return n
    entry, a = _ranges(a0, lens)
    return _append(which, found, n, order[a], head[entry] & _ID_MASK)


def split_run(packed: np.ndarray, starts: np.ndarray, low: np.ndarray, ids: np.ndarray) -> None:
    """Fill a run (allocated by the caller) from sorted packed uint64 entries: prefix << 32 |
    page id."""
    slots = (packed >> np.uint64(32 + LOW_BITS)).astype(np.intp)
    starts[0] = 0
    np.cumsum(np.bincount(slots, minlength=len(starts) - 1), out=starts[1:])
    low[:] = (packed >> _U32) & np.uint64(_LOW_MASK)
    ids[:] = packed & _ID_MASK


def _keys(starts: np.ndarray, low: np.ndarray, ids: np.ndarray, s0: int, s1: int) -> np.ndarray:
    """The entries of slots s0:s1 as sortable uint64: slot << 48 | low << 32 | id."""
    a, b = int(starts[s0]), int(starts[s1])
    slot = np.repeat(np.arange(s0, s1, dtype=np.uint64), np.diff(starts[s0 : s1 + 1]))
    keys = slot << np.uint64(32 + LOW_BITS)
    keys |= low[a:b].astype(np.uint64) << _U32
    keys |= ids[a:b]
    return keys


def merge_runs(
    sa: np.ndarray,
    la: np.ndarray,
    ia: np.ndarray,
    sb: np.ndarray,
    lb: np.ndarray,
    ib: np.ndarray,
    starts: np.ndarray,
    low: np.ndarray,
    ids: np.ndarray,
) -> None:
    """Merge runs a and b into (starts, low, ids), allocated by the caller."""
    slots = len(sa) - 1
    starts[:] = (sa - sa[0]) + (sb - sb[0])
    total = int(starts[slots])
    per_chunk = max(1, slots * _CHUNK // max(total, 1))
    for s0 in range(0, slots, per_chunk):
        s1 = min(slots, s0 + per_chunk)
        merged = np.concatenate((_keys(sa, la, ia, s0, s1), _keys(sb, lb, ib, s0, s1)))
        merged.sort(kind="stable")  # two sorted runs: one linear merge
        o0, o1 = int(starts[s0]), int(starts[s1])
        low[o0:o1] = (merged >> _U32) & np.uint64(_LOW_MASK)
        ids[o0:o1] = merged & _ID_MASK
