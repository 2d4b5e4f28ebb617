"""The embedded index commits in a thread of its own: a check never waits for a commit."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from nearDupe.store.embedded import EmbeddedIndex
from nearDupe.store.embedded_sqlite import DB


class _SlowCommits:
    """The index's committing connection, its commits made slow (or failing) on demand."""

    def __init__(self, db: sqlite3.Connection, seconds: float = 0.0, failures: int = 0) -> None:
        self._db = db
        self.seconds = seconds
        self.failures = failures
        self.started = threading.Event()
        self.commits = 0

    def commit(self) -> None:
        self.started.set()
        time.sleep(self.seconds)
        if self.failures:
            self.failures -= 1
            raise sqlite3.OperationalError("database or disk is full")
        self._db.commit()
        self.commits += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def _on_disk(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path / DB)) as db:
        return int(db.execute("SELECT COUNT(*) FROM pages").fetchone()[0])


def _fps(n: int, seed: int) -> list[int]:
    return np.random.default_rng(seed).integers(0, 2**64, n, dtype=np.uint64).tolist()


def test_a_check_does_not_wait_for_a_commit_in_progress(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path, commit_interval=0.1)
    slow = _SlowCommits(index._writer, seconds=1.5)  # type: ignore[arg-type]
    index._writer = slow  # type: ignore[assignment]
    first = _fps(200, 1)
    for i, fp in enumerate(first):
        assert index.check_and_add(fp, f"https://a/{i}") is None
    assert slow.started.wait(5), "the committer thread commits on its own"
    took = []
    for i, fp in enumerate(_fps(200, 2)):  # new pages and copies while the commit sleeps
        start = time.perf_counter()
        assert index.check_and_add(fp, f"https://b/{i}") is None
        match = index.check_and_add(first[i], f"https://copy/{i}")
        took.append(time.perf_counter() - start)
        assert match is not None and match.key == f"https://a/{i}", "the batch being written"
    assert slow.commits == 0, "all of these ran during the one slow commit"
    assert max(took) < 0.5, f"a check waited for the commit: {max(took):.3f} s"
    index.close()
    assert _on_disk(tmp_path) == 400, "the close commits everything"


def test_pages_are_on_disk_within_the_commit_interval(tmp_path: Path) -> None:
    with EmbeddedIndex(tmp_path, commit_interval=0.2) as index:
        assert index.check_and_add(1, "https://a/1") is None
        added = time.monotonic()
        while _on_disk(tmp_path) < 1:
            assert time.monotonic() - added < 2.0, "no commit within the interval"
            time.sleep(0.01)
        # then a page added after a commit: the thread keeps committing
        assert index.check_and_add(2**64 - 2, "https://a/2") is None
        added = time.monotonic()
        while _on_disk(tmp_path) < 2:
            assert time.monotonic() - added < 2.0, "no second commit"
            time.sleep(0.01)


def test_a_failed_background_commit_keeps_the_pages_and_retries(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path, commit_interval=0.05)
    failing = _SlowCommits(index._writer, failures=2)  # type: ignore[arg-type]
    index._writer = failing  # type: ignore[assignment]
    fps = _fps(50, 3)
    for i, fp in enumerate(fps):
        index.check_and_add(fp, f"https://a/{i}")
    deadline = time.monotonic() + 5
    while failing.failures or failing.commits == 0:
        assert time.monotonic() < deadline, "no retry after the failed commits"
        for i, fp in enumerate(fps[:5]):  # copies still caught from memory meanwhile
            assert index.check_and_add(fp, f"https://copy/{i}") is not None
        time.sleep(0.01)
    index.close()
    assert _on_disk(tmp_path) == 50


def test_commit_interval_zero_commits_before_the_check_returns(tmp_path: Path) -> None:
    with EmbeddedIndex(tmp_path, commit_interval=0) as index:
        for i, fp in enumerate(_fps(20, 4)):
            index.check_and_add(fp, f"https://a/{i}")
            assert _on_disk(tmp_path) == i + 1
        assert index._committer is None, "no thread: the checks commit"


def test_sites_written_before_a_commit_are_read_back_and_committed(tmp_path: Path) -> None:
    """A site evicted from the cache before the next commit is read back from the writes the
    commit will make (not from the disk, which lacks them), and is on disk after it."""
    from nearDupe.store.sites import CACHED_SITES, read_site

    with EmbeddedIndex(tmp_path, commit_interval=3600) as index:
        index.check_and_add(1, "https://a/1")
        for i in range(CACHED_SITES + 5):  # the first sites are evicted: their writes held
            index.sites.learn(f"site{i}.example", 7, [100 + i, 200 + i])
        with contextlib.closing(sqlite3.connect(tmp_path / DB)) as db:
            assert read_site(db, "site0.example") == {}, "not written before the commit"
        assert dict(index.sites.template("site0.example").lines) == {100: (7,), 200: (7,)}
        index.commit()
        with contextlib.closing(sqlite3.connect(tmp_path / DB)) as db:
            assert read_site(db, "site0.example") == {100: (7,), 200: (7,)}
    with EmbeddedIndex(tmp_path) as index:
        assert dict(index.sites.template("site3.example").lines) == {103: (7,), 203: (7,)}
