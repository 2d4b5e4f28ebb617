"""Short texts: an exact hash of the normalized text instead of an unreliable simhash."""

from __future__ import annotations

import re
import unicodedata

from xxhash import xxh3_64_intdigest

from nearDupe.units import Units

#: Seed of the exact hash, so it never equals the simhash of the same text by construction.
_SEED = 0x6E64_7368_6F72_7431


def normalize(text: str, *, digits: bool = True) -> str:
    """NFKC, case-folded, letters (and digits) only: no whitespace, punctuation or symbols."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if digits:
        return "".join(c for c in text if c.isalnum())
    return "".join(c for c in text if c.isalpha())


def exact_fingerprint(text: str, *, digits: bool = True) -> int:
    """A 64-bit hash of the normalized text: equal only for texts that normalize alike."""
    data = normalize(text, digits=digits).encode("utf-8", "surrogatepass")
    return xxh3_64_intdigest(data, _SEED)


#: A page's sentence units (see :func:`sentences`): (64-bit hash of a normalized sentence,
#: clause or word shingle, its letters; or of a brief's shingle keyed by its headline, 0),
#: distinct.
Sentences = tuple[tuple[int, int], ...]

#: Pages whose units weigh under this many letters are recorded under all of them
#: (store/base.recorded).
SENTENCE_PAGE_LETTERS = 500
#: A page keeps at most this many of its units, those with the smallest hashes (a bottom-k
#: sample: two copies keep alike ones): an article has a few hundred shingles, a 2 MB page
#: hundreds of thousands.
PROBE_SENTENCES = 256
#: Sentences shorter than this once normalized (a date, "Share", a caption) do not count.
SENTENCE_MIN_LETTERS = 8
#: Seed of the sentence hashes (never equal to a page's exact hash by construction).
_SENTENCE_SEED = 0x6E64_7365_6E74_656E
#: Full stops of other scripts: Devanagari and Bengali dandas, Arabic question mark and
#: semicolon, Urdu full stop, Ethiopic, Armenian, Myanmar and Khmer full stops.
_SCRIPT_STOPS = "।॥؟؛۔።։။។"
#: Sentence ends: CJK and Latin full stops, question and exclamation marks, semicolons, and
#: line breaks (headlines, list items); a Latin full stop only before whitespace (not in 3.5).
_SENTENCE_END = re.compile(rf"(?<=[。！？!?；;{_SCRIPT_STOPS}])|\n|(?<=\.)\s")
#: Scripts written without spaces between words (Thai, Lao, Myanmar, Khmer), where a space
#: ends a sentence (or a clause): between two runs of the script, it splits a sentence.
_SPACELESS = "\u0e00-\u0eff\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f\u1780-\u17ff\u19e0-\u19ff"
_SPACELESS_CHAR = re.compile(f"[{_SPACELESS}]")
_SPACELESS_BREAK = re.compile(f"(?<=[{_SPACELESS}])\\s+(?=[{_SPACELESS}])")


#: Clause breaks inside a Chinese or Japanese sentence (commas, enumeration commas, colons),
#: and the Arabic comma (Arabic, Persian, Urdu). A short Chinese article is often one or two
#: long sentences: a one-character typo would change its only sentence, while its clauses stay.
_CLAUSE_END = re.compile(r"(?<=[，、：،])")
#: A sentence of fewer letters is kept whole: two different one-sentence texts share clauses
#: verbatim (PAWS-X pairs of different texts: 19 of 1,916 joined at 40, 3 at 60, none from
#: 65). Short syndicated Chinese briefs with one edit are caught 0.903 -> 0.958 at 70 (a
#: typo 0.746 -> 0.915).
CLAUSE_SENTENCE_LETTERS = 70

#: A sentence ends with one of these (then perhaps closing quotes or brackets). A line
#: without (a headline, a menu item, a caption) is not one: two listing pages sharing
#: headlines are not copies.
_FINAL = re.compile(rf"[.。！？!?；;…{_SCRIPT_STOPS}][\"'”’»)）」』]*\s*$")


#: A page of this many sentence letters or more is matched by word shingles (see
#: :func:`sentences`): a light edit in every sentence (a spelling, a number, a word dropped or
#: two swapped) changes every whole sentence, but only the few shingles around each edit.
#: Below it (one or two sentences, where NEARDUPE_MIN_TEXT_LENGTH's exact hash takes over
#: from simhash), whole sentences and clauses: different short texts of the same words (PAWS-X
#: pairs: an entity swapped, a clause moved) share most of their shingles.
SHINGLE_PAGE_LETTERS = 200
#: Words a shingle spans, in scripts written with spaces between words.
SHINGLE_WORDS = 4
#: Words a shingle spans in a sentence mostly of Cyrillic words. Russian (and its neighbours)
#: has no articles and fewer words a sentence (median 8 against 9-10 in gettext's English,
#: German, French), so a letter changed in every sentence left 4-word shingles under the
#: containment a copy needs; its 3-word shingles are as rare between different texts as
#: English 4-word ones (English at 3 words joined different texts).
SHINGLE_WORDS_CYRILLIC = 3
_CYRILLIC_TOKEN = re.compile("[\u0400-\u04ff]")
#: Characters a shingle spans, in Chinese, Japanese and scripts without spaces between words
#: (a Chinese word is ~1.5 characters).
SHINGLE_CHARS = 6
#: Scripts whose every character is a token of its own: CJK ideographs, kana, and the
#: scripts written without spaces between words.
_CHARACTER_SCRIPTS = f"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff{_SPACELESS}"
#: A shingle's tokens: a character of _CHARACTER_SCRIPTS, or a run of other letters and
#: digits (numbers tell different stories of one template apart: results, prices, dates).
_TOKEN = re.compile(f"[{_CHARACTER_SCRIPTS}]|[^\\W_{_CHARACTER_SCRIPTS}]+")
_CHARACTER_TOKEN = re.compile(f"[{_CHARACTER_SCRIPTS}]")
#: Seed of the shingle hashes (never equal to a sentence's or a page's exact hash by
#: construction).
_SHINGLE_SEED = 0x6E64_7368_696E_676C
#: Seed of a brief's shingles keyed by its headline (:func:`brief_shingles`).
_BRIEF_SEED = 0x6E64_6272_6965_6673
#: The top byte set in a brief's shingle hashes: they come after its sentences (whose hashes
#: reach it once in 256), looked up and sketched after them.
_AFTER = 0xFF << 56
#: A brief with a headline keeps this many of its shingles keyed by it (those with the
#: smallest hashes): a bottom-k sample of each, compared by store/base.BRIEF_SHARED.
BRIEF_SHINGLES = 16
#: Chinese numerals a brief's shingles read as digits (a copy writes 三 as 3, or the other
#: way round): the numerals of 0-9, 两 as 2.
_NUMERALS = str.maketrans("〇零一二三四五六七八九两", "001234567892")


def sentences(text: str, headline: str = "") -> Sentences:
    """The units a page is matched by, as (hash, letters), distinct: at most PROBE_SENTENCES
    of them (the smallest hashes). A page of SHINGLE_PAGE_LETTERS sentence letters or more
    gives its word shingles (:func:`shingles`); a shorter one (a brief) its normalized
    sentences of at least SENTENCE_MIN_LETTERS letters (ending as sentences end), those of
    CLAUSE_SENTENCE_LETTERS or more cut into their clauses (see _CLAUSE_END), and with a
    ``headline`` its :func:`brief_shingles`."""
    parts = [p for p in _parts(text) if len(normalize(p)) >= SENTENCE_MIN_LETTERS]
    if sum(len(normalize(p, digits=False)) for p in parts) >= SHINGLE_PAGE_LETTERS:
        return shingles(parts)
    found: dict[int, int] = {}
    for part in parts:
        pieces = [normalize(piece) for piece in _CLAUSE_END.split(part)]
        norm = "".join(pieces)
        for unit in _clauses(pieces) if len(norm) >= CLAUSE_SENTENCE_LETTERS else [norm]:
            found[_hash(unit, _SENTENCE_SEED)] = len(unit)
    kept = sorted(found.items())[: PROBE_SENTENCES - BRIEF_SHINGLES]
    if parts and normalize(headline):
        kept += brief_shingles(parts, headline)
    return tuple(sorted(kept))


def brief_shingles(parts: list[str], headline: str) -> list[tuple[int, int]]:
    """A brief's shingles (:func:`shingles` of its sentences ``parts``, Chinese numerals read
    as digits), keyed by its ``headline``: the BRIEF_SHINGLES with the smallest hashes, each
    of 0 letters (they weigh nothing in the shares of sentence letters) and hashed with the
    top byte set (_AFTER)."""
    key = normalize(headline)
    found = {
        _hash(f"{key} {h:x}", _BRIEF_SEED) | _AFTER: 0
        for h, _ in shingles([p.translate(_NUMERALS) for p in parts])
    }
    return sorted(found.items())[:BRIEF_SHINGLES]


def _hash(unit: str, seed: int) -> int:
    """The 64-bit hash of a unit's text."""
    return xxh3_64_intdigest(unit.encode("utf-8", "surrogatepass"), seed)


def shingles(parts: list[str]) -> Sentences:
    """The distinct shingles of the sentences ``parts``: each run of SHINGLE_WORDS words
    (SHINGLE_CHARS characters in a sentence mostly of _CHARACTER_SCRIPTS,
    SHINGLE_WORDS_CYRILLIC words in one mostly of Cyrillic words) within a sentence,
    a shorter sentence whole; at most PROBE_SENTENCES of them (the smallest hashes). A
    shingle weighs the letters of its tokens."""
    found: dict[int, int] = {}
    for part in parts:
        tokens = _TOKEN.findall(unicodedata.normalize("NFKC", part).casefold())
        if not tokens:
            continue
        characters = sum(_CHARACTER_TOKEN.match(t) is not None for t in tokens)
        cyrillic = sum(_CYRILLIC_TOKEN.match(t) is not None for t in tokens)
        if 2 * characters > len(tokens):
            width = SHINGLE_CHARS
        elif 2 * cyrillic > len(tokens):
            width = SHINGLE_WORDS_CYRILLIC
        else:
            width = SHINGLE_WORDS
        for i in range(max(1, len(tokens) - width + 1)):
            shingle = tokens[i : i + width]
            key = " ".join(shingle).encode("utf-8", "surrogatepass")
            found[xxh3_64_intdigest(key, _SHINGLE_SEED)] = sum(map(len, shingle))
    return tuple(sorted(found.items())[:PROBE_SENTENCES])


def _parts(text: str) -> list[str]:
    """The sentences of ``text``: the parts between _SENTENCE_END that end as a sentence ends
    (_FINAL); in a script without spaces between words (Thai...), which ends its sentences
    with a space and no stop, every part between such spaces that is mostly of the script or
    ends as a sentence ends (a menu or a headline too: the site's lines it learned are
    stripped before, and a page holding most of another's is still needed; a language menu's
    "ภาษาไทย" among Latin names is not one)."""
    parts: list[str] = []
    for part in _SENTENCE_END.split(text):
        if not part:
            continue
        if _SPACELESS_CHAR.search(part):
            parts.extend(p for p in _SPACELESS_BREAK.split(part) if _spaceless(p))
        elif _FINAL.search(part):
            parts.append(part)
    return parts


def _spaceless(part: str) -> bool:
    """Whether ``part`` ends as a sentence ends or most of its letters are of a script
    without spaces between words."""
    found = normalize(part, digits=False)
    return _FINAL.search(part) is not None or 2 * len(_SPACELESS_CHAR.findall(found)) > len(found)


def _clauses(pieces: list[str]) -> list[str]:
    """A sentence's clauses from its normalized parts between _CLAUSE_END: each part of fewer
    than SENTENCE_MIN_LETTERS letters joined to the next (the last to the one before)."""
    clauses: list[str] = []
    pending = ""
    for piece in pieces:
        pending += piece
        if len(pending) >= SENTENCE_MIN_LETTERS:
            clauses.append(pending)
            pending = ""
    if pending and clauses:
        clauses[-1] += pending
    return clauses


def letters(page: Sentences) -> int:
    """The letters of a page's units; of a page cut to its PROBE_SENTENCES smallest hashes,
    their letters scaled to the whole page by the share of the hash space they cover (a
    bottom-k estimate: a copy cut by a third keeps 256 units too, yet is two thirds of its
    page)."""
    total = page.total() if isinstance(page, Units) else sum(n for _, n in page)
    if len(page) < PROBE_SENTENCES:
        return total
    top = page.top() if isinstance(page, Units) else max(h for h, _ in page)
    return total * 2**64 // (top + 1)
