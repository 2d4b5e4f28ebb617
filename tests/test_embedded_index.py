"""Tests of the persistent EmbeddedIndex: reopen, corruption, locking, crash safety."""

from __future__ import annotations

import asyncio
import logging
import mmap
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from xxhash import xxh3_64, xxh3_64_intdigest

from nearDupe.analysis import Analysis
from nearDupe.commands import importer
from nearDupe.commands.importer import Item
from nearDupe.errors import IndexFileError, IndexLocked, IndexSettingsMismatch
from nearDupe.report import Decision
from nearDupe.shorttext import Sentences
from nearDupe.store import EmbeddedStore
from nearDupe.store.base import IndexHeader, Match
from nearDupe.store.embedded import EmbeddedIndex, to_signed, to_unsigned
from nearDupe.store.embedded_bulk import BulkPages
from nearDupe.units import Units

REBUILD = "Rebuilding the tables"


def _pages(n: int, seed: int = 0) -> list[tuple[int, str]]:
    fps = np.random.default_rng(seed).integers(0, 2**64, n, dtype=np.uint64).tolist()
    return [(fp, f"https://example.com/{seed}/{i}") for i, fp in enumerate(fps)]


def _crash(index: EmbeddedIndex) -> None:
    """Commit and let go without writing a snapshot, as a killed process would."""
    index.commit()
    index._db.close()
    index._unlock()


def _keys_of(index: EmbeddedIndex, fp: int) -> list[str]:
    """Every key stored with exactly this fingerprint, oldest first."""
    return [key for found, key, _ in index.pages() if found == fp]


def _assert_all_found(index: EmbeddedIndex, pages: list[tuple[int, str]]) -> None:
    for fp, key in pages:
        assert index.query(fp)[0] == Match(key, fp, 0)


def test_signed_roundtrip() -> None:
    for fp in (0, 1, 2**63 - 1, 2**63, 2**64 - 1):
        assert -(2**63) <= to_signed(fp) < 2**63
        assert to_unsigned(to_signed(fp)) == fp


def test_reopen_from_snapshot(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pages = _pages(3000)
    with EmbeddedIndex(tmp_path) as index:
        for fp, key in pages:
            index.add(fp, key)
        assert len(index) == 3000
    assert (tmp_path / "tables.npy").exists()
    with caplog.at_level(logging.WARNING), EmbeddedIndex(tmp_path) as index:
        assert len(index) == 3000
        _assert_all_found(index, pages[::50])
        assert _keys_of(index, pages[7][0]) == [pages[7][1]]
    assert REBUILD not in caplog.text


def test_snapshot_of_the_joined_array_still_reads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A snapshot saved whole by np.save (before rows were written one by one), without its
    directory and checked by the xxh3 of all its rows (earlier versions), opens without a
    rebuild."""
    pages = _pages(1500)
    with EmbeddedIndex(tmp_path) as index:
        for fp, key in pages:
            index.add(fp, key)
    snapshot = tmp_path / "tables.npy"
    keys = np.load(snapshot)
    snapshot.unlink()
    (tmp_path / "tables-dirs.npy").unlink()
    np.save(snapshot, keys, allow_pickle=False)
    whole = f"{xxh3_64_intdigest(np.ascontiguousarray(keys).data):016x}"
    with sqlite3.connect(tmp_path / "pages.sqlite3") as db:
        db.execute("DELETE FROM meta WHERE name = 'snapshot_spot_xxh3'")
        db.execute("INSERT INTO meta VALUES ('snapshot_xxh3', ?)", (whole,))
    with caplog.at_level(logging.WARNING), EmbeddedIndex(tmp_path) as index:
        assert len(index) == 1500
        _assert_all_found(index, pages[::30])
    assert REBUILD not in caplog.text


def test_snapshot_without_its_recorded_length_still_reads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A snapshot whose length an earlier version did not record beside it is measured by
    counting its pages, and opens without a rebuild."""
    pages = _pages(1200)
    with EmbeddedIndex(tmp_path) as index:
        for fp, key in pages:
            index.add(fp, key)
    with sqlite3.connect(tmp_path / "pages.sqlite3") as db:
        assert db.execute("DELETE FROM meta WHERE name = 'snapshot_pages'").rowcount == 1
    with caplog.at_level(logging.WARNING), EmbeddedIndex(tmp_path) as index:
        assert len(index) == 1200
        _assert_all_found(index, pages[::40])
    assert REBUILD not in caplog.text


def test_pages_added_after_snapshot(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first, later = _pages(500, 1), _pages(300, 2)
    with EmbeddedIndex(tmp_path) as index:
        for fp, key in first:
            index.add(fp, key)
    index = EmbeddedIndex(tmp_path)
    for fp, key in later:
        index.add(fp, key)
    _crash(index)  # the snapshot now covers only the first 500 pages
    with caplog.at_level(logging.WARNING), EmbeddedIndex(tmp_path) as index:
        assert len(index) == 800
        _assert_all_found(index, first[::20] + later[::20])
    assert REBUILD not in caplog.text


def test_no_snapshot_rebuilds_from_sqlite(tmp_path: Path) -> None:
    pages = _pages(400)
    index = EmbeddedIndex(tmp_path)
    for fp, key in pages:
        index.add(fp, key)
    _crash(index)
    assert not (tmp_path / "tables.npy").exists()
    with EmbeddedIndex(tmp_path) as index:
        assert len(index) == 400
        _assert_all_found(index, pages[::10])


def test_check_and_add_returns_original_key(tmp_path: Path) -> None:
    with EmbeddedIndex(tmp_path) as index:
        assert index.check_and_add(0b1111_0000, "https://a.example/original") is None
        assert index.check_and_add(2**64 - 1, "https://a.example/high") is None
        hit = index.check_and_add(0b1111_0111, "https://a.example/copy")
        assert hit == Match("https://a.example/original", 0b1111_0000, 3)
        assert index.check_and_add(0b1111_0000 ^ (0b1111 << 20), "https://a.example/far") is None
        assert index.check_and_add(2**64 - 2, "x") == Match("https://a.example/high", 2**64 - 1, 1)
        assert len(index) == 3
    with EmbeddedIndex(tmp_path) as index:
        assert index.check_and_add(0b1111_0001, "again") == Match(
            "https://a.example/original", 0b1111_0000, 1
        )


def test_same_fingerprint_many_keys(tmp_path: Path) -> None:
    with EmbeddedIndex(tmp_path) as index:
        index.add(99, "first")
        index.add(99, "second")
        assert index.query(99) == [Match("first", 99, 0)]
        assert _keys_of(index, 99) == ["first", "second"]


def test_other_k_is_allowed(tmp_path: Path) -> None:
    with EmbeddedIndex(tmp_path) as index:
        index.add(0, "zero")
    with EmbeddedIndex(tmp_path, IndexHeader.for_settings("4-table", 1)) as index:
        assert index.query(0b11) == []
        assert index.query(0b1) == [Match("zero", 0, 1)]
        assert index.query(0b11, 3) == [Match("zero", 0, 2)]


def test_header_mismatch_names_the_file(tmp_path: Path) -> None:
    with EmbeddedIndex(tmp_path) as index:
        index.add(1, "a")
    with pytest.raises(IndexSettingsMismatch, match=r"pages\.sqlite3") as info:
        EmbeddedIndex(tmp_path, IndexHeader(features={"kind": "shingles"}))
    assert str(tmp_path) in str(info.value) and "features" in str(info.value)
    with pytest.raises(IndexSettingsMismatch, match="algorithm"):
        EmbeddedIndex(tmp_path, IndexHeader(algorithm=999))
    # A failed open releases the lock.
    with EmbeddedIndex(tmp_path) as index:
        assert len(index) == 1


def test_another_design_rebuilds_the_tables_from_the_pages(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # An index built at k=8 (blocks-8-9) opened with the k=10 default: its pages are kept and
    # searched at the new k; the new design is recorded and its snapshot used from then on.
    pages = _pages(300, seed=5)
    with EmbeddedIndex(tmp_path, IndexHeader(design="blocks-8-9", k=8)) as index:
        for fp, key in pages:
            index.add(fp, key)
    wider = IndexHeader(design="blocks-10-11", k=10)
    caplog.set_level(logging.INFO, logger="nearDupe.store.embedded")
    with EmbeddedIndex(tmp_path, wider) as index:
        _assert_all_found(index, pages)
        fp, key = pages[7]
        assert index.query(fp ^ 0x3FF)[0] == Match(key, fp, 10)
    assert "rebuilding its tables for design blocks-10-11 (was blocks-8-9)" in caplog.text
    caplog.clear()
    with EmbeddedIndex(tmp_path, wider) as index:
        _assert_all_found(index, pages)
    assert "rebuilding" not in caplog.text.lower()


def test_corrupt_sqlite_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "pages.sqlite3").write_bytes(os.urandom(8192))
    with pytest.raises(IndexFileError, match=r"pages\.sqlite3") as info:
        EmbeddedIndex(tmp_path)
    assert str(tmp_path) in str(info.value)
    assert not isinstance(info.value, IndexLocked)
    with pytest.raises(IndexFileError, match=r"pages\.sqlite3"):
        EmbeddedIndex(tmp_path)  # the lock was released


@pytest.mark.parametrize(
    "damage",
    [
        "garbage",
        "truncated",
        "empty",
        "wrong-shape",
        "bit-rot",
        "missing",
        "stale",
        "directory",
        "no-directory",
    ],
)
def test_bad_snapshot_rebuilt_from_sqlite(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    pages = _pages(2000)
    with EmbeddedIndex(tmp_path) as index:
        for fp, key in pages[:1000]:
            index.add(fp, key)
    snapshot, directory = tmp_path / "tables.npy", tmp_path / "tables-dirs.npy"
    older = snapshot.read_bytes()
    with EmbeddedIndex(tmp_path) as index:
        for fp, key in pages[1000:]:
            index.add(fp, key)
    data = snapshot.read_bytes()
    if damage == "stale":  # an older close's tables beside this close's directory
        snapshot.write_bytes(older)
    elif damage == "directory":  # one slot's offset moved
        dirs = np.load(directory)
        dirs[1, 5] += 1
        np.save(directory, dirs)
    elif damage == "no-directory":
        directory.unlink()
    elif damage == "garbage":
        snapshot.write_bytes(os.urandom(len(data)))
    elif damage == "truncated":
        snapshot.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        snapshot.write_bytes(b"")
    elif damage == "bit-rot":  # same shape, one fingerprint's bits flipped
        snapshot.write_bytes(data[:-8] + bytes(b ^ 0xFF for b in data[-8:]))
    elif damage == "wrong-shape":
        np.save(snapshot, np.zeros((3, 2000), dtype=np.uint64))
    else:
        snapshot.unlink()
    with caplog.at_level(logging.WARNING), EmbeddedIndex(tmp_path) as index:
        assert len(index) == 2000
        _assert_all_found(index, pages[::40])
    assert REBUILD in caplog.text
    with EmbeddedIndex(tmp_path) as index:  # and the snapshot was rewritten on close
        assert len(index) == 2000


def test_second_open_in_same_process_is_locked(tmp_path: Path) -> None:
    with EmbeddedIndex(tmp_path), pytest.raises(IndexLocked, match="another process"):
        EmbeddedIndex(tmp_path)
    with EmbeddedIndex(tmp_path) as index:  # released on close
        index.close()
        index.close()  # idempotent


def _child(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_open_in_another_process_is_locked(tmp_path: Path) -> None:
    with EmbeddedIndex(tmp_path):
        child = _child(
            f"""
            import sys
            from nearDupe.errors import IndexLocked
            from nearDupe.store.embedded import EmbeddedIndex
            try:
                EmbeddedIndex({str(tmp_path)!r})
            except IndexLocked:
                sys.exit(3)
            """
        )
        _, err = child.communicate(timeout=60)
        assert child.returncode == 3, err


def test_kill_9_keeps_committed_pages(tmp_path: Path) -> None:
    pages = _pages(1000, 5)
    child = _child(
        f"""
        import sys, time
        from nearDupe.store.embedded import EmbeddedIndex
        index = EmbeddedIndex({str(tmp_path)!r}, commit_interval=3600)
        for fp, key in {pages!r}:
            index.add(fp, key)
        index.commit()
        index.add(12345, "uncommitted")
        print("committed", flush=True)
        time.sleep(120)
        """
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "committed", child.stderr.read() if child.stderr else ""
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    with EmbeddedIndex(tmp_path) as index:
        assert len(index) == 1000
        _assert_all_found(index, pages[::25])
        assert index.query(12345, 0) == []
        fp, key = pages[3]
        assert index.check_and_add(fp ^ 0b101, "dupe") == Match(key, fp, 2)


@pytest.mark.parametrize(
    ("design", "k", "thresholds"),
    [("blocks-8-9", 8, {"off_loop_candidates": 10}), ("4-table", 3, {"off_loop_pages": 150})],
)
def test_store_moves_its_calls_off_the_event_loop_once_lookups_cost(
    tmp_path: Path, design: str, k: int, thresholds: dict[str, int]
) -> None:
    """Inline while the index is small; past the threshold (candidates a lookup scans, or
    pages held), in the store's own thread (in order, so check-and-add stays atomic), with the
    same answers."""
    import asyncio
    import threading

    from nearDupe.store import EmbeddedStore

    index = EmbeddedIndex(tmp_path, IndexHeader(design=design, k=k))
    threads: list[str] = []
    check_and_add = index.check_and_add

    def spy(*args: object) -> Match | None:
        threads.append(threading.current_thread().name)
        return check_and_add(*args)  # type: ignore[arg-type]

    index.check_and_add = spy  # type: ignore[method-assign]
    store = EmbeddedStore(index, **thresholds)  # blocks-8-9 at 10 candidates: ~150 pages
    fps = np.random.default_rng(3).integers(0, 2**64, 400, dtype=np.uint64).tolist()

    async def body() -> None:
        results = await asyncio.gather(
            *(store.check_and_add(fp, f"k{i}") for i, fp in enumerate(fps))
        )
        assert results == [None] * len(fps)
        copies = await asyncio.gather(*(store.check_and_add(fp ^ 1, "copy") for fp in fps[:50]))
        assert [m.key for m in copies] == [f"k{i}" for i in range(50)]
        assert await store.count() == len(fps)
        await store.close()

    asyncio.run(body())
    assert threads[0] == threading.main_thread().name
    assert threads[-1].startswith("neardupe-index")
    moved = threads.index(next(t for t in threads if t.startswith("neardupe-index")))
    assert all(t.startswith("neardupe-index") for t in threads[moved:]), "the switch is one way"
    assert 100 < moved < 250


SAMPLE_REBUILD = "Rebuilding the sentence sample"


def _long_pages(n: int, seed: int = 0) -> list[tuple[int, str, tuple[tuple[int, int], ...]]]:
    """n long pages (6 sentences of 100 letters: sampled under 4) with random fingerprints."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, n, dtype=np.uint64).tolist()
    hashes = rng.integers(0, 2**64, (n, 6), dtype=np.uint64).tolist()
    return [
        (fp, f"https://example.com/long/{i}", tuple(sorted((h, 100) for h in hs)))
        for i, (fp, hs) in enumerate(zip(fps, hashes, strict=True))
    ]


def _assert_found_by_sentences(
    index: EmbeddedIndex, pages: list[tuple[int, str, tuple[tuple[int, int], ...]]]
) -> None:
    for fp, key, page in pages:
        assert Match(key, fp, None, 1.0) in index.query(fp ^ (2**64 - 1), 0, None, page)


def test_sample_snapshot_and_the_pages_after_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The sample reopens from its snapshot plus the pages committed after it (a crash)."""
    pages = _long_pages(300)
    with EmbeddedIndex(tmp_path) as index:
        for fp, key, page in pages[:200]:
            index.add(fp, key, None, page)
    index = EmbeddedIndex(tmp_path)
    for fp, key, page in pages[200:]:
        index.add(fp, key, None, page)
    _crash(index)
    with caplog.at_level(logging.WARNING), EmbeddedIndex(tmp_path) as index:
        assert len(index.sample) == 4 * 300
        _assert_found_by_sentences(index, pages[::15])
    assert SAMPLE_REBUILD not in caplog.text


@pytest.mark.parametrize(
    "damage", ["missing", "garbage", "end-rot", "stale", "wrong-dtype", "directory"]
)
def test_bad_sample_snapshot_rebuilt_from_sqlite(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    pages = _long_pages(300)
    with EmbeddedIndex(tmp_path) as index:
        for fp, key, page in pages[:200]:
            index.add(fp, key, None, page)
    ids, directory = tmp_path / "sample-ids.npy", tmp_path / "sample-dir.npy"
    older = ids.read_bytes()
    with EmbeddedIndex(tmp_path) as index:
        for fp, key, page in pages[200:]:
            index.add(fp, key, None, page)
    data = ids.read_bytes()
    if damage == "garbage":
        ids.write_bytes(os.urandom(len(data)))
    elif damage == "end-rot":  # same length, the last entry's page id flipped
        ids.write_bytes(data[:-4] + bytes(b ^ 0xFF for b in data[-4:]))
    elif damage == "stale":  # an older close's file
        ids.write_bytes(older)
    elif damage == "wrong-dtype":
        np.save(ids, np.zeros(4 * 300))
    elif damage == "directory":  # one slot's offset moved
        starts = np.load(directory)
        starts[7] += 1
        np.save(directory, starts)
    else:
        ids.unlink()
    with caplog.at_level(logging.WARNING), EmbeddedIndex(tmp_path) as index:
        assert len(index.sample) == 4 * 300
        _assert_found_by_sentences(index, pages[::15])
    assert SAMPLE_REBUILD in caplog.text


def test_a_sample_snapshot_of_an_earlier_version_still_reads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A sample snapshot saved as one ``sample.npz`` checked by the xxh3 of all its arrays
    (earlier versions) opens without a rebuild."""
    pages = _long_pages(200)
    with EmbeddedIndex(tmp_path) as index:
        for fp, key, page in pages:
            index.add(fp, key, None, page)
    arrays = {name: np.load(tmp_path / f"sample-{name}.npy") for name in ("dir", "low", "ids")}
    for name in arrays:
        (tmp_path / f"sample-{name}.npy").unlink()
    with open(tmp_path / "sample.npz", "wb") as f:
        np.savez(f, starts=arrays["dir"], low=arrays["low"], ids=arrays["ids"])
    digest = xxh3_64()
    for array in arrays.values():
        digest.update(array.data)
    with sqlite3.connect(tmp_path / "pages.sqlite3") as db:
        db.execute("DELETE FROM meta WHERE name = 'sample_spot_xxh3'")
        db.execute("INSERT INTO meta VALUES ('sample_xxh3', ?)", (digest.hexdigest(),))
    with caplog.at_level(logging.WARNING), EmbeddedIndex(tmp_path) as index:
        assert len(index.sample) == 4 * 200
        _assert_found_by_sentences(index, pages[::10])
    assert SAMPLE_REBUILD not in caplog.text
    assert not (tmp_path / "sample.npz").exists()  # replaced at close


@pytest.mark.parametrize("committed", [True, False])
def test_a_shared_prefix_is_not_a_shared_sentence(tmp_path: Path, committed: bool) -> None:
    """Sentences whose hashes share their top 32 bits (the part kept in RAM) but differ below
    are not shared: a candidate counts only once its full hash is verified."""
    stored = ((0xAAAA_0001_0000_0001, 60), (0xBBBB_0002_0000_0002, 60))
    twin = tuple((h ^ 0xFFFF, n) for h, n in stored)  # same prefixes, other sentences
    with EmbeddedIndex(tmp_path) as index:
        assert index.check_and_add(0, "https://a", None, stored) is None
        if committed:
            index.commit()
        assert index.query(2**64 - 1, 0, None, twin) == []
        assert index.check_and_add(2**64 - 1, "https://b", None, twin) is None
        assert index.query(2**32 - 1, 0, None, stored) == [Match("https://a", 0, None, 1.0)]


CHECKED = "was not closed cleanly"


def test_only_an_index_left_open_gets_the_whole_file_check(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pages = _pages(500)
    with EmbeddedIndex(tmp_path) as index:
        for fp, key in pages:
            index.add(fp, key)
    with caplog.at_level(logging.INFO, logger="nearDupe"), EmbeddedIndex(tmp_path) as index:
        _assert_all_found(index, pages[::50])
        assert CHECKED not in caplog.text
        index.add(7, "https://after")
        _crash(index)
    with caplog.at_level(logging.INFO, logger="nearDupe"), EmbeddedIndex(tmp_path) as index:
        assert CHECKED in caplog.text
        _assert_all_found(index, [*pages[::50], (7, "https://after")])
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="nearDupe"), EmbeddedIndex(tmp_path):
        assert CHECKED not in caplog.text  # closed cleanly again


def test_a_damaged_file_left_open_is_refused(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path)
    for fp, key in _pages(3000):
        index.add(fp, key)
    _crash(index)
    index._writer.close()  # type: ignore[union-attr]
    with sqlite3.connect(tmp_path / "pages.sqlite3") as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        sql = "SELECT rootpage FROM sqlite_master WHERE name = 'pages_fp'"
        (root,) = db.execute(sql).fetchone()
        (size,) = db.execute("PRAGMA page_size").fetchone()
    with open(tmp_path / "pages.sqlite3", "r+b") as f:  # the fingerprint index's root page
        f.seek((root - 1) * size)
        f.write(bytes([0x0D]) + os.urandom(size - 1))
    with pytest.raises(IndexFileError, match=r"pages\.sqlite3 is unusable") as info:
        EmbeddedIndex(tmp_path)
    assert str(tmp_path) in str(info.value)


def _mixed_pages(n: int, seed: int) -> list[tuple[int, str, int | None, Sentences]]:
    """Pages of every kind a load holds: long and short, without sentences or a signature,
    and sentences shared by more pages than SENTENCE_HOLDERS (so some become crowded)."""
    rng = np.random.default_rng(seed)
    stock = rng.integers(0, 2**64, 3, dtype=np.uint64).tolist()  # low: in every looked-up set
    stock = [h >> 8 for h in stock]
    pages = []
    for i in range(n):
        fp, sig = rng.integers(0, 2**64, 2, dtype=np.uint64).tolist()
        units = [
            (h, int(rng.integers(8, 200)))
            for h in rng.integers(0, 2**64, i % 40, dtype=np.uint64).tolist()
        ]
        if i % 3 == 0:
            units += [(stock[i % len(stock)], 50)]
        pages.append(
            (fp, f"https://example.com/{seed}/{i}", None if i % 7 == 0 else sig, tuple(units))
        )
    return pages


def _bulk(pages: list[tuple[int, str, int | None, Sentences]], ordered: bool) -> BulkPages:
    """The pages as numpy arrays; ``ordered``: each page's units sorted, as most callers
    give them."""
    units = [u for *_, sentences in pages for u in (sorted(sentences) if ordered else sentences)]
    return BulkPages(
        fps=np.array([fp for fp, *_ in pages], dtype=np.uint64),
        keys=[key for _, key, *_ in pages],
        units=np.array([h for h, _ in units], dtype=np.uint64),
        letters=np.array([n for _, n in units], dtype=np.int64),
        counts=np.array([len(s) for *_, s in pages], dtype=np.int64),
        signatures=np.array([sig or 0 for _, _, sig, _ in pages], dtype=np.uint64),
    )


def _stored_rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path / "pages.sqlite3") as db:
        return db.execute(
            "SELECT id, fp, key, sig, letters, sketched, tails, sample FROM pages ORDER BY id"
        ).fetchall()


def test_a_bulk_load_stores_and_answers_as_adds_one_by_one(tmp_path: Path) -> None:
    before, loaded = _mixed_pages(300, 1), _mixed_pages(900, 2)
    loaded = [(fp, key, sig or 0, s) for fp, key, sig, s in loaded]  # 0: a signature too
    one, bulk = tmp_path / "one", tmp_path / "bulk"
    with EmbeddedIndex(one) as index:
        for fp, key, sig, sentences in before + loaded:
            index.add(fp, key, sig, sentences)
    with EmbeddedIndex(bulk) as index:
        for fp, key, sig, sentences in before:
            index.add(fp, key, sig, sentences)
        assert index.load([_bulk(loaded[:400], True), _bulk(loaded[400:], False)]) == 900
        assert len(index) == 1200
    assert _stored_rows(one) == _stored_rows(bulk)
    crowded = [row for row in _stored_rows(one) if row[7] is not None and len(row[7]) // 8 < 4]
    assert crowded  # the load crowded some pages' stock sentence out of their sample
    probes = _mixed_pages(300, 3) + [
        (fp ^ 5, f"https://copy.example.org/{i}", sig, s)
        for i, (fp, _, sig, s) in enumerate(before + loaded)
    ]
    answers = []
    for path in (one, bulk):
        with EmbeddedIndex(path) as index:
            answers.append([index.check_and_add(fp, key, sig, s) for fp, key, sig, s in probes])
    assert answers[0] == answers[1]
    assert sum(a is not None for a in answers[0]) > len(before + loaded) // 2


def _mapped(array: object) -> bool:
    """Whether ``array`` is a view of a mapped file."""
    while isinstance(array, np.ndarray):
        array = array.base
    return isinstance(array, memoryview) and isinstance(array.obj, mmap.mmap)


def test_snapshots_are_mapped_and_kept_while_no_page_is_added(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An open maps the snapshots it finds (reading no row), and a close after no new page
    leaves them as they are; a page added makes the close write them again."""
    pages = _long_pages(400)
    with EmbeddedIndex(tmp_path) as index:
        for fp, key, page in pages[:300]:
            index.add(fp, key, None, page)
    files = [tmp_path / name for name in ("tables.npy", "sample-ids.npy", "sample-low.npy")]

    def stamps() -> list[tuple[int, int]]:
        return [(f.stat().st_ino, f.stat().st_mtime_ns) for f in files]

    saved = stamps()
    with caplog.at_level(logging.WARNING), EmbeddedIndex(tmp_path) as index:
        assert all(_mapped(row) for row in index.index._runs[0].keys)
        assert _mapped(index.sample._runs[0].ids)
        _assert_found_by_sentences(index, pages[:300:20])
        _assert_all_found(index, [(fp, key) for fp, key, _ in pages[:300:20]])
    assert stamps() == saved
    with EmbeddedIndex(tmp_path) as index:
        for fp, key, page in pages[300:]:
            index.add(fp, key, None, page)
    assert all(new != old for new, old in zip(stamps(), saved, strict=True))
    with caplog.at_level(logging.WARNING), EmbeddedIndex(tmp_path) as index:
        assert len(index) == 400
        _assert_found_by_sentences(index, pages[::20])
    assert "Rebuilding" not in caplog.text


def _feed(n: int, seed: int) -> list[tuple[Item, Analysis]]:
    """(item, analysis) of a feed of every kind an import meets: new pages long and short,
    copies by fingerprint and by sentences of earlier items (near and far), a URL twice,
    items without a URL or fingerprint."""
    rng = np.random.default_rng(seed)
    feed: list[tuple[Item, Analysis]] = []
    for i in range(n):
        url: str | None = f"https://example.com/{seed}/{i}"
        fp, sig = rng.integers(0, 2**64, 2, dtype=np.uint64).tolist()
        hashes = rng.integers(0, 2**64, int(rng.integers(0, 60)), dtype=np.uint64).tolist()
        units = tuple((h, int(rng.integers(8, 40))) for h in hashes)
        kind = i % 10
        if kind in (1, 2) and feed:  # a copy of an earlier item, near or far back
            back = feed[-int(rng.integers(1, min(len(feed), 3 if kind == 1 else 900) + 1))][1]
            if back.fingerprint is not None and back.signature is not None:
                fp = back.fingerprint ^ 6 if kind == 1 else int(fp)
                sig, units = back.signature, back.sentences if kind == 2 else units
        elif kind == 3 and feed:
            url = feed[-int(rng.integers(1, len(feed) + 1))][0][1]  # a URL seen before
        elif kind == 4 and i % 20 == 4:
            url = None
        analysis = Analysis(fp, signature=sig, sentences=Units.of(units))
        if kind == 5 and i % 30 == 5:
            analysis = Analysis(None, "tiny-text")
        feed.append(((i + 1, url, None), analysis))
    return feed


async def _import(
    path: Path, before: list[tuple[Item, Analysis]], feed: list[tuple[Item, Analysis]], bulk: bool
) -> list[Decision]:
    """The decisions on ``feed`` by an import (``bulk``), else by check_and_add item by item,
    into an index of ``before``."""
    store = EmbeddedStore(EmbeddedIndex(path))
    name, progress = Path("feed.jsonl"), importer.ProgressBar(None, sys.stderr, enabled=False)
    await importer.import_feed(store, iter(before), name, progress)
    report: list[Decision] = []
    if bulk:
        writer = type("Writer", (), {"write": staticmethod(report.append)})
        await importer.import_feed(store, iter(feed), name, progress, writer)  # type: ignore[arg-type]
    else:
        for (number, url, _), analysis in feed:
            report.append(await importer._decide(store, url or "", number, name, analysis))
    await store.close()
    return report


def test_an_import_decides_in_batches_as_item_by_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import's bulk path (items new to the index and to each other loaded at once, the
    others checked in order) keeps, drops and stores what check_and_add item by item does."""
    before, feed = _feed(300, 1), _feed(2000, 2) + _feed(200, 1)  # 1: the stored pages again
    monkeypatch.setattr(importer, "BATCH", 250)
    one, bulk = tmp_path / "one", tmp_path / "bulk"
    decided = [asyncio.run(_import(path, before, feed, path == bulk)) for path in (one, bulk)]
    assert decided[0] == decided[1]
    kinds = {d.decision for d in decided[0]}
    assert kinds == {"kept", "dropped", "skipped"}
    stored = []  # a batch's loaded pages get their ids before those it checks: rows by key
    for path in (one, bulk):
        rows = sorted(row[1:] for row in _stored_rows(path))
        with sqlite3.connect(path / "pages.sqlite3") as db:
            urls = db.execute(
                "SELECT u.hash, p.key FROM urls u JOIN pages p ON p.id = u.page ORDER BY u.hash"
            ).fetchall()
        stored.append((rows, urls))
    assert stored[0] == stored[1] and len(stored[0][1]) > 1500
