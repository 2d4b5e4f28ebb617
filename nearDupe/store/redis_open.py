"""Opening a Redis index: its client, key names, scripts and layout, and the header handshake.

The handshake runs once at open on a short-lived blocking client, or, if Redis cannot be
reached then, on the first call (and again if the index is emptied under a running crawl).

An index's layout is the index's: the first crawler creates it (with its
NEARDUPE_REDIS_PAGES), every later one reads it. The stored layout carries a random mark of
its creation, which every check reads with its buckets: a crawler that finds it gone (Redis
emptied) writes again the layout it opened with, and one that finds another mark (another
crawler wrote it again) says so and reads it. On a Redis Cluster, copies of the header and
layout lie in slots spread over every node (redis_layout.COPIES): a crawler opening an index
whose header's node restarted empty while other nodes kept their pages takes them back from
there, rather than laying the index out anew over pages it could no longer reach.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
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
from nearDupe.errors import IndexAccessDenied, IndexFileError, StoreUnavailable
from nearDupe.store.base import IndexHeader
from nearDupe.store.location import public_location
from nearDupe.store.redis_failures import (
    FULL_ERRORS,
    REFUSALS,
    TRANSIENT_ERRORS,
    denied,
    full,
    refusal,
    retrying,
)
from nearDupe.store.redis_layout import (
    MAX_BUCKET_BITS,
    Layout,
    bare_layout,
    checked_layout,
    copy_keys,
    layout_json,
    wanted_layout,
)
from nearDupe.store.redis_leases import LEASE_SECONDS
from nearDupe.store.redis_lua import LUA_HANDSHAKE
from nearDupe.store.redis_pipes import Pipes
from nearDupe.store.redis_sites import RedisSites

#: Logged under the store's module name, which logging settings know.
logger = logging.getLogger("nearDupe.store.redis")

#: Seconds a crawl that needs its index at start waits for Redis to answer the handshake.
START_PATIENCE = 10.0
#: Pause between two handshakes at start.
_START_PAUSE = 0.25

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
        self._copy_keys = copy_keys(name) if self.pipes.cluster else []
        wanted = wanted_layout(self.design, max_bucket_bits, pages)
        self._layout_wanted = wanted
        #: The layout this crawler opened the index with (None before the handshake), and
        #: its stored JSON as last read (its mark tells the index's creation).
        self._known: dict[str, Any] | None = bare_layout(layout) if layout else None
        self._stored: bytes | None = None
        #: Whether this crawl said that Redis is out of memory (it says so once).
        self._said_full = False
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
        must_answer: bool = False,
        **options: Any,
    ) -> Index:
        """Open (creating if new) the index ``name`` at ``url``; checks its header right away.

        ``cluster=True`` talks to a Redis Cluster.  ``pages``: how many pages a new index is
        laid out for (see :func:`~nearDupe.store.redis_layout.wanted_layout`; an existing
        index keeps its layout).  Other options go to the redis-py client.
        If Redis cannot be reached now, the header is checked on the first call instead, or,
        with ``must_answer``, StoreUnavailable is raised.
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
        store._handshake_sync(url, cluster, common, must_answer)
        return store

    def _handshake_steps(self) -> Generator[tuple[Any, ...], Any, None]:
        """The handshake, as the Redis requests it yields (a driver sends each and sends back
        its reply): ``("get", keys)`` -> their values; ``("handshake", keys, args)`` -> the
        script's reply; ``("copy", {key: value})`` -> None (written if Redis can).

        A missing header and layout are written: the layout this crawler opened with if it
        did, else that of the copies a cluster keeps on its other nodes if any, else the
        one wanted for NEARDUPE_REDIS_PAGES."""
        header = json.dumps(self.header.to_dict(), sort_keys=True)
        layout = self._known or self._layout_wanted
        copies: dict[str, Any] = {}
        restoring = False
        if self._copy_keys and self._known is None:
            copies = dict(zip(self._copy_keys, (yield ("get", self._copy_keys)), strict=True))
            kept = _description(copies.values())
            if kept is not None:
                header, layout = kept
                restoring = True
        keys = [self._header_key, self._layout_key, self._count_key]
        args = [header, layout_json(layout, os.urandom(8).hex())]
        reply = yield ("handshake", keys, args)
        self._apply_handshake(reply)
        if restoring and int(reply[3]):
            logger.warning(
                "Redis index %r at %s had lost its header while other cluster nodes kept its "
                "pages (the node holding it restarted without its data?): its settings and "
                "layout are taken back from the copies on the other nodes; the pages the "
                "lost node held are no longer known",
                self.name,
                self.url,
            )
        if self._copy_keys:
            value = _describe(reply[0], self._known or {})
            stale = {key: value for key in self._copy_keys if copies.get(key) != value}
            if stale:
                yield ("copy", stale)

    def _handshake_sync(
        self,
        url: str,
        cluster: bool,
        options: dict[str, Any],
        must_answer: bool = False,
        deadline: float | None = None,
    ) -> None:
        """Check the header with a short-lived blocking client (once, at open). A crawl that
        needs an answer (``must_answer``) asks again for up to START_PATIENCE seconds: a
        loaded or just-started Redis may miss one socket timeout."""
        if deadline is None:
            deadline = time.monotonic() + (START_PATIENCE if must_answer else 0.0)
        options = {k: v for k, v in options.items() if k != "retry"}
        options["retry"] = Retry(NoBackoff(), 0)
        client = None
        again = False
        try:
            if cluster:
                client = redis_sync.RedisCluster.from_url(url, **options)  # type: ignore[arg-type]
            else:
                client = redis_sync.Redis.from_url(url, **options)
            steps = self._handshake_steps()
            reply: Any = None
            while True:
                try:
                    step = steps.send(reply)
                except StopIteration:
                    break
                if step[0] == "get":
                    reply = [client.get(key) for key in step[1]]
                elif step[0] == "handshake":
                    keys, args = step[1], step[2]
                    reply = client.eval(LUA_HANDSHAKE, len(keys), *keys, *args)
                else:
                    _copied(lambda key, value: client.set(key, value), step[1])
                    reply = None
        except REFUSALS as exc:
            raise self._denied(exc) from None
        except TRANSIENT_ERRORS as exc:
            if (refused := refusal(exc)) is not None:
                raise self._denied(refused) from None
            if must_answer and time.monotonic() < deadline:
                again = True
            elif must_answer:
                raise StoreUnavailable(
                    f"Redis index {self.name!r} at {self.url} is unreachable: {exc}"
                ) from None
            else:
                logger.warning(
                    "Redis index %r at %s is unreachable (%s); checking it on first use",
                    self.name,
                    self.url,
                    exc,
                )
                self._ready = False
        except FULL_ERRORS as exc:  # an outage: said now, checked on first use
            self._full(exc)
            self._ready = False
        except redis_sync.ResponseError as exc:
            raise IndexFileError(f"Redis index {self.name!r} at {self.url}: {exc}") from exc
        finally:
            if client is not None:
                client.close()
        if again:
            time.sleep(_START_PAUSE)
            self._handshake_sync(url, cluster, options, must_answer, deadline)

    def _denied(self, exc: BaseException) -> IndexAccessDenied:
        return denied(self.name, self.url, exc)

    async def _ensure_ready(self) -> None:
        if self._ready:
            return
        steps = self._handshake_steps()
        reply: Any = None
        try:
            while True:
                try:
                    step = steps.send(reply)
                except StopIteration:
                    break
                if step[0] == "get":
                    reply = [await self.client.get(key) for key in step[1]]
                elif step[0] == "handshake":
                    reply = await self._handshake(step[1], step[2])
                else:
                    for key, value in step[1].items():
                        await _copied_async(self.client, key, value)
                    reply = None
        except FULL_ERRORS:
            raise  # an outage (see _retrying)
        except redis_sync.ResponseError as exc:
            raise IndexFileError(f"Redis index {self.name!r} at {self.url}: {exc}") from exc
        await self.pipes.reload_scripts()

    def _noticed(self, stored: bytes, read_under: bytes | None) -> None:
        """A check read the index's layout as ``stored`` (b"" if gone) while this crawler knew
        it as ``read_under``: say once what happened (an ERROR if Redis lost the index, a
        WARNING if another crawler created it again), and do the handshake again."""
        if read_under != self._stored or not self._ready:
            return  # read before the handshake that followed: already said
        self._ready = False
        if read_under is None:  # laid out without a handshake: none was read yet
            return
        if stored:
            logger.warning(
                "Redis index %r at %s was created again by another crawler while this crawl "
                "ran (Redis was emptied, or restarted without persistence, and that crawler "
                "noticed first): the pages stored before are no longer known, so their copies "
                "will be kept. Run Redis with appendonly yes (appendfsync everysec) so that "
                "this cannot happen",
                self.name,
                self.url,
            )
            return
        logger.error(
            "Redis index %r at %s was emptied while this crawl ran (Redis, or the cluster node "
            "holding its header, restarted without persistence, or its keys were deleted or "
            "evicted): the pages stored before are no longer known, so their copies will be "
            "kept. Re-creating the index with the layout it had; run Redis with appendonly yes "
            "(appendfsync everysec) so that this cannot happen",
            self.name,
            self.url,
        )

    def _apply_handshake(self, reply: Sequence[Any]) -> None:
        layout = checked_layout(
            reply, self.header, self.design, self._layout_wanted, name=self.name, url=self.url
        )
        self._set_layout(layout)
        self._known = bare_layout(layout)
        self._stored = reply[1]
        self._ready = True

    def _set_layout(self, layout: dict[str, Any]) -> None:
        self.layout = Layout(self.name, self.design, layout)

    def bucket_keys(self, fp: int) -> list[str]:
        """The Redis key of ``fp``'s bucket in every table."""
        return [key for key, _prefix, _record in self.layout.buckets(fp)]

    async def _retrying(self, what: str, call: Callable[[bool], Awaitable[T]]) -> T:
        """Run call(retried), retrying transient errors for up to ``retry_seconds`` (see
        :func:`~nearDupe.store.redis_failures.retrying`); Redis out of memory is an outage
        (StoreUnavailable at once), which the first time is logged with what to do."""
        try:
            return await retrying(
                what, call, name=self.name, url=self.url, retry_seconds=self.retry_seconds
            )
        except FULL_ERRORS as exc:
            raise self._full(exc) from exc

    def _full(self, exc: BaseException) -> StoreUnavailable:
        said, self._said_full = self._said_full, True
        return full(self.name, self.url, exc, say=not said)


def _description(values: Any) -> tuple[str, dict[str, Any]] | None:
    """The header JSON and layout that most of the copies ``values`` (None: missing) hold."""
    found: dict[bytes, int] = {}
    for value in values:
        if value:
            found[value] = found.get(value, 0) + 1
    for value in sorted(found, key=found.__getitem__, reverse=True):
        try:
            kept = json.loads(value)
            return str(kept["header"]), dict(kept["layout"])
        except (ValueError, KeyError, TypeError):
            continue
    return None


def _describe(header: bytes | str, layout: dict[str, Any]) -> bytes:
    """A copy of an index's stored ``header`` JSON and its ``layout`` (as GET returns it)."""
    if isinstance(header, bytes):
        header = header.decode()
    return json.dumps({"header": header, "layout": layout}, sort_keys=True).encode()


def _copied(write: Callable[[str, bytes], Any], copies: dict[str, bytes]) -> None:
    """Write the copies (a copy Redis refuses now is written again at a later open)."""
    for key, value in copies.items():
        try:
            write(key, value)
        except redis_sync.RedisError as exc:
            logger.debug("copy %s of the header not written: %s", key, exc)
            return


async def _copied_async(client: Any, key: str, value: bytes) -> None:
    """:func:`_copied` for one copy, on an asyncio client."""
    try:
        await client.set(key, value)
    except redis_sync.RedisError as exc:
        logger.debug("copy %s of the header not written: %s", key, exc)
