"""What an embedded index holds in memory until its next commit: pages, sentences, drops."""

from __future__ import annotations

import sqlite3
import time
from collections import Counter

from nearDupe.shorttext import Sentences
from nearDupe.store import droplog
from nearDupe.store.base import SENTENCE_HOLDERS, Holder, Sketch, holders_of
from nearDupe.store.embedded_sqlite import to_signed, to_unsigned


class UnsavedPages:
    """The pages (with their sentences) and drops added since the last commit, as SQLite rows."""

    def __init__(self) -> None:
        #: (signed fp, key, time, signed signature or None) of the pages not yet committed.
        self.pages: list[tuple[int, str, float, int | None]] = []
        #: signed fp -> (key, signed signature) of its uncommitted pages (a full disk can make
        #: the list above long; matches look here).
        self.by_fp: dict[int, list[tuple[str, int | None]]] = {}
        #: signed sentence -> (signed sentence, signed fp, letters, sketched letters, sketch
        #: tails, key) of its uncommitted holders, oldest first (the rows the next commit
        #: inserts).
        self.by_sentence: dict[int, list[tuple[int, int, int, int, bytes, str]]] = {}
        self.drops: list[droplog.Drop] = []

    def add(
        self,
        fp: int,
        key: str,
        signature: int | None,
        sentences: Sentences,
        holders: list[Holder],
    ) -> None:
        """Hold a page, and the sentences it is recorded under (see base.recorded; the
        ``holders`` are the pages stored with its sentences)."""
        sig = None if signature is None else to_signed(signature)
        self.pages.append((to_signed(fp), key, time.time(), sig))
        self.by_fp.setdefault(to_signed(fp), []).append((key, sig))
        held = Counter(holder.sentence for holder in holders)
        crowded = {s for s, n in held.items() if n >= SENTENCE_HOLDERS}
        for holder in holders_of(sentences, key, fp, crowded):
            row = (to_signed(holder.sentence), to_signed(fp), *holder.sketch, key)
            self.by_sentence.setdefault(row[0], []).append(row)

    def holders(self, sentences: Sentences) -> list[Holder]:
        """The held pages recorded under one of ``sentences``."""
        return [
            Holder(sentence, key, to_unsigned(fp), Sketch(n, sketched, tails))
            for sentence, _ in sentences
            for _, fp, n, sketched, tails, key in self.by_sentence.get(to_signed(sentence), [])
        ]

    def write(self, db: sqlite3.Connection) -> None:
        """Insert everything held into ``db``, uncommitted (it is still held: see clear)."""
        db.executemany("INSERT INTO pages (fp, key, added, sig) VALUES (?, ?, ?, ?)", self.pages)
        db.executemany(
            "INSERT INTO sentences (sentence, fp, letters, sketched, tails, key) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (row for rows in self.by_sentence.values() for row in rows),
        )
        droplog.insert(db, self.drops)

    def clear(self) -> None:
        """Let go of everything held (once it is committed)."""
        self.pages.clear()
        self.by_fp.clear()
        self.by_sentence.clear()
        self.drops.clear()
