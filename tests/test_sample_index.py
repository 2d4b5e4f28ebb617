"""The sentence-sample index against a plain dict: adds, merges, lookups, holder counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nearDupe import kernels
from nearDupe.sample_index import SampleIndex

# Few distinct prefixes and low bits, so that prefixes collide and full hashes differ.
_PREFIXES = st.integers(0, 7).map(lambda p: p << 32 | p << 61)
_HASHES = st.builds(lambda p, low: p | low, _PREFIXES, st.integers(0, 3))
_PAGE = st.lists(_HASHES, max_size=6)


@pytest.fixture(autouse=True, scope="module", params=["numpy", "numba"])
def kernel_module(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test runs on numpy's kernels and on numba's compiled ones."""
    kernels.force(request.param)
    yield request.param
    kernels.force(None)


def _prefix(hash_: int) -> int:
    return hash_ >> 32


@settings(max_examples=200, deadline=None)
@given(
    pages=st.lists(st.tuples(_PAGE, st.booleans()), max_size=60),
    query=st.lists(_HASHES, max_size=10),
    buffer_size=st.sampled_from([1, 2, 3, 8]),
    fanout=st.sampled_from([2, 8]),
    reopen_at=st.integers(0, 60),
)
def test_lookup_matches_a_dict(
    pages: list[tuple[list[int], bool]],
    query: list[int],
    buffer_size: int,
    fanout: int,
    reopen_at: int,
) -> None:
    """Every page recorded under a query sentence's prefix is found, once per entry, whatever
    mix of single adds, bulk adds, flushes, merges and a compaction (as a snapshot is saved
    and reopened) put it there."""
    index = SampleIndex(buffer_size=buffer_size, fanout=fanout)
    model: dict[int, list[int]] = {}
    for page_id, (hashes, bulk) in enumerate(pages):
        if page_id == reopen_at:
            index = SampleIndex.from_run(index.compact())
        if bulk:
            index.add_many(np.full(len(hashes), page_id), np.array(hashes, dtype=np.uint64))
        else:
            index.add(page_id, hashes)
        for hash_ in hashes:
            model.setdefault(_prefix(hash_), []).append(page_id)
    assert len(index) == sum(len(ids) for ids in model.values())
    which, ids = index.lookup(np.array(query, dtype=np.uint64))
    found = Counter(zip(which.tolist(), ids.tolist(), strict=True))
    expected = Counter((i, p) for i, h in enumerate(query) for p in model.get(_prefix(h), []))
    assert found == expected
    counts = np.bincount(which, minlength=len(query)).tolist()
    assert counts == [len(model.get(_prefix(h), [])) for h in query]


def test_page_ids_must_fit_32_bits() -> None:
    index = SampleIndex()
    try:
        index.add_many(np.array([1 << 32]), np.array([5], dtype=np.uint64))
    except ValueError as exc:
        assert "32 bits" in str(exc)
    else:
        raise AssertionError("an id of 33 bits was accepted")


def test_merges_keep_few_runs() -> None:
    """Runs of similar size merge: the index over n entries holds O(log n) runs."""
    index = SampleIndex(buffer_size=16, fanout=4)
    rng = np.random.default_rng(1)
    hashes = rng.integers(0, 2**63, 4000, dtype=np.uint64).tolist()
    for page_id in range(1000):
        index.add(page_id, hashes[4 * page_id : 4 * page_id + 4])
    assert len(index) == 4000
    assert len(index._runs) <= 8
    which, ids = index.lookup(np.array(hashes[:40], dtype=np.uint64))
    assert {(i, i // 4) for i in range(40)} <= set(zip(which.tolist(), ids.tolist(), strict=True))
