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
from nearDupe.shorttext import Sentences, letters
from nearDupe.store import droplog, public_location
from nearDupe.store.base import (
    FORMAT_VERSION,
    NO_CONFIRMATION,
    SENTENCE_CONTAINED,
    SENTENCE_HOLDERS,
    IndexHeader,
    Match,
    sentence_matches,
    storable_key,
)

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

_LUA_COMMON = """
local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
local byte = string.byte

local function popcount(x)
  x = x - band(rshift(x, 1), 0x55555555)
  x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
  x = band(x + rshift(x, 4), 0x0F0F0F0F)
  x = x + rshift(x, 8)
  x = x + rshift(x, 16)
  return band(x, 0x3F)
end

local function halves(s, i)
  local a, b, c, d, e, f, g, h = byte(s, i, i + 7)
  return ((a * 256 + b) * 256 + c) * 256 + d, ((e * 256 + f) * 256 + g) * 256 + h
end

local function uint32(s, i)
  local a, b, c, d = byte(s, i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

-- Whether a candidate at distance d is confirmed: d plus the distance of two signature
-- records (a flag byte, 0 for none, then 8 bytes) is at most ck.
local function confirms(record, sig, d, ck)
  if ck >= NO_CONFIRMATION or byte(sig, 1) == 0 or byte(record, 1) == 0 then
    return true
  end
  local shi, slo = halves(record, 2)
  local qhi, qlo = halves(sig, 2)
  return d + popcount(bxor(shi, qhi)) + popcount(bxor(slo, qlo)) <= ck
end

-- The key of the first page in a stored value (entries: record, 4-byte length, key) whose
-- signature record confirms sig at distance d, or nil.
local function confirmed_key(value, sig, d, ck)
  local i = 1
  while i + 12 <= #value do
    local n = uint32(value, i + 9)
    if confirms(string.sub(value, i, i + 8), sig, d, ck) then
      return string.sub(value, i + 13, i + 12 + n)
    end
    i = i + 13 + n
  end
  return nil
end

-- Every distinct fingerprint within k of fp in the buckets KEYS[first..]: {fp, hi, lo, d}.
local function near(first, fp, k)
  local qhi, qlo = halves(fp, 1)
  local seen, out = {}, {}
  for t = first, #KEYS do
    local s = redis.call('GET', KEYS[t])
    if s then
      for i = 1, #s, 8 do
        local hi, lo = halves(s, i)
        local d = popcount(bxor(hi, qhi))
        if d <= k then
          d = d + popcount(bxor(lo, qlo))
          local found = string.sub(s, i, i + 7)
          if d <= k and not seen[found] then
            seen[found] = true
            out[#out + 1] = {found, hi, lo, d}
          end
        end
      end
    end
  end
  return out
end
""".replace("NO_CONFIRMATION", str(NO_CONFIRMATION))

# KEYS: keys hash, counter, sentences hash, one bucket per table.
# ARGV: fp (8 bytes), k, key, retried (0/1), signature record (9 bytes), confirm_k, entry,
# sentences (8-byte hash and 4-byte letters each), sentence share, sentence entry.
# Returns nil when the page was recorded, else {fp (8 bytes), distance, stored key} or, for a
# match by sentences, {fp, -1, stored key, share}.
_LUA_CHECK_AND_ADD = (
    _LUA_COMMON
    + """
if redis.call('EXISTS', KEYS[4]) == 0 then
  return redis.error_reply('NO_HEADER')
end
local fp, k, key, retried = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local sig, ck, entry = ARGV[5], tonumber(ARGV[6]), ARGV[7]
local sentences, share, sentence_entry = ARGV[8], tonumber(ARGV[9]), ARGV[10]
local found = near(5, fp, k)
table.sort(found, function(a, b)
  if a[4] ~= b[4] then return a[4] < b[4] end
  if a[2] ~= b[2] then return a[2] < b[2] end
  return a[3] < b[3]
end)
for _, m in ipairs(found) do
  local stored = confirmed_key(redis.call('HGET', KEYS[1], m[1]) or '', sig, m[4], ck)
  if stored then
    if m[4] == 0 and retried == '1' and stored == key then
      return nil
    end
    return {m[1], m[4], stored}
  end
end
-- Short pages: the stored page whose common sentences are the largest share of both pages'
-- sentence letters (see nearDupe.store.base.sentence_matches).
local total, holders, common, count, their, order = 0, {}, {}, {}, {}, {}
for i = 1, #sentences, 12 do
  local h, n = string.sub(sentences, i, i + 7), uint32(sentences, i + 8)
  total = total + n
  local value = redis.call('HGET', KEYS[3], h) or ''
  local j, held = 1, 0
  while j + 15 <= #value do
    local len = uint32(value, j + 12)
    local page = string.sub(value, j, j + 7) .. string.sub(value, j + 16, j + 15 + len)
    if not common[page] then
      common[page], count[page], their[page] = 0, 0, uint32(value, j + 8)
      order[#order + 1] = page
    end
    common[page], count[page] = common[page] + n, count[page] + 1
    held = held + 1
    j = j + 16 + len
  end
  holders[#holders + 1] = {h, value, held}
end
local best, best_share, single = nil, -1, math.min(1, 2 * share)
for _, page in ipairs(order) do
  local s = math.min(common[page] / total, common[page] / their[page])
  local held = math.max(common[page] / total, common[page] / their[page])
  local needed = share
  if count[page] == 1 then
    needed = single
  end
  if s >= needed and held >= SENTENCE_CONTAINED and s > best_share then
    best, best_share = page, s
  end
end
if best then
  return {string.sub(best, 1, 8), -1, string.sub(best, 9), tostring(best_share)}
end
for _, h in ipairs(holders) do
  if h[3] < SENTENCE_HOLDERS then
    redis.call('HSET', KEYS[3], h[1], h[2] .. sentence_entry)
  end
end
local pages = redis.call('HGET', KEYS[1], fp)
if not pages then
  for t = 5, #KEYS do
    redis.call('APPEND', KEYS[t], fp)
  end
  pages = ''
end
redis.call('HSET', KEYS[1], fp, pages .. entry)
redis.call('INCR', KEYS[2])
return nil
""".replace("SENTENCE_HOLDERS", str(SENTENCE_HOLDERS)).replace(
        "SENTENCE_CONTAINED", repr(SENTENCE_CONTAINED)
    )
)

# KEYS: keys hash, one bucket per table.  ARGV: fp (8 bytes), k, signature record, confirm_k.
# Returns {fp, distance, key, fp, distance, key, ...} for every stored fp within k whose
# signature confirms (unordered).
_LUA_QUERY = (
    _LUA_COMMON
    + """
local out = {}
for _, m in ipairs(near(2, ARGV[1], tonumber(ARGV[2]))) do
  local stored = confirmed_key(redis.call('HGET', KEYS[1], m[1]) or '', ARGV[3], m[4],
                               tonumber(ARGV[4]))
  if stored then
    out[#out + 1] = m[1]
    out[#out + 1] = m[4]
    out[#out + 1] = stored
  end
end
return out
"""
)

# KEYS: header, layout, counter.  ARGV: header JSON, layout JSON.
# KEYS: header, layout, counter.  ARGV: header, layout.  Returns both as stored, and 1 if
# pages were found without a header (written while Redis lost it: re-headed, see _reheaded).
_LUA_HANDSHAKE = """
local headless = 0
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('EXISTS', KEYS[3]) == 1 then
  headless = 1
end
redis.call('SET', KEYS[1], ARGV[1], 'NX')
redis.call('SET', KEYS[2], ARGV[2], 'NX')
return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]), headless}
"""

# KEYS: keys hash, counter.  ARGV: fp, entry, fp, entry, ... (entry: see the key layout).
# First entry per fingerprint wins and
# only new fingerprints are counted, so a retried chunk does not count twice.
_LUA_ADD_KEYS = """
local added = 0
for i = 1, #ARGV, 2 do
  added = added + redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
end
return redis.call('INCRBY', KEYS[2], added)
"""

# KEYS: buckets.  ARGV: packed records for each bucket, in the same order.
_LUA_APPEND = """
for i = 1, #KEYS do
  redis.call('APPEND', KEYS[i], ARGV[i])
end
return #KEYS
"""


#: Bytes of a signature record: a flag (1: a signature follows) and 8 bytes big-endian.
_RECORD = 9


def signature_record(signature: int | None) -> bytes:
    """A signature as stored before each key (all zero bytes: none)."""
    if signature is None:
        return bytes(_RECORD)
    return b"\x01" + signature.to_bytes(8, "big")


def entry(record: bytes, key: str) -> bytes:
    """One page as stored under its fingerprint: signature record, key length, key."""
    return record + _sized(key.encode())


def packed_sentences(sentences: Sentences) -> bytes:
    """A page's sentences as the check-and-add script reads them: 8-byte hash, 4-byte letters."""
    return b"".join(h.to_bytes(8, "big") + n.to_bytes(4, "big") for h, n in sentences)


def sentence_entry(fp: int, sentences: Sentences, key: str) -> bytes:
    """One page as stored under each of its sentences: fingerprint, sentence letters, key."""
    data = key.encode()
    return fp.to_bytes(8, "big") + letters(sentences).to_bytes(4, "big") + _sized(data)


def sentence_entries(value: bytes) -> list[tuple[str, int, int]]:
    """(key, fingerprint, sentence letters) of every page stored under one sentence."""
    out = []
    i = 0
    while i + 16 <= len(value):
        n = int.from_bytes(value[i + 12 : i + 16], "big")
        fp = int.from_bytes(value[i : i + 8], "big")
        page_letters = int.from_bytes(value[i + 8 : i + 12], "big")
        out.append((value[i + 16 : i + 16 + n].decode(), fp, page_letters))
        i += 16 + n
    return out


def _sized(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def entries(value: bytes) -> list[tuple[str, int | None]]:
    """(key, signature) of every page in a stored value, oldest first."""
    out = []
    i = 0
    while i + _RECORD + 4 <= len(value):
        n = int.from_bytes(value[i + _RECORD : i + _RECORD + 4], "big")
        start = i + _RECORD + 4
        signature = int.from_bytes(value[i + 1 : i + _RECORD], "big") if value[i] == 1 else None
        out.append((value[start : start + n].decode(), signature))
        i = start + n
    return out


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
        self._check_and_add = client.register_script(_LUA_CHECK_AND_ADD)
        self._query = client.register_script(_LUA_QUERY)
        self._handshake = client.register_script(_LUA_HANDSHAKE)
        self._add_keys = client.register_script(_LUA_ADD_KEYS)
        self._append = client.register_script(_LUA_APPEND)
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
            reply = client.eval(_LUA_HANDSHAKE, len(keys), *keys, *args)
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
            p = self.design.packed[t]
            n = int(p[0])
            moves = [(int(p[2 + s]), int(p[2 + 2 * n + s]), int(p[2 + n + s])) for s in range(n)]
            self._tables.append((f"{self._tag}:{t}:", moves, BITS - bits))

    # -- keys ------------------------------------------------------------------------------

    def bucket_keys(self, fp: int) -> list[str]:
        """The Redis key of ``fp``'s bucket in every table."""
        out = []
        for prefix, moves, shift in self._tables:
            permuted = 0
            for src, mask, dst in moves:
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
