"""Pipelined calls on a Redis client: grouped per node on a cluster, scripts by SHA, and the
calls of concurrent checks coalesced into one pipeline per event-loop turn."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from redis.asyncio.cluster import ClusterNode
from redis.asyncio.connection import Connection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.exceptions import (
    AskError,
    BusyLoadingError,
    ClusterDownError,
    MovedError,
    NoScriptError,
    RedisError,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError

from nearDupe.store.redis_failures import TRANSIENT_ERRORS
from nearDupe.store.redis_lua import (
    LUA_ACQUIRE,
    LUA_COMMIT,
    LUA_GROWN,
    LUA_RELEASE,
    LUA_REMOVE,
    LUA_SET,
)

#: How many times a command is sent again where a redirection (MOVED, ASK) or TRYAGAIN
#: points, before its call fails (a transient error: the check is then run again).
REDIRECTIONS = 8
#: The pause before a command refused with TRYAGAIN (its slot moving) is sent again.
TRY_AGAIN_SECONDS = 0.01

SCRIPTS = {
    "acquire": LUA_ACQUIRE,
    "grown": LUA_GROWN,
    "commit": LUA_COMMIT,
    "set": LUA_SET,
    "remove": LUA_REMOVE,
    "release": LUA_RELEASE,
}
#: Each script's SHA1, as Redis names it: known before any is loaded.
SHA = {
    name: hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
    for name, text in SCRIPTS.items()
}


class _Recorder:
    """Stands for a pipeline while a call is built: collects each command queued on it, with
    the key that routes it on a cluster."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, tuple[Any, ...]]] = []

    def command(self, key: str, *args: Any) -> None:
        """Queue command ``args`` (its name first), for the node holding ``key``."""
        self.commands.append((key, args))


class Pipes:
    """Pipelined calls on a client (grouped per node on a cluster), scripts by SHA."""

    def __init__(self, client: Any) -> None:
        self.client = client
        #: A Redis Cluster's client (keys grouped per node), not a single Redis's.
        self.cluster = hasattr(client, "get_node_from_key")
        self._loading: asyncio.Future[None] | None = None
        self._queue: list[tuple[list[Any], asyncio.Future[list[Any]]]] = []
        #: This module's own connections to each node (see :class:`_Connections`).
        self._connections = _Connections()
        #: The cluster's slots must be learnt again before the next batch (a connection
        #: failed, or a script met a key its node does not hold).
        self._stale = False
        self._learning: asyncio.Future[None] | None = None
        #: The nodes the client was given: it forgets a node whose connection failed, and
        #: could no longer learn the cluster once it forgot them all.
        self._startup = dict(client.nodes_manager.startup_nodes) if self.cluster else {}
        if self.cluster:
            # The client's own calls (sites, counter) learn a moved slot from its MOVED
            # reply, rather than the whole cluster again every few (which closes every
            # connection of its nodes, cutting its calls then in flight).
            client.reinitialize_steps = 0

    async def load_scripts(self) -> None:
        """Load the scripts (on every primary of a cluster); concurrent callers share one
        load, and none of them goes on before it is complete."""
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())
        loading = self._loading
        try:
            await asyncio.shield(loading)
        except BaseException:
            if self._loading is loading and loading.done():
                self._loading = None  # a failed load is tried again by the next call
            raise

    async def reload_scripts(self) -> None:
        """Load the scripts again (Redis lost them: it restarted)."""
        if self._loading is not None and self._loading.done():
            self._loading = None
        await self.load_scripts()

    async def _load(self) -> None:
        if not self.cluster:
            for text in SCRIPTS.values():
                await self.client.script_load(text)
            return
        # On this module's connections, as every call of a check (see _on_cluster).
        await self._learn()
        loads = [(("SCRIPT", "LOAD", text), False) for text in SCRIPTS.values()]
        primaries = self.client.get_primaries()
        replies = await asyncio.gather(
            *(_send(self._connections, node, loads) for node in primaries)
        )
        for reply in (r for node_replies in replies for r in node_replies):
            if isinstance(reply, Exception):
                if isinstance(reply, TRANSIENT_ERRORS):
                    self._stale = True
                raise reply

    async def by_node(self, keys: Iterable[str]) -> list[list[str]]:
        """``keys`` grouped by the node that holds them (one group without a cluster)."""
        await self.load_scripts()  # which also learns a cluster's slots
        groups: dict[str, list[str]] = {}
        for key in keys:
            groups.setdefault(self._node(key).name if self.cluster else "", []).append(key)
        return list(groups.values())

    def node_name(self, key: str) -> str:
        """The name of the node holding ``key`` ("" without a cluster)."""
        return self._node(key).name if self.cluster else ""

    def _node(self, key: str) -> ClusterNode:
        """The cluster node holding ``key``'s slot."""
        return self.client.nodes_manager.get_node_from_slot(key_slot(key.encode()))

    async def run(self, build: Callable[[Any], object]) -> list[Any]:
        """The replies of the commands ``build(pipe)`` queues, sent with those of every other
        call made in the same event-loop turn (one write, one pipeline: the crawlers' cost
        is mostly system calls, ~0.5 ms each on a busy machine); run again once if Redis lost
        its scripts (restarted): every command put in one is safe to repeat."""
        await self.load_scripts()
        for tries in (1, 2):
            recorder = _Recorder()
            build(recorder)
            try:
                return await self._submit(recorder.commands)
            except NoScriptError:
                if tries == 2:
                    raise
                await self.reload_scripts()
            except ResponseError as exc:
                if "non local key" not in str(exc):
                    raise
                # A script met a key of a slot that is moving or moved (resharding), and
                # stopped there (what it wrote before, a retry of its check finds). Learn
                # the slots again; the call is retried (a transient error).
                self._stale = True
                raise ClusterDownError(str(exc)) from exc
        raise AssertionError("unreachable")

    async def _submit(self, calls: list[Any]) -> list[Any]:
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._queue.append((calls, future))
        if len(self._queue) == 1:
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self._flush()))
        return await future

    async def _flush(self) -> None:
        """Send every queued call as one pipeline (on a cluster, one per node) and hand each
        its replies (or error)."""
        batch, self._queue = self._queue, []
        commands = [command for calls, _future in batch for command in calls]
        try:
            if self.cluster:
                replies = await self._on_cluster(commands)
            else:
                pipe = self.client.pipeline(transaction=False)
                for _key, args in commands:
                    pipe.execute_command(*args)
                replies = await pipe.execute(raise_on_error=False)
        except BaseException as exc:  # the connection failed: every call sees it (retried)
            for _calls, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        start = 0
        for calls, future in batch:
            mine = list(replies[start : start + len(calls)])
            start += len(calls)
            if future.done():
                continue
            errors = [r for r in mine if isinstance(r, Exception)]
            if errors:
                future.set_exception(errors[0])
            else:
                future.set_result(mine)

    async def _on_cluster(self, commands: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """The replies (or errors) of ``commands``, one pipeline to each node holding one of
        their keys, sent at once.  The routing is this module's: redis-py's cluster pipeline
        cost the crawler about a third of a check, finding again each command's keys and
        slot.

        A command refused because its slot is elsewhere (MOVED: the slot map learns it;
        ASK: sent there after ASKING) or moving (TRYAGAIN) was not run: it is sent again,
        where the redirection points.  A connection failing under a batch leaves its
        commands' outcome unknown: they fail with a transient error (the check is retried
        as a whole, which each command of it allows), and the slots are learnt again
        before the next batch.  The connections are this module's own (see
        :class:`_Connections`), so the cluster client closing its nodes' connections (it
        does whenever it learns the cluster again) never cuts a batch."""
        await self._learn()
        manager = self.client.nodes_manager
        results: list[Any] = [None] * len(commands)
        todo = {i: self._node(key) for i, (key, _args) in enumerate(commands)}
        asking: set[int] = set()
        for _ in range(REDIRECTIONS):
            per_node: dict[str, tuple[ClusterNode, list[int]]] = {}
            for i, node in todo.items():
                per_node.setdefault(node.name, (node, []))[1].append(i)
            sent = [
                (indices, [(commands[i][1], i in asking) for i in indices])
                for _node, indices in per_node.values()
            ]
            replies = await asyncio.gather(
                *(
                    _send(self._connections, node, calls)
                    for (node, _), (_, calls) in zip(per_node.values(), sent, strict=True)
                )
            )
            todo, asking, waits = {}, set(), False
            for (indices, _calls), node_replies in zip(sent, replies, strict=True):
                for i, reply in zip(indices, node_replies, strict=True):
                    if isinstance(reply, MovedError):
                        manager.update_moved_exception(reply)
                        todo[i] = self._node(commands[i][0])  # which learns the move
                    elif isinstance(reply, AskError):
                        target = manager.get_node(host=reply.host, port=reply.port)
                        if target is None:  # a node not known yet
                            self._stale = True
                            results[i] = ClusterDownError(str(reply))
                        else:
                            todo[i] = target
                            asking.add(i)
                    elif isinstance(reply, TryAgainError):
                        todo[i] = self._node(commands[i][0])
                        waits = True
                    else:
                        if isinstance(reply, TRANSIENT_ERRORS):
                            self._stale = True
                        results[i] = reply
            if not todo:
                return results
            if waits:
                await asyncio.sleep(TRY_AGAIN_SECONDS)
        for i in todo:  # still redirected: the slots moved on meanwhile
            self._stale = True
            results[i] = ClusterDownError(f"redirected {REDIRECTIONS} times: {commands[i][1][0]}")
        return results

    async def _learn(self) -> None:
        """Learn the cluster's slots once, and again after :attr:`_stale` was set; concurrent
        batches share one learning."""
        manager = self.client.nodes_manager
        for name, node in self._startup.items():
            manager.startup_nodes.setdefault(name, node)
        if not manager.slots_cache:
            await self.client.initialize()  # once
        if not self._stale:
            return
        if self._learning is None:
            self._stale = False
            self._learning = asyncio.ensure_future(self.client.nodes_manager.initialize())
            self._learning.add_done_callback(self._learnt)
        await asyncio.shield(self._learning)

    def _learnt(self, learning: asyncio.Future[None]) -> None:
        self._learning = None
        if learning.cancelled() or learning.exception() is not None:
            self._stale = True  # tried again by the next batch

    async def aclose(self) -> None:
        """Close this module's connections (the client's are closed by its own aclose)."""
        await self._connections.aclose()

    def script(self, pipe: Any, name: str, keys: Sequence[str], args: Sequence[Any]) -> None:
        """Queue a script call on ``pipe``, for the node of its first key."""
        pipe.command(keys[0], "EVALSHA", SHA[name], len(keys), *keys, *args)

    def on_node(self, pipe: Any, name: str, keys: Sequence[str], args: Sequence[Any]) -> None:
        """Queue a script over ``keys`` (all on one node; the first routes it)."""
        self.script(pipe, name, keys[:1], args)

    async def per_node(self, name: str, calls: Sequence[tuple[list[str], list[Any]]]) -> list[Any]:
        """One pipeline of script ``name`` per (keys on one node, arguments): the replies."""

        def build(pipe: Any) -> None:
            for keys, args in calls:
                self.on_node(pipe, name, keys, args)

        return await self.run(build)

    async def get_all(self, keys: Sequence[str]) -> dict[str, bytes]:
        """The values of ``keys`` (b"" for a missing one): one MGET on a single Redis; on a
        cluster, whose node refuses a command over keys of several slots, a GET per key
        (~0.25 us of the server's, pipelined: a script reading them cost it more, as Lua
        hashes every byte of the buckets it reads)."""
        if not keys:
            return {}

        def build(pipe: Any) -> None:
            if self.cluster:
                for key in keys:
                    pipe.command(key, "GET", key)
            else:
                pipe.command(keys[0], "MGET", *keys)

        replies = await self.run(build)
        values = replies if self.cluster else replies[0]
        return {key: value or b"" for key, value in zip(keys, values, strict=True)}


class _Connections:
    """Connections to each node of a cluster (by address), this module's own: the cluster
    client closes every connection of its nodes whenever it learns the cluster again (after a
    redirection, a failover or a connection error in any of its calls), which would cut the
    batches of other checks in flight on them."""

    def __init__(self) -> None:
        self._free: dict[str, list[Connection]] = {}
        self._open: set[Connection] = set()

    def acquire(self, node: ClusterNode) -> Connection:
        """A free connection to ``node`` (a new one if none is free; it connects when first
        used)."""
        free = self._free.get(node.name)
        if free:
            return free.pop()
        options = {**node.connection_kwargs, "retry": Retry(NoBackoff(), 0)}
        connection: Connection = node.connection_class(**options)
        self._open.add(connection)
        return connection

    def release(self, node: ClusterNode, connection: Connection) -> None:
        """Give back a connection whose every reply was read."""
        self._free.setdefault(node.name, []).append(connection)

    async def discard(self, connection: Connection) -> None:
        """Close a connection left with unread replies (never reused)."""
        self._open.discard(connection)
        await connection.disconnect(nowait=True)

    async def aclose(self) -> None:
        """Close every connection."""
        connections, self._open, self._free = self._open, set(), {}
        await asyncio.gather(
            *(c.disconnect(nowait=True) for c in connections), return_exceptions=True
        )


async def _send(
    connections: _Connections, node: ClusterNode, calls: list[tuple[tuple[Any, ...], bool]]
) -> list[Any]:
    """Send the commands of ``calls`` (each its arguments, and whether ASKING goes first) to
    ``node`` in one write: each one's reply, or error.  A reply Redis refused is that
    command's error; after a failure of the connection (the outcome of the commands not yet
    answered is unknown) the connection is closed and each of those commands has that error,
    a transient one."""
    packed: list[tuple[Any, ...]] = []
    for args, asking in calls:
        if asking:
            packed.append(("ASKING",))
        packed.append(args)
    replies: list[Any] = []
    connection = connections.acquire(node)
    try:
        await connection.send_packed_command(connection.pack_commands(packed), False)
        for args, asking in calls:
            if asking:
                await _reply(node, connection, "ASKING")
            replies.append(await _reply(node, connection, args[0]))
    except asyncio.CancelledError:
        await connections.discard(connection)
        raise
    except Exception as exc:  # the connection failed: handed to each command
        await connections.discard(connection)
        if not isinstance(exc, RedisError):  # e.g. a socket closed under a write
            failed: Exception = RedisConnectionError(f"connection to {node.name} failed: {exc!r}")
            failed.__cause__ = exc
            exc = failed
        return replies + [exc] * (len(calls) - len(replies))
    connections.release(node, connection)
    return replies


async def _reply(node: ClusterNode, connection: Connection, command: Any) -> Any:
    """The next reply on ``connection``: a reply Redis refused is returned (the connection
    stays in step); a failure of the connection is raised."""
    try:
        return await node.parse_response(connection, command)
    except (ResponseError, BusyLoadingError) as exc:
        return exc
