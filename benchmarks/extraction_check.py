"""Whether this checkout extracts the same main text as another, page for page.

Every WCXB dev page (1,497, all types), every aeb and zh-extract page is extracted, once as a
crawl reads it and once more without a block standing for a site's template lines (the path
nearDupe.analysis.look_again takes); the texts are saved to, or compared with, a file kept
outside the repository:

    python benchmarks/extraction_check.py --save /tmp/extract-ref.json.gz   # in one checkout
    python benchmarks/extraction_check.py --against /tmp/extract-ref.json.gz  # in another

It prints the pages whose text differs (exit status 1 if any) and the median CPU ms per page.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from extraction_eval import load_extraction_cases

from nearDupe.text import extract_main_text

#: A line standing for a site's template line: the one with this many characters or fewer
#: (the walk of nearDupe.text._drop_blocks runs on every page, a few blocks go).
_TEMPLATE_CHARS = 12


def _unwanted(line: str) -> bool:
    """Short lines play a site's template lines."""
    return len(line) <= _TEMPLATE_CHARS


def extract_all(cases: list[tuple[str, str, str, str]]) -> tuple[dict[str, str], list[float]]:
    """Each page's texts (key ``set/id`` and ``set/id#template``) and CPU ms per page."""
    texts: dict[str, str] = {}
    ms: list[float] = []
    for lang, page_id, html, _truth in cases:
        start = time.process_time()
        texts[f"{lang}/{page_id}"] = extract_main_text(html)
        ms.append((time.process_time() - start) * 1000)
        texts[f"{lang}/{page_id}#template"] = extract_main_text(html, unwanted=_unwanted)
    return texts, ms


def main() -> None:
    """Extract every page, then save the texts or compare them with a saved run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path, help="write the texts to this file")
    group.add_argument("--against", type=Path, help="compare the texts with this file's")
    parser.add_argument("--show", type=int, default=5, help="print this many differing pages")
    args = parser.parse_args()
    cases = load_extraction_cases(sets=("en", "zh", "wcxb-all"))
    texts, ms = extract_all(cases)
    print(
        f"{len(cases)} pages: median {statistics.median(ms):.1f} CPU ms, "
        f"mean {statistics.mean(ms):.1f}, total {sum(ms) / 1000:.1f} s"
    )
    if args.save:
        args.save.write_bytes(gzip.compress(json.dumps(texts).encode("utf-8")))
        print(f"saved {len(texts)} texts to {args.save}")
        return
    saved = json.loads(gzip.decompress(args.against.read_bytes()))
    differ = sorted(key for key in saved.keys() | texts.keys() if saved.get(key) != texts.get(key))
    print(f"{len(texts) - len(differ)} of {len(saved.keys() | texts.keys())} texts identical")
    for key in differ[: args.show]:
        print(f"  {key}: {len(saved.get(key) or '')} -> {len(texts.get(key) or '')} chars")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
