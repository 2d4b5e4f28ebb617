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
from nearDupe.store.redis_layout import REDIS_FORMAT, SENTENCE_TAG_BYTES, Layout
from nearDupe.store.redis_open import packed_in_c
from nearDupe.store.redis_records import (
    URL_PREFIXES,
    SentenceRecords,
    page_records,
    sentence_low,
    stored_head,
)


def _layout(bucket_bits: list[int]) -> Layout:
    layout = {
        "format": REDIS_FORMAT,
        "bucket_bits": bucket_bits,
        "page_bits": 18,
        "sentence_bits": 18,
    }
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
    tag_bytes = SENTENCE_TAG_BYTES
    rng = random.Random(seed)
    sentence_records = SentenceRecords(tag_bytes)
    sentences = [rng.getrandbits(64) for _ in range(3)]
    # Tags that hold a sentence's low bytes, so that a search meets them out of place.
    extra = 8 * tag_bytes - 32
    tags = [rng.getrandbits(8 * tag_bytes) for _ in range(4)] + [
        sentence_low(h) << extra | rng.getrandbits(extra) for h in sentences
    ]
    records = [(rng.choice(sentences), rng.choice(tags)) for _ in range(rng.randint(0, 30))]
    shift = sentence_records.tag_shift
    value = b"".join(sentence_records.record(h, tag << shift) for h, tag in records)
    value += sentence_records.record(sentences[0], 0)[: min(torn, sentence_records.size - 1)]
    for h in sentences:
        assert sentence_records.tags(value, h) == [tag for s, tag in records if s == h]


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
    layout = _layout([16] * 4)
    top = rng.getrandbits(18) << 46
    fps = [top | rng.getrandbits(46) for _ in range(rng.randint(1, 12))]
    decoys = [stored_head(fp) for fp in fps]  # bytes of other records, placed inside URLs
    value = b"".join(
        layout.page_record(
            fp,
            rng.choice(URL_PREFIXES)
            + "x/"
            + rng.choice(decoys).hex()
            + rng.choice(decoys).decode("latin-1"),
            rng.choice(fps),
            Sketch(100, 100, rng.choice(decoys)[:4]),
        )
        for fp in fps
    )
    every = page_records(value, top)
    assert [r.fp for r in every] == fps
    near = set(rng.sample(fps, rng.randint(0, len(fps))))
    tag = layout.sentences.tag
    tags = {tag(fp) for fp in rng.sample(fps, rng.randint(0, len(fps)))}
    heads = {stored_head(fp) for fp in near} | {layout.sentences.head(t) for t in tags}
    wanted = [r for r in every if r.fp in near or tag(r.fp) in tags]
    assert page_records(value, top, heads) == wanted


_KEYS = st.tuples(
    st.sampled_from(["", "http", "https://", "https://www", "http://www.", *URL_PREFIXES]),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
)


@settings(max_examples=200, deadline=None)
@given(parts=_KEYS, signed=st.booleans(), tails=st.integers(0, 16))
def test_page_records_keep_their_urls(parts: tuple[str, str], signed: bool, tails: int) -> None:
    """A page record gives back its URL, signature and sketch as written, though it leaves
    out the URL's beginning."""
    key = "".join(parts)
    sketch = Sketch(1000, 500, bytes(range(2 * tails)))
    signature = 12345 if signed else None
    fp = 0xABCDEF << 40
    record = _layout([16] * 4).page_record(fp, key, signature, sketch, b"w123")
    (read,) = page_records(record, fp & ~((1 << 48) - 1))
    assert (read.fp, read.key, read.signature, read.sketch, read.writer) == (
        fp,
        key,
        signature,
        sketch,
        b"w123",
    )
    cut = max((p for p in URL_PREFIXES if key.startswith(p)), key=len)
    assert key.encode()[len(cut) :] in record


@settings(max_examples=100, deadline=None)
@given(
    char=st.sampled_from(["é", "新", "😀", "a"]),
    filler=st.integers(0, 3),
    tails=st.integers(0, 16),
)
def test_a_url_past_the_record_limit_is_cut_on_a_character_boundary(
    char: str, filler: int, tails: int
) -> None:
    """A URL longer than a page record holds (64 KiB - 1 bytes with its tails) is cut between
    two characters, whatever their width and where the limit falls: the record reads back
    as the URL's longest beginning that fits."""
    key = "https://www.example.com/" + "a" * filler + char * 70_000
    sketch = Sketch(1000, 500, bytes(range(2 * tails)))
    record = _layout([16] * 4).page_record(5 << 50, key, None, sketch)
    (read,) = page_records(record, 5 << 50)
    assert key.startswith(read.key)
    stored = len(read.key.encode()) - len("https://www.")
    assert 2**16 - 1 - 2 * tails - 4 < stored <= 2**16 - 1 - 2 * tails


def test_a_record_whose_url_is_no_utf8_spoils_only_its_own_url() -> None:
    """A page bucket holding a record whose URL bytes end inside a character (cut by bytes, as
    an earlier writer did) reads whole: that URL ends in U+FFFD, the records after it read as
    written."""
    layout = _layout([16] * 4)
    sketch = Sketch(100, 50, b"\x01\x02")
    top = 7 << 46
    broken = layout.page_record(top | 1, "http://x/ab", None, sketch)
    broken = broken[:-1] + "é".encode()[:1]  # "a" and half an "é"
    value = layout.page_record(top | 2, "http://x/first", 9, sketch) + broken
    value += layout.page_record(top | 3, "http://x/né", None, sketch)
    read = page_records(value, top)
    assert [r.key for r in read] == ["http://x/first", "http://x/a\ufffd", "http://x/né"]
    assert [r.fp & 3 for r in read] == [2, 1, 3] and read[0].signature == 9
