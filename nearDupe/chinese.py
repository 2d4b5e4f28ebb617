"""Chinese words as jieba cuts them, and their IDF, from jieba's own files held in numpy arrays.

jieba holds its dictionary as a dict of 498,000 strings: loading it takes 1-1.5 s and 190 MB
in each process, and its IDF table 0.8 s more, so a crawl's first Chinese page waited seconds
for them. Here each table is two sorted arrays (a 64-bit hash of each word, and its count or
its IDF); every substring of a run is looked up at once, and the route through the words found
is jieba's own (``Tokenizer.calc`` and ``__cut_DAG``, with jieba's HMM for runs of unknown
characters), so the words are jieba's (``tests/test_chinese.py`` compares them). The arrays
are built from jieba's files once a machine (about a second) and cached beside the compiled
kernels (:func:`nearDupe.kernels.cache_dir`); a process then loads them in milliseconds, and
holds 10 MB.
"""

from __future__ import annotations

import logging
import math
import os
import re
import zipfile
from functools import cache, lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

logger = logging.getLogger(__name__)

#: Bump when the cached arrays change meaning (their hash, their fields).
TABLES_VERSION = 3

_MASK = (1 << 64) - 1
#: The polynomial hash's base (odd, so it has an inverse modulo 2^64).
_BASE = 0x9E3779B97F4A7C15
_INVERSE = pow(_BASE, -1, 1 << 64)
_MIX1, _MIX2, _LENGTH = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB


class _Tables(NamedTuple):
    """jieba's dictionary and IDF table as sorted hash arrays."""

    word_keys: np.ndarray  # uint64, sorted: hashes of the words and of their prefixes
    word_counts: np.ndarray  # int64: each one's count (0: only a prefix, or counted 0 times)
    log_total: float  # math.log of the sum of all counts (jieba's ``total``)
    longest: int  # letters of the longest word
    idf_keys: np.ndarray  # uint64, sorted
    idf_values: np.ndarray  # float64
    idf_median: float  # the IDF of a word the table lacks (jieba's median_idf)


def _finish(h: np.ndarray, length: int | np.ndarray) -> np.ndarray:
    """The final mix of polynomial hashes and their length (one for all, or one each)."""
    if isinstance(length, int):
        x = h ^ np.uint64((length * _LENGTH) & _MASK)
    else:
        x = h ^ (length.astype(np.uint64) * np.uint64(_LENGTH))
    x = (x ^ (x >> np.uint64(33))) * np.uint64(_MIX1)
    x = (x ^ (x >> np.uint64(33))) * np.uint64(_MIX2)
    return x ^ (x >> np.uint64(33))


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(
        np.uint64
    )


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """_BASE^i and its inverse for i < n (uint64 arithmetic wraps modulo 2^64)."""
    powers = np.full(n, _BASE, dtype=np.uint64)
    inverses = np.full(n, _INVERSE, dtype=np.uint64)
    if n:
        powers[0] = inverses[0] = 1
    return np.cumprod(powers, dtype=np.uint64), np.cumprod(inverses, dtype=np.uint64)


def _prefix_sums(text: str) -> tuple[np.ndarray, np.ndarray]:
    """The prefix sums of code point times _BASE^position, and the inverse powers."""
    points = _code_points(text)
    powers, inverses = _powers(len(points))
    sums = np.zeros(len(points) + 1, dtype=np.uint64)
    np.cumsum(points * powers, dtype=np.uint64, out=sums[1:])
    return sums, inverses


def _hashes_of(words: list[str]) -> np.ndarray:
    """The 64-bit hash of each word the tables are keyed by: the sum of its code point i times
    _BASE^i, mixed with its length."""
    sums, inverses = _prefix_sums("".join(words))
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    return np.asarray(_finish((sums[ends] - sums[starts]) * inverses[starts], lengths))


def _prefix_hashes(words: list[str]) -> np.ndarray:
    """The hash of every shorter prefix of each word (as :func:`_hashes_of` would give them)."""
    sums, inverses = _prefix_sums("".join(words))
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    many = np.maximum(lengths - 1, 0)  # prefixes of each word
    starts = np.repeat(np.cumsum(lengths) - lengths, many)
    sizes = np.arange(len(starts)) - np.repeat(np.cumsum(many) - many, many) + 1  # 1, 2, ...
    return np.asarray(_finish((sums[starts + sizes] - sums[starts]) * inverses[starts], sizes))


def _jieba_dir() -> Path:
    import jieba

    return Path(jieba.__file__).parent


def _last_of_each(words: list[str], values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hashes of ``words`` sorted, each with the value of its last line (as a dict built
    line by line keeps)."""
    keys = _hashes_of(words)[::-1]
    unique, first = np.unique(keys, return_index=True)
    return unique, values[::-1][first]


def _build() -> _Tables:
    """The tables, from jieba's ``dict.txt`` (``word count tag`` lines) and
    ``analyse/idf.txt`` (``word idf`` lines), read as jieba reads them: a word's last line
    counts, the total sums every line, a word counted 0 times is none; a prefix of a word
    that has no line of its own is counted 0 times (jieba's ``FREQ``)."""
    fields = (_jieba_dir() / "dict.txt").read_bytes().decode("utf-8").split()
    words = fields[0::3]
    counts = np.fromiter(map(int, fields[1::3]), dtype=np.int64, count=len(words))
    word_keys, word_counts = _last_of_each(words, counts)
    prefixes = _prefix_hashes(words)
    keys = np.sort(np.concatenate((word_keys, prefixes)))
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]  # np.unique, without its hash
    keys_counts = np.zeros(len(keys), dtype=np.int64)
    keys_counts[np.searchsorted(keys, word_keys)] = word_counts
    pairs = (_jieba_dir() / "analyse" / "idf.txt").read_bytes().decode("utf-8").split()
    values = np.fromiter(map(float, pairs[1::2]), dtype=np.float64, count=len(pairs) // 2)
    idf_keys, idf_values = _last_of_each(pairs[0::2], values)
    return _Tables(
        keys,
        keys_counts,
        math.log(int(counts.sum())),
        max(map(len, words)),
        idf_keys,
        idf_values,
        float(np.sort(idf_values)[len(idf_values) // 2]),
    )


def _cache_path() -> Path:
    import jieba

    from nearDupe.kernels import cache_dir

    files = [_jieba_dir() / "dict.txt", _jieba_dir() / "analyse" / "idf.txt"]
    stamp = "-".join(f"{s.st_size}.{s.st_mtime_ns}" for s in map(os.stat, files))
    return cache_dir() / f"jieba-{jieba.__version__}-{stamp}-v{TABLES_VERSION}.npz"


@cache
def tables() -> _Tables:
    """The tables: from the cache, else built (and cached where the cache can be written)."""
    path = _cache_path()
    try:
        with np.load(path) as stored:
            return _Tables(
                stored["word_keys"],
                stored["word_counts"],
                float(stored["log_total"]),
                int(stored["longest"]),
                stored["idf_keys"],
                stored["idf_values"],
                float(stored["idf_median"]),
            )
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):  # absent, torn: build
        pass
    built = _build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
        np.savez(partial, **built._asdict())
        os.replace(partial, path)
    except OSError as exc:
        logger.debug("nearDupe: jieba's tables were not cached in %s: %s", path, exc)
    return built


def _found(keys: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each query is in sorted ``keys``, and whether it is there."""
    at = np.searchsorted(keys, queries)
    np.minimum(at, len(keys) - 1, out=at)
    return at, keys[at] == queries


#: Bits of a hash that index :func:`_filter` (4 MB; jieba's words and prefixes fill 14 % of it).
_FILTER_BITS = 22


@cache
def _filter() -> np.ndarray:
    """Whether some word's or prefix's hash has these top bits: most substrings are neither,
    and are ruled out by one read here instead of a binary search."""
    marks = np.zeros(1 << _FILTER_BITS, dtype=bool)
    marks[tables().word_keys >> np.uint64(64 - _FILTER_BITS)] = True
    return marks


class _Dag(NamedTuple):
    """jieba's DAG of a text, flat: the dictionary words starting at position i are
    ``ends[bounds[i]:bounds[i + 1]]`` (their last positions, shortest first), each weighing
    ``weights[j]``, jieba's log of its count minus the log of the total."""

    bounds: list[int]
    ends: list[int]
    weights: list[float]


def _dag(text: str) -> _Dag:
    """The DAG of ``text``. (No dictionary word holds white space, so blocks joined by line
    breaks are looked up at once, each as if alone.) A position is looked up at the next size
    only while its substring is a word or a word's prefix, as in jieba's ``get_DAG``."""
    t, marks, shift = tables(), _filter(), np.uint64(64 - _FILTER_BITS)
    n = len(text)
    sums, inverses = _prefix_sums(text)
    none = np.zeros(0, dtype=np.int64)
    starts, lengths, counts = [none], [none], [none]
    alive = np.arange(n)  # the positions whose substring so far begins some word
    for size in range(1, min(t.longest, n) + 1):
        alive = alive[alive <= n - size]
        keys = _finish((sums[alive + size] - sums[alive]) * inverses[alive], size)
        maybe = np.flatnonzero(marks[keys >> shift])
        at, hit = _found(t.word_keys, keys[maybe])
        alive, count = alive[maybe[hit]], t.word_counts[at[hit]]
        starts.append(alive[count > 0])
        lengths.append(np.full(int((count > 0).sum()), size, dtype=np.int64))
        counts.append(count[count > 0])
        if not len(alive):
            break
    start, length = np.concatenate(starts), np.concatenate(lengths)
    order = np.lexsort((length, start))
    bounds = np.searchsorted(start[order], np.arange(n + 1))
    ends = (start + length - 1)[order]
    count = np.concatenate(counts)[order]
    log_total = t.log_total
    weights = [math.log(c) - log_total for c in count.tolist()]
    return _Dag(bounds.tolist(), ends.tolist(), weights)


def _cut_block(block: str, offset: int, dag: _Dag, words: list[str]) -> None:
    """jieba's ``__cut_DAG`` (HMM on) of a run of its ``re_han_default`` characters, which
    starts at ``offset`` of the text ``dag`` is of; its words go to ``words``."""
    log_total, n = tables().log_total, len(block)
    bounds, ends, weights = dag
    score: list[float] = [0.0] * (n + 1)
    end: list[int] = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        lo, hi = bounds[offset + i], bounds[offset + i + 1]
        if lo == hi:  # no word starts here: the character is one, weighing log 1
            score[i], end[i] = 0.0 - log_total + score[i + 1], i
            continue
        best, best_end = -math.inf, -1
        # max() of jieba's (score, end) pairs: a tie goes to the longer, which comes later.
        for j in range(lo, hi):
            x = ends[j] - offset
            value = weights[j] + score[x + 1]
            if value >= best:
                best, best_end = value, x
        score[i], end[i] = best, best_end

    def flush(start: int, stop: int) -> None:
        buf = block[start:stop]
        # A run of two or more single characters is a word if the DAG has its edge.
        is_word = offset + stop - 1 in ends[bounds[offset + start] : bounds[offset + start + 1]]
        if len(buf) == 1:
            words.append(buf)
        elif is_word:
            words.extend(buf)
        else:
            words.extend(_hmm_cut(buf))

    x, buf = 0, 0  # buf: where the run of single characters before x starts
    while x < n:
        y = end[x] + 1
        if y - x > 1:
            if buf < x:
                flush(buf, x)
            words.append(block[x:y])
            buf = y
        x = y
    if buf < n:
        flush(buf, n)


#: Runs of unknown characters whose HMM words are kept (a site's names recur from page to page).
_HMM_CUTS = 1 << 14


@lru_cache(maxsize=_HMM_CUTS)
def _hmm_cut(run: str) -> tuple[str, ...]:
    """jieba's HMM words (``finalseg.cut``) of a run of characters that no word covers."""
    from jieba import finalseg

    return tuple(finalseg.cut(run))


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    import jieba

    return jieba.re_han_default, jieba.re_skip_default


def cut(text: str) -> list[str]:
    """``jieba.lcut(text, HMM=True)``, word for word."""
    return cut_each([text])[0]


def cut_each(texts: list[str]) -> list[list[str]]:
    """:func:`cut` of each text, their dictionary words looked up together (no text: jieba
    is not even imported)."""
    if not texts:
        return []
    han, skip = _patterns()
    pieces = [[(bool(han.match(b)), b) for b in han.split(text) if b] for text in texts]
    blocks = [b for parts in pieces for is_han, b in parts if is_han]
    dag = _dag("\n".join(blocks)) if blocks else _Dag([0], [], [])
    cuts: list[list[str]] = []
    offset = 0
    for parts in pieces:
        words: list[str] = []
        for is_han, block in parts:
            if is_han:
                _cut_block(block, offset, dag, words)
                offset += len(block) + 1
                continue
            for part in skip.split(block):
                if skip.match(part):
                    words.append(part)
                else:
                    words.extend(part)
        cuts.append(words)
    return cuts


def idfs(words: list[str]) -> np.ndarray:
    """jieba's IDF of each word (its table's median for a word it lacks), looked up at once
    (no word: jieba is not even imported)."""
    if not words:
        return np.zeros(0, dtype=np.float64)
    t = tables()
    at, hit = _found(t.idf_keys, _hashes_of(words))
    return np.where(hit, t.idf_values[at], t.idf_median)


def load() -> None:
    """Load the tables and jieba's HMM (tens of ms from the cache; done before a page's
    analysis is timed)."""
    tables()
    _patterns()
    from jieba import finalseg  # noqa: F401  (its probability tables load on import)
