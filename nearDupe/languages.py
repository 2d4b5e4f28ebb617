"""Word frequency tables of the major languages of Latin script, and which one weighs a page.

A word's IDF is -ln of its frequency in its page's language (wordfreq's lists, CC BY-SA 4.0,
by Robyn Speer; written by ``tools/make_idf_tables.py`` and shipped, so that workers need
neither wordfreq nor its 58 MB): English unless the page's most frequent words say otherwise
(see :func:`latin_language`). Weighed alike, the function words of these languages (the, der,
les...) pull a fingerprint as much as its names and terms, and different pages come within a
few bits of each other. Russian and Arabic weighed by their tables did not fare better than
weighed alike (docs/quality.md, "Languages"): their words carry their endings and clitics.
"""

from __future__ import annotations

import gzip
import math
from collections import Counter
from collections.abc import Iterable
from functools import cache
from pathlib import Path

_DATA = Path(__file__).with_name("data")
#: Frequency assigned to words a table does not know (about one in 10^8).
UNKNOWN_FREQ = 1e-8
_UNKNOWN_IDF = -math.log(UNKNOWN_FREQ)
#: The language of a page that nothing tells apart, and of words of no other table.
DEFAULT = "en"
#: Languages with a table of their own: English, and those of Latin script that
#: latin_markers.txt tells apart.
LANGUAGES = ("en", "de", "es", "fr", "it", "nl", "pt")
#: A page of Latin script is of another language than English when it has at least this many
#: distinct marker words of that language (one word, "com" or "tot", is a URL's or a name's),
#: and more occurrences of them than of English's.
MIN_MARKERS = 3


@cache
def table(language: str) -> dict[str, float]:
    """-ln(frequency) of each word of ``language``'s shipped list (read once a process)."""
    name = "english" if language == "en" else language
    lines = gzip.decompress((_DATA / f"{name}_idf.txt.gz").read_bytes()).decode("utf-8")
    idf: dict[str, float] = {}
    for bucket, words in enumerate(lines.split("\n")):
        # The same float wordfreq's get_frequency_dict gave, so fingerprints do not move.
        weight = -math.log(10 ** (-bucket / 100))
        idf.update(dict.fromkeys(words.split(), weight))
    return idf


@cache
def _markers() -> dict[str, str]:
    """Marker word -> its language: frequent words of one Latin-script language that the
    others use at least ten times less often (latin_markers.txt)."""
    markers: dict[str, str] = {}
    for line in (_DATA / "latin_markers.txt").read_text("utf-8").splitlines():
        language, *words = line.split()
        markers.update(dict.fromkeys(words, language))
    return markers


def latin_language(tokens: Iterable[str]) -> str:
    """The language whose table weighs a page's words of Latin script: the one with the most
    marker words among ``tokens`` (case-folded words), when MIN_MARKERS distinct ones and
    more than English's; otherwise English."""
    markers = _markers()
    found = Counter(t for t in tokens if t in markers)
    hits = Counter[str]()
    for word, count in found.items():
        hits[markers[word]] += count
    if not hits:
        return DEFAULT
    language, count = max(hits.items(), key=lambda item: (item[1], item[0] == DEFAULT))
    distinct = sum(markers[word] == language for word in found)
    if language != DEFAULT and distinct >= MIN_MARKERS and count > hits[DEFAULT]:
        return language
    return DEFAULT


def idf(word: str, page_language: str) -> float:
    """-ln of ``word``'s frequency in ``page_language``; -ln(UNKNOWN_FREQ) for a word its
    table lacks."""
    return table(page_language).get(word, _UNKNOWN_IDF)
