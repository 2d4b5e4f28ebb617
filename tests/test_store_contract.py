"""One contract, every backend: the embedded index and Redis must answer alike."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from nearDupe.errors import IndexSettingsMismatch
from nearDupe.store import EmbeddedIndex, EmbeddedStore, IndexHeader, Match, Store, droplog
from nearDupe.store.droplog import Drop
from nearDupe.store.view import ReadOnlyIndex, open_view

try:
    from redis_server import RedisServer, require_redis
except ImportError:  # tests/ imported as a package
    from tests.redis_server import RedisServer, require_redis

_names = itertools.count()


class Backend:
    """Opens stores of one kind at one location (a directory, or a Redis index name)."""

    def __init__(self, kind: str, tmp_path: Path, server: RedisServer | None) -> None:
        self.kind = kind
        self.path = tmp_path / "index"
        self.server = server
        self.name = f"contract{next(_names)}"

    def open(self, header: IndexHeader | None = None) -> Store:
        """A store over the backend's location (call inside the event loop)."""
        header = header or IndexHeader()
        if self.kind == "embedded":
            return EmbeddedStore(EmbeddedIndex(self.path, header))
        from nearDupe.store.redis import RedisStore

        assert self.server is not None
        return RedisStore.from_url(self.server.url, header, name=self.name)

    async def view(self, store: Store) -> ReadOnlyIndex:
        """The read-only view of what ``store`` wrote (committed), as the inspect commands
        read it; its blocking calls are made off the event loop (``asyncio.to_thread``)."""
        if isinstance(store, EmbeddedStore):
            store.index.commit()
            return open_view(str(self.path), store.header)
        assert self.server is not None
        return open_view(self.server.url, store.header, name=self.name)

    async def holders(self, store: Store, sentence: int) -> int:
        """How many pages the store records under one sentence."""
        view = await self.view(store)
        return len(await asyncio.to_thread(view.holders, ((sentence, 1),)))

    async def drops(self, store: Store) -> list[Drop]:
        """The drops the store remembers, oldest first."""
        return await asyncio.to_thread((await self.view(store)).drops)


@pytest.fixture(scope="module")
def redis_for_contract(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer | None]:
    """One redis-server for the module (each test uses its own index name)."""
    try:
        require_redis()
    except pytest.skip.Exception:
        yield None
        return
    with RedisServer(tmp_path_factory.mktemp("redis"), extra=("--appendfsync", "everysec")) as s:
        yield s


@pytest.fixture(params=["embedded", "redis"])
def backend(
    request: pytest.FixtureRequest, tmp_path: Path, redis_for_contract: RedisServer | None
) -> Backend:
    """Each contract test runs once per backend."""
    if request.param == "redis" and redis_for_contract is None:
        require_redis()
    return Backend(request.param, tmp_path, redis_for_contract)


def run(body: Callable[[], Awaitable[None]]) -> None:
    """Run an async test body in a fresh event loop."""
    asyncio.run(body())


def flip(fp: int, *bits: int) -> int:
    """fp with the given bit positions inverted."""
    for b in bits:
        fp ^= 1 << b
    return fp


def brute_force(stored: dict[int, str], fp: int, k: int) -> list[Match]:
    """Every stored page within k, nearest first (ties by fingerprint)."""
    found = [
        Match(key, other, (fp ^ other).bit_count())
        for other, key in stored.items()
        if (fp ^ other).bit_count() <= k
    ]
    return sorted(found, key=lambda m: (m.distance, m.fingerprint))


def test_new_then_near_copy(backend: Backend) -> None:
    async def body() -> None:
        store = backend.open()
        original = 0xDEADBEEF_CAFEF00D
        assert await store.check_and_add(original, "https://a.example/1") is None
        copy = flip(original, 0, 33, 63)
        assert await store.check_and_add(copy, "https://b.example/1") == Match(
            "https://a.example/1", original, 3
        )
        assert await store.check_and_add(original, "https://c.example/1") == Match(
            "https://a.example/1", original, 0
        )
        far = flip(original, 1, 2, 3, 4)
        assert await store.check_and_add(far, "https://d.example/1") is None
        assert await store.count() == 2
        await store.close()

    run(body)


def test_extreme_fingerprints_keep_all_64_bits(backend: Backend) -> None:
    """Values above 2**53 and 2**63 survive exactly (no float, no sign trouble)."""

    async def body() -> None:
        store = backend.open()
        values = [0, 2**64 - 1, 2**63 | 0xFF00, 2**53 | 0xFF, (2**53 - 1) << 11]
        values += [0x5555_5555_5555_5555, 0xAAAA_AAAA_AAAA_AAAA]
        for i, fp in enumerate(values):
            assert await store.check_and_add(fp, f"k{i}") is None
        for i, fp in enumerate(values):
            assert await store.query(fp, 0) == [Match(f"k{i}", fp, 0)]
            near = flip(fp, 0, 63)
            assert (await store.query(near, 2))[0] == Match(f"k{i}", fp, 2)
        await store.close()

    run(body)


def test_exact_against_brute_force(backend: Backend) -> None:
    async def body() -> None:
        rng = random.Random(7)
        store = backend.open()
        stored: dict[int, str] = {}
        for i in range(600):
            fp = rng.getrandbits(64)
            if rng.random() < 0.3 and stored:
                fp = flip(rng.choice(list(stored)), *rng.sample(range(64), rng.randint(4, 6)))
            key = f"https://example.com/{i}"
            expected = brute_force(stored, fp, 3)
            got = await store.check_and_add(fp, key)
            assert got == (expected[0] if expected else None)
            if got is None:
                stored[fp] = key
        for _ in range(300):
            fp = rng.choice(list(stored))
            fp = flip(fp, *rng.sample(range(64), rng.randint(0, 4)))
            for k in range(4):
                assert await store.query(fp, k) == brute_force(stored, fp, k)
        assert await store.query(rng.getrandbits(64)) == []
        assert await store.count() == len(stored)
        await store.close()

    run(body)


def test_query_k_bounds_and_default(backend: Backend) -> None:
    async def body() -> None:
        store = backend.open(IndexHeader(k=1))
        base = 0x0123_4567_89AB_CDEF
        assert await store.check_and_add(base, "a") is None
        # k=1 index: a copy at distance 2 is new, query(k=3) still sees it
        assert await store.check_and_add(flip(base, 5, 50), "b") is None
        assert [m.key for m in await store.query(flip(base, 5))] == ["a", "b"]
        assert [m.key for m in await store.query(base, 3)] == ["a", "b"]
        assert await store.query(base, 0) == [Match("a", base, 0)]
        with pytest.raises(ValueError):
            await store.query(base, 4)
        await store.close()

    run(body)


def test_close_reopen_keeps_pages(backend: Backend) -> None:
    async def body() -> None:
        rng = random.Random(3)
        fps = [rng.getrandbits(64) for _ in range(200)]
        store = backend.open()
        for i, fp in enumerate(fps):
            assert await store.check_and_add(fp, f"u{i}") is None
        await store.close()

        store = backend.open(IndexHeader(k=2))  # k may differ from the stored k
        assert await store.count() == len(fps)
        for i, fp in enumerate(fps):
            assert await store.check_and_add(flip(fp, 9), f"copy{i}") == Match(f"u{i}", fp, 1)
        assert await store.count() == len(fps)
        await store.close()

    run(body)


def test_header_mismatch_is_refused(backend: Backend) -> None:
    async def body() -> None:
        store = backend.open()
        await store.check_and_add(1, "a")
        await store.close()
        with pytest.raises(IndexSettingsMismatch, match="features"):
            backend.open(IndexHeader(features={"kind": "shingles"}))
        if backend.kind == "redis":  # its buckets are the design (embedded re-tables)
            with pytest.raises(IndexSettingsMismatch, match="design"):
                backend.open(IndexHeader(design="10-table"))
        store = backend.open()
        assert await store.count() == 1
        await store.close()

    run(body)


def test_signature_confirms_candidates(backend: Backend) -> None:
    """A page within k is a match only if its distance plus its signature's is within
    confirm_k."""

    async def body() -> None:
        store = backend.open(IndexHeader(confirm_k=6))
        original, sig = 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210
        assert await store.check_and_add(original, "a", sig) is None
        near = flip(original, 5, 40)
        # Same words, another order: fingerprint 2 bits away, signature 5 bits away: kept.
        assert await store.check_and_add(near, "b", flip(sig, 1, 2, 3, 4, 5)) is None
        copy_of_a = flip(original, 7)
        assert await store.check_and_add(copy_of_a, "c", flip(sig, 60)) == Match("a", original, 1)
        copy_of_b = flip(near, 9)
        assert await store.check_and_add(copy_of_b, "d", flip(sig, 1, 2, 3, 4, 5, 6)) == Match(
            "b", near, 1
        )
        # No signature on either side: the fingerprint alone decides (the nearest).
        assert await store.check_and_add(flip(near, 11), "e") == Match("b", near, 1)
        assert await store.count() == 2
        assert [m.key for m in await store.query(original, 3)] == ["a", "b"]
        assert await store.query(original, 3, flip(sig, 62)) == [Match("a", original, 0)]
        assert await store.query(original, 3, ~sig & (2**64 - 1)) == []
        await store.close()
        reopened = backend.open(IndexHeader(confirm_k=6))
        assert await reopened.check_and_add(copy_of_b, "f", flip(sig, 1, 2, 3, 4)) == Match(
            "b", near, 1
        )
        await reopened.close()

    run(body)


def test_confirmed_matches_against_brute_force(backend: Backend) -> None:
    async def body() -> None:
        rng = random.Random(11)
        store = backend.open(IndexHeader(confirm_k=9))
        stored: dict[int, list[tuple[str, int]]] = {}  # fp -> its pages, oldest first
        for i in range(400):
            fp, sig = rng.getrandbits(64), rng.getrandbits(64)
            if rng.random() < 0.5 and stored:
                base = rng.choice(list(stored))
                fp = flip(base, *rng.sample(range(64), rng.randint(0, 3)))
                sig = flip(stored[base][0][1], *rng.sample(range(64), rng.randint(4, 8)))
            key = f"https://example.com/{i}"
            candidates = brute_force({f: p[0][0] for f, p in stored.items()}, fp, 3)
            expected = [
                Match(key, m.fingerprint, m.distance)
                for m in candidates
                for key, other in stored[m.fingerprint]
                if m.distance + (other ^ sig).bit_count() <= 9
            ]
            got = await store.check_and_add(fp, key, sig)
            assert got == (expected[0] if expected else None)
            if got is None:
                stored.setdefault(fp, []).append((key, sig))
        await store.close()

    run(body)


def test_short_pages_match_by_shared_sentences(backend: Backend) -> None:
    """Sentence-level matching: a page sharing enough of a stored page's sentence letters (both
    ways) is its duplicate, whatever its fingerprint; each sentence keeps a bounded list."""
    from nearDupe.shorttext import letters, sentences

    brief = "The council approved the new budget on Monday. Schools get more money next year."
    added = brief + " Critics said the plan was rushed through."
    other = "The council rejected the stadium plan on Monday. Fans were disappointed by it."
    template = "Subscribe to our newsletter for daily updates from the city."
    rng = random.Random(5)
    fps = [rng.getrandbits(64) for _ in range(40)]  # pairwise far apart

    async def body() -> None:
        store = backend.open(IndexHeader(sentence_share=0.4))
        assert await store.check_and_add(fps[0], "a", fps[0], sentences(brief)) is None
        share = letters(sentences(brief)) / letters(sentences(added))
        assert await store.check_and_add(fps[1], "b", fps[1], sentences(added)) == Match(
            "a", fps[0], None, round(share, 3)
        )
        assert await store.check_and_add(fps[2], "c", fps[2], sentences(other)) is None
        # One sentence in common, half of both pages: a look-alike, not a copy (one sentence
        # alone must make up twice the share).
        lead = brief.split(". ")[0] + ". Parents asked for longer opening hours at last."
        assert await store.check_and_add(fps[24], "g", None, sentences(lead)) is None
        # Two sentences of template text (an author's bio) in two different short articles:
        # over 30 % of both, but under half of either: each has its own article.
        bio = "Jane Roe writes about city hall. She lives by the harbor with two cats."
        first = f"{bio}\nThe mayor opened a library branch downtown on Friday, and a reading room."
        second = f"{bio}\nA storm closed the coastal highway for the weekend, and ferries stopped."
        assert await store.check_and_add(fps[25], "h", None, sentences(first)) is None
        assert await store.check_and_add(fps[26], "i", None, sentences(second)) is None
        # Sharing only the template sentence with each other: under 40 % of their letters.
        assert await store.check_and_add(fps[3], "d", None, sentences(template + "\n" + brief))
        for i in range(4, 24):  # one sentence on many pages: recorded for the first 16 only
            page = (
                f"{template}\nStory number {i} is about something else entirely. It has a "
                f"second sentence of its own, number {i}. And a third one, {i} to be told apart."
            )
            assert await store.check_and_add(fps[i], f"t{i}", None, sentences(page)) is None
        found = await store.query(fps[30], 0, None, sentences(brief))
        assert [(m.key, m.distance, m.shared) for m in found] == [("a", None, 1.0)]
        assert await store.count() == 25
        await store.close()
        reopened = backend.open(IndexHeader(sentence_share=0.9))
        # At 90 %, the brief with a sentence added is no longer a copy; the brief still is.
        assert await reopened.check_and_add(fps[31], "e", None, sentences(added)) is None
        match = await reopened.check_and_add(fps[32], "f", None, sentences(brief))
        assert match is not None and (match.key, match.shared) == ("a", 1.0)
        ((template_hash, _),) = sentences(template)
        assert await backend.holders(reopened, template_hash) == 16
        await reopened.close()

    run(body)


def test_drops_are_remembered_up_to_the_limit(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(droplog, "DROP_LOG_LIMIT", 3)
    logged = [
        Drop(f"http://a/{i}\udc80", 2**64 - 1 - i, "http://o/", i % 3, None, i) for i in range(5)
    ]

    async def body() -> None:
        store = backend.open()
        for drop in logged:
            await store.log_drop(drop)
        remembered = await backend.drops(store)
        assert [d.url for d in remembered] == [f"http://a/{i}%ED%B2%80" for i in (2, 3, 4)]
        assert [(d.fingerprint, d.distance) for d in remembered] == [
            (d.fingerprint, d.distance) for d in logged[2:]
        ]
        await store.close()

    run(body)


def test_a_follow_up_repeating_background_is_not_a_copy(backend: Backend) -> None:
    """Long stories are found by a sample of 4 of their sentences but judged by their sketch:
    a follow-up repeating 3 of a 12-sentence story's sentences (a quarter) is kept, however
    many of them the sample holds; the story with its last paragraph cut is a copy."""
    rng = random.Random(23)

    def story() -> tuple[tuple[int, int], ...]:
        return tuple(sorted((rng.getrandbits(64), rng.randrange(60, 140)) for _ in range(12)))

    async def body() -> None:
        store = backend.open()
        in_sample = 0
        for i in range(30):
            first = story()
            fp = rng.getrandbits(64)
            assert await store.check_and_add(fp, f"story-{i}", None, first) is None
            background = rng.sample(first, 3)
            in_sample += sum(s in first[:4] for s in background) >= 2
            follow_up = tuple(sorted(background + list(story())))
            got = await store.check_and_add(rng.getrandbits(64), f"follow-up-{i}", None, follow_up)
            assert got is None, (i, got)
            cut = tuple(sorted(rng.sample(first, 9)))
            got = await store.check_and_add(rng.getrandbits(64), f"cut-{i}", None, cut)
            assert got is not None and got.key == f"story-{i}" and got.distance is None, (i, got)
        assert in_sample >= 3  # the sample alone would have called those copies
        await store.close()

    run(body)


def test_a_long_page_is_looked_up_by_its_smallest_sentences_only(backend: Backend) -> None:
    """A check reads the holders of LOOKUP_SENTENCES of its sentences (the smallest hashes)
    and is recorded under none other: a 60-sentence article is found by its copy with 10
    sentences added, and no sentence beyond its looked-up ones leads to it."""
    from nearDupe.store.base import LOOKUP_SENTENCES, SAMPLE_SENTENCES, looked_up

    rng = random.Random(31)
    article = tuple(sorted((rng.getrandbits(64), 60) for _ in range(60)))
    copy = tuple(sorted(article + tuple((rng.getrandbits(64), 60) for _ in range(10))))

    async def body() -> None:
        store = backend.open()
        assert await store.check_and_add(rng.getrandbits(64), "article", None, article) is None
        got = await store.check_and_add(rng.getrandbits(64), "copy", None, copy)
        assert got is not None and got.key == "article" and got.distance is None, got
        first = looked_up(article)
        assert len(first) == LOOKUP_SENTENCES and first == article[:LOOKUP_SENTENCES]
        counts = [await backend.holders(store, h) for h, _ in article]
        assert counts[:SAMPLE_SENTENCES] == [1] * SAMPLE_SENTENCES
        assert counts[LOOKUP_SENTENCES:] == [0] * (len(article) - LOOKUP_SENTENCES)
        await store.close()

    run(body)


def test_sentence_rule_against_the_python_rule(backend: Backend) -> None:
    """Generated pages drawn from a small pool of sentences (so that they overlap in every
    proportion), short ones recorded under all their sentences and longer ones under a sample:
    each backend's check-and-add decides as store.base.sentence_matches (the one written rule;
    Redis repeats it in Lua) over the pages stored so far."""
    from nearDupe.store.base import (
        SENTENCE_HOLDERS,
        SENTENCE_SHARE,
        Holder,
        holders_of,
        sentence_matches,
    )

    rng = random.Random(17)
    pool = [(rng.getrandbits(64), rng.randrange(8, 200)) for _ in range(16)]

    async def body() -> None:
        store = backend.open()
        stored: list[list[Holder]] = []
        decided = matched = sampled = 0
        for i in range(80):
            page = tuple(sorted(rng.sample(pool, rng.randrange(1, 9))))
            fp = rng.getrandbits(64)  # random: no fingerprint match within k=3
            holders = [  # as the stores read them: by sentence, oldest page first
                holder
                for h, _ in page
                for held in stored
                for holder in held
                if holder.sentence == h
            ]
            expected = sentence_matches(page, holders, SENTENCE_SHARE)
            got = await store.check_and_add(fp, f"p{i}", None, page)
            if expected:
                assert got is not None and (got.key, got.shared) == (
                    expected[0].key,
                    expected[0].shared,
                ), (i, got, expected[:2])
                matched += 1
            else:
                assert got is None, (i, got)
                held = Counter(
                    holder.sentence for page_holders in stored for holder in page_holders
                )
                crowded = {h for h, n in held.items() if n >= SENTENCE_HOLDERS}
                stored.append(holders_of(page, f"p{i}", fp, crowded))
                sampled += len(stored[-1]) < len(page)
            decided += 1
        assert 10 <= matched <= decided - 10  # both outcomes were exercised
        assert sampled >= 3  # and pages recorded under a sample
        await store.close()

    run(body)


def test_sites_learn_as_the_python_rule(backend: Backend) -> None:
    """Generated pages of several sites: both backends remember each line's pages as
    ``learned`` does (identities capped at LINE_TITLES, a page counted once), and a reopened
    store still knows them."""
    from nearDupe.sitetemplate import LINE_TITLES
    from nearDupe.store.sites import learned

    rng = random.Random(7)
    sites = ["news.example", "blog.example", "例子.example", "odd\udc80.example"]
    pages = [
        (rng.choice(sites), rng.randrange(1, 2**32), rng.sample(range(1, 60), 12))
        for _ in range(40)
    ]
    pages.append(pages[0])  # the same page decided twice counts once

    async def body() -> None:
        store = backend.open()
        expected: dict[str, dict[int, tuple[int, ...]]] = {site: {} for site in sites}
        for site, identity, lines in pages:
            line_hashes = [2**63 + line for line in lines]  # above 2**63: all 64 bits kept
            await store.learn_site(site, identity, line_hashes)
            learned(expected[site], identity, line_hashes)
        for site in sites:
            got = (await store.site_template(site)).lines
            assert {k: sorted(v) for k, v in got.items()} == {
                k: sorted(v) for k, v in expected[site].items()
            }
            assert max(map(len, got.values())) == LINE_TITLES
        assert (await store.site_template("unknown.example")).lines == {}
        await store.close()
        reopened = backend.open()
        got = (await reopened.site_template(sites[0])).lines
        assert {k: sorted(v) for k, v in got.items()} == {
            k: sorted(v) for k, v in expected[sites[0]].items()
        }
        await reopened.close()

    run(body)


def test_a_site_keeps_at_most_site_lines(backend: Backend) -> None:
    """Past SITE_LINES a site forgets lines seen on one page first: lines seen on several
    pages (its template) survive a flood of articles' own lines."""
    from nearDupe.sitetemplate import SITE_LINES

    template = [2**40 + i for i in range(20)]

    async def body() -> None:
        store = backend.open()
        for identity in (1, 2, 3):
            await store.learn_site("big.example", identity, template)
        for identity in range(4, 4 + SITE_LINES // 50 + 5):
            own = [identity * 1000 + i for i in range(60)]
            await store.learn_site("big.example", identity, template[:5] + own)
        lines = (await store.site_template("big.example")).lines
        assert len(lines) <= SITE_LINES
        assert all(len(lines[line]) >= 2 for line in template)
        await store.close()

    run(body)
