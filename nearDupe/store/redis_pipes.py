"""Pipelined calls on a Redis client: grouped per node on a cluster, scripts by SHA, and the
calls of concurrent checks coalesced into one pipeline per event-loop turn."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from redis.exceptions import ClusterDownError, NoScriptError, ResponseError

from nearDupe.store.redis_lua import LUA_ACQUIRE, LUA_COMMIT, LUA_GET, LUA_REMOVE, LUA_SET

SCRIPTS = {
    "get": LUA_GET,
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
    """Stands for a pipeline while a call is built: records each command queued on it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs))


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
            node = self.client.get_node_from_key(key).name if self.cluster else ""
            groups.setdefault(node, []).append(key)
        return list(groups.values())

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
                return await self._submit(recorder.calls)
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
        """Send every queued call as one pipeline and hand each its replies (or error)."""
        batch, self._queue = self._queue, []
        pipe = self.client.pipeline(transaction=False)
        for calls, _future in batch:
            for name, args, kwargs in calls:
                getattr(pipe, name)(*args, **kwargs)
        try:
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

    def script(self, pipe: Any, name: str, keys: Sequence[str], args: Sequence[Any]) -> None:
        """Queue a script call on ``pipe`` (as a raw command: redis-py's cluster pipeline
        refuses its ``evalsha`` method, yet routes EVALSHA by its keys)."""
        pipe.execute_command("EVALSHA", SHA[name], len(keys), *keys, *args)

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
        """The values of ``keys`` (b"" for a missing one): one command per node, an MGET on a
        single Redis, the ``get`` script on a cluster, whose keys lie in many slots (each
        command costs the crawler ~10 us of redis-py; the server, pipelined, ~0.25 us a GET
        and ~1 us a script call of its own)."""
        groups = await self.by_node(keys) if keys else []

        def build(pipe: Any) -> None:
            for group in groups:
                if self.cluster:
                    self.on_node(pipe, "get", group, group)
                else:
                    pipe.mget(group)

        replies = await self.run(build)
        return {
            key: value or b""
            for group, reply in zip(groups, replies, strict=True)
            for key, value in zip(group, reply, strict=True)
        }
