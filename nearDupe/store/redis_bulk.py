"""Bulk load and full listing of a Redis index (loading, migration, reports)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from nearDupe.store.redis_open import RedisIndex
from nearDupe.store.redis_records import entries, entry, signature_record


async def _call(script: Any, keys: list[Any], args: list[Any], _retried: bool) -> Any:
    """A registered script called with keys and args (retried as one unit by _retrying)."""
    return await script(keys, args)


class RedisBulkIndex(RedisIndex):
    """A Redis index that also records pages in bulk and lists every stored page."""

    async def add_many(
        self,
        fps: Sequence[int] | np.ndarray,
        keys: Sequence[str],
        signatures: Sequence[int | None] | None = None,
        *,
        chunk: int = 5000,
    ) -> None:
        """Record pages unconditionally in bulk, a few big script calls (loading, migration).

        Fingerprints already stored keep their first key and are not counted again.
        """
        fps = np.asarray(fps, dtype=np.uint64)
        signatures = signatures if signatures is not None else [None] * len(fps)
        if not len(fps) == len(keys) == len(signatures):
            raise ValueError(
                f"{len(fps)} fingerprints, {len(keys)} keys and {len(signatures)} signatures"
            )
        if not len(fps):
            return
        await self._retrying("add_many", lambda _r: self._ensure_ready())
        records = fps.astype(">u8")
        bucket_keys: list[str] = []
        bucket_data: list[bytes] = []
        for t, (prefix, _moves, shift) in enumerate(self._tables):
            buckets = self.design.permute(t, fps) >> np.uint64(shift)
            order = np.argsort(buckets, kind="stable")
            sorted_buckets = buckets[order]
            raw = records[order].tobytes()
            starts = np.flatnonzero(np.r_[True, sorted_buckets[1:] != sorted_buckets[:-1]])
            ends = np.r_[starts[1:], len(order)]
            for b, s, e in zip(sorted_buckets[starts].tolist(), starts * 8, ends * 8, strict=True):
                bucket_keys.append(f"{prefix}{b:x}")
                bucket_data.append(raw[s:e])
        for start in range(0, len(bucket_keys), chunk):
            stop = start + chunk
            await self._retrying(
                "add_many",
                partial(_call, self._append, bucket_keys[start:stop], bucket_data[start:stop]),
            )
        raw = records.tobytes()
        fp_bytes = [raw[i : i + 8] for i in range(0, len(raw), 8)]
        for start in range(0, len(fps), chunk):
            stop = start + chunk
            pages = zip(
                fp_bytes[start:stop], keys[start:stop], signatures[start:stop], strict=True
            )
            args = [x for fp, key, sig in pages for x in (fp, entry(signature_record(sig), key))]
            keys_and_count = [self._keys_key, self._count_key]
            await self._retrying("add_many", partial(_call, self._add_keys, keys_and_count, args))

    async def pages(self) -> list[tuple[int, str, int | None]]:
        """Every stored (fingerprint, key, signature), in no particular order (HSCAN)."""
        await self._retrying("pages", lambda _r: self._ensure_ready())
        return [
            (int.from_bytes(fp, "big"), key, signature)
            async for fp, value in self.client.hscan_iter(self._keys_key, count=1000)
            for key, signature in entries(value)
        ]
