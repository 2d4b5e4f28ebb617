"""A URL is one page: every store holds each URL once, whatever fingerprint a crawler computed
for it, and tells a re-crawled page changed or unchanged against the version it holds."""

from __future__ import annotations

import asyncio
import random
from contextlib import ExitStack
from pathlib import Path

import pytest

from nearDupe.shorttext import Sentences
from nearDupe.store import EmbeddedIndex, EmbeddedStore, IndexHeader, Match, recrawl

try:
    from redis_server import RedisCluster, RedisServer, require_redis
    from test_store_contract import Backend, backend, flip, redis_for_contract, run
except ImportError:  # tests/ imported as a package
    from tests.redis_server import RedisCluster, RedisServer, require_redis
    from tests.test_store_contract import Backend, backend, flip, redis_for_contract, run

__all__ = ["backend", "redis_for_contract"]

URL = "https://news.example/story/1"


def page_sentences(seed: int, n: int = 20) -> Sentences:
    """``n`` distinct sentence hashes of 60 letters each, drawn from ``seed``."""
    rng = random.Random(seed)
    return tuple((rng.getrandbits(64), 60) for _ in range(n))


def test_a_url_is_stored_once_whatever_its_fingerprint(backend: Backend) -> None:
    async def body() -> None:
        store = backend.open()
        first = 0x0123_4567_89AB_CDEF
        assert await store.check_and_add(first, URL, None, page_sentences(1)) is None
        other = flip(first, *range(0, 40, 2))  # another crawler's view: far from the first
        match = await store.check_and_add(other, URL, None, page_sentences(1))
        assert match is not None and match.key == URL and match.fingerprint == first
        assert match.seen is not None and match.seen.distance == 20
        # Its sentences are the stored version's: the same page seen through another template.
        assert not match.seen.changed and match.seen.shared == 1.0
        assert await store.count() == 1
        version = await store.version(URL)
        assert version is not None and version.fingerprint == first
        assert version.last_changed is None and version.first_stored > 0
        assert await store.version("https://news.example/story/2") is None
        await store.close()

    run(body)


def test_changed_page_replaces_its_version_and_the_next_compares_with_it(
    backend: Backend,
) -> None:
    async def body() -> None:
        store = backend.open()
        old, new = 0x1111_2222_3333_4444, 0x9999_AAAA_BBBB_CCCC
        assert await store.check_and_add(old, URL, None, page_sentences(1)) is None
        # Mode drop: a changed page is still dropped, and said to be changed.
        dropped = await store.check_and_add(new, URL, None, page_sentences(2))
        assert dropped is not None and dropped.seen is not None
        assert dropped.seen.changed and not dropped.seen.replaced and dropped.key == URL
        kept = await store.check_and_add(new, URL, None, page_sentences(2), recrawl.CHANGED)
        assert kept is not None and kept.seen is not None and kept.seen.replaced
        assert kept.seen.shared == 0.0
        version = await store.version(URL)
        assert version is not None and version.fingerprint == new
        assert version.last_changed is not None
        assert version.first_stored <= version.last_changed
        again = await store.check_and_add(
            flip(new, 5), URL, None, page_sentences(2), recrawl.CHANGED
        )
        assert again is not None and again.seen is not None
        assert not again.seen.changed and again.seen.distance == 1 and again.fingerprint == new
        # A copy of the old version still names the URL: the old fingerprint is kept.
        copy = await store.check_and_add(flip(old, 7), "https://mirror.example/1")
        assert copy == Match(URL, old, 1)
        await store.close()

    run(body)


def test_changed_page_that_copies_another_page_is_dropped_as_that_copy(
    backend: Backend,
) -> None:
    async def body() -> None:
        store = backend.open()
        story, other = 0x5555_0000_FFFF_1234, 0x0F0F_F0F0_1234_5678
        assert await store.check_and_add(story, URL, None, page_sentences(1)) is None
        elsewhere = "https://news.example/story/2"
        assert await store.check_and_add(other, elsewhere, None, page_sentences(2)) is None
        match = await store.check_and_add(
            flip(other, 3), URL, None, page_sentences(2), recrawl.CHANGED
        )
        assert match is not None and match.key == elsewhere and match.distance == 1
        assert match.seen is not None and match.seen.changed and not match.seen.replaced
        version = await store.version(URL)
        assert version is not None and version.fingerprint == story
        await store.close()

    run(body)


def test_unfingerprinted_key_neither_reads_nor_claims_the_url(backend: Backend) -> None:
    async def body() -> None:
        store = backend.open()
        assert await store.check_and_add(0xABCD, URL, 0x1234, (), None) is None
        assert await store.version(URL) is None
        assert await store.check_and_add(0xFEDC_BA98_7654_3210, URL) is None
        assert await store.check_and_add(0xABCD, URL, 0x1234, (), None) == Match(URL, 0xABCD, 0)
        await store.close()

    run(body)


def test_embedded_url_and_page_are_one_commit(tmp_path) -> None:
    """A URL's claim is written by the commit that writes its page: an index reopened after
    a commit holds both, and one closed without committing holds neither."""
    index = EmbeddedIndex(tmp_path / "i", IndexHeader(), commit_interval=3600)
    index.check_and_add(0x42, URL, None, page_sentences(1))
    index.commit()
    index.check_and_add(0x4242_0000_0000_0000, URL, None, page_sentences(2), recrawl.CHANGED)
    index._lock_file.close()  # gone without a commit, as in a crash
    index._db.close()
    reopened = EmbeddedStore(EmbeddedIndex(tmp_path / "i", IndexHeader()))

    async def body() -> None:
        version = await reopened.version(URL)
        assert version is not None and version.fingerprint == 0x42
        assert version.last_changed is None
        assert await reopened.count() == 1
        await reopened.close()

    run(body)


@pytest.mark.parametrize("topology", ["node", "cluster3"])
def test_crawlers_racing_over_one_url_store_it_once(topology: str, tmp_path: Path) -> None:
    """Eight crawlers check one URL at once, each with its own fingerprint and sentences (its
    own view of the page): one stores it, the seven others find it stored, on one Redis and
    on a cluster (whose checks lease the URL's shard like every bucket they read)."""
    from nearDupe.store.redis import RedisStore

    require_redis()
    with ExitStack() as stack:
        if topology == "node":
            url = stack.enter_context(RedisServer(tmp_path / "redis")).url
        else:
            url = stack.enter_context(RedisCluster(tmp_path / "cluster")).url

        async def body() -> None:
            stores = [
                RedisStore.from_url(url, IndexHeader(), name="one-url", cluster=topology != "node")
                for _ in range(8)
            ]
            views = [(random.Random(i).getrandbits(64), page_sentences(i)) for i in range(8)]
            answers = await asyncio.gather(
                *(
                    store.check_and_add(fp, URL, None, sentences, recrawl.CHANGED)
                    for store, (fp, sentences) in zip(stores, views, strict=True)
                )
            )
            # Each view is another text: a later one is a changed page, replacing the first.
            firsts = [a for a in answers if a is None]
            assert len(firsts) == 1, answers
            assert all(a.key == URL and a.seen is not None for a in answers if a is not None)
            version = await stores[0].version(URL)
            assert version is not None
            newest = [a for a in answers if a is not None and a.seen and a.seen.replaced]
            stored = {fp for fp, _ in views} & {version.fingerprint}
            assert stored and await stores[0].count() == 1 + len(newest)
            for store in stores:
                await store.close()

        asyncio.run(body())
