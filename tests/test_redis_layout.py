"""The Redis layout's bucket, sentence and page-record search, exact against brute force, and
the C packing of commands (no server needed)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.asyncio.connection import Connection

from nearDupe.designs import Design
from nearDupe.store.base import Sketch
from nearDupe.store.redis_layout import Layout
from nearDupe.store.redis_open import packed_in_c
from nearDupe.store.redis_records import (
    TAG_BYTES,
    TAG_SHIFT,
    page_record,
    page_records,
    page_tag,
    sentence_low,
    sentence_record,
    sentence_tags,
    stored_head,
)


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


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), torn=st.integers(0, 8))
def test_sentence_tags_are_the_records_of_that_sentence(seed: int, torn: int) -> None:
    """A sentence's page tags in its bucket, oldest first, as records parsed one by one give
    them: never a match across two records, nor in a torn record at the end."""
    rng = random.Random(seed)
    sentences = [rng.getrandbits(64) for _ in range(3)]
    # Tags that hold a sentence's low bytes, so that a search meets them out of place.
    tags = [rng.getrandbits(40) for _ in range(4)] + [
        sentence_low(h) << 8 | rng.getrandbits(8) for h in sentences
    ]
    records = [(rng.choice(sentences), rng.choice(tags)) for _ in range(rng.randint(0, 30))]
    value = b"".join(sentence_record(h, tag << TAG_SHIFT) for h, tag in records)
    value += sentence_record(sentences[0], 0)[:torn]
    for h in sentences:
        assert sentence_tags(value, h) == [tag for s, tag in records if s == h]


def test_hiredis_packs_as_redis_py_does() -> None:
    """The C packer the store's connections use writes the bytes redis-py's own would."""
    pytest.importorskip("hiredis")
    commands = [
        ("EVALSHA", "ab12", 1, "k{x}", b"", b"\x00\r\n\xff" * 9, "d\u00e9j\u00e0", 0, -1, 70_000),
        ("CONFIG GET", "maxmemory"),
        ("SET", "k", b"v" * 200_000),
    ]
    plain, packed = Connection(), packed_in_c(Connection)()
    for command in commands:
        assert b"".join(packed.pack_command(*command)) == b"".join(plain.pack_command(*command))
    assert b"".join(packed.pack_commands(commands)) == b"".join(plain.pack_commands(commands))


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_page_records_wanted_are_those_starting_with_their_heads(seed: int) -> None:
    """The records a page bucket yields for some heads (whole stored fingerprints, or the
    bytes a page tag names) are those the whole bucket parsed holds, though other records'
    URLs, signatures and tails hold the same bytes."""
    rng = random.Random(seed)
    top = rng.getrandbits(18) << 46
    fps = [top | rng.getrandbits(46) for _ in range(rng.randint(1, 12))]
    decoys = [stored_head(fp) for fp in fps]  # bytes of other records, placed inside URLs
    value = b"".join(
        page_record(
            fp,
            "https://x/" + rng.choice(decoys).hex() + rng.choice(decoys).decode("latin-1"),
            rng.choice(fps),
            Sketch(100, 100, rng.choice(decoys)[:4]),
        )
        for fp in fps
    )
    every = page_records(value, top)
    assert [r.fp for r in every] == fps
    near = set(rng.sample(fps, rng.randint(0, len(fps))))
    tags = {page_tag(fp) for fp in rng.sample(fps, rng.randint(0, len(fps)))}
    heads = {stored_head(fp) for fp in near}
    heads |= {stored_head(tag << TAG_SHIFT, TAG_BYTES) for tag in tags}
    wanted = [r for r in every if r.fp in near or page_tag(r.fp) in tags]
    assert page_records(value, top, heads) == wanted
