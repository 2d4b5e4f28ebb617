"""Rebuild a format-2 Redis index (every key under one hash tag ``{name}``) in the current
layout, in place: ``scrapy neardupe migrate-redis``.

Pages (fingerprint, key, signature) move as they are; each page's sentence sample moves with
the letters format 2 kept per page (of all its sentences and of its sample; a sample
sentence's own letters were not kept, so the sample's are shared evenly).  Drops stay.
"""

from __future__ import annotations

import json
from typing import Any

import redis.asyncio as redis_async

from nearDupe.errors import IndexFileError
from nearDupe.store.base import IndexHeader
from nearDupe.store.redis import RedisStore
from nearDupe.store.redis_layout import REDIS_FORMAT

#: The format this module reads.
OLD_FORMAT = REDIS_FORMAT - 1
#: Bytes of format 2's records: signature record, key length; a holder's head.
_OLD_RECORD, _OLD_LENGTH, _OLD_HOLDER = 9, 4, 20


def _entries(value: bytes) -> list[tuple[str, int | None]]:
    """(key, signature) of each page under one fingerprint (format 2)."""
    out, i = [], 0
    while i + _OLD_RECORD + _OLD_LENGTH <= len(value):
        n = int.from_bytes(value[i + _OLD_RECORD : i + _OLD_RECORD + _OLD_LENGTH], "big")
        start = i + _OLD_RECORD + _OLD_LENGTH
        signature = int.from_bytes(value[i + 1 : i + _OLD_RECORD], "big") if value[i] else None
        out.append((value[start : start + n].decode(), signature))
        i = start + n
    return out


def _holders(sentence: int, value: bytes) -> list[tuple[int, str, int, int, int]]:
    """(sentence, key, fingerprint, letters, sampled) of each page under one sentence."""
    out, i = [], 0
    while i + _OLD_HOLDER <= len(value):
        fp = int.from_bytes(value[i : i + 8], "big")
        total = int.from_bytes(value[i + 8 : i + 12], "big")
        sampled = int.from_bytes(value[i + 12 : i + 16], "big")
        n = int.from_bytes(value[i + 16 : i + 20], "big")
        out.append((sentence, value[i + 20 : i + 20 + n].decode(), fp, total, sampled))
        i += _OLD_HOLDER + n
    return out


async def migrate(url: str, *, name: str, cluster: bool = False, **options: Any) -> int:
    """Rebuild the format-2 index ``name`` at ``url``; returns the pages moved."""
    make = redis_async.RedisCluster if cluster else redis_async.Redis
    client = make.from_url(url, **options)
    tag = "{" + name + "}"
    try:
        header, layout = await client.get(f"{tag}:header"), await client.get(f"{tag}:layout")
        if header is None or layout is None or json.loads(layout).get("format") != OLD_FORMAT:
            raise IndexFileError(f"Redis index {name!r} is not a format-{OLD_FORMAT} index")
        pages = [
            (int.from_bytes(fp, "big"), key, signature)
            async for fp, value in client.hscan_iter(f"{tag}:keys", count=1000)
            for key, signature in _entries(value)
        ]
        samples: dict[tuple[int, str], list[int]] = {}
        totals: dict[tuple[int, str], tuple[int, int]] = {}
        async for h, value in client.hscan_iter(f"{tag}:sentences", count=1000):
            for sentence, key, fp, total, sampled in _holders(int.from_bytes(h, "big"), value):
                samples.setdefault((fp, key), []).append(sentence)
                totals[fp, key] = total, sampled
        old = [k async for k in client.scan_iter(match=f"{tag}:*", count=1000)]
        keep = {f"{tag}:header".encode(), f"{tag}:drops".encode()}
        for start in range(0, len(old), 1000):
            doomed = [k for k in old[start : start + 1000] if k not in keep]
            if doomed:
                await client.delete(*doomed)
    finally:
        await client.aclose()
    store = RedisStore.from_url(
        url, IndexHeader(**json.loads(header)), name=name, cluster=cluster, **options
    )
    try:
        sentences = []
        for fp, key, _sig in pages:
            sample = samples.get((fp, key), [])
            share = totals.get((fp, key), (0, 0))[1] // max(1, len(sample))
            sentences.append(tuple((h, share) for h in sorted(sample)))
        await store.add_many(
            [fp for fp, _, _ in pages],
            [key for _, key, _ in pages],
            [sig for _, _, sig in pages],
            sentences,
            [totals.get((fp, key), (0, 0))[0] for fp, key, _ in pages],
        )
    finally:
        await store.close()
    return len(pages)
