"""How well template signatures (sitetemplate.template_signature) tell a host's templates apart.

A page's site memory is its host and its template's signature. Printed for the crawl cases'
templates (real pages, an article put in each, ``crawl_eval.py``'s half and split seed): how
many templates get no signature (their pages judged by their host's memory in a portal), how
many are split over two or more (one template learned as two small sites), and how many share
theirs with another template of their language (two templates, one memory); and for WCXB's
pages (``wcxb-dev``): the pairs of one domain and page type that keep one memory (the same
signature, or both none), and the pairs of one domain and two page types that share one.
Each figure for the class names alone (``TEMPLATE_TAGS`` 0) beside classes, else the skeleton.

Run from the repository root: ``python benchmarks/signature_eval.py [--half tune] [--seeds 1]``.
Data: ``../shared/data`` (``NEARDUPE_DATA``).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import data_dir, decode
from _quality_cases import build_cases, split_arguments

from nearDupe import sitetemplate
from nearDupe.sitetemplate import template_signature

#: The rules compared: name -> TEMPLATE_TAGS.
RULES = {"class names": 0, "class names, else skeleton": sitetemplate.TEMPLATE_TAGS}


def signed(htmls: list[str], tags: int) -> list[str]:
    """Each page's signature with TEMPLATE_TAGS set to ``tags``."""
    kept = sitetemplate.TEMPLATE_TAGS
    sitetemplate.TEMPLATE_TAGS = tags
    try:
        return [template_signature(html) for html in htmls]
    finally:
        sitetemplate.TEMPLATE_TAGS = kept


def templates_row(pages: list[tuple[str, str, str]], tags: int) -> dict[str, str]:
    """Per language: templates, without a signature, split, sharing one with another."""
    signatures = signed([html for _, _, html in pages], tags)
    of_template: dict[tuple[str, str], set[str]] = defaultdict(set)
    for (lang, template, _), signature in zip(pages, signatures, strict=True):
        of_template[lang, template].add(signature)
    row = {}
    for lang in ("en", "zh"):
        mine = {t: s for (lg, t), s in of_template.items() if lg == lang}
        users: dict[str, int] = defaultdict(int)
        for found in mine.values():
            for signature in found - {""}:
                users[signature] += 1
        none = sum(found == {""} for found in mine.values())
        split = sum(len(found) > 1 for found in mine.values())
        sharing = sum(any(users[s] > 1 for s in found - {""}) for found in mine.values())
        row[lang] = f"{len(mine)} / {none} / {split} / {sharing}"
    return row


def wcxb_pages(root: Path) -> list[tuple[str, str, str]]:
    """WCXB's development pages as (domain, page type, HTML)."""
    folder = root / "wcxb-dev"
    files = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))["files"]
    pages = []
    for file_id, info in sorted(files.items()):
        truth = json.loads(
            (folder / "dev" / "ground-truth" / f"{file_id}.json").read_text(encoding="utf-8")
        )
        body = gzip.decompress((folder / "dev" / "html" / f"{file_id}.html.gz").read_bytes())
        pages.append((info["domain"], info["page_type"], decode(body, truth["url"])))
    return pages


def wcxb_row(pages: list[tuple[str, str, str]], tags: int) -> str:
    """Pages without a signature; pairs of one domain and type in one memory; pairs of one
    domain and two types sharing one."""
    signatures = signed([html for _, _, html in pages], tags)
    domains: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for (domain, kind, _), signature in zip(pages, signatures, strict=True):
        domains[domain].append((kind, signature))
    alike = alike_kept = other = other_shared = 0
    for found in domains.values():
        for (kind_a, a), (kind_b, b) in itertools.combinations(found, 2):
            if kind_a == kind_b:
                alike += 1
                alike_kept += a == b
            else:
                other += 1
                other_shared += a == b
    return (
        f"{signatures.count('')} of {len(pages)} | {alike_kept / alike:.3f} of {alike} | "
        f"{other_shared / other:.3f} of {other}"
    )


def main() -> None:
    """Sign the crawl cases' templates per split seed and WCXB's pages, print tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    split_arguments(parser)
    args = parser.parse_args()
    root = data_dir()
    print(
        "| split seed | rule | EN templates / no signature / split / sharing one | "
        "ZH templates / no signature / split / sharing one |"
    )
    print("|---|---|---|---|")
    for seed in args.seeds:
        cases = build_cases(root, quick=args.quick, half=(args.half, seed))
        pages = [(page.lang, page.template, page.html) for page in cases.pages]
        for name, tags in RULES.items():
            row = templates_row(pages, tags)
            print(f"| {seed} ({args.half}) | {name} | {row['en']} | {row['zh']} |", flush=True)
    wcxb = wcxb_pages(root)
    print(
        "\n| rule | WCXB pages without a signature | pairs of one domain and type in one "
        "memory | pairs of one domain, two types, in one memory |"
    )
    print("|---|---|---|---|")
    for name, tags in RULES.items():
        print(f"| {name} | {wcxb_row(wcxb, tags)} |", flush=True)


if __name__ == "__main__":
    main()
