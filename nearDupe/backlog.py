"""Pages kept while the index was unreachable, waiting to be recorded in it; never lost.

Up to ``limit`` wait in memory; more (a long outage) and whatever is left at close wait in
a pending file named for the index they belong to, so that only a crawl on that same index
records them. The file is read back as the memory drains.

Every crawler on an index shares its pending file (two crawls of one site may end together,
both with the index away). So the file is one queue, changed only under an exclusive lock
(``flock`` of its directory): a crawler appends to it, and takes pages from its head by
rewriting the rest to a temporary file that replaces it (a crash leaves the file as it was,
or as it is after). A page is thus taken by one crawler only, once, and none is lost.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import time
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.project import data_path
from twisted.internet.task import deferLater

from nearDupe.errors import StoreUnavailable
from nearDupe.shorttext import Sentences
from nearDupe.store.location import public_location

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory lock
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from nearDupe.store import Store

logger = logging.getLogger(__name__)


class Page(NamedTuple):
    """A page as the index records it (the arguments of ``Store.check_and_add``)."""

    fingerprint: int
    url: str
    signature: int | None
    sentences: Sentences


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
                with self._locked(), self.path.open("a", encoding="utf-8") as f:
                    f.write(_line(page))
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
        """Take in the pages an earlier crawl on this index left; how many wait now (those in
        the file are taken as the memory drains, unless another crawler takes them first)."""
        if self.path.parent.is_dir():  # else none waits: nothing to create yet
            try:
                with self._locked():
                    self._in_file = len(self._lines())
            except OSError as exc:
                logger.error("nearDupe: cannot read %s (%s)", self.path, exc)
        return len(self)

    def save(self) -> bool:
        """Move what waits in memory to the file, ahead of what is there (at close); False
        if the file cannot be written (the pages are then lost to later crawls)."""
        if not self._memory:
            return True
        mine = [_line(page) for page in self._memory]
        try:
            with self._locked():
                waiting = self._lines()
                self._replace([*mine, *waiting])
        except OSError as exc:
            logger.error("nearDupe: cannot write %s (%s)", self.path, exc)
            return False
        self._in_file, self._memory = len(mine) + len(waiting), deque()
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
                    "nearDupe: the index rejects the kept page %r (%s); set aside", record.url, exc
                )
                continue
            self.pop()
            if match is not None:
                stats.inc_value("neardupe/kept_while_index_down_duplicates")
                logger.warning(
                    "nearDupe: %s, kept while the index was down, is a near-duplicate of %s",
                    record.url,
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
                len(self._memory),
            )
            return
        logger.warning(
            "nearDupe: index %s still unreachable; fingerprints of kept pages saved to %s (%d "
            "wait there, with those of other crawlers on this index) and recorded when a "
            "crawl next reaches this index",
            public_index,
            self.path,
            len(self),
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
        """Take up to ``limit`` pages from the head of the file into memory."""
        try:
            with self._locked():
                lines = self._lines()
                taken, rest = lines[: self.limit], lines[self.limit :]
                if taken:
                    self._replace(rest)
        except OSError as exc:  # they stay in the file, taken later or by the next crawl
            logger.error("nearDupe: cannot take the pages waiting in %s (%s)", self.path, exc)
            return
        self._in_file = len(rest)
        for number, line in enumerate(taken, 1):
            page = _parse(line)
            if page is None:
                logger.warning("nearDupe: line %d of %s is unreadable; skipped", number, self.path)
            else:
                self._memory.append(page)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the exclusive lock of the file's directory, shared by every crawler's backlog
        there (a lock of the file itself would not survive its replacement)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fcntl is None:  # pragma: no cover - Windows
            yield
            return
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _lines(self) -> list[str]:
        """The file's non-blank lines (none if there is no file); under the lock."""
        try:
            with self.path.open(encoding="utf-8") as f:
                return [line if line.endswith("\n") else line + "\n" for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def _replace(self, lines: Iterable[str]) -> None:
        """Make the file hold ``lines``, whole or not at all (no file: no lines); under the
        lock."""
        lines = list(lines)
        if not lines:
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            with tmp.open("w", encoding="utf-8") as f:
                f.writelines(lines)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise


def _line(page: Page) -> str:
    """A page as a line of the file: json.dumps escapes every non-ASCII character, lone
    surrogates included."""
    return json.dumps(list(page)) + "\n"


def _parse(line: str) -> Page | None:
    try:
        # Lines written by earlier versions lack the signature or the sentences.
        fp, url, *rest = json.loads(line)
        signature = rest[0] if rest else None
        sentences = rest[1] if len(rest) > 1 else []
        return Page(
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
