"""Bulk load and full listing of a Redis index (loading, migration, reports)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from nearDupe.shorttext import Sentences
from nearDupe.store.base import Sketch, recorded, sketch_of
from nearDupe.store.redis_layout import glob_escaped
from nearDupe.store.redis_open import RedisIndex
from nearDupe.store.redis_records import page_records

#: Keys a bulk load writes per script call (one node's).
CHUNK = 5_000


def _groups(prefixes: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(prefix, indices) per distinct prefix, the indices in their original order."""
    order = np.argsort(prefixes, kind="stable")
    ordered = prefixes[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    for start, stop in zip(starts, np.r_[starts[1:], len(order)], strict=True):
        yield int(ordered[start]), order[start:stop]


class RedisBulkIndex(RedisIndex):
    """A Redis index that also records pages in bulk and lists every stored page."""

    async def add_many(
        self,
        fps: Sequence[int] | np.ndarray,
        keys: Sequence[str],
        signatures: Sequence[int | None] | None = None,
        sentences: Sequence[Sentences] | None = None,
        sketches: Sequence[Sketch] | None = None,
    ) -> None:
        """Record pages unconditionally into an EMPTY index, in bulk and without leases
        (loading an index no crawl writes yet, migration): one SET per key (exact-sized, and
        a retried chunk writes the same again).

        Each page is recorded under its sentences as a check-and-add records it
        (:func:`~nearDupe.store.base.recorded`; the SENTENCE_HOLDERS cap is not applied).
        ``sketches``: each page's sketch when ``sentences`` holds only the sentences it was
        recorded under (a migration).
        """
        fps = np.asarray(fps, dtype=np.uint64)
        if not len(fps) == len(keys) == len(signatures or keys) == len(sentences or keys):
            raise ValueError("fps, keys, signatures and sentences differ in length")
        if not len(fps):
            return
        await self._retrying("add_many", lambda _r: self._ensure_ready())
        if int(await self.client.get(self._count_key) or 0):
            raise ValueError(f"Redis index {self.name!r} at {self.url} is not empty")
        writes: dict[str, bytes] = {}
        for t, width in enumerate(self.layout.widths):
            permuted = self.design.permute(t, fps)
            shift = np.uint64(64 - self.layout.bucket_bits[t])
            low = (permuted & ((np.uint64(1) << shift) - np.uint64(1))).astype(">u8")
            raw = low.view(np.uint8).reshape(-1, 8)[:, 8 - width :]
            for prefix, rows in _groups(permuted >> shift):
                writes[self.layout.bucket_key(t, prefix)] = raw[rows].tobytes()
        records: list[bytes] = []
        # The sentence records as two compact columns (10^7 pages: 4 x 10^7 records).
        hashes, pages = array("Q"), array("Q")
        for i, fp in enumerate(fps.tolist()):
            page = sentences[i] if sentences is not None else ()
            sig = signatures[i] if signatures is not None else None
            sketch = sketches[i] if sketches is not None else sketch_of(page)
            records.append(self.layout.page_record(fp, keys[i], sig, sketch))
            for h, _ in recorded(page):
                hashes.append(h)
                pages.append(i)
        for prefix, rows in _groups(fps >> np.uint64(self.layout.page_shift)):
            key = self.layout.page_key(prefix << self.layout.page_shift)
            writes[key] = b"".join(records[r] for r in rows)
        if hashes:
            hash_column = np.frombuffer(hashes, dtype=np.uint64)
            fp_column = fps[np.frombuffer(pages, dtype=np.uint64)]
            top = self.layout.sentence_shift
            for prefix, rows in _groups(hash_column >> np.uint64(top)):
                table = self.layout.sentences.table(hash_column[rows], fp_column[rows])
                writes[self.layout.sentence_key(prefix << top)] = table
        for group in await self.pipes.by_node(writes):
            for start in range(0, len(group), CHUNK):
                chunk = group[start : start + CHUNK]
                args = [x for key in chunk for x in (key, writes[key])]
                await self._retrying("add_many", partial(self._set, [(chunk, args)]))
        await self._retrying("add_many", lambda _r: self.client.set(self._count_key, len(fps)))

    async def _set(self, calls: list[tuple[list[str], list[Any]]], _retried: bool) -> None:
        await self.pipes.per_node("set", calls)

    async def pages(self) -> list[tuple[int, str, int | None]]:
        """Every stored (fingerprint, key, signature), in no particular order (SCAN of the
        page buckets, on every node of a cluster)."""
        await self._retrying("pages", lambda _r: self._ensure_ready())
        out = []
        buckets = f"{glob_escaped(self.name)}:{{p.*}}"  # this index's only
        async for bucket in self.client.scan_iter(match=buckets, count=1000):
            value = await self.client.get(bucket)
            top = self.layout.page_key_top(bucket.decode())
            out += [(r.fp, r.key, r.signature) for r in page_records(value or b"", top)]
        return out
