"""Tests of the word frequency tables of the major languages and of a page's language."""

from __future__ import annotations

import math

import pytest

from nearDupe import languages
from nearDupe.features import FeatureSettings, extract_features, tokenize
from nearDupe.shorttext import sentences

GERMAN = (
    "Die Stadtverwaltung hat am Dienstag beschlossen, das Radwegenetz um 42 Kilometer zu "
    "erweitern. Der Plan ist nicht neu, aber er wird jetzt mit den Mitteln des Landes bezahlt, "
    "sagte die Bürgermeisterin auf einer Pressekonferenz."
)
RUSSIAN = (
    "Городской совет во вторник проголосовал за расширение сети велосипедных дорожек. "
    "Строительство начнётся весной, и это только начало, сказал глава администрации."
)


def test_tables_hold_wordfreq_buckets() -> None:
    # Line i of a table: the words of frequency 10 ** (-i / 100).
    for language in languages.LANGUAGES:
        table = languages.table(language)
        assert len(table) > 25_000, language
        assert 0 < min(table.values()) < 6, language
        # Outside English the tables stop at a frequency of 10 ** -6.
        rarest = -math.log(1e-8 if language == "en" else 1e-6)
        assert max(table.values()) == pytest.approx(rarest, abs=0.03), language
    assert languages.table("de")["und"] < languages.table("de")["kilometer"]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        (GERMAN, "de"),
        (
            "Le conseil a voté pour étendre le réseau cyclable, qui est une priorité pour les "
            "habitants et les commerçants.",
            "fr",
        ),
        ("The city council voted on Tuesday to expand the bike-lane network.", "en"),
        # One marker word, however often (a domain's "com"), tells no language.
        ("新浪 www sina com cn com com 新闻 www sina com cn", "en"),
        ("", "en"),
    ],
)
def test_latin_language_by_marker_words(text: str, language: str) -> None:
    assert languages.latin_language(tokenize(text)) == language


def test_english_quoting_german_stays_english() -> None:
    text = (
        "The report, titled 'Die Zukunft der Stadt und des Landes', was published by the city "
        "and it was read by more than a thousand residents in the first week of the month."
    )
    assert languages.latin_language(tokenize(text)) == "en"


def test_words_weigh_by_their_language() -> None:
    flat = FeatureSettings(full_line=0)  # a word's weight: its count times its IDF
    for text, language in ((GERMAN, "de"), (RUSSIAN, "en")):
        tokens = tokenize(text)
        weights = dict(zip(*extract_features(text, flat), strict=True))
        for word, weight in weights.items():
            assert weight == tokens.count(word) * languages.table(language).get(
                word, -math.log(languages.UNKNOWN_FREQ)
            ), word
    german = dict(zip(*extract_features(GERMAN), strict=True))
    # A function word weighs less than a content word, as in English.
    assert german["die"] < german["bürgermeisterin"]
    # Words of other scripts weigh as they always did: by the English table.
    assert languages.latin_language(tokenize(RUSSIAN)) == "en"


def test_arabic_comma_ends_a_clause() -> None:
    # A long sentence of a short page is matched by its clauses: one changed letter keeps the
    # other clauses.
    text = (
        "أعلن المجلس البلدي يوم الثلاثاء عن توسيع شبكة ممرات الدراجات في وسط المدينة، "
        "وقال المسؤولون إن الخطة ستربط الجامعة بالمنطقة التجارية الجديدة."
    )
    changed = text.replace("الجامعة", "الجامعه")
    assert len(sentences(text)) == 2
    assert len(set(sentences(text)) & set(sentences(changed))) == 1
