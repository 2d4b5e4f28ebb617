"""An embedded index built by a version that kept no sentences of long pages (index format 2,
k=10), opened by this one: it says, once at each open, which copies it no longer catches and
how to rebuild it."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from nearDupe.analysis import Analysis, analyze_text
from nearDupe.features import FeatureSettings
from nearDupe.shorttext import SENTENCE_PAGE_LETTERS, letters
from nearDupe.simhash import hamming
from nearDupe.store import EmbeddedIndex, IndexHeader
from nearDupe.store.embedded_sqlite import to_signed
from spiders.demosite.content import ARTICLES_DIR, load_article

#: What index format 2 created (pages, and a row per sentence of a page under 500 letters).
_FORMAT_2 = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pages (
    id INTEGER PRIMARY KEY, fp INTEGER NOT NULL, key TEXT NOT NULL,
    added REAL NOT NULL, sig INTEGER);
CREATE INDEX pages_fp ON pages(fp);
CREATE TABLE sentences (
    sentence INTEGER NOT NULL, fp INTEGER NOT NULL, letters INTEGER NOT NULL,
    sampled INTEGER NOT NULL, key TEXT NOT NULL);
CREATE INDEX sentences_sentence ON sentences(sentence);
"""
_BRIEF = "The ferry runs every hour from June. The fare stays at two euros all summer."
#: This version's default settings.
HEADER = IndexHeader(design="4-table", k=3, confirm_k=22)


def _analyzed(text: str) -> Analysis:
    return analyze_text(text, 200, FeatureSettings())


def _article_and_copy() -> tuple[Analysis, Analysis]:
    """A demo article and a copy without its last paragraph that the fingerprint puts beyond
    k=3 but within the old k=10: a copy found by its sentences."""
    for path in sorted((ARTICLES_DIR / "en").glob("*.txt")):
        paragraphs = list(load_article(path).paragraphs)
        article, copy = _analyzed("\n".join(paragraphs)), _analyzed("\n".join(paragraphs[:-1]))
        assert article.fingerprint is not None and copy.fingerprint is not None
        if 4 <= hamming(article.fingerprint, copy.fingerprint) <= 10:
            return article, copy
    raise AssertionError("no demo article gives such a copy")


def _format_2_index(path: Path, article: Analysis) -> None:
    """The index format 2 wrote with its defaults (k=10 on blocks-10-11): the long article
    without its sentences, a short page with its own."""
    brief = _analyzed(_BRIEF)
    assert letters(article.sentences) >= SENTENCE_PAGE_LETTERS > letters(brief.sentences)
    path.mkdir()
    with sqlite3.connect(path / "pages.sqlite3") as db:
        db.executescript(_FORMAT_2)
        header = {**HEADER.to_dict(), "format": 2, "design": "blocks-10-11", "k": 10}
        db.execute("INSERT INTO meta VALUES ('header', ?)", (json.dumps(header),))
        for key, page in (("https://long", article), ("https://short", brief)):
            assert page.fingerprint is not None and page.signature is not None
            row = (to_signed(page.fingerprint), key, to_signed(page.signature))
            db.execute("INSERT INTO pages (fp, key, added, sig) VALUES (?, ?, 0, ?)", row)
        n = letters(brief.sentences)
        for h, _ in brief.sentences:
            held = (to_signed(h), to_signed(brief.fingerprint or 0), n, n, "https://short")
            db.execute("INSERT INTO sentences VALUES (?, ?, ?, ?, ?)", held)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_an_index_without_sentences_of_long_pages_says_what_it_misses_at_each_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    article, copy = _article_and_copy()
    _format_2_index(tmp_path / "old", article)
    caplog.set_level(logging.INFO, logger="nearDupe.store.embedded")
    for _ in range(2):  # at every open: its pages still have no sentences
        caplog.clear()
        with EmbeddedIndex(tmp_path / "old", HEADER) as index:
            (warning,) = _warnings(caplog)
            assert "holds 1 pages stored by an earlier version (index format 2, k=10)" in warning
            assert "without their sentences" in warning
            assert "a paragraph cut or added" in warning
            assert "re-crawl into a fresh index (a new NEARDUPE_INDEX)" in warning
            assert "scrapy neardupe import" in warning
            # What it says: the copy the old version dropped (k=10) is kept.
            found = index.query(copy.fingerprint or 0, None, copy.signature, copy.sentences)
            assert found == []
    # The same pages stored by this version: no warning, and the copy found by its sentences.
    caplog.clear()
    with EmbeddedIndex(tmp_path / "new", HEADER) as index:
        index.add(article.fingerprint or 0, "https://long", article.signature, article.sentences)
        found = index.query(copy.fingerprint or 0, None, copy.signature, copy.sentences)
        assert [m.key for m in found] == ["https://long"] and found[0].distance is None
    with EmbeddedIndex(tmp_path / "new", HEADER):
        pass
    assert _warnings(caplog) == []


def test_an_older_index_whose_pages_all_kept_their_sentences_opens_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Format 2 kept the sentences of short pages: an index of those only misses nothing."""
    article, _ = _article_and_copy()
    _format_2_index(tmp_path / "old", article)
    with sqlite3.connect(tmp_path / "old" / "pages.sqlite3") as db:
        db.execute("DELETE FROM pages WHERE key = 'https://long'")
    caplog.set_level(logging.INFO, logger="nearDupe.store.embedded")
    with EmbeddedIndex(tmp_path / "old", HEADER) as index:
        brief = _analyzed(_BRIEF)
        assert [m.key for m in index.query(2**64 - 1, 0, None, brief.sentences)] == [
            "https://short"
        ]
    assert _warnings(caplog) == []
