"""Main-content extraction quality and speed on real pages (aeb English, zh-extract Chinese,
WCXB dev articles, and with ``--sets ...,wcxb-all`` WCXB dev pages of every type).

Run ``python benchmarks/extraction_eval.py``. Data is read from ``../shared/data`` next to the
repository (override with the ``NEARDUPE_DATA`` environment variable), never copied here.

Scoring reproduces the article-extraction-benchmark (scrapinghub) ``evaluate.py`` metric:
per page, true/false positives and false negatives of 4-gram shingles of ``\\w+`` tokens,
normalised to sum to 1; precision averaged over pages with a prediction, recall over pages
with a ground truth; F1 from the averaged precision and recall. Tokens are lowercased, and each
CJK character is its own token so that Chinese text gets meaningful shingles. WCXB dev article
pages (``wcxb``, split by domain) are also scored with WCXB's own metric (``evaluate.py``: word
F1 per page, averaged over pages), printed as ``wF1``; ``wcxb-all`` is WCXB's whole dev split
(articles, listings, forums, products, collections, documentation, services).
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import lxml.html
from readability import Document

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import data_dir, decode
from _harness import Column, Table, arguments
from _quality_cases import site_half

import nearDupe.texttail as texttail_module
from nearDupe.text import extract_main_text

Case = tuple[str, str, str, str]

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
_TOKEN = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])\w)+")
_UTF8 = lxml.html.HTMLParser(encoding="utf-8")


def load_extraction_cases(
    root: Path | None = None,
    half: tuple[str, int] | None = None,
    sets: tuple[str, ...] = ("en", "zh", "wcxb"),
) -> list[Case]:
    """All (lang, id, decoded html, ground-truth text) cases of ``sets``, English first; with
    ``half`` ("held-out" or "tune", split seed), only the pages of that half of the sites (aeb:
    by URL host; zh-extract pages carry no URL: each is a site of its own)."""
    root = root or data_dir()
    cases: list[Case] = []
    wcxb = [
        case
        for name in ("wcxb", "wcxb-all")
        if name in sets
        for case in _wcxb(root / "wcxb-dev", half, every_type=name == "wcxb-all")
    ]
    truth = json.loads((root / "aeb" / "ground-truth.json").read_text(encoding="utf-8"))
    for page_id, item in sorted(truth.items()):
        site = urlsplit(item["url"]).hostname or page_id
        if half is not None and site_half(site, half[1]) != half[0]:
            continue
        body = gzip.decompress((root / "aeb" / "html" / f"{page_id}.html.gz").read_bytes())
        cases.append(("en", page_id, decode(body, item["url"]), item["articleBody"]))
    zh = root / "zh-extract"
    for path in sorted((zh / "original").glob("*.html")):
        if half is not None and site_half(path.stem, half[1]) != half[0]:
            continue
        text = (zh / "cleaned" / f"{path.stem}.txt").read_text(encoding="utf-8-sig")
        html = decode(path.read_bytes(), f"http://zh-extract.invalid/{path.name}")
        cases.append(("zh", path.stem, html, text))
    return [case for case in cases if case[0] in sets] + wcxb


def _wcxb(root: Path, half: tuple[str, int] | None, every_type: bool) -> list[Case]:
    """WCXB dev pages typed "article" (793), or of every type (1,497: set ``wcxb-all``), split
    by domain (as the other sets, by host)."""
    cases: list[Case] = []
    for path in sorted((root / "dev" / "ground-truth").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        kind = (data.get("_internal") or {}).get("page_type") or {}
        if (
            not every_type
            and (kind.get("primary") if isinstance(kind, dict) else kind) != "article"
        ):
            continue
        url = data.get("url") or f"http://{path.stem}.wcxb.invalid/"
        site = (urlsplit(url).hostname or path.stem).removeprefix("www.")
        if half is not None and site_half(site, half[1]) != half[0]:
            continue
        body = gzip.decompress((root / "dev" / "html" / f"{path.stem}.html.gz").read_bytes())
        truth = (data.get("ground_truth") or {}).get("main_content") or ""
        cases.append(("wcxb-all" if every_type else "wcxb", path.stem, decode(body, url), truth))
    return cases


def tokenize(text: str) -> list[str]:
    """Lowercased ``\\w+`` tokens, one per CJK character."""
    return _TOKEN.findall(text.lower())


def shingle_match(true: str, pred: str, n: int = 4) -> tuple[float, float, float]:
    """Normalised (tp, fp, fn) of n-gram shingles, as aeb's ``string_shingle_matching``."""
    true_counts, pred_counts = _shingles(true, n), _shingles(pred, n)
    tp = fp = fn = 0.0
    for key in true_counts.keys() | pred_counts.keys():
        t, p = true_counts.get(key, 0), pred_counts.get(key, 0)
        tp += min(t, p)
        fp += max(0, p - t)
        fn += max(0, t - p)
    total = tp + fp + fn
    if total > 0:
        return tp / total, fp / total, fn / total
    return tp, fp, fn


def word_f1(true: str, pred: str) -> float:
    """WCXB's per-page word F1 (its ``evaluate.py``: lowercased ``\\w+`` words, multiset)."""
    ref, got = Counter(re.findall(r"\w+", true.lower())), Counter(re.findall(r"\w+", pred.lower()))
    if not ref or not got:
        return float(not ref and not got)
    overlap = sum((ref & got).values())
    return 2 * overlap / (ref.total() + got.total())


def _shingles(text: str, n: int) -> Counter[tuple[str, ...]]:
    tokens = tokenize(text)
    return Counter(
        shingle
        for i in range(max(1, len(tokens) - n + 1))
        if (shingle := tuple(tokens[i : i + n]))
    )


def _precision(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    if tp == fp == 0:
        return 0.0
    return tp / (tp + fp)


def _recall(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    if tp == fn == 0:
        return 0.0
    return tp / (tp + fn)


def score(matches: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """(precision, recall, F1) over pages, as aeb's ``metrics_from_tp_fp_fns``."""
    precisions = [_precision(*m) for m in matches if m[0] + m[1] > 0]
    recalls = [_recall(*m) for m in matches if m[0] + m[2] > 0]
    precision = statistics.mean(precisions) if precisions else 0.0
    recall = statistics.mean(recalls) if recalls else 0.0
    if precision + recall == 0:
        return precision, recall, 0.0
    return precision, recall, 2 * precision * recall / (precision + recall)


def readability_text_content(html: str) -> str:
    """Baseline: readability's summary, then lxml ``text_content()`` (glues blocks)."""
    try:
        summary = Document(html).summary(html_partial=True)
        return lxml.html.fromstring(summary).text_content()
    except Exception:
        return ""


def visible_text(html: str) -> str:
    """Baseline: all text of the body outside script/style (no extraction)."""
    try:
        root = lxml.html.fromstring(html.encode("utf-8", "replace"), parser=_UTF8)
    except Exception:
        return ""
    texts = root.xpath("//body//text()[not(ancestor::script or ancestor::style)]")
    return "\n".join(t.strip() for t in texts if t.strip())


def without_tail_cut(html: str) -> str:
    """nearDupe's extractor before the tail rule (nearDupe.texttail), for a side-by-side run."""
    cut, texttail_module.cut_tail = texttail_module.cut_tail, lambda lines: lines
    try:
        return extract_main_text(html)
    finally:
        texttail_module.cut_tail = cut


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "nearDupe extract_main_text": extract_main_text,
    "nearDupe, no tail cut": without_tail_cut,
    "readability + text_content": readability_text_content,
    "all visible text": visible_text,
}


def evaluate(cases: list[Case], extractors: dict[str, Callable[[str], str]]) -> dict:
    """Per extractor and set, per page (id, (tp, fp, fn), word F1, ms, prediction); the
    extractors take turns on each page, so that their times are measured side by side."""
    out: dict[str, dict[str, list]] = {name: {} for name in extractors}
    for lang, page_id, html, truth in cases:
        for name, extract in extractors.items():
            start = time.perf_counter()
            pred = extract(html)
            ms = (time.perf_counter() - start) * 1000
            page = (page_id, shingle_match(truth, pred), word_f1(truth, pred), ms, pred)
            out[name].setdefault(lang, []).append(page)
    return out


def page_f1(match: tuple[float, float, float]) -> float:
    """One page's F1 from its (tp, fp, fn)."""
    precision, recall = _precision(*match), _recall(*match)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def main() -> None:
    """Print the comparison table (and, with --worst N, the worst pages of our extractor)."""
    parser = arguments(__doc__)
    parser.add_argument("--worst", type=int, default=0, help="list our N worst pages per set")
    parser.add_argument("--only", help="evaluate only extractors whose name contains this")
    parser.add_argument(
        "--half", choices=["held-out", "tune"], help="only this half of the sites (see --seed)"
    )
    parser.add_argument("--seed", type=int, default=1, help="the split of the sites (--half)")
    parser.add_argument("--sets", default="en,zh,wcxb", help="which sets (en, zh, wcxb, wcxb-all)")
    args = parser.parse_args()
    half = (args.half, args.seed) if args.half else None
    cases = load_extraction_cases(half=half, sets=tuple(args.sets.split(",")))
    print(f"{len(cases)} pages from {data_dir()}" + (f", {args.half} half of the sites "
          f"(split {args.seed})" if args.half else ""))  # fmt: skip
    table = Table(
        Column("extractor", 28),
        Column("set", 8, left=True),
        Column("pages", 5, "d"),
        *(Column(name, 6, ".3f") for name in ("P", "R", "F1", "wF1")),
        Column("median ms", 9, ".1f"),
        Column("mean ms", 8, ".1f"),
        Column("worst page (F1)", 22, left=True),
    )
    table.heading()
    chosen = {k: f for k, f in EXTRACTORS.items() if not args.only or args.only in k}
    for name, sets in evaluate(cases, chosen).items():
        for lang, pages in sets.items():
            p, r, f1 = score([x[1] for x in pages])
            worst = min(pages, key=lambda x: page_f1(x[1]))
            times = [x[3] for x in pages]
            table.row(
                name, lang, len(pages), p, r, f1,
                statistics.mean(x[2] for x in pages), statistics.median(times),
                statistics.mean(times), f"{worst[0][:16]} ({page_f1(worst[1]):.2f})",
            )  # fmt: skip
            if name != next(iter(chosen)):
                continue
            for page_id, match, wf1, _, pred in sorted(pages, key=lambda x: page_f1(x[1]))[
                : args.worst
            ]:
                print(f"  {lang} {page_id[:16]} P={_precision(*match):.2f} "
                      f"R={_recall(*match):.2f} wF1={wf1:.2f} {pred[:80]!r}")  # fmt: skip


if __name__ == "__main__":
    main()
