"""Write nearDupe/data/*_idf.txt.gz and latin_markers.txt from wordfreq's lists (run once).

Line i of a table holds, space-separated, the words whose frequency wordfreq gives as
10 ** (-i / 100) (its centibel buckets); ``nearDupe.features`` turns line i into the IDF
``-ln(10 ** (-i / 100))``, the exact value wordfreq's list gave. English keeps its whole
"large" list; the other languages stop at a frequency of 10 ** -6 (a word rarer than that
weighs as an unknown one: a few tenths of an IDF unit more), so that each table is 115-165 KB.
``latin_markers.txt`` holds, a line a language of Latin script, the frequent words that tell it
from the others (see ``nearDupe.languages``). Needs ``pip install wordfreq``.
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import wordfreq

DATA = Path(__file__).resolve().parents[1] / "nearDupe" / "data"
#: Languages with a table besides English.
LATIN = ("de", "es", "fr", "it", "nl", "pt")
#: The last centibel bucket kept outside English (frequency 10 ** -6).
LAST_BUCKET = 600
#: A marker: among a language's words of frequency >= 10 ** -(MARKER_BUCKET / 100) (its
#: ~150 most frequent), one that every other Latin language (English included) uses at least
#: RARER times less often.
MARKER_BUCKET = 270
RARER = 10


def _write(name: str, buckets: list[list[str]]) -> None:
    out = DATA / f"{name}_idf.txt.gz"
    text = "\n".join(" ".join(words) for words in buckets)
    out.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    print(f"{out}: {sum(map(len, buckets)):,} words, {out.stat().st_size:,} bytes")


def main() -> None:
    """Write the tables and the markers, and print their sizes."""
    _write("english", wordfreq.get_frequency_list("en", "large"))
    lists = {lang: wordfreq.get_frequency_list(lang, "large") for lang in LATIN}
    for lang, buckets in lists.items():
        _write(lang, buckets[: LAST_BUCKET + 1])
    lists["en"] = wordfreq.get_frequency_list("en", "large")
    bucket = {lang: {w: i for i, b in enumerate(lists[lang]) for w in b} for lang in lists}
    gap = round(100 * math.log10(RARER))
    lines = []
    for lang in ("en", *LATIN):
        others = [bucket[o] for o in ("en", *LATIN) if o != lang]
        markers = [
            w
            for i, words in enumerate(lists[lang][: MARKER_BUCKET + 1])
            for w in words
            if w.isalpha() and all(o.get(w, 10**6) >= i + gap for o in others)
        ]
        lines.append(f"{lang} {' '.join(markers)}")
        print(f"{lang}: {len(markers)} markers")
    (DATA / "latin_markers.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
