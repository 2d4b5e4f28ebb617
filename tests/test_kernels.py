"""numpy's kernels give exactly the compiled ones' results (matches, their order, counts on
overflow), and the module choice: numpy for small indexes, never a compile on the crawl's path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nearDupe import _kernels_numpy as npk
from nearDupe import kernels
from nearDupe.designs import Design
from nearDupe.index import BlockIndex
from nearDupe.sample_index import SLOTS, SampleIndex

nbk, nbs = kernels.load_numba()
ROOT = Path(__file__).resolve().parents[1]
DESIGNS = ["4-table", "10-table", "blocks-0-1", "blocks-2-4", "two-level-2-3-4"]
U64 = st.integers(0, 2**64 - 1)


@st.composite
def fingerprints(draw: st.DrawFn) -> np.ndarray:
    """Random fingerprints, some repeated and some near each other (so queries match)."""
    bases = draw(st.lists(U64, min_size=1, max_size=5))
    out = []
    for _ in range(draw(st.integers(0, 60))):
        fp = draw(st.sampled_from(bases))
        for bit in draw(st.lists(st.integers(0, 63), max_size=4, unique=True)):
            fp ^= 1 << bit
        out.append(fp)
    return np.array(out, dtype=np.uint64)


def _rows(design: Design, fps: np.ndarray) -> list[np.ndarray]:
    rows = []
    for p in design.packed:
        row = np.empty(len(fps), dtype=np.uint64)
        nbk.permute(fps, p, row)
        other = np.empty(len(fps), dtype=np.uint64)
        npk.permute(fps, p, other)
        assert np.array_equal(row, other)
        row.sort()
        rows.append(row)
    return rows


@settings(max_examples=80, deadline=None)
@given(
    design_name=st.sampled_from(DESIGNS),
    stored=fingerprints(),
    extra=fingerprints(),
    cap=st.integers(1, 6),
    bits=st.integers(0, 6),
    k=st.integers(0, 4),
)
def test_block_kernels_agree(
    design_name: str, stored: np.ndarray, extra: np.ndarray, cap: int, bits: int, k: int
) -> None:
    design = Design.named(design_name)
    k = min(k, design.k)
    bits = min(bits, *(t.prefix_bits for t in design.tables))
    rows = _rows(design, stored)
    dirs = np.zeros((len(rows), (1 << bits) + 1), dtype=np.uint32)
    other = dirs.copy()
    for t, row in enumerate(rows):
        nbk.directory(row, bits, dirs[t])
        npk.directory(row, bits, other[t])
    assert np.array_equal(dirs, other)
    perm = design.packed
    qs = np.concatenate([stored[:5], extra[:5]]) if len(stored) + len(extra) else extra
    for q in qs.tolist():
        results = []
        for mod in (nbk, npk):
            out = np.zeros((2, cap), dtype=np.uint64)
            n = mod.query_buffer(extra, len(extra), np.uint64(q), k, out, 0)
            n = mod.query_run(mod.row_list(rows), dirs, np.uint64(q), k, perm, out, n)
            n = mod.query_buffer(stored, len(stored), np.uint64(q), k, out, n)  # duplicates
            results.append((n, out.tolist()))
        assert results[0] == results[1]
    batch = []
    for mod in (nbk, npk):
        out = np.zeros((len(qs), 2, cap), dtype=np.uint64)
        n = np.zeros(len(qs), dtype=np.int64)
        mod.query_buffer_many(extra, len(extra), qs, k, out, n)
        mod.query_run_many(mod.row_list(rows), dirs, qs, k, perm, out, n)
        mod.query_buffer_many(stored, len(stored), qs, k, out, n)
        batch.append((n.tolist(), out.tolist()))
    assert batch[0] == batch[1]
    a, b = np.sort(stored), np.sort(extra)
    merged = [np.zeros(len(a) + len(b), dtype=np.uint64) for _ in range(2)]
    nbk.merge(a, b, merged[0])
    npk.merge(a, b, merged[1])
    assert np.array_equal(*merged)


# Few slots and low-bit values, so that entries share them.
_ENTRY = st.builds(
    lambda slot, low, page: (slot << 48) | (low << 32) | page,
    st.sampled_from([0, 1, 7, SLOTS - 1]),
    st.integers(0, 3),
    st.sampled_from([0, 1, 2, 2**32 - 1]),
)


def _run(mod, packed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    starts = np.full(SLOTS + 1, -1, dtype=np.int64)
    low, ids = np.zeros(len(packed), dtype=np.uint16), np.zeros(len(packed), dtype=np.uint32)
    mod.split_run(packed, starts, low, ids)
    return starts, low, ids


@settings(max_examples=80, deadline=None)
@given(
    a=st.lists(_ENTRY, max_size=30),
    b=st.lists(_ENTRY, max_size=30),
    buffer=st.lists(_ENTRY, max_size=10),
    query=st.lists(_ENTRY, max_size=8),
    cap=st.integers(0, 6),
)
def test_sample_kernels_agree(
    a: list[int], b: list[int], buffer: list[int], query: list[int], cap: int
) -> None:
    pa, pb = (np.sort(np.array(x, dtype=np.uint64)) for x in (a, b))
    runs = []
    for mod in (nbs, npk):
        ra, rb = _run(mod, pa), _run(mod, pb)
        merged = (
            np.zeros(SLOTS + 1, dtype=np.int64),
            np.zeros(len(pa) + len(pb), dtype=np.uint16),
            np.zeros(len(pa) + len(pb), dtype=np.uint32),
        )
        mod.merge_runs(*ra, *rb, *merged)
        runs.append([x.tolist() for x in (*ra, *rb, *merged)])
    assert runs[0] == runs[1]
    ra = _run(nbs, pa)
    prefixes = np.array(query, dtype=np.uint64) >> np.uint64(32)
    order = np.argsort(prefixes, kind="stable")
    buf = np.array([*buffer, 0], dtype=np.uint64)
    found = []
    for mod in (nbs, npk):
        which, ids = np.zeros(cap, dtype=np.intp), np.zeros(cap, dtype=np.uint32)
        n = mod.lookup_run(*ra, prefixes.astype(np.uint32), which, ids, 0)
        n = mod.lookup_buffer(buf, len(buffer), prefixes[order], order, which, ids, n)
        n = mod.lookup_run(*ra, prefixes.astype(np.uint32), which, ids, n)
        found.append((n, which.tolist(), ids.tolist()))
    assert found[0] == found[1]


def test_large_slots_take_the_binary_search_path() -> None:
    rng = np.random.default_rng(1)
    packed = np.sort(
        (np.uint64(5) << np.uint64(48))
        | (rng.integers(0, 40, 200_000).astype(np.uint64) << np.uint64(32))
        | rng.integers(0, 2**32, 200_000).astype(np.uint64)
    )
    run = _run(nbs, packed)
    prefixes = np.array([5 << 16 | 3, 5 << 16 | 39, 6 << 16, 5 << 16 | 3], dtype=np.uint32)
    results = []
    for mod in (nbs, npk):
        which, ids = np.zeros(10_000, dtype=np.intp), np.zeros(10_000, dtype=np.uint32)
        n = mod.lookup_run(*run, prefixes, which, ids, 0)
        results.append((n, which[: min(n, 10_000)].tolist(), ids[: min(n, 10_000)].tolist()))
    assert results[0] == results[1] and results[0][0] > 10_000


def test_small_indexes_run_numpy_and_never_load_numba() -> None:
    code = (
        "import sys\n"
        "from nearDupe.designs import Design\n"
        "from nearDupe.index import BlockIndex\n"
        "from nearDupe.sample_index import SampleIndex\n"
        "i = BlockIndex(Design.named('4-table'))\n"
        "i.add_many(list(range(5000)))\n"
        "assert i.query(3) and i.kernels.__name__ == 'nearDupe._kernels_numpy'\n"
        "s = SampleIndex()\n"
        "s.add(1, [5 << 32])\n"
        "assert s.lookup([5 << 32])[1].tolist() == [1]\n"
        "assert 'numba' not in sys.modules, 'numba imported'\n"
    )
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT, timeout=60)


def test_kernels_loaded_after_a_freeze_are_frozen_too() -> None:
    """A crawl freezes its long-lived objects at its start (nearDupe/gcfreeze.py) and loads
    numba's kernels later, in a thread: their objects join the frozen ones, or each full
    collection on the crawl's path would walk them."""
    code = (
        "import gc\n"
        "from nearDupe import gcfreeze, kernels\n"
        "gcfreeze.freeze()\n"
        "kernels.load_numba()\n"
        "frozen, tracked = gc.get_freeze_count(), len(gc.get_objects())\n"
        "assert frozen > 20_000 and tracked < 1_000, (frozen, tracked)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT, timeout=120)


def test_forced_and_chosen_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "_prepare", lambda: None)
    assert kernels.choose(0) is npk and kernels.choose(0, sample=True) is npk
    assert kernels.choose(kernels.INDEX_CROSSOVER) is nbk  # loaded in this process
    assert kernels.choose(kernels.SAMPLE_CROSSOVER, sample=True) is nbs
    index = BlockIndex(Design.named("4-table"), buffer_size=4)
    index.add_many([1, 2, 3])
    assert index.kernels is npk
    monkeypatch.setattr(kernels, "INDEX_CROSSOVER", 4)
    index.add_many([4, 5])  # a new run: the index asks again
    expected = [(1, 0), (3, 1), (5, 1), (2, 2), (4, 2)]
    assert index.kernels is nbk and index.query(1) == expected
    try:
        kernels.force("numpy")
        assert index.query(1) == expected and index.kernels is npk
        sample = SampleIndex()
        assert sample.kernels is npk
        kernels.force("numba")
        assert sample.lookup([0])[1].tolist() == [] and sample.kernels is nbs
    finally:
        kernels.force(None)
    with pytest.raises(ValueError, match="kernels are"):
        kernels.force("fortran")
