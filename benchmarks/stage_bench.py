"""CPU milliseconds per real page of each stage a worker runs on it: extraction, site template,
fingerprint, sentences.

Pages: aeb (English), zh-extract (Chinese) and WCXB dev (every type), decoded as the plugin
decodes them, in the order of each set. Each set is read as one site: its template is learned
from the pages analysed before (nearDupe.store.sites.learned, as the index learns a decided
page), so that the template stage looks up a site's full book of lines. Stages:

- extraction: nearDupe.text.extract_main_text of the page cut to the size limit;
- site template: the page's headings and headline (sitetemplate.headings_of, site_headline),
  its story's identity and its text without its site's lines (strip_template);
- fingerprint: simhash and signature of the stripped text (simhash.fingerprint_and_signature);
- sentences: the sentence or shingle hashes of the stripped text (shorttext.sentences).

Run ``python benchmarks/stage_bench.py [--sets en,zh,wcxb-all] [--limit N]``; data from
``../shared/data`` (or $NEARDUPE_DATA). Prints median, mean and p90 per stage and set, and the
share of each stage in the total.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from crawl_bench import load_average
from extraction_eval import load_extraction_cases

from nearDupe.features import FeatureSettings
from nearDupe.shorttext import sentences
from nearDupe.simhash import fingerprint_and_signature
from nearDupe.sitetemplate import (
    SiteTemplate,
    Stripped,
    headings_of,
    identity_of,
    site_headline,
    strip_template,
)
from nearDupe.store.sites import learned
from nearDupe.text import DEFAULT_MAX_CHARS, extract_main_text, within_limit

STAGES = ("extraction", "site template", "fingerprint", "sentences")
T = TypeVar("T")


def cpu_ms(fn: Callable[[], T]) -> tuple[float, T]:
    """CPU milliseconds of one call, and its result."""
    start = time.process_time()
    result = fn()
    return (time.process_time() - start) * 1000, result


def page_stages(
    html: str, url: str, site: SiteTemplate, features: FeatureSettings
) -> tuple[list[float], int, tuple[int, ...]]:
    """CPU ms of each of STAGES on one page; its identity and lines (for its site to learn)."""

    def extract() -> str:
        return extract_main_text(within_limit(html, DEFAULT_MAX_CHARS))

    def template() -> tuple[int, Stripped]:
        headline, _, _ = site_headline(headings_of(html), site)
        identity = identity_of(headline, url)
        return identity, strip_template(text.strip(), identity, site, headline)

    extraction, text = cpu_ms(extract)
    templating, (identity, stripped) = cpu_ms(template)
    own = stripped.text.strip()
    fingerprinting, _ = cpu_ms(lambda: fingerprint_and_signature(own, features) if own else None)
    sentencing, _ = cpu_ms(lambda: sentences(own) if own else ())
    return [extraction, templating, fingerprinting, sentencing], identity, stripped.lines


def main() -> None:
    """Analyse every page stage by stage; print each stage's figures per set."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="en,zh,wcxb-all", help="en, zh, wcxb, wcxb-all")
    parser.add_argument("--limit", type=int, default=0, help="pages per set (0: all)")
    args = parser.parse_args()
    cases = load_extraction_cases(sets=tuple(args.sets.split(",")))
    features = FeatureSettings()
    extract_main_text("<p>warm up</p>")
    fingerprint_and_signature("warm up 热身 " * 20, features)  # loads IDF tables and jieba
    books: dict[str, dict[int, tuple[int, ...]]] = {}
    rows: dict[str, list[list[float]]] = {}
    for lang, page_id, html, _truth in cases:
        if args.limit and len(rows.get(lang, ())) >= args.limit:
            continue
        book = books.setdefault(lang, {})
        url = f"http://{lang}.example/{page_id}"
        ms, identity, lines = page_stages(html, url, SiteTemplate(dict(book)), features)
        books[lang] = learned(book, identity, lines)
        rows.setdefault(lang, []).append(ms)
    print(f"CPU ms per page ({time.strftime('%Y-%m-%d %H:%M')}, load {load_average()})")
    print(f"{'set':<10}{'stage':<15}{'median':>8}{'mean':>8}{'p90':>8}{'share':>7}")
    for lang, pages in rows.items():
        totals = [sum(page) for page in pages]
        for i, stage in enumerate((*STAGES, "total")):
            values = totals if stage == "total" else [page[i] for page in pages]
            p90 = statistics.quantiles(values, n=10)[-1]
            share = sum(values) / sum(totals)
            print(
                f"{lang:<10}{stage:<15}{statistics.median(values):8.2f}"
                f"{statistics.mean(values):8.2f}{p90:8.2f}{share:7.0%}"
            )
        print(f"{'':<10}({len(pages)} pages)")


if __name__ == "__main__":
    main()
