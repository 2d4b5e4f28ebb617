"""Detection quality on templates of sites held out of tuning: the honest figure.

The sites whose real pages serve as templates (aeb: by URL host; zh-extract: each page) are
split in two halves by a seeded hash; the cases of ``quality_eval.py`` are built on the
held-out half only (or the tuning half, to compare), and the plugin's own rules are scored
at the embedded and the Redis defaults. For each split seed it prints precision and recall
per language, and the mean and the worst recall over templates (templates with at least
MIN_PAIRS copy pairs), naming the worst.

Run from the repository root: ``python benchmarks/heldout_eval.py [--seeds 1 2 3]
[--half held-out|tune] [--quick]``. Data: ``../shared/data`` (``NEARDUPE_DATA``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import data_dir
from _quality_cases import build_cases, split_arguments
from quality_eval import CURRENT_POLICY, Evaluation, run_pool

from nearDupe._settings import DEFAULT_CONFIRM_K, DEFAULT_K
from nearDupe.simhash import fingerprint_and_signature
from nearDupe.text import extract_main_text

#: Templates with fewer copy pairs than this are left out of the worst-template figure.
MIN_PAIRS = 3
#: The defaults scored: (name, k, confirm_k).
DEFAULTS = (
    ("default", DEFAULT_K, DEFAULT_CONFIRM_K),
    ("k10", 10, 22),
    ("Redis k6", 6, 20),
)


def analyze(html: str) -> tuple[str, int, int]:
    """A page's main text, fingerprint and signature, as the plugin makes them."""
    text = extract_main_text(html)
    both = fingerprint_and_signature(text)
    fp, sig = both if both is not None else (0, 0)
    return text, fp, sig


def per_template_recall(ev: Evaluation, caught: np.ndarray, lang: str) -> dict[str, float]:
    """Recall of the copy pairs that have a page in each template (of one language)."""
    hits: dict[str, list[bool]] = defaultdict(list)
    pages = ev.cases.pages
    for (a, b), ok in zip(ev.pairs["pos"], caught, strict=True):
        if pages[a].lang != lang:
            continue
        for template in {pages[a].template, pages[b].template}:
            hits[template].append(bool(ok))
    return {t: sum(h) / len(h) for t, h in hits.items() if len(h) >= MIN_PAIRS}


def main() -> None:
    """Build the cases per split seed and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    split_arguments(parser)
    args = parser.parse_args()
    root = data_dir()
    started = time.perf_counter()
    print(f"# Detection quality on the {args.half} half of the sites\n")
    print(
        "| split seed | backend | EN P / R | ZH P / R | EN recall per template: mean / worst "
        "| ZH recall per template: mean / worst | worst templates |"
    )
    print("|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        cases = build_cases(root, quick=args.quick, half=(args.half, seed))
        results = run_pool(analyze, [p.html for p in cases.pages], args.workers)
        texts = [r[0] for r in results]
        fps = np.array([[r[1]] for r in results], dtype=np.uint64)
        sigs = np.array([r[2] for r in results], dtype=np.uint64)
        ev = Evaluation(cases, texts, fps, sigs)
        for name, k, confirm_k in DEFAULTS:
            table = ev.table(0, k, CURRENT_POLICY, confirm_k)
            caught = ev.judged("pos", 0, k, CURRENT_POLICY, confirm_k)
            cells, worst = [], []
            for lang in ("en", "zh"):
                recall = per_template_recall(ev, caught, lang)
                low = min(recall, key=recall.__getitem__)
                cells.append(f"{np.mean(list(recall.values())):.3f} / {recall[low]:.3f}")
                worst.append(f"{low[:16]} ({recall[low]:.2f})")
            pr = [f"{table[lang][0]:.3f} / {table[lang][1]:.3f}" for lang in ("en", "zh")]
            print(f"| {seed} | {name} (k={k}) | {' | '.join(pr)} | {' | '.join(cells)} "
                  f"| {', '.join(worst)} |")  # fmt: skip
        templates = len({p.template for p in cases.pages})
        print(
            f"<!-- seed {seed}: {len(cases.pages)} pages, {templates} templates, "
            f"{len(cases.positives)} copy pairs, {len(cases.negatives)} different-article "
            "pairs -->"
        )
    print(f"\nTotal {time.perf_counter() - started:.0f} s.")


if __name__ == "__main__":
    main()
