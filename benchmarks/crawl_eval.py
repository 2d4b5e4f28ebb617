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
``--misses`` lists the pages the embedded crawls missed, with what their site memory left
out of them and how near their stored copy was.

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
from dataclasses import dataclass, field, replace
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
from nearDupe.analysis import Analysis, analyze_extracted, analyze_page
from nearDupe.designs import Design
from nearDupe.features import FeatureSettings
from nearDupe.shorttext import SENTENCE_PAGE_LETTERS, Sentences, letters, normalize
from nearDupe.simhash import hamming
from nearDupe.sitetemplate import SiteTemplate, headline_of, site_memory, strip_template
from nearDupe.store import EmbeddedIndex, IndexHeader, base
from nearDupe.store.base import holders_of, shared_sentences
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
    #: Page -> (skip reason, fingerprint, URL of the page it was dropped as a copy of).
    decisions: dict[int, tuple[str | None, int | None, str | None]] = field(default_factory=dict)
    #: Pages whose article was stored but that were not dropped as its copy.
    misses: dict[int, Miss] = field(default_factory=dict)


@dataclass(frozen=True)
class Miss:
    """A page whose article was stored when it came, not dropped as its copy: how long its
    text was, what its site memory left out, and how near the nearest stored copy was."""

    #: What became of it: kept, template-text (another skip reason), or dropped as another's.
    outcome: str
    letters: int
    lines: int
    #: Its lines its site memory knew as template when it was judged.
    stripped: int
    #: Fingerprint distance to the nearest stored page of its article (None: unfingerprinted).
    distance: int | None
    #: The most of that stored page's sentences it shares, as a share of (its own, the stored
    #: page's) sentence letters.
    shared: tuple[float, float]
    #: Which of it and the stored copies was the first page decided in its site memory (so
    #: judged whole, its site's template in its text): "page", "copy", or "".
    whole: str


def judged_sentences(analysis: Analysis, every_page: bool) -> Sentences:
    """The sentences a rule judges a page by: all, or (the rules before sentence evidence for
    every page) those of a page under SENTENCE_PAGE_LETTERS sentence letters."""
    if every_page or letters(analysis.sentences) < SENTENCE_PAGE_LETTERS:
        return analysis.sentences
    return ()


class Crawler:
    """One crawler's view of a shared index: its check_and_add and its site memory (the
    store's own, as the pipeline reads and teaches it)."""

    def __init__(
        self,
        check_and_add: Callable[..., Any],
        template: Callable[[str], SiteTemplate],
        learn: Callable[[str, int, tuple[int, ...]], Any],
    ) -> None:
        self.check_and_add = check_and_add
        self._template = template
        self._learn = learn
        self.learning = True

    def template(self, host: str) -> SiteTemplate:
        """What the host taught this crawler (nothing when learning is off)."""
        return self._template(host) if self.learning else SiteTemplate()

    def learn(self, host: str, analysis: Analysis) -> None:
        """Teach the host what a decided page teaches (unless learning is off)."""
        if self.learning:
            for identity, lines in analysis.lessons():
                self._learn(host, identity, lines)


@contextmanager
def opened(
    header: IndexHeader, redis_url: str | None, crawlers: int = 1
) -> Iterator[list[Crawler]]:
    """``crawlers`` crawlers of a fresh index: embedded (one crawler), or in the Redis at
    ``redis_url`` (an index of its own name, each crawler a store connection of its own)."""
    if redis_url is None:
        with (
            tempfile.TemporaryDirectory() as tmp,
            EmbeddedIndex(Path(tmp) / "index", header, commit_interval=3600) as index,
        ):
            yield [Crawler(index.check_and_add, index.sites.template, index.sites.learn)]
        return
    from nearDupe.store.redis import RedisStore

    loop = asyncio.new_event_loop()
    name = f"eval{os.urandom(4).hex()}"
    stores = [RedisStore.from_url(redis_url, header, name=name) for _ in range(crawlers)]

    def crawler(store: RedisStore) -> Crawler:
        return Crawler(
            lambda *args: loop.run_until_complete(store.check_and_add(*args)),
            lambda host: loop.run_until_complete(store.site_template(host)),
            lambda *args: loop.run_until_complete(store.learn_site(*args)),
        )

    try:
        yield [crawler(store) for store in stores]
    finally:
        for store in stores:
            loop.run_until_complete(store.close())
        loop.close()


def by_site(order: list[int], hosts: list[str], seed: int) -> list[int]:
    """``order`` regrouped as a crawl meets sites: each host's pages together, the hosts in a
    seeded random order."""
    pages: dict[str, list[int]] = defaultdict(list)
    for i in order:
        pages[hosts[i]].append(i)
    sites = list(pages)
    random.Random(seed).shuffle(sites)
    return [i for site in sites for i in pages[site]]


def hosts_of(cases, layout: str, portal_hosts: int) -> list[str]:
    """The host each page is served from: its template's own (``host``), or in a ``portal``
    the templates of a language spread over ``portal_hosts`` hosts (copies of a story in
    several templates are then on one host)."""
    if layout == "host":
        return [page.template for page in cases.pages]
    templates: dict[str, list[str]] = defaultdict(list)
    for page in cases.pages:
        if page.template not in templates[page.lang]:
            templates[page.lang].append(page.template)
    host = {
        template: f"portal-{lang}-{n % portal_hosts}.test"
        for lang, names in templates.items()
        for n, template in enumerate(sorted(names))
    }
    return [host[page.template] for page in cases.pages]


def crawl(
    cases,
    texts,
    htmls,
    order,
    rule,
    learn: bool,
    redis_url: str | None,
    in_flight: int = 0,
    recheck: bool = True,
    hosts: list[str] | None = None,
    crawlers: int = 1,
    by_template: bool = True,
) -> Tally:
    """Crawl the pages in ``order`` through a fresh index; score every decision.

    ``in_flight`` pages are analysed ahead of their decision (with what their site had taught
    by then), as a crawl's concurrent responses are; a young site's page is analysed again at
    its decision when its site taught more of its lines meanwhile, unless ``recheck`` is off.
    Pages are served from ``hosts`` (default: each template its own host) and handed to
    ``crawlers`` crawlers in turn, each with its own view of the shared index (Redis). A
    page's site memory is its host and template (sitetemplate.site_memory), or its host alone
    unless ``by_template``.
    """
    k, confirm_k, design, every_page = rule
    pages = cases.pages
    hosts = hosts or [page.template for page in pages]
    memories = [
        site_memory(host, html) if by_template else host
        for host, html in zip(hosts, htmls, strict=True)
    ]
    tally = Tally()
    seen_in_site: dict[str, int] = defaultdict(int)
    stored_articles: set[str] = set()
    #: Article -> (fingerprint, sentences, whether first in its site memory) of each of its
    #: stored pages.
    stored_pages: dict[str, list[tuple[int, Sentences, bool]]] = defaultdict(list)
    article_of: dict[str, str] = {}
    site_of_url: dict[str, str] = {}
    features = FeatureSettings()
    header = IndexHeader.for_settings(design, k, features, confirm_k)

    def analysed(team: list[Crawler]) -> Iterator[tuple[int, Crawler, SiteTemplate, Analysis]]:
        waiting: deque[tuple[int, Crawler, SiteTemplate, Analysis]] = deque()
        for n, i in enumerate(order):
            crawler = team[n % len(team)]
            template = crawler.template(memories[i])
            analysis = analyze_html_page(texts[i], htmls[i], f"http://{i}/", features, template)
            waiting.append((i, crawler, template, analysis))
            if len(waiting) > in_flight:
                yield waiting.popleft()
        yield from waiting

    with opened(header, redis_url, crawlers) as team:
        for crawler in team:
            crawler.learning = learn
        for i, crawler, template, analysis in analysed(team):
            page = pages[i]
            site = memories[i]
            url = f"http://{i}/"
            identity = analysis.identity
            now = crawler.template(site)
            if recheck and analysis.recheck is not None and analysis.outdated(now):
                tally.rechecked += 1
                again = analysis.recheck
                analysis = analysis.redone(
                    analyze_page(
                        again.text, again.html, 200, features, now, identity, again.headline
                    )
                )
                template = now
            n = seen_in_site[site]
            seen_in_site[site] += 1
            if n < FIRST_PAGES:
                total = len(normalize(texts[i], digits=False)) or 1
                kept = strip_template(texts[i], identity, template, headline_of(htmls[i])).text
                tally.curve[n].append(1 - len(normalize(kept, digits=False)) / total)
            lang = page.lang
            due = page.article in stored_articles
            tally.decisions[i] = (analysis.skip_reason, analysis.fingerprint, None)
            if analysis.skip_reason == "template-text":
                tally.template_text += 1
                crawler.learn(site, analysis)
            if due:
                tally.due[lang] += 1
            if analysis.fingerprint is None:
                if due:
                    tally.per_template[page.template].append(False)
                    tally.misses[i] = missed(
                        texts[i], analysis, stored_pages[page.article], n == 0
                    )
                continue
            match = crawler.check_and_add(
                analysis.fingerprint,
                url,
                analysis.signature,
                judged_sentences(analysis, every_page),
            )
            if match is None:
                if due:
                    tally.per_template[page.template].append(False)
                    tally.misses[i] = missed(
                        texts[i], analysis, stored_pages[page.article], n == 0
                    )
                stored_articles.add(page.article)
                stored_pages[page.article].append(
                    (analysis.fingerprint, analysis.sentences, n == 0)
                )
                article_of[url] = page.article
                site_of_url[url] = hosts[i]
                crawler.learn(site, analysis)
                continue
            if site_of_url[match.key] == hosts[i] and analysis.became_template(
                crawler.template(site)
            ):
                tally.template_text += 1  # as the pipeline: its site taught its lines meanwhile
                tally.decisions[i] = ("template-text", None, None)
                if due:
                    tally.per_template[page.template].append(False)
                    miss = missed(texts[i], analysis, stored_pages[page.article], n == 0)
                    tally.misses[i] = replace(miss, outcome="template-text")
                crawler.learn(site, analysis)
                continue
            tally.decisions[i] = (None, analysis.fingerprint, match.key)
            tally.drops[lang] += 1
            same = article_of[match.key] == page.article
            tally.right[lang] += same
            if due:
                tally.caught[lang] += same
                tally.per_template[page.template].append(same)
                if not same:
                    miss = missed(texts[i], analysis, stored_pages[page.article], n == 0)
                    tally.misses[i] = replace(miss, outcome="dropped as another")
            if not same:
                tally.lost += 1
                tally.lost_at_0 += match.distance == 0
    return tally


def missed(
    text: str, analysis: Analysis, stored: list[tuple[int, Sentences, bool]], first: bool
) -> Miss:
    """What a missed page (``first`` in its site memory or not) was like, beside the stored
    pages of its article."""
    distance = None
    shared = (0.0, 0.0)
    for fingerprint, kept, _ in stored:
        if analysis.fingerprint is not None:
            near = hamming(analysis.fingerprint, fingerprint)
            distance = near if distance is None else min(distance, near)
        for found in shared_sentences(analysis.sentences, holders_of(kept, "", fingerprint)):
            shared = max(shared, (round(found.of_query, 2), round(found.of_stored, 2)))
    return Miss(
        analysis.skip_reason or "kept",
        len(normalize(text)),
        len(analysis.lines),
        analysis.known,
        distance,
        shared,
        "page" if first else "copy" if any(whole for _, _, whole in stored) else "",
    )


def analyze_html_page(
    text: str, html: str, url: str, features: FeatureSettings, site: SiteTemplate
) -> Analysis:
    """A page's analysis as the plugin's workers make it from its extracted text and HTML."""
    return analyze_extracted(text, html, url, 200, features, site)


def main() -> None:
    """Build the cases per split seed, crawl them per layout, order and backend, print tables."""
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
    parser.add_argument("--rules", nargs="+", choices=list(RULES), default=["default"])
    parser.add_argument(
        "--backends",
        nargs="+",
        choices=BACKENDS,
        default=["embedded"],
        help="embedded, redis (one crawler), redis-2 (two crawlers on one Redis index)",
    )
    parser.add_argument("--redis", action="store_true", help="same as --backends redis")
    parser.add_argument(
        "--layout",
        nargs="+",
        choices=["host", "portal"],
        default=["host"],
        help="each template its own host, or a portal: many templates on one host",
    )
    parser.add_argument(
        "--portal-hosts", type=int, default=1, help="hosts a language's templates share"
    )
    parser.add_argument("--orders", type=int, default=1, help="seeded crawl orders per split")
    parser.add_argument(
        "--host-memory",
        action="store_true",
        help="a site memory per host, not per host and template",
    )
    parser.add_argument(
        "--in-flight", type=int, default=0, help="pages analysed ahead of their decision"
    )
    parser.add_argument(
        "--by-site", action="store_true", help="each host's pages together, as a crawl meets them"
    )
    parser.add_argument(
        "--no-recheck", action="store_true", help="pages analysed once, never again"
    )
    parser.add_argument(
        "--sample", type=int, help="sentences a long page is recorded under (0: all)"
    )
    parser.add_argument(
        "--misses", action="store_true", help="list the pages missed (embedded, learning on)"
    )
    args = parser.parse_args()
    if args.redis:
        args.backends = ["redis"]
    with ExitStack() as stack:
        redis_url = None
        if any(b != "embedded" for b in args.backends):
            from redis_server import RedisServer

            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            redis_url = stack.enter_context(RedisServer(tmp / "redis")).url
        run(args, redis_url)


#: Backend name -> (through Redis, crawlers sharing the index).
BACKENDS = {"embedded": (False, 1), "redis": (True, 1), "redis-2": (True, 2)}


def scores(t: Tally, cases) -> dict[str, float]:
    """P and R per language, and the mean and worst template recall per language."""
    out: dict[str, float] = {}
    for lang in ("en", "zh"):
        out[f"{lang} P"] = t.right[lang] / t.drops[lang] if t.drops[lang] else 1.0
        out[f"{lang} R"] = t.caught[lang] / t.due[lang] if t.due[lang] else 1.0
        recall = [
            sum(hits) / len(hits)
            for template, hits in t.per_template.items()
            if len(hits) >= MIN_PAGES and cases_lang(cases, template) == lang
        ]
        out[f"{lang} mean"] = sum(recall) / len(recall) if recall else 1.0
        out[f"{lang} worst"] = min(recall, default=1.0)
    return out


def spread(values: list[float]) -> str:
    """Mean (min-max, spread) of one figure over crawl orders; the mean alone for one order."""
    mean = sum(values) / len(values)
    if len(values) == 1:
        return f"{mean:.3f}"
    return f"{mean:.3f} ({min(values):.3f}-{max(values):.3f}, {max(values) - min(values):.3f})"


def run(args: argparse.Namespace, redis_url: str | None) -> None:
    """Crawl and print (see main)."""
    if args.template_pages is not None:
        sitetemplate.TEMPLATE_PAGES = args.template_pages
    if args.sample is not None:
        base.SAMPLE_SENTENCES = args.sample or 10**9
    root = data_dir()
    started = time.perf_counter()
    modes = [False] if args.no_learning else [True]
    crawl_order = "each host's pages together" if args.by_site else "pages in a random order"
    print(
        f"# A crawl of the {args.half} half of the template sites: {crawl_order}, "
        f"{args.in_flight} analysed ahead of their decision"
        f"{', never analysed again' if args.no_recheck else ''}, {args.orders} order(s), "
        f"a site memory per {'host' if args.host_memory else 'host and template'}; "
        "figures: mean (min-max, spread) over orders\n"
    )
    print(
        "| split seed | layout | backend | rule | sites learned | EN P | EN R | ZH P | ZH R | "
        "EN R per template: mean / worst | ZH R per template: mean / worst | lost (at 0) "
        "| template-text | analysed again | decisions unlike embedded |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    curves: dict[int, list[float]] = defaultdict(list)
    #: (split seed, layout) -> page -> its misses over the crawl orders (embedded).
    misses: dict[tuple[int, str], dict[int, list[Miss]]] = {}
    cases_of: dict[int, Any] = {}
    for seed in args.seeds:
        cases = build_cases(
            root,
            quick=args.quick,
            half=(args.half, seed),
            modern=args.modern,
            site_pages=args.site_pages,
        )
        cases_of[seed] = cases
        htmls = [p.html for p in cases.pages]
        texts = run_pool(extract_main_text, htmls, args.workers)
        for layout in args.layout:
            hosts = hosts_of(cases, layout, args.portal_hosts)
            orders = []
            for o in range(args.orders):
                order = list(range(len(cases.pages)))
                random.Random(seed if o == 0 else f"{seed}:{o}").shuffle(order)
                if args.by_site:
                    order = by_site(order, hosts, seed if o == 0 else seed * 1000 + o)
                orders.append(order)
            for name in args.rules:
                for learn in modes:
                    embedded: list[dict[int, Any]] = []
                    for backend in args.backends:
                        through_redis, crawlers = BACKENDS[backend]
                        tallies = [
                            crawl(
                                cases,
                                texts,
                                htmls,
                                order,
                                RULES[name],
                                learn,
                                redis_url if through_redis else None,
                                args.in_flight,
                                not args.no_recheck,
                                hosts,
                                crawlers,
                                not args.host_memory,
                            )
                            for order in orders
                        ]
                        if backend == "embedded":
                            embedded = [t.decisions for t in tallies]
                            if learn and name == args.rules[0]:
                                found = misses.setdefault((seed, layout), defaultdict(list))
                                for t in tallies:
                                    for i, miss in t.misses.items():
                                        found[i].append(miss)
                        unlike = (
                            str(
                                sum(
                                    sum(d[i] != t.decisions.get(i) for i in d)
                                    for d, t in zip(embedded, tallies, strict=True)
                                )
                            )
                            if embedded and backend != "embedded"
                            else "-"
                        )
                        figures = [scores(t, cases) for t in tallies]
                        cells = [
                            spread([f[key] for f in figures])
                            for key in ("en P", "en R", "zh P", "zh R")
                        ]
                        for lang in ("en", "zh"):
                            mean = sum(f[f"{lang} mean"] for f in figures) / len(figures)
                            worst = min(f[f"{lang} worst"] for f in figures)
                            cells.append(f"{mean:.3f} / {worst:.3f}")
                        lost = sum(t.lost for t in tallies)
                        lost_at_0 = sum(t.lost_at_0 for t in tallies)
                        print(
                            f"| {seed} | {layout} | {backend} | {name} (k={RULES[name][0]}) | "
                            f"{'yes' if learn else 'no'} | {' | '.join(cells)} | "
                            f"{lost} ({lost_at_0}) | "
                            f"{sum(t.template_text for t in tallies)} | "
                            f"{sum(t.rechecked for t in tallies)} | {unlike} |",
                            flush=True,
                        )
                        if learn:
                            for t in tallies:
                                for n, shares in t.curve.items():
                                    curves[n].extend(shares)
        print(f"<!-- seed {seed}: {len(cases.pages)} pages, "
              f"{len({p.template for p in cases.pages})} templates -->")  # fmt: skip
    if args.misses:
        print_misses(misses, cases_of, args.orders)
    if curves:
        print("\nShare of a host's n-th page left out as its template (mean over hosts):\n")
        print("| n-th page of its host | " + " | ".join(str(n + 1) for n in sorted(curves)) + " |")
        print("|---|" + "---|" * len(curves))
        print(
            "| share left out | "
            + " | ".join(f"{sum(curves[n]) / len(curves[n]):.3f}" for n in sorted(curves))
            + " |"
        )
    print(f"\nTotal {time.perf_counter() - started:.0f} s.")


def print_misses(
    misses: dict[tuple[int, str], dict[int, list[Miss]]], cases_of: dict[int, Any], orders: int
) -> None:
    """The pages each layout missed (embedded), with the first order's miss, and whether the
    same page was missed in the host layout too."""
    print(
        "\nPages missed (embedded): letters of its text, its lines and those its site memory"
        " left out, fingerprint distance to the nearest stored copy, the most of a stored"
        " copy's sentences shared (of its own / of the copy's), whether it or a stored copy"
        " was the first page decided in its site memory (judged whole):\n"
    )
    print(
        "| split seed | layout | page | lang | template | edit | orders missed | outcome | "
        "letters | lines (left out) | distance | shared | first in its site | "
        "missed in host layout |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (seed, layout), found in misses.items():
        pages = cases_of[seed].pages
        host = misses.get((seed, "host"))
        for i, missed_in in sorted(found.items(), key=lambda item: pages[item[0]].lang):
            m = missed_in[0]
            page = pages[i]
            in_host = "-" if host is None or layout == "host" else f"{len(host.get(i, []))}"
            print(
                f"| {seed} | {layout} | {i} | {page.lang} | {page.template} | {page.edit} | "
                f"{len(missed_in)}/{orders} | {m.outcome} | {m.letters} | {m.lines} "
                f"({m.stripped}) | {m.distance} | {m.shared[0]:.2f} / {m.shared[1]:.2f} | "
                f"{m.whole or '-'} | {in_host} |"
            )


def cases_lang(cases, site: str) -> str:
    """The language of a template's pages."""
    return next(p.lang for p in cases.pages if p.template == site)


if __name__ == "__main__":
    main()
