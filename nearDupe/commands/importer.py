"""``scrapy neardupe import``: build or extend an index from a crawl's JSON-lines output."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from scrapy.exceptions import UsageError

from nearDupe._settings import Config
from nearDupe.analysis import Analysis, analyze_text, warm_up
from nearDupe.features import FeatureSettings
from nearDupe.report import Decision, ReportWriter
from nearDupe.store import EmbeddedIndex, EmbeddedStore, Store, open_store
from nearDupe.store.base import Match, storable_key, url_hash
from nearDupe.store.embedded_bulk import BulkPages
from nearDupe.units import Units

#: Feeds shorter than this are fingerprinted in-process (starting workers costs seconds).
POOL_FROM = 200
#: Seconds between commits of an embedded index during an import.
_BULK_COMMIT_INTERVAL = 5.0

#: Items an embedded index decides at a time (see :func:`_decide_batch`).
BATCH = 8192

Item = tuple[int, str | None, str | None]


def read_feed(path: Path, url_field: str, text_field: str) -> Iterator[Item]:
    """(line number, url, text) of each JSON object in a JSON-lines file (or a JSON array)."""
    with path.open(encoding="utf-8") as f:
        first = f.read(1)
        f.seek(0)
        objects = enumerate(json.load(f), 1) if first == "[" else _lines(f)
        for number, obj in objects:
            if not isinstance(obj, dict):
                yield number, None, None
                continue
            url, text = obj.get(url_field), obj.get(text_field)
            yield (
                number,
                url if isinstance(url, str) else None,
                (text if isinstance(text, str) else None),
            )


def _lines(f: TextIO) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(f, 1):
        if line.strip():
            try:
                yield number, json.loads(line)
            except ValueError as exc:
                raise UsageError(f"line {number} is not JSON: {exc}") from None


def count_items(path: Path) -> int | None:
    """Number of non-blank lines of a JSON-lines feed (None for a JSON array)."""
    with path.open("rb") as f:
        if f.read(1) == b"[":
            return None
        f.seek(0)
        return sum(1 for line in f if line.strip())


def _analyze(item: Item, min_length: int, features: FeatureSettings) -> tuple[Item, Analysis]:
    _, _, text = item
    if text is None:
        return item, Analysis(None, "no-text-field")
    return item, analyze_text(text, min_length, features)


@contextmanager
def analyses(items: Iterator[Item], config: Config, workers: int) -> Iterator[Any]:
    """(item, Analysis) in feed order, from a spawn pool of ``workers`` processes (0: inline)."""
    work = partial(_analyze, min_length=config.min_text_length, features=config.features)
    if workers <= 0:
        yield map(work, items)
        return
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers, initializer=warm_up, initargs=(config.features,)) as pool:
        yield pool.imap(work, items, chunksize=8)


class ProgressBar:
    """A carriage-return progress bar on a terminal stream, redrawn at most 10 times a second."""

    def __init__(self, total: int | None, stream: TextIO, enabled: bool) -> None:
        self.total, self.stream, self.enabled = total, stream, enabled
        self.start = self._drawn = time.monotonic()

    def update(self, done: int, counts: Counter[str], force: bool = False) -> None:
        """Redraw with ``done`` items processed."""
        now = time.monotonic()
        if not self.enabled or (not force and now - self._drawn < 0.1):
            return
        self._drawn = now
        rate = done / max(now - self.start, 1e-9)
        tally = f"kept {counts['kept']} dropped {counts['dropped']} skipped {counts['skipped']}"
        if self.total:
            filled = round(30 * done / self.total)
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {done}/{self.total}"
        else:
            bar = f"{done} items"
        self.stream.write(f"\r{bar} {rate:,.0f}/s  {tally}\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


async def import_feed(
    store: Store,
    results: Iterator[tuple[Item, Analysis]],
    feed: Path,
    progress: ProgressBar,
    report: ReportWriter | None = None,
) -> Counter[str]:
    """check_and_add every fingerprinted item (an embedded index's: BATCH at a time, those new
    to the index and to each other loaded at once, see :func:`_decide_batch`); counts of kept,
    dropped, skipped and reasons, the decisions in feed order."""
    counts: Counter[str] = Counter()
    done = 0
    size = BATCH if isinstance(store, EmbeddedStore) else 1
    for batch in _batches(results, size):
        if isinstance(store, EmbeddedStore):
            decisions = await _decide_batch(store, batch, feed)
        else:
            decisions = [await _decide(store, url or "", n, feed, a) for (n, url, _), a in batch]
        for decision in decisions:
            counts[decision.decision] += 1
            if decision.reason:
                counts[f"skipped/{decision.reason}"] += 1
            if report is not None:
                report.write(decision)
        done += len(decisions)
        progress.update(done, counts)
    progress.update(done, counts, force=True)
    return counts


def _batches(
    results: Iterator[tuple[Item, Analysis]], size: int
) -> Iterator[tuple[tuple[Item, Analysis], ...]]:
    """``results`` ``size`` at a time (the last batch shorter)."""
    while batch := tuple(islice(results, size)):
        yield batch


async def _decide_batch(
    store: EmbeddedStore, batch: tuple[tuple[Item, Analysis], ...], feed: Path
) -> list[Decision]:
    """The decisions on ``batch``, as check_and_add item by item in feed order would make
    them (off the event loop, in one go)."""
    return await asyncio.to_thread(_decide_in, store.index, batch, feed)


def _decide_in(
    index: EmbeddedIndex, batch: tuple[tuple[Item, Analysis], ...], feed: Path
) -> list[Decision]:
    """See :func:`_decide_batch`: the fingerprinted items that can be copies of no stored page
    and of no other item (EmbeddedIndex.distinct) are kept by one bulk load; the others are
    then checked in order (none of them can be a copy of a loaded one)."""
    decisions = [
        _skipped(url or "", number, feed, analysis) for (number, url, _), analysis in batch
    ]
    fingerprinted = [
        i
        for i, decision in enumerate(decisions)
        if decision is None and batch[i][1].signature is not None
    ]
    pages = _bulk_pages([(batch[i][0][1] or "", batch[i][1]) for i in fingerprinted])
    alone = index.distinct(pages)
    if alone.any():
        index.load([pages.subset(alone)])
    for i, kept in zip(fingerprinted, alone.tolist(), strict=True):
        if kept:
            decisions[i] = Decision(batch[i][0][1] or "", "kept", batch[i][1].fingerprint)
    for i, ((_, url, _), analysis) in enumerate(batch):
        if decisions[i] is None:
            assert url and analysis.fingerprint is not None  # not skipped
            match = index.check_and_add(
                analysis.fingerprint, url, analysis.signature, analysis.sentences
            )
            decisions[i] = decision = _decided(url, analysis.fingerprint, match)
            if decision.decision == "dropped":
                index.log_drop(decision.to_drop())
    return [d for d in decisions if d is not None]


def _bulk_pages(items: list[tuple[str, Analysis]]) -> BulkPages:
    """The fingerprinted items (url, analysis) as a bulk load takes them, claiming their
    URLs."""
    units = [Units.of(analysis.sentences) for _, analysis in items]
    return BulkPages(
        fps=np.array([a.fingerprint for _, a in items], dtype=np.uint64),
        keys=[storable_key(url) for url, _ in items],
        units=np.concatenate([u.hashes for u in units]) if units else np.zeros(0, np.uint64),
        letters=np.concatenate([u.letters for u in units]) if units else np.zeros(0, np.int64),
        counts=np.array([len(u) for u in units], dtype=np.int64),
        signatures=np.array([a.signature for _, a in items], dtype=np.uint64),
        urls=np.array([url_hash(url) for url, _ in items], dtype=np.uint64),
    )


def _skipped(url: str, number: int, feed: Path, analysis: Analysis) -> Decision | None:
    """The decision on an item that is not checked (no URL, not fingerprinted), else None."""
    if not url:
        return Decision(f"{feed}#{number}", "skipped", reason="no-url-field")
    if analysis.skip_reason or analysis.fingerprint is None:
        return Decision(url, "skipped", reason=analysis.skip_reason or "no-fingerprint")
    return None


def _decided(url: str, fingerprint: int, match: Match | None) -> Decision:
    """The decision on a checked item from the page its check matched (None: kept)."""
    if match is None:
        return Decision(url, "kept", fingerprint)
    if match.key == url:
        return Decision(url, "skipped", fingerprint, reason="already-indexed")
    return Decision.drop(url, fingerprint, match)


async def _decide(store: Store, url: str, number: int, feed: Path, analysis: Analysis) -> Decision:
    skipped = _skipped(url, number, feed, analysis)
    if skipped is not None:
        return skipped
    assert analysis.fingerprint is not None  # not skipped
    match = await store.check_and_add(
        analysis.fingerprint, url, analysis.signature, analysis.sentences
    )
    decision = _decided(url, analysis.fingerprint, match)
    if decision.decision == "dropped":
        await store.log_drop(decision.to_drop())
    return decision


def open_writable(config: Config) -> Store:
    """The configured store, opened for writing (the crawl's own options; an embedded index
    commits at most every 5 s, as a bulk load is redone from its feed after a crash)."""
    options = config.store_options()
    if not config.is_redis:
        options["commit_interval"] = max(config.commit_interval, _BULK_COMMIT_INTERVAL)
    return open_store(config.index, config.header, **options)


def progress_wanted(option: bool | None) -> bool:
    """--progress / --no-progress, else on when stderr is a terminal."""
    return sys.stderr.isatty() if option is None else option
