"""Leases on buckets: taken all-or-nothing with their contents, released token-checked.

A lease is ``SET <bucket>:lease <token> NX PX <ms>`` in the bucket's own slot.  A crawler
reads a bucket only while it holds its lease and writes it only in the script that ends the
lease (:data:`~nearDupe.store.redis_lua.LUA_COMMIT`, which checks the token), so two crawlers
whose pages share a bucket decide one after the other.  See the protocol in
:mod:`nearDupe.store.redis`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from redis.exceptions import NoScriptError

from nearDupe.errors import StoreUnavailable
from nearDupe.store.redis_layout import lease_key
from nearDupe.store.redis_lua import LUA_ADD_PAGE, LUA_COMMIT, LUA_REMOVE

#: Default lease: ~1,000 times a check's ~3 ms p99 under load, and more than a call's
#: socket timeout (1 s), so only a crawler stalled (or dead) that long loses its leases.
LEASE_SECONDS = 3.0
#: First and largest pause between two tries at a busy lease (doubling, with jitter).
FIRST_WAIT = 0.001
LONGEST_WAIT = 0.02

SCRIPTS = {"commit": LUA_COMMIT, "add_page": LUA_ADD_PAGE, "remove": LUA_REMOVE}


class LeaseLost(Exception):
    """A lease expired before the crawler holding it wrote (it starts its check again)."""


class Pipes:
    """Pipelined calls on a client (grouped per node on a cluster), scripts by SHA."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.sha: dict[str, str] = {}

    async def load_scripts(self) -> None:
        """Load the scripts (on every primary of a cluster)."""
        for name, text in SCRIPTS.items():
            self.sha[name] = await self.client.script_load(text)

    async def run(self, build: Callable[[Any], object]) -> list[Any]:
        """One pipeline built by ``build(pipe)``; rebuilt and run again once if Redis lost
        its scripts (restarted): every command put in one is safe to repeat."""
        if not self.sha:
            await self.load_scripts()
        for tries in (1, 2):
            pipe = self.client.pipeline(transaction=False)
            build(pipe)
            try:
                return list(await pipe.execute())
            except NoScriptError:
                if tries == 2:
                    raise
                await self.load_scripts()
        raise AssertionError("unreachable")

    def script(self, pipe: Any, name: str, keys: Sequence[str], args: Sequence[Any]) -> None:
        """Queue a script call on ``pipe`` (as a raw command: redis-py's cluster pipeline
        refuses its ``evalsha`` method, yet routes EVALSHA by its keys)."""
        pipe.execute_command("EVALSHA", self.sha[name], len(keys), *keys, *args)


async def acquire(
    pipes: Pipes,
    keys: Sequence[str],
    token: bytes,
    *,
    lease_seconds: float,
    extra: Callable[[Any], None] | None = None,
) -> tuple[dict[str, bytes], list[Any]]:
    """Lease every one of ``keys`` (all or none, waiting while another crawler holds one) and
    return their contents, and the replies of the ``extra`` commands queued after them.

    A lease this token already holds (a retried call) counts as taken.
    """
    deadline = time.monotonic() + 2 * lease_seconds
    wait = FIRST_WAIT
    ms = int(lease_seconds * 1000)
    while True:

        def build(pipe: Any) -> None:
            for key in keys:
                pipe.set(lease_key(key), token, nx=True, px=ms)
                pipe.get(lease_key(key))
                pipe.get(key)
            if extra is not None:
                extra(pipe)

        replies = await pipes.run(build)
        held = [replies[3 * i + 1] == token for i in range(len(keys))]
        if all(held):
            values = {key: replies[3 * i + 2] or b"" for i, key in enumerate(keys)}
            return values, replies[3 * len(keys) :]
        await release(pipes, [k for k, h in zip(keys, held, strict=True) if h], token)
        if time.monotonic() > deadline:
            raise StoreUnavailable(
                f"buckets leased by other crawlers for over {2 * lease_seconds:g} s"
            )
        await asyncio.sleep(wait * (0.5 + random.random()))
        wait = min(2 * wait, LONGEST_WAIT)


async def release(pipes: Pipes, keys: Iterable[str], token: bytes) -> None:
    """End this token's leases on ``keys`` (another's lease is left alone)."""
    keys = list(keys)
    if keys:
        await pipes.run(lambda pipe: _queue_commits(pipes, pipe, {k: [] for k in keys}, {}, token))


def _queue_commits(
    pipes: Pipes,
    pipe: Any,
    writes: dict[str, list[bytes]],
    sizes: dict[str, int],
    token: bytes,
) -> None:
    for key, records in writes.items():
        args = [token, sizes.get(key, 0), *records]
        pipes.script(pipe, "commit", [key, lease_key(key)], args)


async def commit(
    pipes: Pipes, writes: dict[str, list[bytes]], sizes: dict[str, int], token: bytes
) -> None:
    """Append ``writes`` (records per leased key, each ``sizes[key]`` bytes) and end the
    leases, one script per key; raise :class:`LeaseLost` if a lease was no longer ours."""
    replies = await pipes.run(lambda pipe: _queue_commits(pipes, pipe, writes, sizes, token))
    if not all(int(r) for r in replies):
        raise LeaseLost
