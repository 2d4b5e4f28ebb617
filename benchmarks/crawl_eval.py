"""Detection quality of a crawl over held-out templates, with and without site templates learned.

The cases of ``quality_eval.py`` (real articles placed into real page templates, with
syndication edits) are built on the held-out half of the template sites (``heldout_eval.py``'s
split). Each template is a site. The pages are crawled in a seeded random order through the
plugin's own path: main text (extracted once per page), the site's template lines as learned
so far, fingerprint, a real embedded index at each default's k and confirmation, and the
page's lines learned when it is kept. ``--by-site`` crawls each site's pages together and
``--in-flight N`` analyses N pages ahead of their decision, as a real crawl meets a new site
(``--no-recheck``: a young site's pages never analysed again at their decision, as before).
Scored per page, as a crawl's user sees it:

* a drop is right when the page it names is the same article; precision = right / all drops;
* recall = drops among the pages whose article was already stored when they came;
* unique articles lost: pages dropped while no page of their article was stored;
* ``template-text``: pages kept unfingerprinted because their text was their site's.

Printed per split seed and backend: P / R per language, the worst template's recall beside the
mean (templates with at least MIN_PAGES such pages), the losses at distance 0, and, for the
first pages of each site, the share of their letters left out as template (how fast a site is
learned). ``--no-learning`` scores the same crawl with nothing learned (the rules before).

Run from the repository root: ``python benchmarks/crawl_eval.py [--seeds 1 2 3]
[--half held-out|tune] [--quick] [--by-site --in-flight 16]``. Data: ``../shared/data``
(``NEARDUPE_DATA``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _data import data_dir
from _quality_cases import build_cases, split_arguments
from quality_eval import run_pool

from nearDupe import sitetemplate
from nearDupe._settings import DEFAULT_CONFIRM_K, DEFAULT_K
from nearDupe.analysis import Analysis, analyze_page
from nearDupe.designs import Design
from nearDupe.features import FeatureSettings
from nearDupe.shorttext import SENTENCE_PAGE_LETTERS, Sentences, letters, normalize
from nearDupe.sitetemplate import SiteTemplate, headline_of, identity_of, strip_template
from nearDupe.store import EmbeddedIndex, IndexHeader, base
from nearDupe.store.sites import learned
from nearDupe.text import extract_main_text

#: Templates with fewer pages that should be dropped are left out of the worst-template figure.
MIN_PAGES = 3
#: The rules scored: name -> (k, confirm_k, design, sentences of every page). ``default`` is
#: the plugin's (k=3, 4-table, sentences of every page, long pages recorded under a sample);
#: ``k10`` and ``Redis-k6`` are the defaults before it, with sentences of short pages only.
RULES = {
    "default": (DEFAULT_K, DEFAULT_CONFIRM_K, Design.default_for(DEFAULT_K).name, True),
    "k10": (10, 22, "blocks-10-11", False),
    "Redis-k6": (6, 20, "blocks-6-8", False),
    "k10+sentences": (10, 22, "blocks-10-11", True),
}
#: The first this many pages of a site are reported one by one (learning curve).
FIRST_PAGES = 5


def extract(html: str) -> tuple[str, str]:
    """A page's main text and headline, as the plugin's workers find them."""
    return extract_main_text(html), headline_of(html)


@dataclass
class Tally:
    """What one crawl did, per language and per template."""

    drops: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    right: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    due: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    caught: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    lost_at_0: int = 0
    lost: int = 0
    template_text: int = 0
    #: Pages analysed again at their decision (their young site taught more meanwhile).
    rechecked: int = 0
    per_template: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    #: i-th page of a site -> shares of its letters left out as template.
    curve: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))


def judged_sentences(analysis: Analysis, every_page: bool) -> Sentences:
    """The sentences a rule judges a page by: all, or (the rules before sentence evidence for
    every page) those of a page under SENTENCE_PAGE_LETTERS sentence letters."""
    if every_page or letters(analysis.sentences) < SENTENCE_PAGE_LETTERS:
        return analysis.sentences
    return ()


@contextmanager
def opened(header: IndexHeader, redis_url: str | None) -> Iterator[Callable[..., Any]]:
    """check_and_add of a fresh index: embedded, or in the Redis at ``redis_url`` (an index
    of its own name)."""
    if redis_url is None:
        with (
            tempfile.TemporaryDirectory() as tmp,
            EmbeddedIndex(Path(tmp) / "index", header, commit_interval=3600) as index,
        ):
            yield index.check_and_add
        return
    from nearDupe.store.redis import RedisStore

    loop = asyncio.new_event_loop()
    store = RedisStore.from_url(redis_url, header, name=f"eval{os.urandom(4).hex()}")
    try:
        yield lambda *args: loop.run_until_complete(store.check_and_add(*args))
    finally:
        loop.run_until_complete(store.close())
        loop.close()


def by_site(order: list[int], cases, seed: int) -> list[int]:
    """``order`` regrouped as a crawl meets sites: each site's pages together, the sites in a
    seeded random order."""
    pages: dict[str, list[int]] = defaultdict(list)
    for i in order:
        pages[cases.pages[i].template].append(i)
    sites = list(pages)
    random.Random(seed).shuffle(sites)
    return [i for site in sites for i in pages[site]]


def crawl(
    cases,
    texts,
    headlines,
    order,
    rule,
    learn: bool,
    redis_url: str | None,
    in_flight: int = 0,
    recheck: bool = True,
) -> Tally:
    """Crawl the pages in ``order`` through a fresh index; score every decision.

    ``in_flight`` pages are analysed ahead of their decision (with what their site had taught
    by then), as a crawl's concurrent responses are; a young site's page is analysed again at
    its decision when its site taught more of its lines meanwhile, unless ``recheck`` is off.
    """
    k, confirm_k, design, every_page = rule
    pages = cases.pages
    tally = Tally()
    books: dict[str, dict[int, tuple[int, ...]]] = defaultdict(dict)
    seen_in_site: dict[str, int] = defaultdict(int)
    stored_articles: set[str] = set()
    article_of: dict[str, str] = {}
    site_of_url: dict[str, str] = {}
    features = FeatureSettings()
    header = IndexHeader.for_settings(design, k, features, confirm_k)

    def template_of(site: str) -> SiteTemplate:
        return SiteTemplate(dict(books[site])) if learn else SiteTemplate()

    def analysed() -> Iterator[tuple[int, SiteTemplate, Analysis]]:
        waiting: deque[tuple[int, SiteTemplate, Analysis]] = deque()
        for i in order:
            template = template_of(pages[i].template)
            identity = identity_of(headlines[i], f"http://{i}/")
            analysis = analyze_page(
                texts[i], pages[i].html, 200, features, template, identity, headlines[i]
            )
            waiting.append((i, template, analysis))
            if len(waiting) > in_flight:
                yield waiting.popleft()
        yield from waiting

    with opened(header, redis_url) as check_and_add:
        for i, template, analysis in analysed():
            page = pages[i]
            site = page.template
            url = f"http://{i}/"
            identity = analysis.identity
            now = template_of(site)
            if recheck and analysis.recheck is not None and analysis.outdated(now):
                tally.rechecked += 1
                again = analysis.recheck
                analysis = analyze_page(
                    again.text, again.html, 200, features, now, identity, again.headline
                )
                template = now
            n = seen_in_site[site]
            seen_in_site[site] += 1
            if n < FIRST_PAGES:
                total = len(normalize(texts[i], digits=False)) or 1
                left = len(
                    normalize(
                        strip_template(texts[i], identity, template, headlines[i]).text,
                        digits=False,
                    )
                )
                tally.curve[n].append(1 - left / total)
            lang = page.lang
            due = page.article in stored_articles
            if analysis.skip_reason == "template-text":
                tally.template_text += 1
                if learn:
                    learned(books[site], analysis.identity, analysis.lines)
            if due:
                tally.due[lang] += 1
            if analysis.fingerprint is None:
                if due:
                    tally.per_template[site].append(False)
                continue
            match = check_and_add(
                analysis.fingerprint,
                url,
                analysis.signature,
                judged_sentences(analysis, every_page),
            )
            if match is None:
                stored_articles.add(page.article)
                article_of[url] = page.article
                site_of_url[url] = site
                if due:
                    tally.per_template[site].append(False)
                if learn:
                    learned(books[site], analysis.identity, analysis.lines)
                continue
            if site_of_url[match.key] == site and analysis.became_template(template_of(site)):
                tally.template_text += 1  # as the pipeline: its site taught its lines meanwhile
                if due:
                    tally.per_template[site].append(False)
                if learn:
                    learned(books[site], analysis.identity, analysis.lines)
                continue
            tally.drops[lang] += 1
            same = article_of[match.key] == page.article
            tally.right[lang] += same
            if due:
                tally.caught[lang] += same
                tally.per_template[site].append(same)
            if not same:
                tally.lost += 1
                tally.lost_at_0 += match.distance == 0
    return tally


def main() -> None:
    """Build the cases per split seed, crawl them per backend default, print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    split_arguments(parser)
    parser.add_argument("--no-learning", action="store_true", help="nothing learned")
    parser.add_argument(
        "--modern", action="store_true", help="add WCXB's article templates (modern sites)"
    )
    parser.add_argument(
        "--site-pages", type=int, default=6, help="more articles per template (a site's depth)"
    )
    parser.add_argument("--template-pages", type=int, help="tune sitetemplate.TEMPLATE_PAGES")
    parser.add_argument("--rules", nargs="+", choices=list(RULES), default=["default", "k10"])
    parser.add_argument("--redis", action="store_true", help="a Redis index (started here)")
    parser.add_argument(
        "--in-flight", type=int, default=0, help="pages analysed ahead of their decision"
    )
    parser.add_argument(
        "--by-site", action="store_true", help="each site's pages together, as a crawl meets them"
    )
    parser.add_argument(
        "--no-recheck", action="store_true", help="pages analysed once, never again"
    )
    parser.add_argument(
        "--sample", type=int, help="sentences a long page is recorded under (0: all)"
    )
    args = parser.parse_args()
    with ExitStack() as stack:
        redis_url = None
        if args.redis:
            from redis_server import RedisServer

            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            redis_url = stack.enter_context(RedisServer(tmp / "redis")).url
        run(args, redis_url)


def run(args: argparse.Namespace, redis_url: str | None) -> None:
    """Crawl and print (see main)."""
    if args.template_pages is not None:
        sitetemplate.TEMPLATE_PAGES = args.template_pages
    if args.sample is not None:
        base.SAMPLE_SENTENCES = args.sample or 10**9
    root = data_dir()
    started = time.perf_counter()
    modes = [False] if args.no_learning else [False, True]
    backend = ", Redis" if redis_url else ""
    crawl_order = "each site's pages together" if args.by_site else "pages in a random order"
    print(
        f"# A crawl of the {args.half} half of the template sites: {crawl_order}, "
        f"{args.in_flight} analysed ahead of their decision"
        f"{', never analysed again' if args.no_recheck else ''}\n"
    )
    print(
        "| split seed | backend | sites learned | EN P / R | ZH P / R | EN R per template: "
        "mean / worst | ZH R per template: mean / worst | lost (at distance 0) | template-text "
        "| analysed again |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    curves: dict[int, list[float]] = defaultdict(list)
    for seed in args.seeds:
        cases = build_cases(
            root,
            quick=args.quick,
            half=(args.half, seed),
            modern=args.modern,
            site_pages=args.site_pages,
        )
        extracted = run_pool(extract, [p.html for p in cases.pages], args.workers)
        texts = [t for t, _ in extracted]
        headlines = [headline for _, headline in extracted]
        order = list(range(len(cases.pages)))
        random.Random(seed).shuffle(order)
        if args.by_site:
            order = by_site(order, cases, seed)
        for name in args.rules:
            k = RULES[name][0]
            for learn in modes:
                t = crawl(
                    cases,
                    texts,
                    headlines,
                    order,
                    RULES[name],
                    learn,
                    redis_url,
                    args.in_flight,
                    not args.no_recheck,
                )
                cells = []
                for lang in ("en", "zh"):
                    p = t.right[lang] / t.drops[lang] if t.drops[lang] else 1.0
                    r = t.caught[lang] / t.due[lang] if t.due[lang] else 1.0
                    cells.append(f"{p:.3f} / {r:.3f}")
                for lang in ("en", "zh"):
                    recall = {
                        site: sum(hits) / len(hits)
                        for site, hits in t.per_template.items()
                        if len(hits) >= MIN_PAGES and cases_lang(cases, site) == lang
                    }
                    low = min(recall.values()) if recall else 1.0
                    mean = sum(recall.values()) / len(recall) if recall else 1.0
                    cells.append(f"{mean:.3f} / {low:.3f}")
                print(
                    f"| {seed} | {name} (k={k}){backend} | {'yes' if learn else 'no'} | "
                    f"{' | '.join(cells)} | {t.lost} ({t.lost_at_0}) | {t.template_text} | "
                    f"{t.rechecked} |"
                )
                if learn:
                    for n, shares in t.curve.items():
                        curves[n].extend(shares)
        print(f"<!-- seed {seed}: {len(cases.pages)} pages, "
              f"{len({p.template for p in cases.pages})} templates -->")  # fmt: skip
    if curves:
        print("\nShare of a site's n-th page left out as its template (mean over sites):\n")
        print("| n-th page of its site | " + " | ".join(str(n + 1) for n in sorted(curves)) + " |")
        print("|---|" + "---|" * len(curves))
        print(
            "| share left out | "
            + " | ".join(f"{sum(curves[n]) / len(curves[n]):.3f}" for n in sorted(curves))
            + " |"
        )
    print(f"\nTotal {time.perf_counter() - started:.0f} s.")


def cases_lang(cases, site: str) -> str:
    """The language of a template's pages."""
    return next(p.lang for p in cases.pages if p.template == site)


if __name__ == "__main__":
    main()
