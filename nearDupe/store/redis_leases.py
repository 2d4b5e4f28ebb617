"""Leases on buckets: taken all-or-nothing with their contents, ended token-checked by the
script that writes; one script call per node and phase.

A lease is ``<bucket>:lease`` = the check's token, with a PX expiry, in the bucket's own
slot.  A crawler reads a bucket only while it holds its lease and writes it only in the
script that ends the lease (which checks the token), so two crawlers whose pages share a
bucket decide one after the other.  See the protocol in :mod:`nearDupe.store.redis`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from redis.exceptions import ClusterDownError, NoScriptError, ResponseError

from nearDupe.errors import StoreUnavailable
from nearDupe.store.redis_lua import LUA_ACQUIRE, LUA_COMMIT, LUA_GET, LUA_REMOVE, LUA_SET

#: Default lease: ~1,000 times a check's ~3 ms p99 under load, and more than a call's
#: socket timeout (1 s), so only a crawler stalled (or dead) that long loses its leases.
LEASE_SECONDS = 3.0
#: First and largest pause between two tries at a busy lease (doubling, with jitter).
FIRST_WAIT = 0.001
LONGEST_WAIT = 0.02

SCRIPTS = {
    "acquire": LUA_ACQUIRE,
    "commit": LUA_COMMIT,
    "get": LUA_GET,
    "set": LUA_SET,
    "remove": LUA_REMOVE,
}


class LeaseLost(Exception):
    """A lease expired before the crawler holding it wrote (it starts its check again)."""

    def __init__(self, nth: int | None = None) -> None:
        super().__init__("lease lost")
        #: The page record's ordinal if it was written before the loss was found.
        self.nth = nth


class Pipes:
    """Pipelined calls on a client (grouped per node on a cluster), scripts by SHA."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.sha: dict[str, str] = {}

    async def load_scripts(self) -> None:
        """Load the scripts (on every primary of a cluster)."""
        for name, text in SCRIPTS.items():
            self.sha[name] = await self.client.script_load(text)

    async def by_node(self, keys: Iterable[str]) -> list[list[str]]:
        """``keys`` grouped by the node that holds them (one group without a cluster)."""
        if not self.sha:
            await self.load_scripts()  # which also learns a cluster's slots
        locate = getattr(self.client, "get_node_from_key", None)
        groups: dict[str, list[str]] = {}
        for key in keys:
            groups.setdefault(locate(key).name if locate else "", []).append(key)
        return list(groups.values())

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
            except ResponseError as exc:
                if "non local key" not in str(exc):
                    raise
                # A slot moved under a script: learn the new map, and retry (transient).
                await self.client.nodes_manager.initialize()
                raise ClusterDownError(str(exc)) from exc
        raise AssertionError("unreachable")

    def script(self, pipe: Any, name: str, keys: Sequence[str], args: Sequence[Any]) -> None:
        """Queue a script call on ``pipe`` (as a raw command: redis-py's cluster pipeline
        refuses its ``evalsha`` method, yet routes EVALSHA by its keys)."""
        pipe.execute_command("EVALSHA", self.sha[name], len(keys), *keys, *args)

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
        """The values of ``keys`` (b"" for a missing one): one script per node."""
        groups = await self.by_node(keys)
        replies = await self.per_node("get", [(group, group) for group in groups])
        return {
            key: value
            for group, values in zip(groups, replies, strict=True)
            for key, value in zip(group, values, strict=True)
        }


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
    groups = await pipes.by_node(keys)
    while True:

        def build(pipe: Any) -> None:
            for group in groups:
                pipes.on_node(pipe, "acquire", group, [token, ms, *group])
            if extra is not None:
                extra(pipe)

        replies = await pipes.run(build)
        taken = [int(r[0]) == 1 for r in replies[: len(groups)]]
        if all(taken):
            values = {
                key: value
                for group, reply in zip(groups, replies, strict=False)
                for key, value in zip(group, reply[1:], strict=True)
            }
            return values, replies[len(groups) :]
        await release(
            pipes, [k for g, t in zip(groups, taken, strict=False) if t for k in g], token
        )
        if time.monotonic() > deadline:
            raise StoreUnavailable(
                f"buckets leased by other crawlers for over {2 * lease_seconds:g} s"
            )
        await asyncio.sleep(wait * (0.5 + random.random()))
        wait = min(2 * wait, LONGEST_WAIT)


#: What a commit writes into one leased key: record size, whether each record gets the page's
#: ordinal appended (sentence records), and the records.
Writes = dict[str, tuple[int, bool, list[bytes]]]


def _commit_args(token: bytes, page: tuple[str, bytes] | None, nth: int, count: str,
                 group: list[str], writes: Writes) -> list[Any]:  # fmt: skip
    args: list[Any] = [token, *(page or ("", b"")), nth, count]
    for key in group:
        size, ordinal, records = writes.get(key, (0, False, []))
        args += [key, size, int(ordinal), len(records), *records]
    return args


async def release(pipes: Pipes, keys: Iterable[str], token: bytes) -> None:
    """End this token's leases on ``keys`` (another's lease is left alone)."""
    groups = await pipes.by_node(keys)
    if groups:
        await pipes.per_node(
            "commit", [(g, _commit_args(token, None, -1, "", g, {})) for g in groups]
        )


async def commit(
    pipes: Pipes,
    page: tuple[str, bytes],
    keys: Sequence[str],
    writes: Writes,
    token: bytes,
    count: str,
) -> tuple[int, bool]:
    """Write the page record (``page``: its bucket and record), then ``writes`` into the
    leased ``keys``, ending the leases: first on the page bucket's node, then on the others
    (so the page record is stored before any fingerprint leading to it).  The counter
    ``count`` goes up with the page record (in its script if on its node).  Returns the page
    record's ordinal and whether it was appended; raises :class:`LeaseLost` if a lease was
    no longer this token's."""
    page_key = page[0]
    groups = await pipes.by_node([page_key, count, *keys])
    first = [k for k in groups[0][1:] if k != count]
    others = [[k for k in g if k != count] for g in groups[1:]]
    local = count if count in groups[0] else ""

    (reply,) = await pipes.per_node(
        "commit", [(groups[0], _commit_args(token, page, -1, local, first, writes))]
    )
    if not int(reply[0]):
        raise LeaseLost
    nth, added = int(reply[1]), bool(int(reply[2]))
    calls = [(g, _commit_args(token, None, nth, "", g, writes)) for g in others if g]
    if calls or (added and not local):

        def build(pipe: Any) -> None:
            for g, args in calls:
                pipes.on_node(pipe, "commit", g, args)
            if added and not local:
                pipe.incr(count)

        replies = await pipes.run(build)
        if not all(int(r[0]) for r in replies[: len(calls)]):
            raise LeaseLost(nth)
    return nth, added
