"""Pages kept while the index was unreachable, waiting to be recorded in it; never lost.

Up to ``limit`` wait in memory; more (a long outage) and whatever is left at close wait in
a pending file named for the index they belong to, so that only a crawl on that same index
records them. The file is read back as the memory drains.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.project import data_path
from twisted.internet.task import deferLater

from nearDupe.errors import StoreUnavailable
from nearDupe.shorttext import Sentences
from nearDupe.store import public_location

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from nearDupe.store import Store

logger = logging.getLogger(__name__)

#: A page as the index records it: fingerprint, URL, signature, sentences.
Page = tuple[int, str, int | None, Sentences]

#: Pages waiting in memory (about 200 B each); more wait in the pending file.
MEMORY_LIMIT = 100_000


def pending_path(index: str, name: str) -> Path:
    """The pending file of the index at ``index`` (a directory or a Redis URL) named ``name``:
    in the project's data directory, named for both (credentials left out of the name)."""
    if "://" not in index:
        index = str(Path(index).resolve())
    digest = hashlib.sha256(f"{public_location(index)}\0{name}".encode()).hexdigest()[:16]
    readable = re.sub(r"[^\w.-]+", "_", name)[:40]
    return Path(data_path(f"neardupe-pending-{readable}-{digest}.jsonl"))


class Backlog:
    """A first-in, first-out queue of pages, in memory up to ``limit``, then in ``path``."""

    def __init__(self, path: Path, limit: int = MEMORY_LIMIT) -> None:
        self.path = path
        self.limit = limit
        self._memory: deque[Page] = deque()
        self._in_file = 0
        #: Whether a replay is under way (items decided at once each start one: one drains).
        self._replaying = False

    def __len__(self) -> int:
        return len(self._memory) + self._in_file

    def append(self, page: Page) -> None:
        """Queue a page (to the file once memory is full, or while the file holds older ones)."""
        if self._in_file or len(self._memory) >= self.limit:
            try:
                self._write([page], mode="a")
                self._in_file += 1
                return
            except OSError as exc:  # a full disk: better over the bound than lost
                logger.error("nearDupe: cannot spill the backlog to %s (%s)", self.path, exc)
        self._memory.append(page)

    def first(self) -> Page | None:
        """The oldest page, or None when none waits."""
        if not self._memory and self._in_file:
            self._refill()
        return self._memory[0] if self._memory else None

    def pop(self) -> None:
        """Forget the oldest page (recorded, or set aside)."""
        self._memory.popleft()

    def load(self) -> int:
        """Take in the pages an earlier crawl on this index left; how many wait now."""
        if self.path.exists():
            self._in_file = sum(1 for line in self._lines())
        return len(self)

    def save(self) -> bool:
        """Move what waits in memory to the file, ahead of what is there (at close); False
        if the file cannot be written (the pages are then lost to later crawls)."""
        if not self._memory:
            return True
        pages = [*self._memory, *self._read_file()]
        try:
            self._write(pages, mode="w")
        except OSError as exc:
            logger.error("nearDupe: cannot write %s (%s)", self.path, exc)
            return False
        self._in_file, self._memory = len(pages), deque()
        return True

    async def replay(self, store: Store, stats: StatsCollector, patience: float = 0.0) -> None:
        """Record the waiting pages in the index, oldest first; retry for ``patience`` s. A
        page the index rejects for another reason than being away is set aside, never
        retried ahead of the others. A replay asked for while one is under way returns at once:
        that one records them all, each once."""
        if self._replaying:
            return
        self._replaying = True
        try:
            await self._replay(store, stats, patience)
        finally:
            self._replaying = False

    async def _replay(self, store: Store, stats: StatsCollector, patience: float) -> None:
        deadline = time.monotonic() + patience
        delay = 0.25
        while (record := self.first()) is not None:
            try:
                match = await store.check_and_add(*record)
            except StoreUnavailable:
                if time.monotonic() + delay > deadline:
                    return
                await _sleep(delay)
                delay = min(2 * delay, 2.0)
                continue
            except Exception as exc:
                self.pop()
                stats.inc_value("neardupe/backlog/set_aside")
                logger.error(
                    "nearDupe: the index rejects the kept page %r (%s); set aside", record[1], exc
                )
                continue
            self.pop()
            if match is not None:
                stats.inc_value("neardupe/kept_while_index_down_duplicates")
                logger.warning(
                    "nearDupe: %s, kept while the index was down, is a near-duplicate of %s",
                    record[1],
                    match.key,
                )

    def save_for_next_crawl(self, public_index: str) -> None:
        """Keep what could not be recorded for the next crawl on this index (at close)."""
        if not self:
            return
        if not self.save():
            logger.error(
                "nearDupe: %d fingerprints of kept pages could not be saved; their copies may "
                "be kept by later crawls",
                len(self),
            )
            return
        logger.warning(
            "nearDupe: index %s still unreachable; %d fingerprints of kept pages saved to %s "
            "and recorded when a crawl next reaches this index",
            public_index,
            len(self),
            self.path,
        )

    def load_earlier(self, index_name: str) -> None:
        """Take in the pages an earlier crawl on this index left (at open), and report a
        pending file of an older version that cannot tell its index."""
        name = re.sub(r"[^\w.-]+", "_", index_name)
        unkeyed = Path(data_path(f"neardupe-pending-{name}.jsonl"))
        if unkeyed.exists():  # written before pending files were named for their index
            logger.warning(
                "nearDupe: %s was left by an earlier version for an index named %r, on "
                "whichever index that crawl used; rename it to %s to record its pages in this "
                "index",
                unkeyed,
                index_name,
                self.path,
            )
        if self.load():
            logger.info(
                "nearDupe: %d fingerprints from an earlier crawl on this index wait to be "
                "recorded",
                len(self),
            )

    def _refill(self) -> None:
        pages = self._read_file()
        self._memory.extend(pages[: self.limit])
        rest = pages[self.limit :]
        if rest:
            self._write(rest, mode="w")
        else:
            self.path.unlink(missing_ok=True)
        self._in_file = len(rest)

    def _lines(self) -> list[str]:
        with self.path.open(encoding="utf-8") as f:
            return [line for line in f if line.strip()]

    def _read_file(self) -> list[Page]:
        if not self.path.exists():
            return []
        pages = []
        for number, line in enumerate(self._lines(), 1):
            page = _parse(line)
            if page is None:
                logger.warning("nearDupe: line %d of %s is unreadable; skipped", number, self.path)
            else:
                pages.append(page)
        return pages

    def _write(self, pages: list[Page], mode: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open(mode, encoding="utf-8") as f:
            # json.dumps escapes every non-ASCII character, lone surrogates included.
            f.writelines(json.dumps(list(page)) + "\n" for page in pages)


def _parse(line: str) -> Page | None:
    try:
        # Lines written by earlier versions lack the signature or the sentences.
        fp, url, *rest = json.loads(line)
        signature = rest[0] if rest else None
        sentences = rest[1] if len(rest) > 1 else []
        return (
            int(fp),
            str(url),
            None if signature is None else int(signature),
            tuple((int(h), int(n)) for h, n in sentences),
        )
    except (ValueError, TypeError):
        return None


async def _sleep(seconds: float) -> None:
    from twisted.internet import reactor  # the one Scrapy installed, imported late on purpose

    await maybe_deferred_to_future(deferLater(reactor, seconds, lambda: None))
