"""Binary records of the Redis index, as the crawlers write and read them (numpy for buckets).

See the key layout in :mod:`nearDupe.store.redis`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nearDupe.store.base import TAIL_BYTES, Sketch

#: Bytes of a fingerprint or a sentence hash (big-endian).
FP = 8
#: Bytes of a letter count (big-endian).
LETTERS = 4
#: Bytes of a key's length before the key (big-endian): URLs are cut below 64 KiB.
LENGTH = 2
#: Bytes of a signature record: a flag (1: a signature follows) and 8 bytes big-endian.
RECORD = 1 + FP
#: Bytes of a page record's head: fingerprint, signature record, its sketch's letters and
#: sketched letters, how many sketch tails, and the length of what follows (the tails, then
#: the key).
PAGE_HEAD = FP + RECORD + 2 * LETTERS + 1 + LENGTH
#: Bytes of a sentence hash in its record: the low 48 bits (its bucket's key holds the top
#: bits, so the two together are the whole hash).
SENTENCE = 6
#: Bytes of a sentence record: the sentence hash, the page's fingerprint, and which of the
#: page records with that fingerprint (0 for the first) in its page bucket.
SENTENCE_RECORD = SENTENCE + FP + 1
#: The largest ordinal a sentence record holds (one byte): the sentences of a 256th page
#: with one fingerprint (pages the signature tells apart) point to the 256th.
PAGES_PER_FP = 255

_SENTENCE_DTYPE = np.dtype([("sentence", f"S{SENTENCE}"), ("fp", ">u8"), ("nth", "u1")])


class PageRecord(NamedTuple):
    """One stored page as its page bucket holds it."""

    fp: int
    key: str
    signature: int | None
    sketch: Sketch


def signature_record(signature: int | None) -> bytes:
    """A signature as stored in a page record (all zero bytes: none)."""
    if signature is None:
        return bytes(RECORD)
    return b"\x01" + signature.to_bytes(8, "big")


def page_record(fp: int, key: str, signature: int | None, sketch: Sketch) -> bytes:
    """One page as its page bucket stores it."""
    raw = sketch.tails + key.encode()[: 2 ** (8 * LENGTH) - 1 - len(sketch.tails)]
    return (
        fp.to_bytes(FP, "big")
        + signature_record(signature)
        + sketch.letters.to_bytes(LETTERS, "big")
        + sketch.sketched.to_bytes(LETTERS, "big")
        + bytes([len(sketch.tails) // TAIL_BYTES])
        + len(raw).to_bytes(LENGTH, "big")
        + raw
    )


def page_records(value: bytes) -> list[PageRecord]:
    """Every page in a page bucket, oldest first."""
    out = []
    i = 0
    while i + PAGE_HEAD <= len(value):
        fp = int.from_bytes(value[i : i + FP], "big")
        flag, j = value[i + FP], i + FP + 1
        signature = int.from_bytes(value[j : j + FP], "big") if flag == 1 else None
        j += FP
        letters = int.from_bytes(value[j : j + LETTERS], "big")
        sketched = int.from_bytes(value[j + LETTERS : j + 2 * LETTERS], "big")
        tails_end = i + PAGE_HEAD + TAIL_BYTES * value[j + 2 * LETTERS]
        n = int.from_bytes(value[i + PAGE_HEAD - LENGTH : i + PAGE_HEAD], "big")
        key = value[tails_end : i + PAGE_HEAD + n].decode()
        sketch = Sketch(letters, sketched, value[i + PAGE_HEAD : tails_end])
        out.append(PageRecord(fp, key, signature, sketch))
        i += PAGE_HEAD + n
    return out


def sentence_bytes(sentence: int) -> bytes:
    """A sentence hash as its records hold it."""
    return sentence.to_bytes(FP, "big")[FP - SENTENCE :]


def sentence_record(sentence: int, fp: int, nth: int) -> bytes:
    """A page recorded under one sentence: the hash, the page's fingerprint and ordinal."""
    return sentence_bytes(sentence) + fp.to_bytes(FP, "big") + bytes([nth])


def sentence_records(value: bytes) -> np.ndarray:
    """A sentence bucket's records (fields ``sentence``: see :func:`sentence_bytes`, ``fp``,
    ``nth``)."""
    usable = len(value) - len(value) % SENTENCE_RECORD
    return np.frombuffer(value[:usable], dtype=_SENTENCE_DTYPE)


def bucket_width(bucket_bits: int) -> int:
    """Bytes a bucket keeps per fingerprint: the permuted bits below its prefix."""
    return -(-(64 - bucket_bits) // 8)


def bucket_record(low: int, width: int) -> bytes:
    """A fingerprint's record in one bucket: its permuted low bits, big-endian."""
    return low.to_bytes(width, "big")


def bucket_lows(value: bytes, width: int) -> np.ndarray:
    """The permuted low bits of every fingerprint in a bucket (uint64)."""
    raw = np.frombuffer(value[: len(value) - len(value) % width], dtype=np.uint8)
    full = np.zeros((len(raw) // width, 8), dtype=np.uint8)
    full[:, 8 - width :] = raw.reshape(-1, width)
    return full.view(">u8").ravel().astype(np.uint64)
