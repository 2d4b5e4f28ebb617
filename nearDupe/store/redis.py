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
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar, cast

import numpy as np
import redis as redis_sync
import redis.asyncio as redis_async
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.exceptions import (
    AuthenticationError,
    AuthenticationWrongNumberOfArgsError,
    AuthorizationError,
    ClusterDownError,
    NoPermissionError,
    RedisClusterException,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from nearDupe.designs import BITS, Design
from nearDupe.errors import (
    IndexAccessDenied,
    IndexFileError,
    IndexSettingsMismatch,
    StoreUnavailable,
)
from nearDupe.shorttext import Sentences
from nearDupe.sitetemplate import SiteTemplate
from nearDupe.store import droplog, public_location
from nearDupe.store.base import (
    FORMAT_VERSION,
    IndexHeader,
    Match,
    sentence_matches,
    storable_key,
)
from nearDupe.store.redis_lua import (
    LUA_ADD_KEYS,
    LUA_APPEND,
    LUA_CHECK_AND_ADD,
    LUA_HANDSHAKE,
    LUA_QUERY,
)
from nearDupe.store.redis_records import (
    entries,
    entry,
    packed_sentences,
    sentence_entries,
    sentence_entry,
    signature_record,
)
from nearDupe.store.redis_sites import RedisSites

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Errors after which a call is retried: Redis is away, restarting, loading or failing over.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    RedisConnectionError,  # includes BusyLoadingError (restarted, still reading its AOF)
    RedisTimeoutError,
    ClusterDownError,
    TryAgainError,
    TimeoutError,
    OSError,
    RedisClusterException,  # no cluster node reachable
)

#: Refusals no retry cures (they subclass ConnectionError or ResponseError in redis-py).
_REFUSALS: tuple[type[BaseException], ...] = (
    AuthenticationError,
    AuthorizationError,
    AuthenticationWrongNumberOfArgsError,
    NoPermissionError,
    ssl.SSLCertVerificationError,
)


def refusal(exc: BaseException) -> BaseException | None:
    """The refusal behind an error (redis-py wraps a TLS failure in a ConnectionError), if
    Redis or its certificate refused this client for good; else None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, _REFUSALS):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


#: Largest bucket prefix: tables with longer prefixes (10-, 16-, 20-table designs) are cut
#: here so that a bucket holds several fingerprints instead of costing one key per page.
MAX_BUCKET_BITS = 20


async def _call(script: Any, keys: list[Any], args: list[Any], _retried: bool) -> Any:
    """A registered script called with keys and args (retried as one unit by _retrying)."""
    return await script(keys, args)


class RedisStore:
    """:class:`~nearDupe.store.Store` in a Redis shared by every crawler process (see module)."""

    def __init__(
        self,
        client: Any,
        header: IndexHeader,
        *,
        name: str = "neardupe",
        url: str = "redis",
        retry_seconds: float = 2.0,
        max_bucket_bits: int = MAX_BUCKET_BITS,
        layout: dict[str, Any] | None = None,
    ) -> None:
        if not name or "{" in name or "}" in name:
            raise ValueError(f"Redis index name must be non-empty without braces, got {name!r}")
        self.client = client
        self.header = header
        self.name = name
        self.url = url
        self.k = header.k
        self.confirm_k = header.confirm_k
        self.retry_seconds = retry_seconds
        self.design = Design.named(header.design)
        self._tag = "{" + name + "}"
        self._keys_key = f"{self._tag}:keys"
        self._sentences_key = f"{self._tag}:sentences"
        self._drops_key = f"{self._tag}:drops"
        self.sentence_share = header.sentence_share
        self._count_key = f"{self._tag}:count"
        self._header_key = f"{self._tag}:header"
        self._layout_key = f"{self._tag}:layout"
        self._check_and_add = client.register_script(LUA_CHECK_AND_ADD)
        self._query = client.register_script(LUA_QUERY)
        self._handshake = client.register_script(LUA_HANDSHAKE)
        self._add_keys = client.register_script(LUA_ADD_KEYS)
        self._append = client.register_script(LUA_APPEND)
        self.sites = RedisSites(client, name)
        wanted = {
            "format": FORMAT_VERSION,
            "bucket_bits": [min(t.prefix_bits, max_bucket_bits) for t in self.design.tables],
        }
        self._layout_wanted = wanted
        self._set_layout(layout or wanted)
        self._ready = layout is not None

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def from_url(
        cls,
        url: str,
        header: IndexHeader | None = None,
        *,
        name: str = "neardupe",
        cluster: bool = False,
        retry_seconds: float = 2.0,
        socket_timeout: float = 1.0,
        max_connections: int | None = None,
        max_bucket_bits: int = MAX_BUCKET_BITS,
        **options: Any,
    ) -> RedisStore:
        """Open (creating if new) the index ``name`` at ``url``; checks its header right away.

        ``cluster=True`` talks to a Redis Cluster.  Other options go to the redis-py client.
        If Redis cannot be reached now, the header is checked on the first call instead.
        """
        header = header or IndexHeader()
        common: dict[str, Any] = {
            "socket_timeout": min(socket_timeout, retry_seconds),
            "socket_connect_timeout": min(socket_timeout, retry_seconds),
            "retry": AsyncRetry(NoBackoff(), 0),
            **options,
        }
        if max_connections is not None:
            common["max_connections"] = max_connections
        if cluster:
            client = redis_async.RedisCluster.from_url(url, **common)
        else:
            client = redis_async.Redis.from_url(url, **common)
        store = cls(
            client,
            header,
            name=name,
            url=public_location(url),
            retry_seconds=retry_seconds,
            max_bucket_bits=max_bucket_bits,
        )
        store._handshake_sync(url, cluster, common)
        return store

    def _handshake_keys(self) -> tuple[list[str], list[str]]:
        keys = [self._header_key, self._layout_key, self._count_key]
        args = [
            json.dumps(self.header.to_dict(), sort_keys=True),
            json.dumps(self._layout_wanted, sort_keys=True),
        ]
        return keys, args

    def _handshake_sync(self, url: str, cluster: bool, options: dict[str, Any]) -> None:
        """Check the header with a short-lived blocking client (once, at open)."""
        options = {k: v for k, v in options.items() if k != "retry"}
        options["retry"] = Retry(NoBackoff(), 0)
        keys, args = self._handshake_keys()
        client = None
        try:
            if cluster:
                client = redis_sync.RedisCluster.from_url(url, **options)  # type: ignore[arg-type]
            else:
                client = redis_sync.Redis.from_url(url, **options)
            reply = client.eval(LUA_HANDSHAKE, len(keys), *keys, *args)
        except _REFUSALS as exc:
            raise self._denied(exc) from None
        except TRANSIENT_ERRORS as exc:
            if (refused := refusal(exc)) is not None:
                raise self._denied(refused) from None
            logger.warning(
                "Redis index %r at %s is unreachable (%s); checking it on first use",
                self.name,
                self.url,
                exc,
            )
            return
        except redis_sync.ResponseError as exc:
            raise IndexFileError(f"Redis index {self.name!r} at {self.url}: {exc}") from exc
        finally:
            if client is not None:
                client.close()
        self._apply_handshake(cast(Sequence[Any], reply))

    def _denied(self, exc: BaseException) -> IndexAccessDenied:
        return IndexAccessDenied(
            f"Redis index {self.name!r} at {self.url} refused this client "
            f"({type(exc).__name__}: {exc}); check the credentials, the user's permissions "
            "and the TLS settings in NEARDUPE_INDEX"
        )

    async def _ensure_ready(self) -> None:
        if self._ready:
            return
        keys, args = self._handshake_keys()
        try:
            reply = await self._handshake(keys, args)
        except redis_sync.ResponseError as exc:
            raise IndexFileError(f"Redis index {self.name!r} at {self.url}: {exc}") from exc
        self._apply_handshake(reply)

    def _emptied(self) -> None:
        """The index's header vanished under a running crawl: Redis lost its data (a restart
        without persistence, a FLUSHALL, an eviction). Say so loudly; the header is then
        written again and the crawl goes on with what is left."""
        logger.error(
            "Redis index %r at %s was emptied while this crawl ran (Redis restarted without "
            "persistence, or its keys were deleted or evicted): the pages stored before are "
            "no longer known, so their copies will be kept. Re-creating the index; run Redis "
            "with appendonly yes (appendfsync everysec) so that this cannot happen",
            self.name,
            self.url,
        )
        self._ready = False

    def _apply_handshake(self, reply: Sequence[Any]) -> None:
        stored_header, stored_layout = (json.loads(v) for v in reply[:2])
        if len(reply) > 2 and int(reply[2]):
            logger.warning(
                "Redis index %r at %s held pages but no header (written while Redis had lost "
                "it); re-created with this crawl's settings",
                self.name,
                self.url,
            )
        problems = self.header.mismatches(stored_header)
        if problems:
            raise IndexSettingsMismatch(
                f"Redis index {self.name!r} at {self.url} was built with other settings: "
                f"{'; '.join(problems)}. Open it with its own settings or choose another "
                "index name (NEARDUPE_INDEX_NAME) or Redis database."
            )
        if stored_layout.get("format") != FORMAT_VERSION or len(
            stored_layout.get("bucket_bits", [])
        ) != len(self.design.tables):
            raise IndexSettingsMismatch(
                f"Redis index {self.name!r} at {self.url} has an unknown layout {stored_layout}"
            )
        if stored_layout != self._layout_wanted:
            logger.info(
                "Redis index %r at %s keeps its own bucket layout %s",
                self.name,
                self.url,
                stored_layout["bucket_bits"],
            )
        self._set_layout(stored_layout)
        self._ready = True

    def _set_layout(self, layout: dict[str, Any]) -> None:
        """Precompute per table: the segment moves and the bucket key's shift."""
        self.bucket_bits = [int(b) for b in layout["bucket_bits"]]
        self._tables = []
        for t, bits in enumerate(self.bucket_bits):
            moves = [tuple(map(int, move)) for move in self.design.moves(t)]
            self._tables.append((f"{self._tag}:{t}:", moves, BITS - bits))

    # -- keys ------------------------------------------------------------------------------

    def bucket_keys(self, fp: int) -> list[str]:
        """The Redis key of ``fp``'s bucket in every table."""
        out = []
        for prefix, moves, shift in self._tables:
            permuted = 0
            for src, dst, mask in moves:
                permuted |= ((fp >> src) & mask) << dst
            out.append(f"{prefix}{permuted >> shift:x}")
        return out

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
            sentence_entry(fp, sentences, key),
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

    async def holders(self, sentences: Sentences) -> list[tuple[int, str, int, int]]:
        """(sentence, key, fp, sentence letters) of the stored pages with one of ``sentences``."""
        wanted = [h.to_bytes(8, "big") for h, _ in sentences]
        values = await self._retrying(
            "query", lambda _r: self.client.hmget(self._sentences_key, wanted)
        )
        return [
            (h, key, fp, n)
            for (h, _), value in zip(sentences, values, strict=True)
            for key, fp, n in sentence_entries(value or b"")
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

    # -- beyond the contract ---------------------------------------------------------------

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

    # -- failures --------------------------------------------------------------------------

    async def _retrying(self, what: str, call: Callable[[bool], Awaitable[T]]) -> T:
        """Run call(retried), retrying transient errors for up to ``retry_seconds``.

        Each attempt is bounded by the socket timeouts (at most ``retry_seconds``), so a call
        gives up after about ``retry_seconds`` plus one socket timeout, even if Redis hangs.
        """
        deadline = time.monotonic() + self.retry_seconds
        delay, attempts = 0.05, 0
        while True:
            attempts += 1
            try:
                return await call(attempts > 1)
            except _REFUSALS as exc:
                raise self._denied(exc) from None
            except TRANSIENT_ERRORS as exc:
                if (refused := refusal(exc)) is not None:
                    raise self._denied(refused) from None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise StoreUnavailable(
                        f"Redis index {self.name!r} at {self.url} unavailable for {what} "
                        f"after {attempts} attempts in {self.retry_seconds:g} s: {exc!r}"
                    ) from exc
                logger.debug(
                    "Redis %s failed (%r); retrying in %.2f s", what, exc, min(delay, remaining)
                )
                await asyncio.sleep(min(delay, remaining))
                delay *= 2
