"""Pipelined calls on a Redis client: grouped per node on a cluster, scripts by SHA, and the
calls of concurrent checks coalesced into one pipeline per event-loop turn."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from redis.asyncio.cluster import ClusterNode, PipelineCommand
from redis.crc import key_slot
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    NoScriptError,
    ResponseError,
    TryAgainError,
)

from nearDupe.store.redis_failures import TRANSIENT_ERRORS
from nearDupe.store.redis_lua import LUA_ACQUIRE, LUA_COMMIT, LUA_REMOVE, LUA_SET

#: Replies of a command sent to a node that no longer holds its slot (resharding): it is
#: sent again by the cluster client, which follows the redirection.
_REDIRECTED = (MovedError, AskError, TryAgainError)

SCRIPTS = {
    "acquire": LUA_ACQUIRE,
    "commit": LUA_COMMIT,
    "set": LUA_SET,
    "remove": LUA_REMOVE,
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
        for text in SCRIPTS.values():
            await self.client.script_load(text)

    async def by_node(self, keys: Iterable[str]) -> list[list[str]]:
        """``keys`` grouped by the node that holds them (one group without a cluster)."""
        await self.load_scripts()  # which also learns a cluster's slots
        groups: dict[str, list[str]] = {}
        for key in keys:
            groups.setdefault(self._node(key).name if self.cluster else "", []).append(key)
        return list(groups.values())

    def elsewhere(self, keys: Iterable[str], key: str) -> list[str]:
        """The ``keys`` a cluster holds on another node than ``key``'s (once its slots are
        known: after a call)."""
        here = self._node(key).name
        return [k for k in keys if self._node(k).name != here]

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
                # A slot moved under a script: learn the new map, and retry (transient).
                await self.client.nodes_manager.initialize()
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
        slot.  A command sent where its slot no longer is goes again through the client,
        which follows the redirection; after a connection's failure the client learns the
        cluster again on the next call."""
        await self.client.initialize()  # learns the slots once (again after a failure)
        per_node: dict[str, tuple[ClusterNode, list[PipelineCommand]]] = {}
        sent = []
        for i, (key, args) in enumerate(commands):
            node = self._node(key)
            command = PipelineCommand(i, *args)
            per_node.setdefault(node.name, (node, []))[1].append(command)
            sent.append(command)
        try:
            await asyncio.gather(*(_send(node, cmds) for node, cmds in per_node.values()))
        except TRANSIENT_ERRORS:
            await self.client.aclose()
            raise
        for command in sent:
            if isinstance(command.result, _REDIRECTED):
                try:
                    command.result = await self.client.execute_command(*command.args)
                except Exception as exc:
                    command.result = exc
        if any(isinstance(c.result, TRANSIENT_ERRORS) for c in sent):
            await self.client.aclose()  # connect and learn the slots again on the next call
        return [command.result for command in sent]

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


async def _send(node: ClusterNode, commands: list[PipelineCommand]) -> None:
    """Send ``commands`` to ``node`` in one write and set each one's result (its reply or
    error); a connection left with unread replies is closed, never reused."""
    connection = node.acquire_connection()
    try:
        await connection.send_packed_command(
            connection.pack_commands(command.args for command in commands), False
        )
        for command in commands:
            try:
                command.result = await node.parse_response(connection, command.args[0])
            except Exception as exc:
                command.result = exc
    except BaseException:
        await connection.disconnect()
        raise
    finally:
        node.release(connection)
