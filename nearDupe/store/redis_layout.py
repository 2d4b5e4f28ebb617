"""How a Redis index cuts its keys (buckets, page buckets, sentence buckets), and the check of
its stored header and layout at open."""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import logging
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from nearDupe.designs import BITS, Design
from nearDupe.errors import IndexSettingsMismatch
from nearDupe.store.base import SAMPLE_SENTENCES, IndexHeader, Sketch
from nearDupe.store.redis_records import (
    STORED_FP,
    URL_HASH,
    WRITER,
    SentenceRecords,
    bucket_lows,
    bucket_record,
    bucket_width,
    page_record,
)

#: Logged under the store's module name, which logging settings know.
logger = logging.getLogger("nearDupe.store.redis")

#: Version of the Redis key layout: the buckets spread over a cluster's slots, a page record
#: without its URL's beginning (redis_records.URL_PREFIXES), a sentence record with the top
#: SENTENCE_TAG_BYTES of its page's fingerprint. Indexes of earlier layouts were written by an
#: earlier ALGORITHM_VERSION, and are refused for it.
REDIS_FORMAT = 4
#: Bytes of a page's fingerprint a sentence record keeps (they name its page bucket).
SENTENCE_TAG_BYTES = 4

#: Largest bucket prefix: tables with longer prefixes (10-, 16-, 20-table designs) are cut
#: here so that a bucket holds several fingerprints instead of costing one key per page.
MAX_BUCKET_BITS = 20
#: Prefix bits of the page and sentence buckets: 2^18 keys hold ~38 pages (~3.7 KB) and
#: ~150 sentence records (~2.3 KB) each at 10^7 pages, so a key's own cost (~100 B with its
#: allocation's rounding) is ~5 B a page; at 2^20, 393 B/page were measured at 10^6.
PAGE_BITS = 18
SENTENCE_BITS = 18
#: For an index created for a given number of pages (NEARDUPE_REDIS_PAGES), the page and
#: sentence buckets are made more numerous so that a page bucket holds about this many pages
#: and a sentence bucket this many records (4 a page): a check copies its buckets whole into
#: the scripts, and at 10^7 pages in 2^18 buckets that made a 30-sentence page's check cost
#: 597 us against 331 at 10^5. The keys' own cost, ~100 B each, is then ~17 B a page.
PAGE_BUCKET_PAGES = 16
SENTENCE_BUCKET_RECORDS = 64
#: Prefix bits of the URL shards of an index whose stored layout names none (one created
#: before the URL table): URL_HASH's 48 bits and these tell 64 bits of URL hash apart.
URL_BITS = 18
#: For an index created for a given number of pages, URL shards hold about this many URLs
#: (URL_RECORD bytes each): a check reads its URL's shard whole.
URL_SHARD_URLS = 32
#: Fingerprints whose buckets a Layout keeps computed (more than the checks in flight).
BUCKETS_CACHED = 1024
#: Most bits for the page and sentence buckets (2^26 keys: 10^9 pages).
MOST_BITS = 26
#: The field of a stored layout that names the index's creation (random hex, new each time
#: the layout is written): a crawler reading another than the one it opened with knows that
#: the index was emptied and created again meanwhile.
CREATION = "created"
#: Copies of an index's header and layout kept on a Redis Cluster, in slots spread over the
#: 16,384 (one in each sixteenth), so that a cluster whose node holding ``{name}:header``
#: restarted empty still knows them from the other nodes.
COPIES = 16


def _spread_tags(n: int) -> tuple[str, ...]:
    """``n`` hash tags whose slots fall one in each n-th of the cluster's slots."""
    tags = []
    for i in range(n):
        j = 0
        while key_slot(f"h{i}.{j}".encode()) * n // REDIS_CLUSTER_HASH_SLOTS != i:
            j += 1
        tags.append(f"h{i}.{j}")
    return tuple(tags)


#: The hash tags of the copies (COPIES of them).
COPY_TAGS = _spread_tags(COPIES)


def copy_keys(name: str) -> list[str]:
    """The keys of index ``name``'s copies of its header and layout (see COPIES)."""
    return [f"{name}:{{{tag}}}" for tag in COPY_TAGS]


#: The characters that a Redis glob pattern (SCAN MATCH) reads as wildcards or escapes.
_GLOB = re.compile(r"([*?\[\]\\])")


def glob_escaped(text: str) -> str:
    """``text`` as a Redis glob pattern matching only itself: a name taken into a SCAN
    pattern (``ne*`` would match the keys of ``news``, ``n[a-z]ws`` too)."""
    return _GLOB.sub(r"\\\1", text)


def bare_layout(layout: dict[str, Any]) -> dict[str, Any]:
    """A stored layout without the mark of its creation: how the index cuts its keys."""
    return {k: v for k, v in layout.items() if k != CREATION}


def layout_json(layout: dict[str, Any], creation: str) -> str:
    """The JSON that a layout is stored as, marked with its ``creation``."""
    return json.dumps({**bare_layout(layout), CREATION: creation}, sort_keys=True)


def _bits(items: int, per_bucket: int, least: int) -> int:
    """Prefix bits that spread ``items`` at about ``per_bucket`` a bucket (at least ``least``)."""
    return min(MOST_BITS, max(least, math.ceil(math.log2(max(items, 1) / per_bucket))))


def wanted_layout(design: Design, max_bucket_bits: int, pages: int = 0) -> dict[str, Any]:
    """The layout a new index gets: each table's prefix bits, cut at ``max_bucket_bits``; page
    and sentence buckets for ``pages`` pages (0: PAGE_BITS and SENTENCE_BITS)."""
    return {
        "format": REDIS_FORMAT,
        "bucket_bits": [min(t.prefix_bits, max_bucket_bits) for t in design.tables],
        "page_bits": _bits(pages, PAGE_BUCKET_PAGES, PAGE_BITS),
        "sentence_bits": _bits(SAMPLE_SENTENCES * pages, SENTENCE_BUCKET_RECORDS, SENTENCE_BITS),
        "url_bits": _bits(pages, URL_SHARD_URLS, URL_BITS),
    }


def checked_layout(
    reply: Sequence[Any],
    header: IndexHeader,
    design: Design,
    wanted: dict[str, Any],
    *,
    name: str,
    url: str,
) -> dict[str, Any]:
    """The stored layout in the handshake's ``reply``, once the stored header and layout are
    found to fit this crawl's ``header`` and ``design``."""
    stored_header, stored_layout = (json.loads(v) for v in reply[:2])
    if len(reply) > 2 and int(reply[2]):
        logger.warning(
            "Redis index %r at %s held pages but no header (written while Redis had lost "
            "it); re-created with this crawl's settings",
            name,
            url,
        )
    problems = header.mismatches(stored_header)
    if problems:
        raise IndexSettingsMismatch(
            f"Redis index {name!r} at {url} was built with other settings: "
            f"{'; '.join(problems)}. Open it with its own settings or choose another "
            "index name (NEARDUPE_INDEX_NAME) or Redis database."
        )
    if stored_layout.get("format") != REDIS_FORMAT or len(
        stored_layout.get("bucket_bits", [])
    ) != len(design.tables):
        raise IndexSettingsMismatch(
            f"Redis index {name!r} at {url} has an unknown layout {stored_layout}"
        )
    if bare_layout(stored_layout) != bare_layout(wanted):
        logger.info(
            "Redis index %r at %s keeps its own bucket layout %s",
            name,
            url,
            stored_layout,
        )
    return stored_layout


class Layout:
    """The key names of one index and the bucket records of its fingerprints.

    Every bucket carries its own hash tag, so a Redis Cluster spreads them over its slots.
    """

    def __init__(self, name: str, design: Design, layout: dict[str, Any]) -> None:
        self.name = name
        self.design = design
        self.bucket_bits = [int(b) for b in layout["bucket_bits"]]
        #: The index's Redis format (REDIS_FORMAT).
        self.format = int(layout["format"])
        #: The sentence records.
        self.sentences = SentenceRecords(SENTENCE_TAG_BYTES)
        self.page_shift = BITS - int(layout["page_bits"])
        if not self.sentences.tag_shift <= self.page_shift <= 8 * STORED_FP:
            raise ValueError(f"page buckets of {layout['page_bits']} bits do not fit the records")
        self.sentence_shift = BITS - int(layout["sentence_bits"])
        self.url_shift = BITS - int(layout.get("url_bits", URL_BITS))
        if self.url_shift > 8 * URL_HASH:
            raise ValueError(f"URL shards of {layout['url_bits']} bits do not fit the records")
        self.widths = [bucket_width(b) for b in self.bucket_bits]
        self._buckets = functools.lru_cache(BUCKETS_CACHED)(self._buckets_of)
        self._tables = [
            ([tuple(map(int, m)) for m in design.moves(t)], BITS - bits)
            for t, bits in enumerate(self.bucket_bits)
        ]

    def bucket_key(self, t: int, prefix: int) -> str:
        """The key of table t's bucket for a permuted prefix."""
        return f"{self.name}:{{f{t}.{prefix:x}}}"

    def buckets(self, fp: int) -> tuple[tuple[str, int, bytes], ...]:
        """Per table: ``fp``'s bucket key, the bucket's prefix and fp's record in it (the
        last BUCKETS_CACHED fingerprints' are kept: a check asks three times)."""
        return self._buckets(fp)

    def _buckets_of(self, fp: int) -> tuple[tuple[str, int, bytes], ...]:
        out = []
        for t, (moves, shift) in enumerate(self._tables):
            permuted = 0
            for src, dst, mask in moves:
                permuted |= ((fp >> src) & mask) << dst
            prefix = permuted >> shift
            low = permuted & ((1 << shift) - 1)
            out.append((self.bucket_key(t, prefix), prefix, bucket_record(low, self.widths[t])))
        return tuple(out)

    def near(
        self, fp: int, k: int, values: dict[str, bytes]
    ) -> tuple[list[tuple[int, int]], list[bool]]:
        """(distance, fingerprint) of each distinct stored fingerprint within k of ``fp`` in
        its buckets (``values``: key -> bytes), nearest first; and per table whether ``fp``
        itself is there.

        A bucket's records and ``fp`` share the bucket's prefix, so their distance is that of
        their permuted low bits: one vectorised pass over every bucket, and only the few
        within k are unpermuted.
        """
        mine = self.buckets(fp)
        widths = self.widths
        whole = [values.get(key, b"") for key, _prefix, _record in mine]
        if len(set(widths)) == 1:  # every table's records alike: parsed at once
            whole = [v[: len(v) - len(v) % widths[0]] for v in whole]
            every = bucket_lows(b"".join(whole), widths[0])
        else:
            every = np.concatenate([bucket_lows(v, w) for v, w in zip(whole, widths, strict=True)])
        counts = [len(v) // w for v, w in zip(whole, widths, strict=True)]
        own = [int.from_bytes(r, "big") for _k, _p, r in mine]
        distance = np.bitwise_count(every ^ np.repeat(np.array(own, dtype=np.uint64), counts))
        present = [False] * len(mine)
        near = set()
        ends = list(itertools.accumulate(counts))
        for i in np.flatnonzero(distance <= max(k, 0)).tolist():
            t = bisect.bisect_right(ends, i)
            d = int(distance[i])
            present[t] = present[t] or d == 0
            if d > k:
                continue
            permuted = int(every[i]) | (mine[t][1] << self._tables[t][1])
            original = 0
            for src, dst, mask in self._tables[t][0]:
                original |= ((permuted >> dst) & mask) << src
            near.add((d, original))
        return sorted(near), present

    def page_key(self, fp: int) -> str:
        """The key of the page bucket holding the pages of ``fp``."""
        return f"{self.name}:{{p.{fp >> self.page_shift:x}}}"

    def page_key_top(self, key: str) -> int:
        """The fingerprint bits that a page bucket's ``key`` holds."""
        return int(key[key.rindex(".") + 1 : -1], 16) << self.page_shift

    def page_record(
        self,
        fp: int,
        key: str,
        signature: int | None,
        sketch: Sketch,
        writer: bytes = bytes(WRITER),
    ) -> bytes:
        """One page as its page bucket stores it."""
        return page_record(fp, key, signature, sketch, writer)

    def url_key(self, url: int) -> str:
        """The key of the URL shard holding the claims of URL hash ``url`` (base.url_hash)."""
        return f"{self.name}:{{u.{url >> self.url_shift:x}}}"

    def sentence_key(self, sentence: int) -> str:
        """The key of the sentence bucket holding the pages recorded under ``sentence``."""
        return f"{self.name}:{{s.{sentence >> self.sentence_shift:x}}}"


#: Suffix of a bucket's lease key (same hash tag, so the same slot and node).
LEASE = ":lease"
#: Suffix of the key a commit copies a bucket to, and renames back, within one script.
WRITING = ":writing"
