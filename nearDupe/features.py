"""Text -> weighted features: Unicode words, jieba-segmented Chinese, TF-IDF weights.

Each occurrence of a word counts in proportion to the length of its line, up to
``full_line`` words: extracted text keeps one block a line, and the short lines (bylines,
counters, captions, menus, calendars) are where templates and syndication edits differ.
"""

from __future__ import annotations

import gzip
import math
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, fields
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

#: Runs of CJK ideographs (segmented with jieba); everything else is split on \w+.
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]+")
_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")

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
def _jieba():
    import jieba

    jieba.setLogLevel(60)
    jieba.initialize()
    return jieba


@cache
def _chinese_idf() -> tuple[dict[str, float], float]:
    """jieba's shipped IDF table and its median (the weight of unknown words)."""
    from jieba.analyse import default_tfidf

    return default_tfidf.idf_freq, default_tfidf.median_idf


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
    """Load jieba's dictionary and its IDF table (about a second and 190 MB, once a process)."""
    _jieba()
    _chinese_idf()


def tokenize(text: str) -> list[str]:
    """NFKC-normalize and case-fold text, then split it into words (jieba for Chinese runs)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    tokens: list[str] = []
    pos = 0
    for match in _CJK_RUN.finditer(text):
        tokens.extend(_WORD.findall(text, pos, match.start()))
        tokens.extend(t for t in _jieba().lcut(match.group(), HMM=True) if t.strip())
        pos = match.end()
    tokens.extend(_WORD.findall(text, pos))
    return tokens


def tokenize_lines(text: str) -> list[list[str]]:
    """:func:`tokenize` applied to each non-blank line."""
    return [tokens for line in text.splitlines() if (tokens := tokenize(line))]


@lru_cache(maxsize=1 << 17)
def _idf(token: str) -> float:
    if _CJK_RUN.match(token):
        table, median = _chinese_idf()
        return table.get(token, median)
    return _english_idf().get(token, -math.log(_UNKNOWN_FREQ))


def extract_features(
    text: str, settings: FeatureSettings | None = None
) -> tuple[list[str], np.ndarray]:
    """Return the distinct features of ``text`` and their weights (float64, all > 0)."""
    return line_features(tokenize_lines(text), settings)


def line_features(
    lines: list[list[str]], settings: FeatureSettings | None = None
) -> tuple[list[str], np.ndarray]:
    """:func:`extract_features` of text already split by :func:`tokenize_lines`."""
    settings = settings or FeatureSettings()
    counts: Counter[str] = Counter()
    shares: defaultdict[str, float] = defaultdict(float)
    idfs: dict[str, float] = {}  # feature -> its IDF (a shingle: the mean of its words')
    n = settings.shingle
    for line in lines:
        share: float = min(1.0, len(line) / settings.full_line) if settings.full_line else 1.0
        tokens = line if settings.digits else [t for t in line if not _DIGITS.fullmatch(t)]
        word_idfs = [_idf(t) for t in tokens]
        if settings.kind == "shingles" and len(tokens) >= n:
            for i in range(len(tokens) - n + 1):
                gram = " ".join(tokens[i : i + n])
                counts[gram] += 1
                shares[gram] += share
                idfs.setdefault(gram, sum(word_idfs[i : i + n]) / n)
            continue
        for token, idf in zip(tokens, word_idfs, strict=True):
            counts[token] += 1
            shares[token] += share
            idfs.setdefault(token, idf)
    if not counts:
        return [], np.zeros(0, dtype=np.float64)
    features = list(counts)
    tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
    mean_share = np.fromiter(shares.values(), dtype=np.float64, count=len(counts)) / tf
    if settings.sublinear_tf:
        tf = 1.0 + np.log(tf)
    tf *= mean_share
    if settings.weighting == "tfidf":
        weights = tf * np.fromiter((idfs[f] for f in features), dtype=np.float64, count=len(tf))
    else:
        weights = tf
    if settings.top_n is not None and len(features) > settings.top_n:
        # Stable tie-break on the feature itself keeps the choice machine-independent.
        order = sorted(range(len(features)), key=lambda i: (-weights[i], features[i]))
        keep = order[: settings.top_n]
        features = [features[i] for i in keep]
        weights = weights[keep]
    return features, weights
