"""The Redis layout's bucket search (no server needed): exact against brute force."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nearDupe.designs import Design
from nearDupe.store.redis_layout import Layout


def _layout(bucket_bits: list[int]) -> Layout:
    layout = {"format": 3, "bucket_bits": bucket_bits, "page_bits": 18, "sentence_bits": 18}
    return Layout("t", Design.named("4-table"), layout)


@pytest.mark.parametrize("bucket_bits", [[16, 16, 16, 16], [15, 16, 12, 16]])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(0, 3))
def test_near_is_brute_force_within_k(bucket_bits: list[int], seed: int, k: int) -> None:
    """Every stored fingerprint within k, nearest first, and whether the query is stored: with
    one record width for every table (parsed at once) and with several (15 bits: 7 bytes)."""
    rng = random.Random(seed)
    layout = _layout(bucket_bits)
    query = rng.getrandbits(64)
    stored = {rng.getrandbits(64) for _ in range(40)}
    for _ in range(20):  # copies within a few bits, and maybe the query itself
        stored.add(query ^ sum(1 << b for b in rng.sample(range(64), rng.randint(0, 5))))
    values: dict[str, bytes] = {}
    for fp in sorted(stored):
        for key, _prefix, record in layout.buckets(fp):
            values[key] = values.get(key, b"") + record
    near, present = layout.near(query, k, values)
    expected = sorted(((fp ^ query).bit_count(), fp) for fp in stored)
    assert near == [(d, fp) for d, fp in expected if d <= k]
    assert present == [query in stored] * 4
    widths = {len(record) for _key, _prefix, record in layout.buckets(query)}
    assert len(widths) == (2 if 15 in bucket_bits else 1)
