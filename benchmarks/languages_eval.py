"""Copies found in eighteen languages: fingerprints and sentences on real translated text.

The text: the human translations shipped in the machine's gettext catalogs
(/usr/share/locale/<lang>/LC_MESSAGES/*.mo; English: their source strings). Each message
that reads as prose (40+ characters, mostly of the language's script, no option tables)
becomes a paragraph; consecutive paragraphs of one catalog make a document of ~1,200
characters, so neighbouring documents are different texts on the same topic (one program's
help). Nothing is copied anywhere: the catalogs are read where they are.

For each language, the originals are checked and added to a fresh embedded index
(``nearDupe.store.open_store`` in a temporary directory, the plugin's default header: k=3,
confirm_k=22): an original matching another is a false match. Then each copy is looked up
(``query``) and counts as found when its own original comes back, by fingerprint (distance
within k, confirmed by the signature) or by sentences:

* appended: a paragraph of another catalog added at the end;
* cut: the last third cut off;
* char: one letter near the middle changed;
* edit: one letter changed in every sentence (a space ends one in Thai, Khmer, Myanmar).

Listing pages, made of a catalog's short messages (labels, names: lines that are no
sentences), its first few on each page as a site's menu, are checked and added to an index of
their own: every match between them is false.

Usage: ``python benchmarks/languages_eval.py [--docs 20] [--locale-dir /usr/share/locale]
[--seeds 1 2 3 [--half tune]]``: with split seeds, only the catalogs of one half of each
split (a catalog is a site: a rule is tuned on the "tune" half and scored on the other).
Run it against another checkout with ``PYTHONPATH=that/checkout`` to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import gettext
import itertools
import re
import statistics
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from _quality_cases import site_half

from nearDupe.analysis import Analysis, analyze_text
from nearDupe.features import FeatureSettings
from nearDupe.simhash import hamming
from nearDupe.sitetemplate import SiteTemplate
from nearDupe.store import open_store
from nearDupe.store.base import IndexHeader
from nearDupe.store.sites import learned

#: Language (gettext locale) -> the Unicode name prefix of its script's letters.
LANGUAGES = {
    "en": "LATIN",
    "zh_CN": "CJK",
    "ja": "",  # kana and kanji
    "ko": "HANGUL",
    "th": "THAI",
    "km": "KHMER",
    "my": "MYANMAR",
    "hi": "DEVANAGARI",
    "bn": "BENGALI",
    "ta": "TAMIL",
    "ar": "ARABIC",
    "ru": "CYRILLIC",
    "de": "LATIN",
    "fr": "LATIN",
    "es": "LATIN",
    "it": "LATIN",
    "pt": "LATIN",
    "nl": "LATIN",
}
COPIES = ("appended", "cut", "char", "edit")
DOC_CHARS = 1200
MIN_LENGTH = 200  # NEARDUPE_MIN_TEXT_LENGTH's default
#: Characters of a listing page's lines (from, below), lines of its menu, of its own.
LISTING_LINE = (8, 40)
MENU_LINES = 8
LISTING_LINES = 15
#: The plugin's default header: k=3, confirm_k=22.
HEADER = IndexHeader.for_settings("4-table", 3, FeatureSettings(), confirm_k=22)
_OPTION_LINE = re.compile(r"^\s*(-|\[|<|%|\$|#)")
#: Where `edit` sees a sentence end: a full stop, question or exclamation mark of any of the
#: scripts, a line break, or a space in a script written without spaces between words.
_SPACELESS = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
_SENTENCE_END = re.compile(rf"(?<=[.。!?！？।॥။។])\s*|\n|(?<=[{_SPACELESS}])\s+(?=[{_SPACELESS}])")


def _script(char: str) -> str:
    name = unicodedata.name(char, "")
    if name.startswith(("HIRAGANA", "KATAKANA")):
        return "KANA"
    return name.split(" ", 1)[0]


def _in_script(text: str, script: str) -> float:
    """The share of ``text``'s letters in ``script`` ('' : kana or CJK)."""
    found = [c for c in text if c.isalpha()]
    if not found:
        return 0.0
    wanted = ("KANA", "CJK") if script == "" else (script,)
    return sum(_script(c) in wanted for c in found) / len(found)


def _table_line(line: str) -> bool:
    """A line of an option table or a format listing, not prose."""
    return bool(_OPTION_LINE.match(line)) or "\t" in line or "  " in line.strip()


def paragraphs(
    locale_dir: Path, language: str, lengths: tuple[int, int] = (40, 10**9)
) -> Iterator[tuple[str, str]]:
    """(catalog, paragraph) for each prose message of ``language`` (of ``lengths``
    characters, from and below), catalog by catalog."""
    script = LANGUAGES[language]
    source = "ja" if language == "en" else language
    seen: set[str] = set()  # texts and msgids: gtk2 and gtk3 share many messages
    for path in sorted((locale_dir / source / "LC_MESSAGES").glob("*.mo")):
        try:
            with path.open("rb") as handle:
                catalog = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        except (OSError, UnicodeDecodeError):
            continue
        for msgid, msgstr in catalog.items():
            if not isinstance(msgid, str) or not msgid or not isinstance(msgstr, str):
                continue
            text = msgid if language == "en" else msgstr
            lines = text.splitlines()
            if any(
                _OPTION_LINE.match(line) or "\t" in line or "  " in line.strip() for line in lines
            ):
                continue
            text = " ".join(line.strip() for line in lines if line.strip())
            short_or_long = not lengths[0] <= len(text) < lengths[1]
            if short_or_long or text in seen or msgid in seen or text.count("%") > 1:
                continue
            if _in_script(text, script) < (0.9 if language == "en" else 0.6):
                continue
            if language == "ja" and _in_script(text, "KANA") < 0.2:
                continue
            seen.update((text, msgid))
            yield path.stem, text


def documents(
    locale_dir: Path,
    language: str,
    count: int,
    skip: int = 0,
    half: tuple[str, int] | None = None,
) -> tuple[list[str], list[str], list[str]]:
    """``count`` documents of consecutive paragraphs of one catalog after the first ``skip``
    (those a rule was tuned on), of the catalogs of one ``half`` (its name and split seed: a
    catalog is a site, see site_half) or of all; the paragraphs left (the appended ones);
    each document's catalog."""
    docs: list[str] = []
    names: list[str] = []
    skipped = 0
    spare: list[str] = []
    current: list[str] = []
    catalog = ""
    for name, text in paragraphs(locale_dir, language):
        if len(docs) >= count:
            spare.append(text)
            continue
        if half is not None and site_half(name, half[1]) != half[0]:
            continue
        if name != catalog:
            current, catalog = [], name
        current.append(text)
        if sum(len(p) for p in current) >= DOC_CHARS:
            if skipped < skip:
                skipped += 1
            else:
                docs.append("\n".join(current))
                names.append(name)
            current = []
    return docs, spare, names


def listings(
    locale_dir: Path, language: str, half: tuple[str, int] | None
) -> list[tuple[str, str]]:
    """Listing pages of the catalogs of ``half`` (or of all): a catalog's short messages
    (LISTING_LINE characters: labels, names, headlines) as lines, its first MENU_LINES on
    every page of it (a site's menu), the next LISTING_LINES on each page (its own
    headlines); as (catalog, page)."""
    lines: dict[str, list[str]] = {}
    for name, text in paragraphs(locale_dir, language, LISTING_LINE):
        if half is None or site_half(name, half[1]) == half[0]:
            lines.setdefault(name, []).append(text)
    pages = []
    for name, found in lines.items():
        menu, own = found[:MENU_LINES], found[MENU_LINES:]
        for i in range(0, len(own) - LISTING_LINES + 1, LISTING_LINES):
            pages.append((name, "\n".join(menu + own[i : i + LISTING_LINES])))
    return pages


async def listing_matches(pages: list[tuple[str, str]], learn: bool) -> int:
    """How many of the listing ``pages`` (all different) match one checked before them; with
    ``learn``, each analysed without the lines its catalog's pages kept before it taught (a
    site's template, as the plugin learns it)."""
    features = FeatureSettings()
    matches = 0
    books: dict[str, dict[int, tuple[int, ...]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(str(Path(tmp) / "index"), HEADER)
        try:
            for i, (name, page) in enumerate(pages):
                book = books.setdefault(name, {})
                site = SiteTemplate(book) if learn else None
                a = analyze_text(page, MIN_LENGTH, features, site, identity=i + 1)
                found = None
                if a.fingerprint is not None:
                    key = str(i)
                    found = await store.check_and_add(a.fingerprint, key, a.signature, a.sentences)
                    matches += found is not None
                if found is None:
                    learned(book, i + 1, a.lines)
        finally:
            await store.close()
    return matches


def _letter_positions(text: str) -> list[int]:
    return [i for i, c in enumerate(text) if c.isalpha()]


def _change(text: str, at: int) -> str:
    """``text`` with the letter at or after ``at`` replaced by another letter of its script."""
    positions = [i for i in _letter_positions(text) if i >= at] or _letter_positions(text)
    i = positions[0]
    script = _script(text[i])
    for c in text[i + 1 :] + text[:i]:
        if c.isalpha() and c != text[i] and _script(c) == script:
            return text[:i] + c + text[i + 1 :]
    return text[:i] + ("x" if text[i] != "x" else "y") + text[i + 1 :]


def appended(text: str, extra: str) -> str:
    return f"{text}\n{extra}"


def cut(text: str) -> str:
    end = 2 * len(text) // 3
    space = max(text.rfind(" ", 0, end), text.rfind("\n", 0, end))
    return text[: space if space > end - 40 else end].rstrip()


def char(text: str) -> str:
    return _change(text, len(text) // 2)


def edit(text: str) -> str:
    """One letter changed in the middle of each sentence (of 20+ letters: a shorter one is
    joined to the next)."""
    out: list[str] = []
    pos = 0
    for match in [*_SENTENCE_END.finditer(text), None]:
        end = match.end() if match else len(text)
        piece = text[pos:end]
        if len(_letter_positions(piece)) >= 20 or match is None:
            out.append(_change(piece, len(piece) // 2) if _letter_positions(piece) else piece)
            pos = end
    return "".join(out)


@dataclass
class Row:
    language: str
    docs: int  # documents copied
    different: int  # documents checked for false matches
    false_matches: int
    found: dict[str, tuple[int, int]]  # copy -> (by fingerprint, by sentences only)
    sentences: float  # mean sentences a document has
    closest: tuple[int, int]  # bits between different documents: the fewest, 1st percentile
    ms: float  # median milliseconds to analyse a document
    worst: tuple[str, int, int]  # the catalog of the fewest copies found: name, found, copies
    #: listing pages matching another (their site's template not learned, learned), of
    listings: tuple[int, int, int] = (0, 0, 0)


async def evaluate(
    language: str, docs: list[str], spare: list[str], names: list[str], copied: int
) -> Row:
    """Check and add every document (of the catalogs ``names``); look up the copies of the
    first ``copied``."""
    features = FeatureSettings()
    analyse: Callable[[str], Analysis] = lambda text: analyze_text(text, MIN_LENGTH, features)  # noqa: E731
    analyse(docs[0])  # the first call loads the language's tables
    originals = []
    times = []
    for doc in docs:
        start = time.perf_counter()
        originals.append(analyse(doc))
        times.append(time.perf_counter() - start)
    false_matches = 0
    found = dict.fromkeys(COPIES, (0, 0))
    per_catalog: dict[str, list[int]] = {}  # catalog -> [copies found, copies]
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(str(Path(tmp) / "index"), HEADER)
        try:
            for i, a in enumerate(originals):
                assert a.fingerprint is not None, (language, i, a.skip_reason)
                match = await store.check_and_add(a.fingerprint, str(i), a.signature, a.sentences)
                false_matches += match is not None
            for i, doc in enumerate(docs[:copied]):
                copies = {
                    "appended": appended(doc, spare[-1 - i % len(spare)].split("\n")[-1]),
                    "cut": cut(doc),
                    "char": char(doc),
                    "edit": edit(doc),
                }
                for name, copy in copies.items():
                    a = analyse(copy)
                    if a.fingerprint is None:
                        continue
                    matches = await store.query(a.fingerprint, None, a.signature, a.sentences)
                    mine = [m for m in matches if m.key == str(i)]
                    by_fp, by_sentences = found[name]
                    if any(m.distance is not None for m in mine):
                        by_fp += 1
                    elif mine:
                        by_sentences += 1
                    found[name] = (by_fp, by_sentences)
                    tally = per_catalog.setdefault(names[i], [0, 0])
                    tally[0] += bool(mine)
                    tally[1] += 1
        finally:
            await store.close()
    mean_sentences = sum(len(a.sentences) for a in originals) / max(1, len(originals))
    apart = sorted(
        hamming(a.fingerprint or 0, b.fingerprint or 0)
        for a, b in itertools.combinations(originals, 2)
    )
    closest = (apart[0], apart[len(apart) // 100])
    return Row(
        language,
        min(copied, len(docs)),
        len(docs),
        false_matches,
        found,
        mean_sentences,
        closest,
        1000 * statistics.median(times),
        min(((n, *t) for n, t in per_catalog.items()), key=lambda w: w[1] / w[2]),
    )


def table(rows: list[Row]) -> str:
    head = (
        "| language | sentences/doc | "
        + " | ".join(COPIES)
        + " | false matches | listings matched | apart | ms/doc | worst catalog |"
    )
    lines = [head, "|" + "---|" * (len(COPIES) + 7)]
    for row in rows:
        cells = [f"{fp + s}/{row.docs} ({fp}+{s})" for fp, s in (row.found[c] for c in COPIES)]
        lines.append(
            f"| {row.language} | {row.sentences:.1f} | "
            + " | ".join(cells)
            + f" | {row.false_matches}/{row.different}"
            + f" | {row.listings[0]}, {row.listings[1]} /{row.listings[2]}"
            + f" | {row.closest[0]}, {row.closest[1]}"
            + f" | {row.ms:.2f} | {row.worst[0]} {row.worst[1]}/{row.worst[2]} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--docs", type=int, default=20, help="documents copied")
    parser.add_argument("--different", type=int, default=100, help="documents checked")
    parser.add_argument("--locale-dir", type=Path, default=Path("/usr/share/locale"))
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="documents passed over first: 100 leaves out those the tokenizer was tuned on",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="*",
        default=[],
        help="split seeds: score the catalogs of one half of each split (default: all)",
    )
    parser.add_argument("--half", choices=["held-out", "tune"], default="held-out")
    args = parser.parse_args()
    print("copies found (by fingerprint + by sentences only); originals matching another;")
    print("apart: bits between the fingerprints of different originals (fewest, 1st percentile);")
    print("ms/doc: median time to analyse an original (fingerprint, signature, sentences);")
    print("worst catalog: the catalog of the smallest share of its copies found;")
    print(
        f"listings matched: listing pages ({MENU_LINES} menu lines of their catalog, "
        f"{LISTING_LINES} short messages of their own) matching another, as a site's first"
        " pages (nothing learned), with their catalog's template learned"
    )
    for seed in args.seeds or [None]:
        half = None if seed is None else (args.half, seed)
        rows = []
        for language in args.languages.split(","):
            count = max(args.docs, args.different)
            docs, spare, names = documents(args.locale_dir, language, count, args.skip, half)
            if len(docs) < 2:
                print(f"{language}: too little text in {args.locale_dir} ({len(docs)} documents)")
                continue
            # appended: a paragraph not in the copied docs (the last doc's when none is left)
            spare = spare or docs[args.docs :] or docs[-1:]
            row = asyncio.run(evaluate(language, docs, spare, names, args.docs))
            pages = listings(args.locale_dir, language, half)
            row.listings = (
                asyncio.run(listing_matches(pages, learn=False)),
                asyncio.run(listing_matches(pages, learn=True)),
                len(pages),
            )
            rows.append(row)
        print("\nall catalogs" if half is None else f"\nsplit seed {seed}, {args.half} half")
        print(table(rows))


if __name__ == "__main__":
    main()
