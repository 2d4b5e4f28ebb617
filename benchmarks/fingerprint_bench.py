"""Milliseconds per page to fingerprint real main text, English and Chinese, by stage.

Stages: tokenizing (features.tokenize), weighting (extract_features minus tokenize) and hashing
(simhash of the features). Also the first-call cost (jieba dictionary, IDF tables).
Text is read from the shared data directory (never copied into the repo):
``<repo>/../shared/data`` or $NEARDUPE_DATA.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _data import data_dir
from _harness import Column, Table, arguments, p50_p99


def english_pages(root: Path) -> list[str]:
    """aeb ground-truth article bodies."""
    with open(root / "aeb" / "ground-truth.json", encoding="utf-8") as f:
        truth = json.load(f)
    return [v["articleBody"] for v in truth.values() if v.get("articleBody", "").strip()]


def chinese_pages(root: Path) -> list[str]:
    """zh-extract cleaned texts plus THUCNews sample articles (label<TAB>text)."""
    pages = [
        p.read_text(encoding="utf-8") for p in sorted((root / "zh-extract/cleaned").glob("*.txt"))
    ]
    with open(root / "thucnews" / "cnews.sample.txt", encoding="utf-8") as f:
        pages += [line.split("\t", 1)[1] for line in f if "\t" in line]
    return [p for p in pages if p.strip()]


def first_call_costs() -> list[tuple[str, float]]:
    """Seconds of each lazy load, in the order a first page triggers them."""
    from nearDupe import chinese, features

    def jiebas_own() -> None:
        import jieba
        from jieba.analyse import default_tfidf

        jieba.setLogLevel(60)
        jieba.initialize()
        assert default_tfidf.idf_freq

    costs = []
    for name, fn in [
        ("jieba's dictionary + IDF as cached arrays, and its HMM", chinese.load),
        ("  the same from jieba itself, beside it (not used)", jiebas_own),
        ("English IDF table (shipped wordfreq list) -> dict", features._english_idf),
    ]:
        t = time.perf_counter()
        fn()
        costs.append((name, time.perf_counter() - t))
    t = time.perf_counter()
    from nearDupe.simhash import fingerprint

    fingerprint("warm up 热身")
    costs.append(("first fingerprint after the loads", time.perf_counter() - t))
    return costs


def segmentation_beside_jieba(pages: list[str]) -> str:
    """nearDupe.chinese.cut against jieba.lcut on the same pages, alternated: words that
    differ, and seconds of each."""
    import jieba

    from nearDupe import chinese

    ours = theirs = 0.0
    differ = 0
    for text in pages:
        t = time.perf_counter()
        mine = chinese.cut(text)
        t1 = time.perf_counter()
        differ += mine != jieba.lcut(text, HMM=True)
        ours, theirs = ours + t1 - t, theirs + time.perf_counter() - t1
    return (
        f"{len(pages)} pages cut as jieba cuts them: {len(pages) - differ} "
        f"({differ} differ); {ours:.2f} s, jieba {theirs:.2f} s ({ours / theirs:.2f}x)"
    )


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """Seconds and result of one call."""
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


def bench(pages: list[str], repeat: int) -> dict[str, np.ndarray]:
    """Per-page milliseconds of each stage (fastest of `repeat` passes per page)."""
    from nearDupe.features import FeatureSettings, extract_features, tokenize_lines
    from nearDupe.simhash import fingerprint_and_signature, simhash

    settings = FeatureSettings()
    rows: dict[str, list[float]] = {
        "tokenize": [],
        "weight": [],
        "hash": [],
        "signature": [],  # word pairs: weights and hash of the confirmation signature
        "total": [],
    }
    for text in pages:
        t_tok = t_feat = t_hash = t_all = float("inf")
        for _ in range(repeat):  # fastest of each call, then the stages derived from them
            t_tok = min(t_tok, timed(lambda text=text: tokenize_lines(text))[0])
            t, (feats, weights) = timed(lambda text=text: extract_features(text, settings))
            t_feat = min(t_feat, t)
            t_hash = min(t_hash, timed(lambda f=feats, w=weights: simhash(f, w))[0])
            both = timed(lambda text=text: fingerprint_and_signature(text, settings))[0]
            t_all = min(t_all, both)
        fingerprint_only = t_feat + t_hash
        stages = [t_tok, max(t_feat - t_tok, 0.0), t_hash, max(t_all - fingerprint_only, 0.0)]
        stages.append(max(t_all, fingerprint_only))
        for key, value in zip(rows, stages, strict=True):
            rows[key].append(value * 1e3)
    return {k: np.array(v) for k, v in rows.items()}


def report(name: str, pages: list[str], ms: dict[str, np.ndarray]) -> None:
    """One table: stage, mean, median, p99 ms per page, share of the total."""
    chars = np.array([len(p) for p in pages])
    print(
        f"\n=== {name}: {len(pages)} pages, median {int(np.median(chars)):,} chars "
        f"(mean {int(chars.mean()):,}) ==="
    )
    table = Table(
        Column("stage", 11),
        Column("mean ms", 9, ".3f"),
        Column("median ms", 10, ".3f"),
        Column("p99 ms", 9, ".3f"),
        Column("share", 7, ".0%"),
    )
    table.heading()
    total = ms["total"].mean()
    for stage, values in ms.items():
        median, p99 = p50_p99(values)
        table.row(stage, values.mean(), median, p99, values.mean() / total)
    per_kchar = ms["total"].sum() / (chars.sum() / 1000)
    print(f"throughput: {1000 / total:,.0f} pages/s, {per_kchar:.3f} ms per 1,000 chars")


def main() -> None:
    """Load the data, measure first-call costs, then each language's stages."""
    ap = arguments(__doc__)
    ap.add_argument("--limit", type=int, default=0, help="pages per language (0 = all)")
    ap.add_argument("--repeat", type=int, default=3, help="passes per page (fastest kept)")
    args = ap.parse_args()
    root = data_dir()
    if not root.is_dir():
        sys.exit(f"no data directory {root}; set NEARDUPE_DATA")
    print(f"data: {root}")
    t0 = time.perf_counter()
    import nearDupe.simhash  # noqa: F401 - the import itself is a first-call cost

    print(f"\nfirst-call costs (import nearDupe.simhash: {time.perf_counter() - t0:.3f} s)")
    for name, seconds in first_call_costs():
        print(f"  {name:<52}{seconds:>8.3f} s")
    print(f"\nChinese segmentation: {segmentation_beside_jieba(chinese_pages(root))}")
    for name, loader in [("English (aeb articleBody)", english_pages),
                         ("Chinese (zh-extract + THUCNews)", chinese_pages)]:  # fmt: skip
        pages = loader(root)
        if args.limit:
            pages = pages[: args.limit]
        report(name, pages, bench(pages, args.repeat))


if __name__ == "__main__":
    main()
