"""Property tests of BlockIndex against numpy brute force."""

from __future__ import annotations

import io
import tracemalloc
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nearDupe import kernels
from nearDupe.designs import Design
from nearDupe.index import BlockIndex
from nearDupe.store.embedded_files import read_rows, write_rows

DESIGNS = [
    "4-table",
    "10-table",
    "16-table",
    "20-table",
    "blocks-0-1",
    "blocks-1-2",
    "blocks-2-4",
    "blocks-5-7",
    "blocks-8-9",
    "two-level-2-3-4",
]
U64 = st.integers(0, 2**64 - 1)


@pytest.fixture(autouse=True, scope="module", params=["numpy", "numba"])
def kernel_module(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test runs on numpy's kernels and on numba's compiled ones."""
    kernels.force(request.param)
    yield request.param
    kernels.force(None)


def brute(stored: list[int], q: int, k: int) -> list[tuple[int, int]]:
    """Every distinct stored fingerprint within k of q, nearest first (numpy brute force)."""
    if not stored:
        return []
    uniq = np.unique(np.array(stored, dtype=np.uint64))
    d = np.bitwise_count(uniq ^ np.uint64(q))
    sel = d <= k
    return sorted(
        zip(uniq[sel].tolist(), d[sel].astype(int).tolist(), strict=True),
        key=lambda m: (m[1], m[0]),
    )


def near(data: st.DataObject, pool: list[int], max_flips: int) -> int:
    """A fingerprint of the pool with up to max_flips bits flipped."""
    fp = data.draw(st.sampled_from(pool))
    for bit in data.draw(st.lists(st.integers(0, 63), max_size=max_flips, unique=True)):
        fp ^= 1 << bit
    return fp


OPS = st.lists(
    st.sampled_from(["add", "add", "add", "add_many", "query", "query", "query_many", "flush"]),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    design_name=st.sampled_from(DESIGNS),
    buffer_size=st.integers(1, 8),
    fanout=st.integers(1, 4),
    ops=OPS,
)
def test_matches_brute_force(
    data: st.DataObject, design_name: str, buffer_size: int, fanout: int, ops: list[str]
) -> None:
    design = Design.named(design_name)
    index = BlockIndex(design, buffer_size=buffer_size, fanout=fanout)
    bases = data.draw(st.lists(U64, min_size=1, max_size=4))
    stored: list[int] = []
    for op in ops:
        pool = bases + stored
        if op == "add":
            fp = data.draw(st.one_of(U64, st.just(near(data, pool, design.k + 1))))
            index.add(fp)
            stored.append(fp)
        elif op == "add_many":
            fps = [near(data, pool, design.k + 2) for _ in range(data.draw(st.integers(0, 12)))]
            index.add_many(np.array(fps, dtype=np.uint64))
            stored.extend(fps)
        elif op == "flush":
            index.flush()
        else:
            k = data.draw(st.integers(0, design.k))
            qs = [near(data, pool, design.k + 2) for _ in range(data.draw(st.integers(1, 4)))]
            if op == "query":
                for q in qs:
                    assert index.query(q, k) == brute(stored, q, k)
                    assert index.query(q) == brute(stored, q, design.k)
            else:
                assert index.query_many(qs, k) == [brute(stored, q, k) for q in qs]
        assert len(index) == len(stored)
    assert sorted(index.fingerprints().tolist()) == sorted(stored)

    # compact + from_run keeps every fingerprint and every answer.
    rows = index.compact()
    assert len(rows) == len(design.tables)
    assert all(row.shape == (len(stored),) and row.dtype == np.uint64 for row in rows)
    assert sorted(index.fingerprints().tolist()) == sorted(stored)
    reopened = BlockIndex.from_run(design, [row.copy() for row in rows])
    assert sorted(reopened.fingerprints().tolist()) == sorted(stored)
    # and with the directory saved beside the rows, which is then not rebuilt.
    keys, dirs = index.compact_run()
    with_dirs = BlockIndex.from_run(design, keys, dirs.copy())
    qs = [near(data, bases + stored, design.k + 1) for _ in range(5)]
    want = [brute(stored, q, design.k) for q in qs]
    assert reopened.query_many(qs) == want
    assert with_dirs.query_many(qs) == want
    assert [index.query(q) for q in qs] == want


@pytest.mark.parametrize("design_name", ["4-table", "10-table", "blocks-5-7"])
def test_random_bulk_against_brute_force(design_name: str) -> None:
    design = Design.named(design_name)
    rng = np.random.default_rng(3)
    stored = rng.integers(0, 2**64, 20_000, dtype=np.uint64)
    index = BlockIndex(design, buffer_size=64, fanout=4)
    index.add_many(stored[:15_000])
    for fp in stored[15_000:].tolist():
        index.add(fp)
    # Queries: stored fingerprints with 0..k+1 bits flipped, and random ones.
    picks = stored[rng.integers(0, len(stored), 300)]
    flips = np.zeros(300, dtype=np.uint64)
    for i in range(300):
        for bit in rng.choice(64, size=rng.integers(0, design.k + 2), replace=False):
            flips[i] |= np.uint64(1) << np.uint64(bit)
    qs = np.concatenate([picks ^ flips, rng.integers(0, 2**64, 100, dtype=np.uint64)])
    stored_list = stored.tolist()
    want = [brute(stored_list, q, design.k) for q in qs.tolist()]
    assert sum(len(w) for w in want) >= 200
    assert [index.query(q) for q in qs.tolist()] == want
    assert index.query_many(qs) == want


@pytest.mark.parametrize("buffered", [True, False])
def test_more_matches_than_output_capacity(buffered: bool) -> None:
    design = Design.named("4-table")
    base = 0x0123456789ABCDEF
    fps = [base ^ (1 << a) ^ (1 << b) for a in range(64) for b in range(a + 1, 64)][:300]
    index = BlockIndex(design, buffer_size=512)
    if buffered:
        for fp in fps:
            index.add(fp)
    else:
        index.add_many(fps)
    want = brute(fps, base, 3)
    assert len(want) == 300
    assert index.query(base) == want
    assert index.query_many([base, base ^ 1, 0]) == [want, brute(fps, base ^ 1, 3), []]


def test_duplicates_reported_once_but_counted() -> None:
    index = BlockIndex(Design.named("4-table"), buffer_size=2)
    for _ in range(5):
        index.add(42)
    index.add_many([42, 42])
    assert len(index) == 7
    assert index.query(42) == [(42, 0)]
    assert index.query(43) == [(42, 1)]


def test_empty_index() -> None:
    design = Design.named("10-table")
    index = BlockIndex(design)
    assert len(index) == 0
    assert index.query(123) == []
    assert index.query_many([1, 2]) == [[], []]
    assert index.query_many([]) == []
    assert index.fingerprints().shape == (0,)
    rows = index.compact()
    assert [row.shape for row in rows] == [(0,)] * 10
    assert len(BlockIndex.from_run(design, rows)) == 0
    index.add_many([])
    assert len(index) == 0


def test_extreme_fingerprints() -> None:
    index = BlockIndex(Design.named("4-table"), buffer_size=4)
    fps = [0, 2**64 - 1, 2**63, 2**63 - 1, 1]
    index.add_many(fps)
    index.add(2**64 - 2)
    everything = [*fps, 2**64 - 2]
    top = [(2**64 - 1, 0), (2**63 - 1, 1), (2**64 - 2, 1)]
    assert index.query(2**64 - 1) == top == brute(everything, 2**64 - 1, 3)
    assert index.query(0, 1) == [(0, 0), (1, 1), (2**63, 1)] == brute(everything, 0, 1)
    assert sorted(index.fingerprints().tolist()) == sorted([*fps, 2**64 - 2])


def test_bad_k_and_bad_run() -> None:
    design = Design.named("4-table")
    index = BlockIndex(design)
    with pytest.raises(ValueError, match="k=4"):
        index.query(1, 4)
    with pytest.raises(ValueError):
        index.query_many([1], -1)
    assert index.k == 3
    with pytest.raises(ValueError, match="do not fit"):
        BlockIndex.from_run(design, np.zeros((3, 5), dtype=np.uint64))
    with pytest.raises(ValueError, match="do not fit"):
        BlockIndex.from_run(design, np.zeros((4, 2, 2), dtype=np.uint64))
    with pytest.raises(ValueError, match="do not fit"):
        BlockIndex.from_run(design, np.zeros((4, 5), dtype=np.int64))
    with pytest.raises(ValueError, match="do not fit"):
        BlockIndex.from_run(design, [np.zeros(n, dtype=np.uint64) for n in (5, 5, 5, 4)])
    rows = np.zeros((4, 5), dtype=np.uint64)
    with pytest.raises(ValueError, match="directory"):
        BlockIndex.from_run(design, rows, np.zeros((4, 3), dtype=np.uint32))
    with pytest.raises(ValueError, match="directory"):
        BlockIndex.from_run(design, rows, np.zeros((4, 2), dtype=np.int64))


def test_nbytes_per_fingerprint() -> None:
    index = BlockIndex(Design.named("4-table"))
    index.add_many(np.random.default_rng(0).integers(0, 2**64, 100_000, dtype=np.uint64))
    assert 32 <= index.nbytes / len(index) <= 48


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    design_name=st.sampled_from(DESIGNS),
    batches=st.lists(st.integers(0, 40), min_size=1, max_size=6),
    fanout=st.integers(1, 8),
)
def test_merges_and_snapshot_round_trip(
    data: st.DataObject, design_name: str, batches: list[int], fanout: int
) -> None:
    """Runs merged table by table, saved row by row and read back answer like brute force."""
    design = Design.named(design_name)
    index = BlockIndex(design, buffer_size=4, fanout=fanout)
    stored = data.draw(st.lists(U64, min_size=1, max_size=3))
    index.add_many(stored)
    for size in batches:
        fps = [near(data, stored, design.k + 1) for _ in range(size)]
        index.add_many(fps)
        stored.extend(fps)
    qs = [near(data, stored, design.k + 2) for _ in range(6)]
    want = [brute(stored, q, design.k) for q in qs]
    assert index.query_many(qs) == want

    f = io.BytesIO()
    write_rows(f, index.compact())
    assert len(index._runs) == 1
    f.seek(0)
    reread = read_rows(f, len(design.tables), len(stored))
    reopened = BlockIndex.from_run(design, reread)
    assert reopened.query_many(qs) == want == [index.query(q) for q in qs]
    assert sorted(reopened.fingerprints().tolist()) == sorted(stored)
    # The file is the (tables, n) .npy array that np.save wrote before rows were separate,
    # so a snapshot of either kind reads both ways.
    f.seek(0)
    assert np.array_equal(np.load(f), np.stack(reread))
    old = io.BytesIO()
    np.save(old, np.stack(reread))
    old.seek(0)
    assert all(map(np.array_equal, read_rows(old, len(design.tables), len(stored)), reread))


def test_merge_and_compact_peak_memory() -> None:
    """A merge holds one table's row beyond the index, never a second copy of every table."""
    design = Design.named("4-table")
    fps = np.random.default_rng(1).integers(0, 2**64, 400_000, dtype=np.uint64)
    BlockIndex(design)  # kernels loaded before tracing
    tracemalloc.start()
    index = BlockIndex(design, fanout=1)
    for chunk in np.array_split(fps, 8):
        index.add_many(chunk)
    index.add(1)
    index.compact()
    steady, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(index._runs) == 1
    assert steady >= index.nbytes
    assert peak <= 1.5 * steady  # 1 + 1/tables, plus the add_many chunk's own row
