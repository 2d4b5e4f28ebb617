"""Write nearDupe/data/english_idf.txt.gz from wordfreq's English "large" list (run once).

Line i of the file holds, space-separated, the words whose frequency wordfreq gives as
10 ** (-i / 100) (its centibel buckets); ``nearDupe.features`` turns line i into the IDF
``-ln(10 ** (-i / 100))``, the exact value wordfreq's list gave. Needs ``pip install wordfreq``.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import wordfreq

OUT = Path(__file__).resolve().parents[1] / "nearDupe" / "data" / "english_idf.txt.gz"


def main() -> None:
    """Write the table and print its size."""
    buckets = wordfreq.get_frequency_list("en", "large")
    text = "\n".join(" ".join(words) for words in buckets)
    OUT.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    print(f"{OUT}: {sum(map(len, buckets)):,} words, {OUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
