"""Whether this checkout extracts the same main text as another, page for page, and in how
much CPU time.

Every WCXB dev page (1,497, all types), every aeb and zh-extract page is extracted, once as a
crawl reads it and once more without a block standing for a site's template lines (the path
nearDupe.analysis.look_again takes). Either beside another checkout, each page in turn by one
process of each (which goes first alternates), the CPU time of the first extraction compared:

    python benchmarks/extraction_check.py --beside /path/to/other/checkout

or against the texts saved by a run of another checkout, in a file kept outside the
repository:

    python benchmarks/extraction_check.py --save /tmp/extract-ref.json.gz   # in one checkout
    python benchmarks/extraction_check.py --against /tmp/extract-ref.json.gz  # in another

It prints the pages whose text differs (exit status 1 if any) and the CPU ms per page. With
``--fingerprints`` (with ``--save`` or ``--against``) each text's words (tokenize_lines), its
fingerprint and signature and its sentences are compared too, and so are those of every
zh-extract hand-copied text and every THUCNews article.
"""

from __future__ import annotations

import argparse
import gzip
import json
import pickle
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A line standing for a site's template line: the one with this many characters or fewer
#: (the walk of nearDupe.text._drop_blocks runs on every page, a few blocks go).
_TEMPLATE_CHARS = 12

#: (text, text without template blocks, CPU ms of the first)
Extracted = tuple[str, str, float]


def _unwanted(line: str) -> bool:
    """Short lines play a site's template lines."""
    return len(line) <= _TEMPLATE_CHARS


def extract(extract_main_text: Callable[..., str], html: str) -> Extracted:
    """A page's texts, with and without template blocks, and the CPU ms of the first."""
    start = time.process_time()
    text = extract_main_text(html)
    ms = (time.process_time() - start) * 1000
    return text, extract_main_text(html, unwanted=_unwanted), ms


def serve(checkout: Path) -> None:
    """Answer each page pickled on stdin with its :func:`extract` by ``checkout``'s nearDupe."""
    sys.path.insert(0, str(checkout))
    from nearDupe.text import extract_main_text

    extract_main_text("<p>warm up</p>")
    while True:
        try:
            html = pickle.load(sys.stdin.buffer)
        except EOFError:
            return
        pickle.dump(extract(extract_main_text, html), sys.stdout.buffer)
        sys.stdout.buffer.flush()


def beside(pages: dict[str, str], other: Path) -> dict[str, list[Extracted]]:
    """Each page's :func:`extract` by this checkout and by ``other``, in one process each,
    taking turns to go first."""
    roots = {"this checkout": ROOT, other.name: other}
    children = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--serve", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for name, root in roots.items()
    }
    out: dict[str, list[Extracted]] = {name: [] for name in children}
    try:
        for i, html in enumerate(pages.values()):
            for name, child in sorted(children.items(), reverse=i % 2 == 1):
                assert child.stdin is not None and child.stdout is not None
                pickle.dump(html, child.stdin)
                child.stdin.flush()
                out[name].append(pickle.load(child.stdout))
    finally:
        for child in children.values():
            assert child.stdin is not None
            child.stdin.close()
            child.wait()
    return out


def texts_of(keys: list[str], extracted: list[Extracted]) -> dict[str, str]:
    """``set/id`` -> text and ``set/id#template`` -> text without template blocks."""
    texts = {}
    for key, (text, without, _) in zip(keys, extracted, strict=True):
        texts[key], texts[f"{key}#template"] = text, without
    return texts


def fingerprinted(texts: dict[str, str]) -> dict[str, str]:
    """``key#fingerprints`` -> the words, fingerprint, signature and sentences of each text,
    and of the zh-extract hand-copied texts and THUCNews articles, as one string each."""
    from _data import data_dir

    from nearDupe.features import tokenize_lines
    from nearDupe.shorttext import sentences
    from nearDupe.simhash import fingerprint_and_signature

    every = dict(texts)
    for path in sorted((data_dir() / "zh-extract" / "cleaned").glob("*.txt")):
        every[f"zh-cleaned/{path.stem}"] = path.read_text(encoding="utf-8-sig")
    news = (data_dir() / "thucnews" / "cnews.sample.txt").read_text(encoding="utf-8")
    for i, line in enumerate(news.splitlines()):
        every[f"thucnews/{i}"] = line.partition("\t")[2]
    return {
        f"{key}#fingerprints": repr(
            (
                tokenize_lines(text),
                fingerprint_and_signature(text),
                sentences(text) if text.strip() else (),
            )
        )
        for key, text in every.items()
    }


def report_ms(name: str, extracted: list[Extracted]) -> None:
    """One line: median, mean and total CPU ms of the extractions."""
    ms = [x[2] for x in extracted]
    print(
        f"{name}: median {statistics.median(ms):.1f} CPU ms a page, mean "
        f"{statistics.mean(ms):.1f}, total {sum(ms) / 1000:.1f} s"
    )


def compare(saved: dict[str, str], texts: dict[str, str], show: int) -> int:
    """Print how many texts are identical and the first ``show`` that differ; exit status."""
    differ = sorted(key for key in saved.keys() | texts.keys() if saved.get(key) != texts.get(key))
    print(f"{len(texts) - len(differ)} of {len(saved.keys() | texts.keys())} texts identical")
    for key in differ[:show]:
        print(f"  {key}: {len(saved.get(key) or '')} -> {len(texts.get(key) or '')} chars")
    return 1 if differ else 0


def main() -> None:
    """Extract every page, then save the texts or compare them with a saved run's or with
    another checkout's."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--beside", type=Path, help="another checkout to run page by page")
    group.add_argument("--save", type=Path, help="write the texts to this file")
    group.add_argument("--against", type=Path, help="compare the texts with this file's")
    group.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--show", type=int, default=5, help="print this many differing pages")
    parser.add_argument("--sets", default="en,zh,wcxb-all", help="which sets (en, zh, wcxb-all)")
    parser.add_argument(
        "--fingerprints", action="store_true", help="compare words and fingerprints too"
    )
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from extraction_eval import load_extraction_cases

    cases = load_extraction_cases(sets=tuple(args.sets.split(",")))
    pages = {f"{lang}/{page_id}": html for lang, page_id, html, _ in cases}
    print(f"{len(pages)} pages")
    if args.beside:
        runs = beside(pages, args.beside.resolve())
        for name, extracted in runs.items():
            report_ms(name, extracted)
        mine, theirs = ([x[2] for x in run] for run in runs.values())
        pages_ratio = statistics.median(m / t for m, t in zip(mine, theirs, strict=True) if t)
        print(
            f"CPU time of this checkout against {args.beside.name}'s: "
            f"{sum(mine) / sum(theirs):.3f} in total, median page {pages_ratio:.3f}"
        )
        mine_texts, their_texts = (texts_of(list(pages), run) for run in runs.values())
        sys.exit(compare(their_texts, mine_texts, args.show))
    from nearDupe.text import extract_main_text

    extracted = [extract(extract_main_text, html) for html in pages.values()]
    report_ms("this checkout", extracted)
    texts = texts_of(list(pages), extracted)
    if args.fingerprints:
        texts |= fingerprinted(texts)
    if args.save:
        args.save.write_bytes(gzip.compress(json.dumps(texts).encode("utf-8")))
        print(f"saved {len(texts)} texts to {args.save}")
        return
    sys.exit(compare(json.loads(gzip.decompress(args.against.read_bytes())), texts, args.show))


if __name__ == "__main__":
    main()
