"""Leases on buckets and the commit that checks and writes them: one script call per node
and phase.

A lease is ``<bucket>:lease`` = the check's token, with a PX expiry, in the bucket's own
slot.  Only a cluster's checks take them (a single Redis checks and writes in one script):
a crawler writes a bucket only in the script that checks that no other token leases it and
that it has not grown since it was read, and ends this token's leases, so two crawlers
whose pages share a bucket decide one after the other.  See the protocol in
:mod:`nearDupe.store.redis`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import struct
import time
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import Any

from nearDupe.errors import StoreBusy
from nearDupe.store.redis_lua import SPEC_PACKED
from nearDupe.store.redis_pipes import Pipes

#: Default lease: ~1,000 times a check's ~3 ms p99 under load, and more than a call's
#: socket timeout (1 s), so only a crawler stalled (or dead) that long loses its leases.
LEASE_SECONDS = 3.0
#: How long a check waits for buckets other crawlers keep leasing before it gives up (the
#: page is then kept and checked later, as when Redis is away). Leases held by live crawlers
#: mean progress: under load (3 crawls of one site on 2 busy cores) copies of one article
#: queued for their buckets for over twice LEASE_SECONDS. A dead crawler's leases expire
#: after lease_seconds.
BUSY_SECONDS = 30.0
#: First and largest pause between two tries at busy buckets (doubling, with jitter).
FIRST_WAIT = 0.001
LONGEST_WAIT = 0.02


class Pause:
    """Waits between tries at buckets other crawlers write or lease: jittered, doubling from
    FIRST_WAIT to LONGEST_WAIT; past BUSY_SECONDS (or twice the lease) of them,
    :class:`~nearDupe.errors.StoreBusy` (the page is then kept and checked later)."""

    def __init__(self, lease_seconds: float) -> None:
        self.wait = FIRST_WAIT
        self.patience = max(BUSY_SECONDS, 2 * lease_seconds)
        self.deadline = time.monotonic() + self.patience

    async def __call__(self) -> None:
        if time.monotonic() > self.deadline:
            raise StoreBusy(
                f"buckets written or leased by other crawlers for over {self.patience:g} s"
            )
        await asyncio.sleep(self.wait * (0.5 + random.random()))
        self.wait = min(2 * self.wait, LONGEST_WAIT)


class ReadAgain(Exception):
    """The check must read its buckets again: one grew or is leased by another crawler since
    it was read, or this check's lease expired, before it wrote."""


#: Decides a check again on buckets grown while it waited for their leases: whether it
#: found a copy (it then needs no lease).
Recheck = Callable[[dict[str, bytes]], Awaitable[bool]]


async def acquire(
    pipes: Pipes,
    seen: dict[str, bytes],
    token: bytes,
    *,
    lease_seconds: float,
    recheck: Recheck | None = None,
) -> tuple[dict[str, bytes], bool] | None:
    """Lease every key of ``seen`` (waiting while another crawler holds one): their contents
    (``seen``'s values, read without leases, where a bucket's length is still the same:
    buckets only grow), and whether any changed since they were last decided on.

    The keys are leased node by node in one order every crawler shares (the nodes' names),
    all of a node's at once or none: a check tries every node at once, keeps the leases on
    the nodes before the first that refused, gives back those after it, and waits there,
    holding the former, trying that node alone until it is leased, then the nodes after
    it at once.  A crawler waits only for a node after every node it holds leases on, so
    no two wait for each other, and one of the crawlers wanting a bucket always goes on.
    (Giving back every lease and trying again later livelocked busy crawlers: each took
    some nodes' leases while others held the rest; and waiting checks that tried every
    node at once kept taking, for a round trip, the later nodes' leases that the check
    holding the first one's wanted next.)

    A waiting check that sees buckets grown (the refusing node's script returns them, as a
    granting one does, and each try measures, without leasing them, the buckets of the
    nodes after it) calls ``recheck`` on them at once, keeping its place: what was
    written is most often its copy, and a check that finds it returns None, its leases
    given back.  (Waiting to hold every lease before deciding again made the copies of one
    article queue for the buckets one after another: under load some waited past
    BUSY_SECONDS.)  A check that finds none waits on, for buckets of the lengths it saw.

    A lease this token already holds (a retried call) counts as taken.
    """
    pause = Pause(lease_seconds)
    ms = int(lease_seconds * 1000)
    groups = sorted(await pipes.by_node(seen), key=lambda group: pipes.node_name(group[0]))
    mine: list[str] = []
    try:
        return await _acquire(pipes, dict(seen), token, ms, groups, mine, pause, recheck)
    except BaseException:
        if mine:  # given up (or failed): another crawler would wait for them to expire
            with contextlib.suppress(Exception):
                await release(pipes, mine, token)
        raise


async def _acquire(
    pipes: Pipes,
    seen: dict[str, bytes],
    token: bytes,
    ms: int,
    groups: list[list[str]],
    mine: list[str],
    pause: Pause,
    recheck: Recheck | None,
) -> tuple[dict[str, bytes], bool] | None:
    """The rounds of :func:`acquire`; ``mine`` holds the keys leased so far, ``seen`` the
    contents the leases compare lengths with."""
    fresh: dict[str, bytes] = {}  # grown under this token's leases
    stale = False  # values grown since the last decision
    trying = groups  # this round's nodes: every node left, or the one that refused
    watching: list[list[str]] = []  # the nodes after it, whose buckets are only measured
    while True:

        def build(
            pipe: Any, trying: list[list[str]] = trying, watching: list[list[str]] = watching
        ) -> None:
            for group in trying:
                lengths = packed_lengths([len(seen[key]) for key in group])
                pipes.on_node(pipe, "acquire", group, [token, ms, lengths, *group])
            for group in watching:
                lengths = packed_lengths([len(seen[key]) for key in group])
                pipes.on_node(pipe, "grown", group, [lengths, *group])

        replies = await pipes.run(build)
        replies, measured = replies[: len(trying)], replies[len(trying) :]
        taken = [int(r[0]) == 1 for r in replies]
        held = taken.index(False) if False in taken else len(taken)
        for group, reply in zip(trying[:held], replies[:held], strict=True):
            if len(reply) > 1:
                fresh.update(zip(group, reply[1:], strict=True))
                stale = True
            mine.extend(group)
        grown = [(g, r[1:] if int(r[0]) else r[2:]) for g, r in zip(trying, replies, strict=True)]
        for group, values in [*grown[held:], *zip(watching, measured, strict=True)]:
            if values:  # read without a lease: what the next tries compare with
                seen.update(zip(group, values, strict=True))
                stale = True
        groups = groups[held:]
        if not groups:
            return {**seen, **fresh}, stale
        if held == len(trying):  # the node that refused is leased now: try the rest
            trying, watching = groups, []
            continue
        later = [
            k for g, t in zip(trying[held + 1 :], taken[held + 1 :], strict=True) if t for k in g
        ]
        if later:
            await release(pipes, later, token)
        if recheck is not None and stale:
            if await recheck({**seen, **fresh}):
                await release(pipes, mine, token)
                mine.clear()
                return None
            stale = False
        trying, watching = groups[:1], groups[1:] if recheck is not None else []
        await pause()


def packed_lengths(lengths: list[int]) -> bytes:
    """Bucket lengths as one script argument (see redis_lua.SPEC)."""
    return struct.pack(">" + SPEC_PACKED[1:] * len(lengths), *lengths)


#: What a commit appends to each key: its records (the caller leaves out those it read there).
Writes = dict[str, list[bytes]]


def commit_args(
    token: bytes,
    page: tuple[str, bytes] | None,
    count: str,
    group: list[str],
    writes: Writes,
    lengths: dict[str, int],
    *,
    cluster: bool,
    retry: bool = False,
    leased: Collection[str] = (),
) -> list[Any]:
    """The commit script's arguments for the keys of ``group`` (all on one node; see
    :func:`commit`)."""
    spec = packed_lengths(
        [
            -2 - lengths[key] if key in leased and key in lengths else lengths.get(key, -1)
            for key in group
        ]
    )
    args: list[Any] = [token, *(page or ("", b"")), count, "1" if retry else "", spec]
    args.append("" if cluster else "1")
    for key in group:
        args += [key, b"".join(writes.get(key, []))]
    return args


async def release(pipes: Pipes, keys: Iterable[str], token: bytes) -> None:
    """End this token's leases on ``keys`` (another token's, taken once this one's expired,
    stays: a release that left this token's other leases in place made other crawlers wait
    for them to expire)."""
    groups = await pipes.by_node(keys)
    if groups:
        await pipes.per_node("release", [(g, [token, *g]) for g in groups])


async def commit(
    pipes: Pipes,
    page: tuple[str, bytes],
    lengths: dict[str, int],
    writes: Writes,
    token: bytes,
    count: str,
    *,
    retry: bool = False,
    leased: Collection[str] = (),
) -> None:
    """Write the page record (``page``: its bucket and record; unless this call did already:
    looked for if ``retry``, an earlier attempt of this call may have written it),
    then ``writes``, if no key of ``lengths`` (every bucket the decision read, and the length
    it read) is leased by another token or has grown, ending this token's leases: first on
    the page bucket's node, then on the others (so the page record is stored before any
    fingerprint leading to it).  The counter ``count`` goes up with the page record (in its
    script if on its node).  A key of ``leased`` (this attempt's :func:`acquire`, which
    compared its length) is not measured again while this token still leases it.  Raises
    :class:`ReadAgain` if a key was leased or had grown.

    On a single Redis this is one script call that checks and writes at once: no lease is
    needed.  On a cluster the keys are leased first (:func:`acquire`), so that the writes on
    one node are not undone by a key grown on another."""
    groups = await pipes.by_node([page[0], count, *lengths])
    first = [k for k in groups[0][1:] if k != count]
    others = [[k for k in g if k != count] for g in groups[1:]]
    local = count if count in groups[0] else ""
    args = functools.partial(
        commit_args, token, writes=writes, lengths=lengths, cluster=pipes.cluster, leased=leased
    )

    (reply,) = await pipes.per_node("commit", [(groups[0], args(page, local, first, retry=retry))])
    if not int(reply[0]):
        raise ReadAgain
    added = bool(int(reply[1]))
    calls = [(g, args(None, "", g)) for g in others if g]
    if calls or (added and not local):

        def build(pipe: Any) -> None:
            for g, args in calls:
                pipes.on_node(pipe, "commit", g, args)
            if added and not local:
                pipe.command(count, "INCR", count)

        replies = await pipes.run(build)
        if not all(int(r[0]) for r in replies[: len(calls)]):
            raise ReadAgain
