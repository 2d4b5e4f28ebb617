"""Text -> weighted features: Unicode words, jieba-segmented Chinese, TF-IDF weights.

A word is a run of letters, digits and the combining marks of its script (Thai vowels and
tone marks, Devanagari vowel signs, Arabic harakat...). Scripts written without spaces
between words and with no segmenter here (Thai, Lao, Khmer, Myanmar; Japanese) are cut into
overlapping pairs of characters (a character: a letter and its marks), the usual fallback
(the ideographs of Japanese text still go to jieba: a copy with an edit in every sentence was
found 28 times of 40 against 21 with pairs); a Korean word also yields its syllable pairs, so
a changed particle keeps most features.
English and Chinese (text without such scripts or marks) are split as they always were.

Each occurrence of a word counts in proportion to the length of its line, up to
``full_line`` words: extracted text keeps one block a line, and the short lines (bylines,
counters, captions, menus, calendars) are where templates and syndication edits differ.
"""

from __future__ import annotations

import gzip
import math
import re
import unicodedata
from dataclasses import asdict, dataclass, fields
from functools import cache
from itertools import filterfalse
from pathlib import Path
from typing import Any, Literal

import numpy as np

from nearDupe import chinese

#: Runs of CJK ideographs (segmented with jieba); everything else is split on \w+.
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]+")
_WORD = re.compile(r"\w+")

#: Frequency assigned to English words the table does not know (about one in 10^8).
_UNKNOWN_FREQ = 1e-8
#: wordfreq's English "large" list (CC BY-SA 4.0, by Robyn Speer), one line per centibel
#: bucket: line i holds the words of frequency 10 ** (-i / 100). Written by
#: ``tools/make_english_idf.py``; shipped so workers need neither wordfreq nor its 58 MB.
_ENGLISH_IDF_FILE = Path(__file__).with_name("data") / "english_idf.txt.gz"


@dataclass(frozen=True)
class FeatureSettings:
    """How text becomes features; stored in the index header so fingerprints stay comparable."""

    kind: Literal["words", "shingles"] = "words"
    shingle: int = 2
    weighting: Literal["tfidf", "tf"] = "tfidf"
    sublinear_tf: bool = False
    top_n: int | None = None
    digits: bool = False
    #: Lines of fewer words weigh in proportion (0: every word counts 1).
    full_line: int = 20

    def to_dict(self) -> dict[str, object]:
        """The settings as a plain dict (for headers and reports)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, given: dict[str, Any]) -> FeatureSettings:
        """The settings ``given`` changes from the defaults (NEARDUPE_FEATURES); ValueError
        naming the first unknown field or bad value."""
        known = {f.name: f for f in fields(cls)}
        for name, value in given.items():
            if name not in known:
                raise ValueError(f"unknown field {name!r} (known: {', '.join(known)})")
            if name in _CHOICES and value not in _CHOICES[name]:
                raise ValueError(f"{name}={value!r} must be one of {_CHOICES[name]}")
        settings = cls(**given)
        numbers = {"shingle": settings.shingle, "full_line": settings.full_line}
        if settings.top_n is not None:
            numbers["top_n"] = settings.top_n
        for name, number in numbers.items():
            if not isinstance(number, int) or isinstance(number, bool) or number < 0:
                raise ValueError(f"{name}={number!r} must be a whole number >= 0")
        if settings.shingle < 1:
            raise ValueError("shingle must be at least 1")
        for name in ("sublinear_tf", "digits"):
            if not isinstance(getattr(settings, name), bool):
                raise ValueError(f"{name} must be true or false")
        return settings


#: The fields that take one of a few words.
_CHOICES: dict[str, tuple[str, ...]] = {
    "kind": ("words", "shingles"),
    "weighting": ("tfidf", "tf"),
}


@cache
def _english_idf() -> dict[str, float]:
    """-ln(frequency) from wordfreq's fixed English word list: an IDF that never drifts."""
    lines = gzip.decompress(_ENGLISH_IDF_FILE.read_bytes()).decode("utf-8").split("\n")
    idf: dict[str, float] = {}
    for bucket, words in enumerate(lines):
        # The same float wordfreq's get_frequency_dict gave, so fingerprints do not move.
        weight = -math.log(10 ** (-bucket / 100))
        idf.update(dict.fromkeys(words.split(), weight))
    return idf


def has_chinese(text: str) -> bool:
    """Whether ``text`` has a run of CJK ideographs (its words need jieba)."""
    return _CJK_RUN.search(text) is not None


def load_chinese() -> None:
    """Load jieba's dictionary and its IDF table (nearDupe/chinese.py: tens of milliseconds
    and 10 MB, once a process)."""
    chinese.load()


#: Combining marks that Latin, Greek, Cyrillic or CJK text may carry (diacritics NFKC could
#: not compose, variation selectors, CJK tone marks, kana voicing marks): they stay outside
#: words, as they always were, so English and Chinese features never move.
_GENERIC_MARKS = (
    (0x0300, 0x036F),
    (0x0483, 0x0489),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
    (0x20D0, 0x20FF),
    (0x302A, 0x302F),
    (0x3099, 0x309A),
    (0xFE00, 0xFE0F),
    (0xFE20, 0xFE2F),
)
#: Scripts written without spaces between words, cut into character pairs: Thai, Lao,
#: Myanmar (and its extensions), Khmer (and its symbols).
_SPACELESS = "\u0e00-\u0eff\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f\u1780-\u17ff\u19e0-\u19ff"
#: Hiragana, katakana (and its phonetic extensions): Japanese, with the ideographs of _CJK_RUN.
_KANA = "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff"
_KANA_CHAR = re.compile(f"[{_KANA}\uff66-\uff9f]")  # and half-width katakana (before NFKC)
#: Presentation forms (Hebrew, Arabic) and half-width forms (katakana, Hangul): NFKC makes
#: some of them letters and marks that need more than \\w+.
_FORMS = "\ufb1d-\ufdff\ufe70-\ufeff\uff61-\uffdc"
#: Hangul syllables, jamo and compatibility jamo.
_HANGUL = "\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f"
#: A text is Japanese when kana make up this share of its kana and ideographs (Japanese
#: prose: over half; a Chinese page quoting a Japanese name: a few percent).
_JAPANESE_KANA_SHARE = 0.2
#: Characters a pair feature (an n-gram) is made of.
_NGRAM = 2


def _marks() -> str:
    """The combining marks (categories Mn, Mc, Me) of the BMP and plane 1 but _GENERIC_MARKS: a
    pattern matching one (a BMP character class is a bitmap, fast; with a character beyond
    the BMP, Python's re tests each range in turn, so plane 1 comes second and guarded)."""
    generic = [range(a, b + 1) for a, b in _GENERIC_MARKS]
    ranges: list[tuple[int, int]] = []
    for code in range(0x20000):
        if unicodedata.category(chr(code))[0] != "M" or any(code in r for r in generic):
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    bmp = "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges if b <= 0xFFFF)
    astral = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges if a > 0xFFFF)
    return f"[{bmp}]|[\\U00010000-\\U0001ffff](?<=[{astral}])"


@cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    """A word (a letter or digit, then letters, digits and marks); a line needing more than
    \\w+ (marks, spaceless scripts, Hangul); a run of a spaceless script's letters; the same
    in Japanese text (with kana); a character and its marks. Built once a process (~30 ms)."""
    mark = _marks()
    letters = "(?![\\d_])"
    return (
        re.compile(f"\\w(?:\\w|{mark})*"),
        re.compile(f"[{_SPACELESS}{_HANGUL}{_KANA}{_FORMS}]|{mark}"),
        re.compile(f"(?:{letters}[{_SPACELESS}])+"),
        re.compile(f"(?:{letters}[{_SPACELESS}{_KANA}])+"),
        re.compile(f".(?:{mark})*", re.DOTALL),
    )


def _ngrams(run: str) -> list[str]:
    """The overlapping _NGRAM-character pieces of ``run`` (a character: a letter and its
    marks); a shorter run whole."""
    chars = _patterns()[4].findall(run)
    if len(chars) <= _NGRAM:
        return ["".join(chars)]
    return ["".join(chars[i : i + _NGRAM]) for i in range(len(chars) - _NGRAM + 1)]


def _hangul_word(word: str) -> list[str]:
    """A Korean word and its syllable pairs (when it has more than two)."""
    if len(word) <= 2:
        return [word]
    return [word, *(word[i : i + 2] for i in range(len(word) - 1))]


_HANGUL_CHAR = re.compile(f"[{_HANGUL}]")


def _words(text: str, japanese: bool) -> list[str]:
    """The words of ``text`` with marks or a script that needs more than \\w+ (see the
    module's docstring)."""
    word, _, spaceless, japanese_run, _ = _patterns()
    run = japanese_run if japanese else spaceless
    tokens: list[str] = []
    for found in word.findall(text):
        if _HANGUL_CHAR.search(found):
            tokens.extend(_hangul_word(found))
            continue
        pos = 0
        for piece in run.finditer(found):
            if piece.start() > pos:
                tokens.append(found[pos : piece.start()])
            tokens.extend(_ngrams(piece.group()))
            pos = piece.end()
        if pos < len(found):
            tokens.append(found[pos:])
    return tokens


def is_japanese(text: str) -> bool:
    """Whether kana make up _JAPANESE_KANA_SHARE of ``text``'s kana and ideographs."""
    kana = len(_KANA_CHAR.findall(text))
    if not kana:
        return False
    ideographs = sum(len(run) for run in _CJK_RUN.findall(text))
    return kana >= _JAPANESE_KANA_SHARE * (kana + ideographs)


def _plain(text: str) -> bool:
    """Whether ``text`` (before or after NFKC) is split on \\w+ alone: no combining mark outside
    _GENERIC_MARKS, no spaceless script, Hangul or kana, nor a presentation or half-width form
    that NFKC turns into one."""
    return _patterns()[1].search(text) is None and not is_japanese(text)


def tokenize(text: str) -> list[str]:
    """NFKC-normalize and case-fold text, then split it into words (jieba for Chinese runs;
    character pairs for scripts without spaces, see the module's docstring)."""
    return _tokenize([text], _plain(text), is_japanese(text))[0]


def _tokenize(lines: list[str], plain: bool, japanese: bool) -> list[list[str]]:
    """:func:`tokenize` of each line of a text that is ``plain`` (see _plain) or not,
    Japanese or not; the Chinese runs of all lines are cut together (one lookup of their
    words)."""
    texts = [unicodedata.normalize("NFKC", line).casefold() for line in lines]
    runs = [list(_CJK_RUN.finditer(text)) for text in texts]
    cuts = iter(chinese.cut_each([m.group() for found in runs for m in found]))
    tokenized: list[list[str]] = []
    for text, found in zip(texts, runs, strict=True):
        tokens: list[str] = []
        pos = 0
        for match in found:
            if plain:
                tokens.extend(_WORD.findall(text, pos, match.start()))
            else:
                tokens.extend(_words(text[pos : match.start()], japanese))
            tokens.extend(t for t in next(cuts) if t.strip())
            pos = match.end()
        tokens.extend(_WORD.findall(text, pos) if plain else _words(text[pos:], japanese))
        tokenized.append(tokens)
    return tokenized


def tokenize_lines(text: str) -> list[list[str]]:
    """:func:`tokenize` applied to each non-blank line (plain, Japanese or not as a whole)."""
    lines = _tokenize(text.splitlines(), _plain(text), is_japanese(text))
    return [tokens for tokens in lines if tokens]


#: The IDFs of the words seen so far (a site's pages share most of their words), up to this many.
_IDF_CACHE_SIZE = 1 << 17
_idf_cache: dict[str, float] = {}


def _idfs(words: list[str]) -> np.ndarray:
    """The IDF of each of the distinct ``words``: jieba's for a Chinese word, looked up at once
    for the words not seen before; wordfreq's for another."""
    missing = [word for word in words if word not in _idf_cache]
    if len(_idf_cache) + len(missing) > _IDF_CACHE_SIZE:
        _idf_cache.clear()
        missing = words
    chinese_words = [word for word in missing if _CJK_RUN.match(word)]
    _idf_cache.update(zip(chinese_words, chinese.idfs(chinese_words).tolist(), strict=True))
    english, unknown = _english_idf(), -math.log(_UNKNOWN_FREQ)
    _idf_cache.update((w, english.get(w, unknown)) for w in missing if not _CJK_RUN.match(w))
    return np.fromiter(map(_idf_cache.__getitem__, words), dtype=np.float64, count=len(words))


def extract_features(
    text: str, settings: FeatureSettings | None = None
) -> tuple[list[str], np.ndarray]:
    """Return the distinct features of ``text`` and their weights (float64, all > 0)."""
    return line_features(tokenize_lines(text), settings)


def line_features(
    lines: list[list[str]], settings: FeatureSettings | None = None
) -> tuple[list[str], np.ndarray]:
    """:func:`extract_features` of text already split by :func:`tokenize_lines`.

    A feature's count and its lines' shares are summed occurrence by occurrence in text order
    (``np.bincount`` adds in that order, as a loop would), its IDF is its first occurrence's."""
    settings = settings or FeatureSettings()
    n, full = settings.shingle, settings.full_line
    tokens: list[str] = []  # every kept word, line after line
    units: list[str] = []  # every feature occurrence: a word, or a shingle of n words
    starts: list[int] = []  # where each unit's first word is in ``tokens``
    shares: list[float] = []  # the share of each unit's line
    grams: list[bool] = []  # whether each line's units are shingles
    lengths: list[int] = []  # units of each line
    for line in lines:
        kept = line if settings.digits else list(filterfalse(str.isdecimal, line))
        share = min(1.0, len(line) / full) if full else 1.0
        first = len(tokens)
        tokens += kept
        shingles = settings.kind == "shingles" and len(kept) >= n
        found = (
            list(map(" ".join, zip(*(kept[i:] for i in range(n)), strict=False)))
            if shingles
            else kept
        )
        units += found
        starts += range(first, first + len(found))
        shares += [share] * len(found)
        grams.append(shingles)
        lengths.append(len(found))
    if not units:
        return [], np.zeros(0, dtype=np.float64)
    index = {unit: i for i, unit in enumerate(dict.fromkeys(units))}
    features = list(index)
    ids = np.fromiter(map(index.__getitem__, units), dtype=np.intp, count=len(units))
    tf = np.bincount(ids, minlength=len(features)).astype(np.float64)
    mean_share = np.bincount(ids, weights=shares, minlength=len(features)) / tf
    if settings.sublinear_tf:
        tf = 1.0 + np.log(tf)
    tf *= mean_share
    if settings.weighting == "tfidf":
        _, first_seen = np.unique(ids, return_index=True)
        weights = (
            tf * _unit_idfs(tokens, np.asarray(starts), np.repeat(grams, lengths), n)[first_seen]
        )
    else:
        weights = tf
    if settings.top_n is not None and len(features) > settings.top_n:
        # Stable tie-break on the feature itself keeps the choice machine-independent.
        order = sorted(range(len(features)), key=lambda i: (-weights[i], features[i]))
        keep = order[: settings.top_n]
        features = [features[i] for i in keep]
        weights = weights[keep]
    return features, weights


def _unit_idfs(tokens: list[str], starts: np.ndarray, grams: np.ndarray, n: int) -> np.ndarray:
    """The IDF of each unit starting at ``starts`` of ``tokens``: its word's, or for a shingle
    (``grams``) the mean of its n words' (summed left to right, as ``sum`` does)."""
    index = {token: i for i, token in enumerate(dict.fromkeys(tokens))}
    word_idfs = _idfs(list(index))
    ids = np.fromiter(map(index.__getitem__, tokens), dtype=np.intp, count=len(tokens))
    idfs = word_idfs[ids[starts]]
    if grams.any():
        at = starts[grams]
        total = idfs[grams]
        for i in range(1, n):
            total = total + word_idfs[ids[at + i]]
        idfs[grams] = total / n
    return idfs
