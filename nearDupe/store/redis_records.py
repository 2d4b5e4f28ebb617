"""Binary records of the Redis index, as the crawlers write and read them (numpy for buckets).

See the key layout in :mod:`nearDupe.store.redis`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from nearDupe.store.base import TAIL_BYTES, Sketch

#: Bytes of a fingerprint (big-endian).
FP = 8
#: Bytes of a page record's fingerprint: its low 48 bits (its page bucket's key holds the top
#: ones; a layout's page buckets take at least 64 - 8 * STORED_FP bits).
STORED_FP = 6
#: Bytes of a page record's writer: the first bytes of the check's token (zero from a bulk
#: load), so that a retried check knows its own record from another crawler's of the same URL.
WRITER = 4
#: Bytes of a letter count (big-endian; counts above 2^24 - 1 are stored as that).
LETTERS = 3
#: Bytes of a key's length before the key (big-endian): URLs are cut below 64 KiB.
LENGTH = 2
#: How a record's length is read (LENGTH bytes, big-endian).
_LENGTH = struct.Struct(">H")
assert _LENGTH.size == LENGTH
#: Flag of the tail-count byte: a signature is stored (else its 8 bytes are zero).
SIGNED = 0x80
#: Bits of the tail-count byte that hold the tail count (at most SKETCH_SENTENCES).
TAIL_COUNT = 0x1F
#: The URL beginnings a format-4 page record leaves out of its key, by their code (the
#: longest that fits is cut): the code is kept in the tail-count byte's bits 5-6, which
#: format 3 leaves zero (cut nothing).
URL_PREFIXES = ("", "http://", "https://", "https://www.")
_PREFIX_SHIFT = 5
#: Bytes of a page record's head: fingerprint, writer, signature, its sketch's letters and
#: sketched letters, the tail count (with SIGNED and the prefix code), and the length of what
#: follows (the tails, then the key).
PAGE_HEAD = STORED_FP + WRITER + FP + 2 * LETTERS + 1 + LENGTH
#: Bytes of a sentence record's hash: its low 32 bits (the bucket's key holds the top ones; the
#: bits between are not kept: a false holder, ~150 records / 2^32 per query sentence, is
#: judged by its sketch like any other).
SENTENCE = 4
_SENTENCE_MASK = (1 << 8 * SENTENCE) - 1


class PageRecord(NamedTuple):
    """One stored page as its page bucket holds it."""

    fp: int
    key: str
    signature: int | None
    sketch: Sketch
    writer: bytes


def page_record(
    fp: int,
    key: str,
    signature: int | None,
    sketch: Sketch,
    writer: bytes = bytes(WRITER),
) -> bytes:
    """One page as its page bucket stores it (``writer``: see WRITER), its URL without the
    longest of URL_PREFIXES it starts with."""
    code, name = stored_key(key)
    raw = sketch.tails + utf8_cut(name, 2 ** (8 * LENGTH) - 1 - len(sketch.tails))
    most = 2 ** (8 * LETTERS) - 1
    count = len(sketch.tails) // TAIL_BYTES | code
    return (
        record_id(fp, writer)
        + (signature or 0).to_bytes(FP, "big")
        + min(sketch.letters, most).to_bytes(LETTERS, "big")
        + min(sketch.sketched, most).to_bytes(LETTERS, "big")
        + bytes([count | (0 if signature is None else SIGNED)])
        + len(raw).to_bytes(LENGTH, "big")
        + raw
    )


def stored_key(key: str) -> tuple[int, bytes]:
    """The bits of the tail-count byte that name the prefix cut from ``key`` (the longest of
    URL_PREFIXES it starts with), and the bytes stored of it."""
    code = max(i for i, p in enumerate(URL_PREFIXES) if key.startswith(p))
    return code << _PREFIX_SHIFT, key.encode()[len(URL_PREFIXES[code]) :]


def utf8_cut(text: bytes, most: int) -> bytes:
    """The UTF-8 ``text`` cut to at most ``most`` bytes on a character boundary (a cut inside
    a character would leave bytes no UTF-8 decoder takes)."""
    if len(text) <= most:
        return text
    end = max(most, 0)
    while end > 0 and text[end] & 0xC0 == 0x80:  # a continuation byte: inside a character
        end -= 1
    return text[:end]


def page_records(value: bytes, top: int, heads: Iterable[bytes] | None = None) -> list[PageRecord]:
    """Every page in a page bucket, oldest first (``top``: the bucket's fingerprint bits, as
    :meth:`~nearDupe.store.redis_layout.Layout.page_key_top` gives them); with ``heads``,
    only those whose stored fingerprint (its low STORED_FP bytes) starts with one of them.

    The records are walked by their lengths (a record's bytes may hold any other's), but a
    C search first finds where the wanted ones may start: at 10^8 pages a bucket holds ~380.
    """
    starts: set[int] | None = None
    if heads is not None:
        starts = set()
        for head in heads:
            at = value.find(head)
            while at >= 0:
                starts.add(at)
                at = value.find(head, at + 1)
        if not starts:
            return []
    last = len(value) if starts is None else max(starts)
    out = []
    i = 0
    length_at = _LENGTH.unpack_from
    while i + PAGE_HEAD <= len(value) and i <= last:
        (n,) = length_at(value, i + PAGE_HEAD - LENGTH)
        if starts is None or i in starts:
            fp = top | int.from_bytes(value[i : i + STORED_FP], "big")
            out.append(_page_record_at(value, i, fp, n))
        i += PAGE_HEAD + n
    return out


def stored_head(fp: int, length: int = STORED_FP) -> bytes:
    """The first ``length`` bytes of the stored fingerprint of page ``fp``'s record."""
    return fp.to_bytes(FP, "big")[FP - STORED_FP : FP - STORED_FP + length]


def _page_record_at(value: bytes, i: int, fp: int, n: int) -> PageRecord:
    """The page record at byte i of a page bucket (fingerprint ``fp``, ``n`` bytes after its
    head)."""
    j = i + STORED_FP
    writer = value[j : j + WRITER]
    j += WRITER
    signature = int.from_bytes(value[j : j + FP], "big")
    j += FP
    letters = int.from_bytes(value[j : j + LETTERS], "big")
    sketched = int.from_bytes(value[j + LETTERS : j + 2 * LETTERS], "big")
    count = value[j + 2 * LETTERS]
    end = i + PAGE_HEAD + n
    tails_end = min(i + PAGE_HEAD + TAIL_BYTES * (count & TAIL_COUNT), end)
    prefix = URL_PREFIXES[(count >> _PREFIX_SHIFT) & (len(URL_PREFIXES) - 1)]
    # Tolerant: bytes that are no UTF-8 (a URL cut inside a character by an older writer)
    # read as U+FFFD, so that one record never makes its whole bucket unreadable.
    key = prefix + value[tails_end:end].decode("utf-8", "replace")
    sketch = Sketch(letters, sketched, value[i + PAGE_HEAD : tails_end])
    return PageRecord(fp, key, signature if count & SIGNED else None, sketch, writer)


def record_id(fp: int, writer: bytes) -> bytes:
    """The first bytes of a page record: its fingerprint and writer (see WRITER)."""
    return stored_head(fp) + writer[:WRITER].ljust(WRITER, b"\0")


#: Bytes of a URL record's hash: the low 48 bits of the URL's hash (base.url_hash; its URL
#: shard's key holds the top bits, at least 16 of them, so all 64 bits tell URLs apart).
URL_HASH = 6
#: Bytes of a time in a URL record: whole seconds since 1970 (0: never).
SECONDS = 4
#: Bytes of one URL record: the URL's hash, its newest page's fingerprint and writer (which
#: find its page record), when the URL was first stored and last changed, and the exact key
#: of the response that page was read from (0: unknown).
URL_RECORD = URL_HASH + FP + WRITER + 2 * SECONDS + FP


class UrlRecord(NamedTuple):
    """One claim of a URL as its URL shard holds it (the newest is its version)."""

    fp: int
    writer: bytes
    first: int
    changed: int
    body: int


def url_record(
    url: int, fp: int, writer: bytes, first: float, changed: float, body: int | None
) -> bytes:
    """A URL's claim by its page ``fp`` (written by ``writer``, read from a response of
    exact key ``body``), first stored at ``first``, changed at ``changed`` (0: never)."""
    return (
        (url & (1 << 8 * URL_HASH) - 1).to_bytes(URL_HASH, "big")
        + fp.to_bytes(FP, "big")
        + writer[:WRITER].ljust(WRITER, b"\0")
        + int(first).to_bytes(SECONDS, "big")
        + int(changed).to_bytes(SECONDS, "big")
        + (body or 0).to_bytes(FP, "big")
    )


def url_records(value: bytes, url: int) -> list[UrlRecord]:
    """The claims of URL hash ``url`` in its URL shard ``value``, oldest first (a C search
    for the hash's bytes, kept where a record starts)."""
    low = (url & (1 << 8 * URL_HASH) - 1).to_bytes(URL_HASH, "big")
    end = len(value) - len(value) % URL_RECORD
    out = []
    i = value.find(low, 0, end)
    while i >= 0:
        if i % URL_RECORD == 0:
            j = i + URL_HASH
            fp = int.from_bytes(value[j : j + FP], "big")
            writer = value[j + FP : j + FP + WRITER]
            j += FP + WRITER
            first = int.from_bytes(value[j : j + SECONDS], "big")
            changed = int.from_bytes(value[j + SECONDS : j + 2 * SECONDS], "big")
            body = int.from_bytes(value[j + 2 * SECONDS : j + 2 * SECONDS + FP], "big")
            out.append(UrlRecord(fp, writer, first, changed, body))
        i = value.find(low, i + 1, end)
    return out


def sentence_low(sentence: int) -> int:
    """The bits of a sentence hash that its records keep (see SENTENCE)."""
    return sentence & _SENTENCE_MASK


class SentenceRecords:
    """The sentence records of one layout format: a sentence hash's low SENTENCE bytes, then
    the page's tag, the top ``tag_bytes`` bytes of its fingerprint (they name its page bucket,
    and the page records there whose fingerprint starts with them are its holders; a false
    holder, whose top bits only match, is judged by its sketch like any other)."""

    def __init__(self, tag_bytes: int) -> None:
        self.tag_bytes = tag_bytes
        #: Bytes of one record.
        self.size = SENTENCE + tag_bytes
        #: The bits of a fingerprint below its tag.
        self.tag_shift = 8 * (FP - tag_bytes)
        #: Bytes of a tag in a page record's stored fingerprint (the rest is in its bucket's key).
        self.stored_tag_bytes = STORED_FP - self.tag_shift // 8
        self._dtype = np.dtype([("sentence", ">u4"), ("page", "u1", (tag_bytes,))])

    def tag(self, fp: int) -> int:
        """The top bits of a fingerprint that a sentence record keeps."""
        return fp >> self.tag_shift

    def record(self, sentence: int, fp: int) -> bytes:
        """A page recorded under one sentence: the hash's low bits and the page's tag."""
        low = sentence_low(sentence).to_bytes(SENTENCE, "big")
        return low + self.tag(fp).to_bytes(self.tag_bytes, "big")

    def head(self, tag: int) -> bytes:
        """How the stored fingerprints of the pages with ``tag`` start (see stored_head)."""
        return stored_head(tag << self.tag_shift, self.stored_tag_bytes)

    def tags(self, value: bytes, sentence: int) -> list[int]:
        """The page tags recorded under ``sentence`` in its sentence bucket ``value``, oldest
        first (a C search for the hash's low bits, kept where a record starts)."""
        low = sentence_low(sentence).to_bytes(SENTENCE, "big")
        size = self.size
        end = len(value) - len(value) % size
        out = []
        i = value.find(low, 0, end)
        while i >= 0:
            if i % size:
                i = value.find(low, i + 1, end)
                continue
            out.append(int.from_bytes(value[i + SENTENCE : i + size], "big"))
            i = value.find(low, i + size, end)
        return out

    def table(self, sentences: np.ndarray, fps: np.ndarray) -> bytes:
        """The records of pages ``fps`` under ``sentences`` (uint64 arrays), packed."""
        table = np.zeros(len(sentences), dtype=self._dtype)
        table["sentence"] = sentences & np.uint64(_SENTENCE_MASK)
        tags = (fps >> np.uint64(self.tag_shift)).astype(">u8").view(np.uint8).reshape(-1, FP)
        table["page"] = tags[:, FP - self.tag_bytes :]
        return table.tobytes()


def bucket_width(bucket_bits: int) -> int:
    """Bytes a bucket keeps per fingerprint: the permuted bits below its prefix."""
    return -(-(64 - bucket_bits) // 8)


def bucket_record(low: int, width: int) -> bytes:
    """A fingerprint's record in one bucket: its permuted low bits, big-endian."""
    return low.to_bytes(width, "big")


def bucket_lows(value: bytes, width: int) -> np.ndarray:
    """The permuted low bits of every fingerprint in a bucket (uint64): each record read as
    the 8 bytes ending with it (a strided view, the bytes before it masked off)."""
    n = len(value) // width
    if not n:
        return np.zeros(0, dtype=np.uint64)
    padded = bytes(8 - width) + value[: n * width]
    lows = np.ndarray((n,), dtype=">u8", buffer=padded, strides=(width,))
    if width < 8:
        return lows & np.uint64((1 << 8 * width) - 1)
    return lows.astype(np.uint64)
