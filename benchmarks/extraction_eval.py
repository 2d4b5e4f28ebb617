"""Main-content extraction quality and speed on real pages (aeb English, zh-extract Chinese).

Run ``python benchmarks/extraction_eval.py``. Data is read from ``../shared/data`` next to the
repository (override with the ``NEARDUPE_DATA`` environment variable), never copied here.

Scoring reproduces the article-extraction-benchmark (scrapinghub) ``evaluate.py`` metric:
per page, true/false positives and false negatives of 4-gram shingles of ``\\w+`` tokens,
normalised to sum to 1; precision averaged over pages with a prediction, recall over pages
with a ground truth; F1 from the averaged precision and recall. Tokens are lowercased, and each
CJK character is its own token so that Chinese text gets meaningful shingles.
"""

from __future__ import annotations

import argparse
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
from _quality_cases import site_half

from nearDupe.text import extract_main_text

Case = tuple[str, str, str, str]

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
_TOKEN = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])\w)+")
_UTF8 = lxml.html.HTMLParser(encoding="utf-8")


def load_extraction_cases(
    root: Path | None = None, half: tuple[str, int] | None = None
) -> list[Case]:
    """All (lang, id, decoded html, ground-truth text) cases, English first; with ``half``
    ("held-out" or "tune", split seed), only the pages of that half of the sites (aeb: by
    URL host; zh-extract pages carry no URL: each is a site of its own)."""
    root = root or data_dir()
    cases: list[Case] = []
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


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "nearDupe extract_main_text": extract_main_text,
    "readability + text_content": readability_text_content,
    "all visible text": visible_text,
}


def evaluate(
    cases: list[Case], extract: Callable[[str], str]
) -> tuple[dict[str, tuple[float, float, float]], list[float], dict[str, list]]:
    """Scores per language, ms per page, and per-page (id, P, R, prediction) for inspection."""
    matches: dict[str, list[tuple[float, float, float]]] = {}
    pages: dict[str, list] = {}
    times: list[float] = []
    for lang, page_id, html, truth in cases:
        start = time.perf_counter()
        pred = extract(html)
        times.append((time.perf_counter() - start) * 1000)
        match = shingle_match(truth, pred)
        matches.setdefault(lang, []).append(match)
        pages.setdefault(lang, []).append((page_id, _precision(*match), _recall(*match), pred))
    return {lang: score(m) for lang, m in matches.items()}, times, pages


def main() -> None:
    """Print the comparison table (and, with --worst N, the worst pages of our extractor)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worst", type=int, default=0, help="list our N worst pages per set")
    parser.add_argument("--only", help="evaluate only extractors whose name contains this")
    parser.add_argument(
        "--half", choices=["held-out", "tune"], help="only this half of the sites (see --seed)"
    )
    parser.add_argument("--seed", type=int, default=1, help="the split of the sites (--half)")
    args = parser.parse_args()
    cases = load_extraction_cases(half=(args.half, args.seed) if args.half else None)
    print(f"{len(cases)} pages from {data_dir()}" + (f", {args.half} half of the sites "
          f"(split {args.seed})" if args.half else ""))  # fmt: skip
    header = f"{'extractor':<28} {'EN P':>6} {'EN R':>6} {'EN F1':>6}  "
    header += f"{'ZH P':>6} {'ZH R':>6} {'ZH F1':>6}  {'median ms':>9} {'mean ms':>8}"
    print(header)
    ours_pages: dict[str, list] = {}
    for name, extract in EXTRACTORS.items():
        if args.only and args.only not in name:
            continue
        scores, times, pages = evaluate(cases, extract)
        if extract is extract_main_text:
            ours_pages = pages
        en, zh = scores.get("en", (0, 0, 0)), scores.get("zh", (0, 0, 0))
        print(
            f"{name:<28} {en[0]:6.3f} {en[1]:6.3f} {en[2]:6.3f}  "
            f"{zh[0]:6.3f} {zh[1]:6.3f} {zh[2]:6.3f}  "
            f"{statistics.median(times):9.1f} {statistics.mean(times):8.1f}"
        )
    for lang, pages in ours_pages.items():
        worst = sorted(pages, key=lambda p: min(p[1], p[2]))[: args.worst]
        for page_id, precision, recall, pred in worst:
            print(f"{lang} {page_id[:16]} P={precision:.2f} R={recall:.2f} {pred[:80]!r}")


if __name__ == "__main__":
    main()
