"""One near-duplicate index shared by many crawler processes and machines, kept in Redis.

Key layout (``name`` defaults to ``neardupe``; every key carries the hash tag ``{name}``)::

    {name}:header        STRING  JSON of IndexHeader.to_dict() (written once, checked on open)
    {name}:layout        STRING  JSON {"format", "bucket_bits"}: how the buckets below are cut
    {name}:count         STRING  INCR counter: pages stored
    {name}:keys          HASH    8-byte big-endian fingerprint -> its pages, one entry each: a
                                 9-byte signature record (a flag byte, 1 if a signature follows,
                                 then 8 bytes big-endian), the key's length (4 bytes), the key
    {name}:sentences     HASH    8-byte sentence hash -> the short pages that have it (at most
                                 SENTENCE_HOLDERS), one entry each: 8-byte fingerprint, the
                                 page's sentence letters (4 bytes), the key's length (4), the key
    {name}:<t>:<prefix>  STRING  bucket of table t for the leading ``bucket_bits[t]`` bits of the
                                 fingerprint permuted by table t (hex): the fingerprints (8 bytes
                                 each, big-endian, unpermuted) appended one after another

This is the block-permutation index of Manku et al. (WWW 2007) cut into Redis keys: two
fingerprints within distance k share the leading prefix of at least one table, so a query only
reads its own bucket in each table.  Fingerprints are 8-byte binary records, never sorted-set
scores (doubles lose 64-bit integers above 2**53).  A bucket is one string of packed records
rather than a Redis SET: 8 bytes per fingerprint per table instead of ~50-60 (a SET of strings
is a hash table on Redis < 7.2), and one GET hands the whole bucket to Lua.

Check-and-insert is ONE Lua script (EVALSHA): it scans the query's bucket in every table,
computes Hamming distances on two 32-bit halves with Redis Lua's ``bit`` library, and either
returns the nearest stored page whose fingerprint and confirmation-signature distances to the
query's add up to at most ``confirm_k``, or failing that the stored short
page sharing the most of the query's sentences, or appends the fingerprint to every bucket (if
new), its page's entry to it and to its sentences.
Scripts run atomically, so two processes meeting copies of one article at the same time keep
exactly one.

Redis Cluster: the hash tag puts every key of one index in ONE slot, so the script (which
touches keys computed from the fingerprint) runs on one node.  One index therefore lives on
one primary: its capacity is that node's memory (roughly 100-200 bytes per page, mostly the
URL; see benchmarks/redis_bench.py), and its throughput is one Redis core.  Shard several crawls
over a cluster by giving each its own ``name``.

Failure policy: connection errors, timeouts and a server still loading its data are retried
with exponential backoff (50 ms doubling) for ``retry_seconds`` (default 2 s; each attempt is
cut by a socket timeout of at most that much, so a hung Redis costs a call at most about twice
``retry_seconds``); then :class:`~nearDupe.errors.StoreUnavailable` is raised.  The plugin
keeps the item, queues the page locally and checks-and-adds the queue, in order, once Redis
answers again (``NearDupePipeline._replay_backlog``).  A retried check-and-insert whose first
attempt did reach Redis finds its own fingerprint under its own key: that is recognised and
reported as new, not as a duplicate of itself.

The index is opened, and its header checked, by :mod:`nearDupe.store.redis_open` (buckets:
:mod:`~nearDupe.store.redis_layout`; retries and refusals: :mod:`~nearDupe.store.redis_failures`);
bulk loading and listing are in :mod:`~nearDupe.store.redis_bulk`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import redis as redis_sync

from nearDupe.shorttext import Sentences
from nearDupe.sitetemplate import SiteTemplate
from nearDupe.store import droplog
from nearDupe.store.base import Holder, Match, sentence_matches, sketch_of, storable_key
from nearDupe.store.redis_bulk import RedisBulkIndex
from nearDupe.store.redis_records import (
    entry,
    packed_sentences,
    sentence_entry,
    sentence_holders,
    signature_record,
)


class RedisStore(RedisBulkIndex):
    """:class:`~nearDupe.store.Store` in a Redis shared by every crawler process (see module)."""

    # -- the Store contract ----------------------------------------------------------------

    async def check_and_add(
        self, fp: int, key: str, signature: int | None = None, sentences: Sentences = ()
    ) -> Match | None:
        """The nearest stored page within k that ``signature`` confirms, else the short page
        sharing the most of ``sentences``; or None after recording the page atomically."""
        key = storable_key(key)
        fp_bytes = fp.to_bytes(8, "big")
        record = signature_record(signature)
        args = [
            fp_bytes,
            self.k,
            key.encode(),
            "0",
            record,
            self.confirm_k,
            entry(record, key),
            packed_sentences(sentences),
            repr(self.sentence_share),
            sentence_entry(fp, sketch_of(sentences), key),
        ]

        async def attempt(retried: bool) -> Any:
            await self._ensure_ready()
            keys = [
                self._keys_key,
                self._count_key,
                self._sentences_key,
                self._header_key,
                *self.bucket_keys(fp),
            ]
            args[3] = "1" if retried else "0"
            try:
                return await self._check_and_add(keys, args)
            except redis_sync.ResponseError as exc:
                if "NO_HEADER" not in str(exc):
                    raise
            self._emptied()
            await self._ensure_ready()
            return await self._check_and_add(keys, args)

        reply = await self._retrying("check_and_add", attempt)
        if reply is None:
            return None
        found, distance, stored, *shared = reply
        match = Match(stored.decode(), int.from_bytes(found, "big"), int(distance))
        if shared:
            return replace(match, distance=None, shared=round(float(shared[0]), 3))
        return match

    async def query(
        self,
        fp: int,
        k: int | None = None,
        signature: int | None = None,
        sentences: Sentences = (),
    ) -> list[Match]:
        """Stored pages within distance k (default: the index's k), nearest first, then the
        short pages that share enough of ``sentences``.

        With a ``signature``, only pages it confirms (see :func:`~nearDupe.store.base.confirmed`).
        """
        k = self.k if k is None else k
        if not 0 <= k <= self.design.k:
            raise ValueError(f"k={k} is outside 0..{self.design.k} for design {self.design.name}")

        async def attempt(_retried: bool) -> Any:
            await self._ensure_ready()
            keys = [self._keys_key, *self.bucket_keys(fp)]
            args = [fp.to_bytes(8, "big"), k, signature_record(signature), self.confirm_k]
            return await self._query(keys, args)

        reply = await self._retrying("query", attempt)
        matches = [
            Match(reply[i + 2].decode(), int.from_bytes(reply[i], "big"), int(reply[i + 1]))
            for i in range(0, len(reply), 3)
        ]
        matches.sort(key=lambda m: (m.distance, m.fingerprint))
        if sentences:
            matches += sentence_matches(
                sentences, await self.holders(sentences), self.sentence_share
            )
        return matches

    async def holders(self, sentences: Sentences) -> list[Holder]:
        """The stored pages recorded under one of ``sentences``."""
        wanted = [h.to_bytes(8, "big") for h, _ in sentences]
        values = await self._retrying(
            "query", lambda _r: self.client.hmget(self._sentences_key, wanted)
        )
        return [
            holder
            for (h, _), value in zip(sentences, values, strict=True)
            for holder in sentence_holders(h, value or b"")
        ]

    async def site_template(self, host: str) -> SiteTemplate:
        """See :class:`~nearDupe.store.Store`."""
        return await self.sites.template(host)

    async def learn_site(self, host: str, identity: int, lines: Sequence[int]) -> None:
        """See :class:`~nearDupe.store.Store` (learning twice is learning once: retried)."""
        await self._retrying("learn_site", lambda _r: self.sites.learn(host, identity, lines))

    async def log_drop(self, drop: droplog.Drop) -> None:
        """Remember a drop in a list capped at DROP_LOG_LIMIT (newest first)."""
        value = replace(drop, url=storable_key(drop.url)).to_json()

        async def attempt(_retried: bool) -> Any:
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.lpush(self._drops_key, value)
                pipe.ltrim(self._drops_key, 0, droplog.DROP_LOG_LIMIT - 1)
                return await pipe.execute()

        await self._retrying("log_drop", attempt)

    async def drops(self) -> list[droplog.Drop]:
        """Every remembered drop, oldest first."""
        await self._retrying("drops", lambda _r: self._ensure_ready())
        values = await self.client.lrange(self._drops_key, 0, -1)
        return [droplog.Drop.from_json(v) for v in reversed(values)]

    async def count(self) -> int:
        """How many pages are stored."""

        async def attempt(_retried: bool) -> Any:
            await self._ensure_ready()
            return await self.client.get(self._count_key)

        return int(await self._retrying("count", attempt) or 0)

    async def close(self) -> None:
        """Release the connections."""
        await self.client.aclose()

    async def __aenter__(self) -> RedisStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
