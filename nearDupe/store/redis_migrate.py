"""Rebuild a format-2 Redis index (every key under one hash tag ``{name}``) in the current
layout, in place: ``scrapy neardupe migrate-redis``.

Pages (fingerprint, key, signature) move as they are, into the tables of the settings'
design; a short page's sentences (format 2 kept them for pages under 500 letters, with the
page's letters in total only) become its sample and sketch
(:func:`~nearDupe.store.base.sketch_of_hashes`).  Drops stay.
"""

from __future__ import annotations

import json
from typing import Any

import redis.asyncio as redis_async

from nearDupe.errors import IndexFileError
from nearDupe.store.base import IndexHeader, sketch_of_hashes
from nearDupe.store.redis import RedisStore
from nearDupe.store.redis_layout import MIGRATED_FORMAT, glob_escaped

#: Bytes of format 2's records: signature record, key length; a holder's head (fingerprint,
#: the page's sentence letters, key length).
_OLD_RECORD, _OLD_LENGTH, _OLD_HOLDER = 9, 4, 16


def _entries(value: bytes) -> list[tuple[str, int | None]]:
    """(key, signature) of each page under one fingerprint (format 2)."""
    out, i = [], 0
    while i + _OLD_RECORD + _OLD_LENGTH <= len(value):
        n = int.from_bytes(value[i + _OLD_RECORD : i + _OLD_RECORD + _OLD_LENGTH], "big")
        start = i + _OLD_RECORD + _OLD_LENGTH
        signature = int.from_bytes(value[i + 1 : i + _OLD_RECORD], "big") if value[i] else None
        out.append((value[start : start + n].decode("utf-8", "replace"), signature))
        i = start + n
    return out


def _holders(sentence: int, value: bytes) -> list[tuple[int, str, int, int]]:
    """(sentence, key, fingerprint, letters) of each page under one sentence."""
    out, i = [], 0
    while i + _OLD_HOLDER <= len(value):
        fp = int.from_bytes(value[i : i + 8], "big")
        total = int.from_bytes(value[i + 8 : i + 12], "big")
        n = int.from_bytes(value[i + 12 : i + 16], "big")
        out.append((sentence, value[i + 16 : i + 16 + n].decode("utf-8", "replace"), fp, total))
        i += _OLD_HOLDER + n
    return out


async def migrate(
    url: str, header: IndexHeader, *, name: str, cluster: bool = False, **options: Any
) -> tuple[int, int]:
    """Rebuild the format-2 index ``name`` at ``url`` with ``header`` (the settings': its
    design may differ, not its fingerprints); returns the pages moved and how many of them
    have no sentences (format 2 kept them only for short pages)."""
    make = redis_async.RedisCluster if cluster else redis_async.Redis
    client = make.from_url(url, **options)
    tag = "{" + name + "}"
    try:
        header_json = await client.get(f"{tag}:header")
        layout = await client.get(f"{tag}:layout")
        old = None if layout is None else json.loads(layout).get("format")
        if header_json is None or old != MIGRATED_FORMAT:
            raise IndexFileError(f"Redis index {name!r} is not a format-{MIGRATED_FORMAT} index")
        old_header = {**json.loads(header_json), "format": header.format, "design": header.design}
        problems = header.mismatches(old_header)
        if problems:
            raise IndexFileError(
                f"Redis index {name!r} was fingerprinted with other settings "
                f"({'; '.join(problems)}): migrate it with its own settings"
            )
        pages = [
            (int.from_bytes(fp, "big"), key, signature)
            async for fp, value in client.hscan_iter(f"{tag}:keys", count=1000)
            for key, signature in _entries(value)
        ]
        samples: dict[tuple[int, str], list[int]] = {}
        totals: dict[tuple[int, str], int] = {}
        async for h, value in client.hscan_iter(f"{tag}:sentences", count=1000):
            for sentence, key, fp, total in _holders(int.from_bytes(h, "big"), value):
                samples.setdefault((fp, key), []).append(sentence)
                totals[fp, key] = total
        mine = f"{glob_escaped(tag)}:*"  # this index's keys only, whatever its name
        old = [k async for k in client.scan_iter(match=mine, count=1000)]
        keep = {f"{tag}:drops".encode()}
        for start in range(0, len(old), 1000):
            doomed = [k for k in old[start : start + 1000] if k not in keep]
            if doomed:
                await client.delete(*doomed)
    finally:
        await client.aclose()
    store = RedisStore.from_url(url, header, name=name, cluster=cluster, **options)
    try:
        sentences = []
        for fp, key, _sig in pages:
            sample = sorted(samples.get((fp, key), []))
            sentences.append(tuple((h, 0) for h in sample))
        await store.add_many(
            [fp for fp, _, _ in pages],
            [key for _, key, _ in pages],
            [sig for _, _, sig in pages],
            sentences,
            [
                sketch_of_hashes(totals.get((fp, key), 0), samples.get((fp, key), []))
                for fp, key, _ in pages
            ],
        )
    finally:
        await store.close()
    return len(pages), sum(1 for fp, key, _ in pages if not samples.get((fp, key)))
