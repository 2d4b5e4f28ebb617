"""What an embedded index holds in memory until its next commit: pages, their samples, the
URLs they claim, drops."""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Container

from nearDupe.shorttext import Sentences
from nearDupe.store import droplog
from nearDupe.store.base import SENTENCE_HOLDERS, Holder, Sketch, recorded, sketch_of
from nearDupe.store.embedded_sample import Sampled, pack
from nearDupe.store.embedded_sqlite import to_signed

#: A page as the next commit inserts it: id, signed fp, key, time, signed signature or None,
#: its sketch's letters, sketched letters and tails (None without sentences), its sample.
PageRow = tuple[
    int, int, str, float, int | None, int | None, int | None, bytes | None, bytes | None
]
#: A URL as the next commit writes it into the URL table: its signed hash (base.url_hash),
#: the id of its newest page, when it was first stored and last changed (None: never), the
#: signed exact key of that page's response (None: unknown).
UrlRow = tuple[int, int, float, float | None, int | None]
#: The statement inserting a PageRow.
INSERT_PAGES = (
    "INSERT INTO pages (id, fp, key, added, sig, letters, sketched, tails, sample) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
#: The statement writing a UrlRow.
INSERT_URLS = "INSERT OR REPLACE INTO urls VALUES (?, ?, ?, ?, ?)"


def page_row(
    page_id: int,
    fp: int,
    key: str,
    signature: int | None,
    sentences: Sentences,
    crowded: Container[int],
    added: float,
) -> tuple[PageRow, Sketch | None, tuple[int, ...]]:
    """A page's row as a commit inserts it, its sketch, and the hashes of the sentences it
    is recorded under (base.recorded, none of them ``crowded``)."""
    sig = None if signature is None else to_signed(signature)
    row = (page_id, to_signed(fp), key, added, sig)
    if not sentences:  # a page without sentences stores no sketch
        return (*row, None, None, None, None), None, ()
    hashes = recorded(sentences, crowded).hashes
    sketch = sketch_of(sentences)
    return (*row, *sketch, pack(hashes)), sketch, tuple(hashes.tolist())


class UnsavedPages:
    """The pages (with their samples) and drops added since the last commit, as SQLite rows."""

    def __init__(self) -> None:
        #: The pages not yet committed.
        self.pages: list[PageRow] = []
        #: signed fp -> (key, signed signature) of its uncommitted pages (a full disk can make
        #: the list above long; matches look here).
        self.by_fp: dict[int, list[tuple[str, int | None]]] = {}
        #: page id -> the sample of each uncommitted page recorded under some sentence.
        self.samples: dict[int, Sampled] = {}
        #: page id -> its row, for the URL table's lookups.
        self.by_id: dict[int, PageRow] = {}
        #: signed URL hash -> its row in the URL table (the newest claim).
        self.urls: dict[int, UrlRow] = {}
        self.drops: list[droplog.Drop] = []

    def add(
        self,
        page_id: int,
        fp: int,
        key: str,
        signature: int | None,
        sentences: Sentences,
        holders: list[Holder],
    ) -> tuple[int, ...]:
        """Hold a page, and return the hashes of the sentences it is recorded under (see
        base.recorded; the ``holders`` are the pages stored with its sentences)."""
        held = Counter(holder.sentence for holder in holders)
        crowded = {s for s, n in held.items() if n >= SENTENCE_HOLDERS}
        row, sketch, hashes = page_row(
            page_id, fp, key, signature, sentences, crowded, time.time()
        )
        self.pages.append(row)
        if sketch is not None and hashes:
            self.samples[page_id] = Sampled(key, fp, sketch, frozenset(hashes))
        self.by_id[page_id] = row
        self.by_fp.setdefault(row[1], []).append((key, row[4]))
        return hashes

    def claim(self, url: int, page_id: int, first: float | None, body: int | None) -> None:
        """Hold page ``page_id`` (just added, read from a response of exact key ``body``) as
        URL ``url``'s newest version: a URL first stored now, or one first stored at
        ``first`` that changed now."""
        added, signed = self.by_id[page_id][3], to_signed(url)
        changed = None if first is None else added
        key = None if body is None else to_signed(body)
        self.urls[signed] = (signed, page_id, added if first is None else first, changed, key)

    def write(self, db: sqlite3.Connection) -> None:
        """Insert everything held into ``db``, uncommitted (it is still held: see clear)."""
        db.executemany(INSERT_PAGES, self.pages)
        db.executemany(INSERT_URLS, self.urls.values())
        droplog.insert(db, self.drops)

    def __bool__(self) -> bool:
        return bool(self.pages or self.drops)

    def extend(self, later: UnsavedPages) -> None:
        """Hold ``later``'s pages and drops after these (a batch whose commit failed takes back
        the pages added while it was being written)."""
        self.pages += later.pages
        for fp, rows in later.by_fp.items():
            self.by_fp.setdefault(fp, []).extend(rows)
        self.samples.update(later.samples)
        self.by_id.update(later.by_id)
        self.urls.update(later.urls)
        self.drops += later.drops

    def clear(self) -> None:
        """Let go of everything held (once it is committed)."""
        self.pages.clear()
        self.by_fp.clear()
        self.samples.clear()
        self.by_id.clear()
        self.urls.clear()
        self.drops.clear()
