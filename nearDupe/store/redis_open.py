"""Opening a Redis index: its client, key names, scripts and layout, and the header handshake.

The handshake runs once at open on a short-lived blocking client, or, if Redis cannot be
reached then, on the first call (and again if the index is emptied under a running crawl).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast

import redis as redis_sync
import redis.asyncio as redis_async
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.connection import HiredisRespSerializer
from redis.retry import Retry
from redis.utils import HIREDIS_AVAILABLE

from nearDupe.designs import Design
from nearDupe.errors import IndexAccessDenied, IndexFileError
from nearDupe.store import public_location
from nearDupe.store.base import IndexHeader
from nearDupe.store.redis_failures import REFUSALS, TRANSIENT_ERRORS, denied, refusal, retrying
from nearDupe.store.redis_layout import MAX_BUCKET_BITS, Layout, checked_layout, wanted_layout
from nearDupe.store.redis_leases import LEASE_SECONDS
from nearDupe.store.redis_lua import LUA_HANDSHAKE
from nearDupe.store.redis_pipes import Pipes
from nearDupe.store.redis_sites import RedisSites

#: Logged under the store's module name, which logging settings know.
logger = logging.getLogger("nearDupe.store.redis")

T = TypeVar("T")
Index = TypeVar("Index", bound="RedisIndex")


Conn = TypeVar("Conn", bound=AbstractConnection)
#: The connection classes made by packed_in_c, by the class each extends.
_PACKED: dict[type[Any], type[Any]] = {}


def packed_in_c(base: type[Conn]) -> type[Conn]:
    """``base`` whose commands hiredis packs (redis-py's blocking client does, its asyncio
    one packs in Python: ~2 us an argument, a fifth of a crawler's CPU a check)."""
    if base not in _PACKED:
        pack = HiredisRespSerializer().pack
        methods = {"pack_command": lambda _self, *args: pack(*args)}
        _PACKED[base] = type(base.__name__, (base,), methods)
    return cast(type[Conn], _PACKED[base])


def _pack_in_c(client: Any) -> None:
    """Have hiredis pack the commands of ``client`` (a Redis or Redis Cluster asyncio client
    that has not connected yet), if it is installed."""
    if not HIREDIS_AVAILABLE:
        return
    if isinstance(client, redis_async.RedisCluster):
        manager = client.nodes_manager
        options = manager.connection_kwargs
        options["connection_class"] = packed_in_c(options["connection_class"])
        for node in manager.startup_nodes.values():
            node.connection_class = packed_in_c(node.connection_class)
    else:
        pool = client.connection_pool
        pool.connection_class = packed_in_c(pool.connection_class)


class RedisIndex:
    """A Redis index opened: key names, scripts and bucket layout, header checked (the Store
    is :class:`~nearDupe.store.redis.RedisStore`)."""

    def __init__(
        self,
        client: Any,
        header: IndexHeader,
        *,
        name: str = "neardupe",
        url: str = "redis",
        retry_seconds: float = 2.0,
        max_bucket_bits: int = MAX_BUCKET_BITS,
        lease_seconds: float = LEASE_SECONDS,
        layout: dict[str, Any] | None = None,
        pages: int = 0,
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
        self.lease_seconds = lease_seconds
        self.design = Design.named(header.design)
        self._tag = "{" + name + "}"
        self._drops_key = f"{self._tag}:drops"
        self.sentence_share = header.sentence_share
        self._count_key = f"{self._tag}:count"
        self._header_key = f"{self._tag}:header"
        self._layout_key = f"{self._tag}:layout"
        self._handshake = client.register_script(LUA_HANDSHAKE)
        self.pipes = Pipes(client)
        self.sites = RedisSites(client, name)
        wanted = wanted_layout(self.design, max_bucket_bits, pages)
        self._layout_wanted = wanted
        self._set_layout(layout or wanted)
        self._ready = layout is not None

    @classmethod
    def from_url(
        cls: type[Index],
        url: str,
        header: IndexHeader | None = None,
        *,
        name: str = "neardupe",
        cluster: bool = False,
        retry_seconds: float = 2.0,
        socket_timeout: float = 1.0,
        max_connections: int | None = None,
        max_bucket_bits: int = MAX_BUCKET_BITS,
        lease_seconds: float = LEASE_SECONDS,
        pages: int = 0,
        **options: Any,
    ) -> Index:
        """Open (creating if new) the index ``name`` at ``url``; checks its header right away.

        ``cluster=True`` talks to a Redis Cluster.  ``pages``: how many pages a new index is
        laid out for (see :func:`~nearDupe.store.redis_layout.wanted_layout`; an existing
        index keeps its layout).  Other options go to the redis-py client.
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
        _pack_in_c(client)
        store = cls(
            client,
            header,
            name=name,
            url=public_location(url),
            retry_seconds=retry_seconds,
            max_bucket_bits=max_bucket_bits,
            lease_seconds=lease_seconds,
            pages=pages,
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
        except REFUSALS as exc:
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
        return denied(self.name, self.url, exc)

    async def _ensure_ready(self) -> None:
        if self._ready:
            return
        keys, args = self._handshake_keys()
        try:
            reply = await self._handshake(keys, args)
        except redis_sync.ResponseError as exc:
            raise IndexFileError(f"Redis index {self.name!r} at {self.url}: {exc}") from exc
        self._apply_handshake(reply)
        await self.pipes.reload_scripts()

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
        self._set_layout(
            checked_layout(
                reply, self.header, self.design, self._layout_wanted, name=self.name, url=self.url
            )
        )
        self._ready = True

    def _set_layout(self, layout: dict[str, Any]) -> None:
        self.layout = Layout(self.name, self.design, layout)

    def bucket_keys(self, fp: int) -> list[str]:
        """The Redis key of ``fp``'s bucket in every table."""
        return [key for key, _prefix, _record in self.layout.buckets(fp)]

    async def _retrying(self, what: str, call: Callable[[bool], Awaitable[T]]) -> T:
        """Run call(retried), retrying transient errors for up to ``retry_seconds`` (see
        :func:`~nearDupe.store.redis_failures.retrying`)."""
        return await retrying(
            what, call, name=self.name, url=self.url, retry_seconds=self.retry_seconds
        )
