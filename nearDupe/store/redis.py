"""One near-duplicate index shared by many crawler processes and machines, kept in Redis.

Key layout (format 4; ``name`` defaults to ``neardupe``)::

    {name}:header          STRING  JSON of IndexHeader.to_dict() (written once, checked on open)
    {name}:layout          STRING  JSON {"format": 4, "bucket_bits", "page_bits", "sentence_bits",
                                   "created": random hex, new each time the layout is written}
    name:{h<i>.<j>}        STRING  on a cluster, COPIES copies of the header and layout, in
                                   slots spread over the nodes (redis_layout.COPIES)
    {name}:count           STRING  INCR counter: pages stored
    {name}:drops           LIST    the last DROP_LOG_LIMIT drops
    {name}:hosts           HASH    hosts counted for the mirror rule (redis_sites.py)
    name:{f<t>.<prefix>}   STRING  bucket of table t for the leading ``bucket_bits[t]`` bits of
                                   the fingerprint permuted by table t (hex): per fingerprint,
                                   its permuted bits below the prefix (6 bytes at 16 or 20 bits)
    name:{p.<prefix>}      STRING  page bucket for the leading ``page_bits`` of the fingerprint:
                                   per page, the fingerprint's low 6 bytes, its writer (4:
                                   see below), the signature (8;
                                   flagged in the tail count), its sketch's letters (3 + 3) and
                                   tail count (1, with the code of the URL beginning cut from
                                   the key: redis_records.URL_PREFIXES), the length (2) of its
                                   tails (base.Sketch) and key, which follow
    name:{s.<prefix>}      STRING  sentence bucket for the leading ``sentence_bits`` of the
                                   sentence hash: per page recorded under a sentence (at most
                                   SENTENCE_HOLDERS), the hash's low 4 bytes and the top 4 of
                                   the page's fingerprint (8 B; its holders are the page records
                                   whose fingerprint starts with them)
    name:{u.<prefix>}      STRING  URL shard for the leading ``url_bits`` of the URL's hash
                                   (base.url_hash): per claim of a URL, the hash's low 6
                                   bytes, its page's fingerprint and writer, when the URL was
                                   first stored and last changed, its response's exact key
                                   (redis_records.url_record; the newest claim is the URL's
                                   version, see docs/design.md)
    <bucket>:lease         STRING  the token of the crawler holding the bucket (PX expiry)

This is the block-permutation index of Manku et al. (WWW 2007) cut into Redis keys: two
fingerprints within distance k share the leading prefix of at least one table, so a query only
reads its own bucket in each table.  Every bucket has its own hash tag (``{f0.1a2b}``), so on
a Redis Cluster the buckets spread over all slots and nodes: memory splits with the nodes
(a check's buckets still fall on every node).  Buckets are strings of packed records, grown
by the commit script in C (APPEND, then COPY and RENAME so that they keep their exact size).

Check-and-add: Redis stores, checks and leases; the crawler computes (Hamming distances with
numpy, the rules of :mod:`nearDupe.store.base`).  Buckets only grow, so a bucket's length
tells whether anything was written to it since it was read.  Each step is one pipeline (on
a cluster, one per node holding some of the page's buckets: the writes one Lua call there,
flag ``allow-cross-slot-keys``); the steps of concurrent checks of one process share pipelines
(:mod:`~nearDupe.store.redis_pipes`):

1. Read, without a lease: the page's bucket in every table, the sentence bucket of each
   sentence it looks up, and the layout (gone or created again: Redis was emptied under the
   crawl; see :mod:`~nearDupe.store.redis_open`) (one MGET
   on a single Redis, a GET per bucket on a cluster);
   from them, the stored fingerprints within k and the pages recorded under the query's
   sentences; read their page buckets.  Decide.  A match is returned at once: a stored copy
   is a copy whatever other crawlers write next (no write, no lease).
2. On a cluster only, lease the table and sentence buckets read, on every node
   (``SET <bucket>:lease <token> NX PX lease``, all or none per node), node by node in one
   order all crawlers share: the leases on the nodes before the first that refused are
   kept, and the check waits there (1-20 ms pauses) before trying it again, so no two
   checks wait for each other (see :func:`~nearDupe.store.redis_leases.acquire`).
   The same script compares each bucket's length with the one read and returns those
   grown, when it grants the leases or refuses them: the page is decided again on them at
   once (a match ends the leases; a waiting check keeps its place in the line otherwise).
3. New: on the node of the page's page bucket, one script checks that no bucket read there
   (page buckets included) is another token's lease or has grown, appends the page record
   (returning whether it did), raises the counter if it lives there, appends the fingerprint
   and sentence records the read did not find there, and ends this token's leases; then
   the same on every other node.  If a check fails, nothing is written there and the check
   starts again from step 1 (it then finds what was written), after ending its leases
   (two checks whose commits each found a bucket the other leased would otherwise refuse
   each other until a lease expired; and a copy found next would leave them to expire).

Why this is exact: two pages within k share a table bucket, and two pages a sentence match can
join share a sentence (a query reads the buckets of the sentences it looks up; a page is
recorded under some of those), so each writes a bucket the other read (a page whose
fingerprint is stored already adds only its page record, to a page bucket the other read).
On a single Redis the check and the writes of step 3 are one script: the second of two such
pages to write finds a bucket grown, and decides again after reading the first's records
(optimistic concurrency: the commits are a serial order).  On a cluster, the writes on one
node must not be made void by a bucket grown on another, so step 3 runs under the leases of
step 2: a bucket leased and of the length read cannot grow until the lease ends.  The page
bucket's node is written first, in the script that checks its buckets (page buckets read
there unleased, as on a single Redis): when it succeeds, every bucket the decision read is
as read, by that check and the leases.  The page record is acknowledged before any fingerprint
leading to it is written.  A crawler stalled past its lease (``lease_seconds``, default
LEASE_SECONDS) finds at step 3 that a bucket grew or is another's and starts again.  A page
record carries its writer (the first bytes of the check's token), so a retry (a lost reply, a
lost lease, a grown bucket) leaves its own record out of what it reads and decides as its
first attempt would have: a match found now (a page stored while its attempt's writes were
refused on another node) removes its record; none completes its missing records (a retry's
commit appends the page record only if no record with its fingerprint and writer is there;
other records are left out where the read found them, and the commit checks that each bucket
is still as read, so none is appended twice).  Another crawler's record of the same URL and
text is never taken for the check's own.  A page
looks up at most LOOKUP_SENTENCES of its sentences (base.looked_up): the cost of a check grows
with them (a bucket read, checked, and leased on a cluster, each).

Failure policy: connection errors, timeouts and a server still loading its data are retried
with exponential backoff (50 ms doubling) for ``retry_seconds`` after the first (default 2 s;
each attempt is cut by a socket timeout of at most that much, so a hung Redis costs a call at
most about three times ``retry_seconds``); then :class:`~nearDupe.errors.StoreUnavailable` is
raised (also when other crawlers keep writing or leasing its buckets for BUSY_SECONDS, 30 s).
The plugin keeps the item, queues the page locally and checks-and-adds the queue, in order,
once Redis answers again (``NearDupePipeline._replay_backlog``).  A slot that moved under a script
(resharding) is retried like a connection error.

Opening and the header: :mod:`~nearDupe.store.redis_open`; key names:
:mod:`~nearDupe.store.redis_layout`; leases: :mod:`~nearDupe.store.redis_leases`; reading and
deciding: :mod:`~nearDupe.store.redis_reading`; bulk load and listing:
:mod:`~nearDupe.store.redis_bulk`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nearDupe.mirrors import MirrorRule
from nearDupe.shorttext import Sentences
from nearDupe.sitetemplate import SiteTemplate
from nearDupe.store import droplog, recrawl
from nearDupe.store.base import (
    Holder,
    Match,
    recorded,
    sentence_matches,
    sketch_of,
    storable_key,
    url_hash,
)
from nearDupe.store.redis_bulk import RedisBulkIndex
from nearDupe.store.redis_leases import Pause, ReadAgain, Writes, acquire, commit, release
from nearDupe.store.redis_reading import (
    Reading,
    fetch_pages,
    page_keys,
    read,
    sentence_keys,
)
from nearDupe.store.redis_records import (
    WRITER,
    page_records,
    record_id,
    stored_head,
    url_record,
    url_records,
)


@dataclass(frozen=True)
class _Check:
    """What one check-and-add asks: the page, and the URL rule (None: no URL)."""

    fp: int
    key: str
    signature: int | None
    sentences: Sentences
    mode: str | None
    body: int | None


@dataclass(frozen=True)
class _Decided:
    """One attempt's decision: what it read, the match (None: record the page), the URL
    claim to write with the page, and the answer for a page that replaces its URL's
    version."""

    reading: Reading
    match: Match | None
    claim: bytes | None
    replaced: Match | None = None


@dataclass
class _Call:
    """One check-and-add across its attempts: its lease token (its first WRITER bytes mark
    its page record), whether an attempt sent that record, and the keys an attempt leased
    (a commit ends them; a later attempt that finds a copy must)."""

    token: bytes
    sent: bool = False
    leased: list[str] = field(default_factory=list)


class RedisStore(RedisBulkIndex):
    """:class:`~nearDupe.store.Store` in a Redis shared by every crawler process (see module)."""

    # -- the Store contract ----------------------------------------------------------------

    async def check_and_add(
        self,
        fp: int,
        key: str,
        signature: int | None = None,
        sentences: Sentences = (),
        recrawl_mode: str | None = recrawl.DROP,
        body: int | None = None,
    ) -> Match | None:
        """See :class:`~nearDupe.store.Store`: the URL's claim is written with the page, by
        the same commit (which refuses it if the URL shard grew since it was read)."""
        key = storable_key(key)
        call = _Call(os.urandom(8))
        check = _Check(fp, key, signature, sentences, recrawl_mode if key else None, body)

        async def attempt(_retried: bool) -> Match | None:
            pause = Pause(self.lease_seconds)
            while True:
                await self._ensure_ready()
                try:
                    return await self._check_once(check, call)
                except ReadAgain:  # read again what another crawler wrote meanwhile
                    # Holding no lease while waiting: two checks whose commits each found a
                    # bucket the other leased would otherwise refuse each other until a lease
                    # expired.
                    await self._release(call)
                    await pause()

        return await self._retrying("check_and_add", attempt)

    async def version(self, key: str) -> recrawl.Version | None:
        """See :class:`~nearDupe.store.Store`."""
        key = storable_key(key)

        async def attempt(_retried: bool) -> recrawl.Version | None:
            await self._ensure_ready()
            shard = self.layout.url_key(url_hash(key))
            values = await self.pipes.get_all([shard])
            return await self._version(values[shard], key, b"")

        return await self._retrying("version", attempt)

    async def _version(self, shard: bytes, key: str, own: bytes) -> recrawl.Version | None:
        """URL ``key``'s version in its URL shard ``shard``: its newest claim (not by this
        check's ``own`` writer: a retry decides as its first attempt) whose page record is
        there and carries the URL (a claim whose page an attempt removed, or a hash shared
        by two URLs, is none)."""
        layout = self.layout
        for claim in reversed(url_records(shard, url_hash(key))):
            if own and claim.writer == own:
                continue
            bucket = layout.page_key(claim.fp)
            value = (await self.pipes.get_all([bucket]))[bucket]
            for page in page_records(value, layout.page_key_top(bucket), [stored_head(claim.fp)]):
                if page.fp == claim.fp and page.writer == claim.writer and page.key == key:
                    sketch = page.sketch if page.sketch.letters else None
                    changed = float(claim.changed) if claim.changed else None
                    return recrawl.Version(
                        claim.fp,
                        page.signature,
                        sketch,
                        float(claim.first),
                        changed,
                        claim.body or None,
                    )
        return None

    async def _decide(self, check: _Check, values: dict[str, bytes], own: bytes) -> _Decided:
        """The decision on ``check`` from the buckets ``values`` (and the page buckets they
        lead to): its match (None: to record), and the URL claim to write with the page."""
        reading = await self._reading(values, check.fp, self.k, check.sentences, own)
        if check.mode is None:
            return _Decided(reading, self._match(reading, check), None)
        url = url_hash(check.key)
        held = await self._version(values[self.layout.url_key(url)], check.key, own)
        now = time.time()
        if held is None:
            claim = url_record(url, check.fp, own, now, 0, check.body)
            return _Decided(reading, self._match(reading, check), claim)
        seen = recrawl.compare(
            held,
            check.fp,
            check.signature,
            check.sentences,
            check.body,
            k=self.k,
            confirm_k=self.confirm_k,
            share=self.sentence_share,
        )
        match = Match(check.key, held.fingerprint, seen.distance, seen.shared, seen)
        if not (seen.changed and check.mode == recrawl.CHANGED):
            return _Decided(reading, match, None)
        copy = self._match(reading, check, other_than=check.key)
        if copy is not None:
            return _Decided(reading, replace(copy, seen=seen), None)
        claim = url_record(url, check.fp, own, held.first_stored, now, check.body)
        return _Decided(reading, None, claim, replace(match, seen=replace(seen, replaced=True)))

    async def _check_once(self, check: _Check, call: _Call) -> Match | None:
        """One pass of the protocol (see module); raises ReadAgain to be run again."""
        keys = page_keys(self.layout, check.fp, check.sentences)
        if check.mode is not None:
            keys.append(self.layout.url_key(url_hash(check.key)))
        token, own = call.token, call.token[:WRITER]
        known = self._stored
        seen = await self.pipes.get_all([*keys, self._layout_key])
        stored = seen.pop(self._layout_key)
        if stored != known:  # the index was emptied, maybe created again by another crawler
            self._noticed(stored, known)
            raise ReadAgain
        decided = await self._decide(check, seen, own)
        if decided.match is None and self.pipes.cluster:
            # Every bucket read is leased, on the page bucket's node too: the leases are taken
            # node by node in one order (see acquire), which a commit refused on a node
            # without them (a bucket there leased by a crawler waiting for this one's) broke.

            async def recheck(values: dict[str, bytes]) -> bool:
                nonlocal decided
                decided = await self._decide(check, values, own)
                return decided.match is not None

            acquired = await acquire(
                self.pipes, seen, token, lease_seconds=self.lease_seconds, recheck=recheck
            )
            if acquired is not None:
                call.leased = list(seen)
                values, changed = acquired
                if changed:
                    try:
                        decided = await self._decide(check, values, own)
                    except BaseException:
                        await self._release(call)
                        raise
        if decided.match is not None:  # a stored copy: a copy whatever other crawlers write
            await self._undo(check.fp, call)
            await self._release(call)
            return decided.match
        await self._record(check, call, decided)
        call.leased = []
        return decided.replaced

    async def _release(self, call: _Call) -> None:
        """End the leases an attempt of this call took and did not commit (another crawler
        would otherwise wait for them to expire)."""
        if call.leased:
            await release(self.pipes, call.leased, call.token)
            call.leased = []

    def _match(
        self, reading: Reading, check: _Check, other_than: str | None = None
    ) -> Match | None:
        """The stored page (not keyed ``other_than``) that the checked page copies."""
        for match in reading.confirmed(check.signature, self.confirm_k, other_than):
            return match
        copies = sentence_matches(
            check.sentences, reading.holders(), self.sentence_share, check.fp
        )
        return next((m for m in copies if m.key != other_than), None)

    async def _record(self, check: _Check, call: _Call, decided: _Decided) -> None:
        """Write the page (its page record first, unless an earlier attempt did) and its URL's
        claim, ending the leases."""
        fp, key, signature, sentences = check.fp, check.key, check.signature, check.sentences
        reading = decided.reading
        sample = recorded(sentences, reading.crowded)
        layout = self.layout
        record = layout.page_record(fp, key, signature, sketch_of(sentences), call.token[:WRITER])
        writes: Writes = {}
        for t, (bucket, _prefix, bucket_record) in enumerate(layout.buckets(fp)):
            if not reading.present[t]:
                writes[bucket] = [bucket_record]
        there = set(reading.rows)  # the commit checks that the buckets are still as read
        records = layout.sentences
        for h, _ in sample:
            if (h, records.tag(fp)) not in there:
                writes.setdefault(layout.sentence_key(h), []).append(records.record(h, fp))
        if decided.claim is not None:
            writes.setdefault(layout.url_key(url_hash(key)), []).append(decided.claim)
        retry, call.sent = call.sent, True
        page = layout.page_key(fp), record
        await commit(
            self.pipes,
            page,
            reading.lengths,
            writes,
            call.token,
            self._count_key,
            retry=retry,
            leased=set(call.leased),
        )

    async def _undo(self, fp: int, call: _Call) -> None:
        """Remove the page record an earlier attempt of this call may have written before it
        lost a lease (its fingerprint and sentence records then lead to no page)."""
        if not call.sent:
            return
        bucket, mine = self.layout.page_key(fp), record_id(fp, call.token[:WRITER])
        removed = await self.pipes.run(
            lambda pipe: self.pipes.script(pipe, "remove", [bucket], [mine])
        )
        if int(removed[0]):  # counted when it was appended
            await self.client.decr(self._count_key)
        call.sent = False

    async def query(
        self,
        fp: int,
        k: int | None = None,
        signature: int | None = None,
        sentences: Sentences = (),
    ) -> list[Match]:
        """Stored pages within distance k (default: the index's k), nearest first, then the
        pages that share enough of ``sentences``.

        With a ``signature``, only pages it confirms (see :func:`~nearDupe.store.base.confirmed`).
        """
        k = self.k if k is None else k
        if not 0 <= k <= self.design.k:
            raise ValueError(f"k={k} is outside 0..{self.design.k} for design {self.design.name}")

        async def attempt(_retried: bool) -> Reading:
            await self._ensure_ready()
            values = await self.pipes.get_all(page_keys(self.layout, fp, sentences))
            return await self._reading(values, fp, k, sentences)

        reading = await self._retrying("query", attempt)
        matches = reading.confirmed(signature, self.confirm_k)
        if sentences:
            matches += sentence_matches(sentences, reading.holders(), self.sentence_share, fp)
        return matches

    async def holders(self, sentences: Sentences) -> list[Holder]:
        """The stored pages recorded under one of ``sentences``."""

        async def attempt(_retried: bool) -> list[Holder]:
            await self._ensure_ready()
            values = await self.pipes.get_all(sentence_keys(self.layout, sentences))
            return (await self._reading(values, 0, -1, sentences)).holders()

        return await self._retrying("query", attempt)

    async def _reading(
        self, values: dict[str, bytes], fp: int, k: int, sentences: Sentences, own: bytes = b""
    ) -> Reading:
        """What buckets ``values`` hold for ``fp``, with the page buckets they lead to."""
        reading = read(self.layout, fp, k, sentences, values, own=own)
        await fetch_pages(self.pipes, self.layout, reading)
        return reading

    async def site_template(self, host: str) -> SiteTemplate:
        """See :class:`~nearDupe.store.Store`."""
        return await self.sites.template(host)

    async def learn_site(self, host: str, identity: int, lines: Sequence[int]) -> None:
        """See :class:`~nearDupe.store.Store` (learning twice is learning once: retried)."""
        await self._retrying("learn_site", lambda _r: self.sites.learn(host, identity, lines))

    async def record_host(self, host: str, copy_of: str | None, rule: MirrorRule) -> None:
        """See :class:`~nearDupe.store.Store` (a page is counted once: not retried)."""
        await self.sites.record_host(host, copy_of, rule)

    async def mirror_of(self, host: str) -> str | None:
        """See :class:`~nearDupe.store.Store` (not retried: a request waits for no outage)."""
        return await self.sites.mirror_of(host)

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
        """Release the connections (the client's, and those of its per-node pipelines)."""
        await self.pipes.aclose()
        await self.client.aclose()

    async def __aenter__(self) -> RedisStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
