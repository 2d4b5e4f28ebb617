"""Copies with a light edit in a share of their sentences: recall per share, precision, both
backends, and another version of the code side by side in the same run.

Each real article (``aeb`` in English; ``zh-extract`` and every fifth ``thucnews`` one in
Chinese) is put into a real page template of one site of the chosen half (split by site, as
``heldout_eval.py``), its original; then into a template of another site of that half once
per share f in SHARES, with one light edit in f of its sentences (at least one): British and
American spelling, "per cent" and "%", an honorific dropped, a number written otherwise
("1,000" as "1000", "two" as "2"), a word deleted, two adjacent words swapped, "said" and
"says"; in Chinese, a Chinese numeral and a digit, a character replaced or deleted, 的 or 了
added or removed. Every page is analysed as the plugin does (``analyze_html``: extraction,
fingerprint, signature, sentence units; no site learned).

A fresh index (embedded, and Redis on a redis-server started here) checks and adds every
original, in a seeded order: different articles sharing one template must not match. Each
copy is then looked up: it is caught when the plugin's decision (the first match) names its
own original. PAWS-X look-alike texts (m pairs joined, sentence 1s against sentence 2s) go to
an index of their own: every match is a false drop. Precision counts every drop (originals,
copies and look-alikes); recall per template is the share of copies caught whose copy sits
in it, printed as mean and worst over templates with at least MIN_COPIES copies.

Run from the repository root: ``python benchmarks/edits_eval.py [--seeds 1 2 3] [--half
held-out|tune] [--against REV] [--backends embedded redis] [--quick]``. ``--against`` scores
the code of a git revision (default ``main``) in the same run, from a ``git archive`` of it.
Data: ``../shared/data`` (``NEARDUPE_DATA``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

# _data imports nearDupe first, from PYTHONPATH when it is set (the code of --against).
from _data import data_dir
from _quality_cases import (
    Article,
    _prepare,
    load_articles,
    load_pawsx,
    load_templates,
    load_wcxb_templates,
    render,
    site_half,
    split_arguments,
)
from quality_eval import run_pool

import nearDupe
from nearDupe._settings import DEFAULT_CONFIRM_K, DEFAULT_K
from nearDupe.analysis import analyze_html, analyze_text
from nearDupe.features import FeatureSettings
from nearDupe.shorttext import normalize
from nearDupe.store import IndexHeader, open_store
from nearDupe.text import DEFAULT_MAX_CHARS

#: Shares of a copy's sentences that carry one light edit.
SHARES = (0.1, 0.3, 0.6, 1.0)
#: PAWS-X pairs joined into one look-alike text.
PAWS_JOINED = (1, 3, 12, 24)
#: Templates with fewer copies than this are left out of the worst-template figure.
MIN_COPIES = 4
MIN_LENGTH = 200  # NEARDUPE_MIN_TEXT_LENGTH's default
#: British and American spellings (either way round).
SPELLINGS = (
    ("colour", "color"), ("favour", "favor"), ("honour", "honor"), ("labour", "labor"),
    ("neighbour", "neighbor"), ("behaviour", "behavior"), ("centre", "center"),
    ("centres", "centers"), ("theatre", "theater"), ("metre", "meter"), ("metres", "meters"),
    ("organise", "organize"), ("organised", "organized"), ("organisation", "organization"),
    ("organisations", "organizations"), ("recognise", "recognize"), ("recognised",
    "recognized"), ("realise", "realize"), ("realised", "realized"), ("apologise",
    "apologize"), ("criticise", "criticize"), ("criticised", "criticized"), ("analyse",
    "analyze"), ("defence", "defense"), ("licence", "license"), ("offence", "offense"),
    ("travelled", "traveled"), ("travelling", "traveling"), ("cancelled", "canceled"),
    ("programme", "program"), ("programmes", "programs"), ("catalogue", "catalog"),
    ("grey", "gray"), ("tyre", "tire"), ("jewellery", "jewelry"), ("ageing", "aging"),
    ("modelling", "modeling"), ("fulfil", "fulfill"), ("enrol", "enroll"),
)  # fmt: skip
_NUMBERS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_ZH_NUMERALS = "零一二三四五六七八九十"
_WORDS = re.compile(r"[A-Za-z']+")


# -- The edits ------------------------------------------------------------------------------


Edit = Callable[[str], str]


def _replace(match: re.Match[str], by: str) -> Edit:
    return lambda s: s[: match.start()] + by + s[match.end() :]


def english_edits(sentence: str, rng: random.Random) -> list[Edit]:
    """The light edits that apply to an English sentence."""
    s = sentence
    found: list[Edit] = []
    for pair in SPELLINGS:
        for a, b in (pair, pair[::-1]):
            if m := re.search(rf"\b{a}\b", s, re.IGNORECASE):
                found.append(_replace(m, b))
    if m := re.search(r"\s?\b(per cent|percent)\b", s):
        found.append(_replace(m, "%"))
    if m := re.search(r"(?<=\d)\s?%", s):
        found.append(_replace(m, " per cent"))
    if m := re.search(r"\b(Mr|Mrs|Ms|Dr)\.? (?=[A-Z])", s):
        found.append(_replace(m, ""))
    if m := re.search(r"\b\d{1,3}(,\d{3})+\b", s):
        found.append(_replace(m, m.group().replace(",", "")))
    if m := re.search(rf"\b({'|'.join(_NUMBERS)})\b", s):
        found.append(_replace(m, str(_NUMBERS.index(m.group(1)) + 1)))
    for a, b in (("said", "says"), ("says", "said")):
        if m := re.search(rf"\b{a}\b", s):
            found.append(_replace(m, b))
    words = list(_WORDS.finditer(s))
    if len(words) > 3:
        gone = rng.choice(words[1:])
        found.append(lambda s: s[: gone.start()].rstrip() + s[gone.end() :])
        i = rng.randrange(len(words) - 1)
        a, b = words[i], words[i + 1]
        if s[a.end() : b.start()] == " ":
            found.append(lambda s: s[: a.start()] + f"{b.group()} {a.group()}" + s[b.end() :])
    return found


def chinese_edits(sentence: str, rng: random.Random) -> list[Edit]:
    """The light edits that apply to a Chinese sentence."""
    s = sentence
    found: list[Edit] = []
    if numerals := list(re.finditer(f"[{_ZH_NUMERALS[:10]}]", s)):
        m = rng.choice(numerals)
        found.append(_replace(m, str(_ZH_NUMERALS.index(m.group()))))
    if digits := list(re.finditer(r"(?<!\d)\d(?!\d)", s)):
        m = rng.choice(digits)
        found.append(_replace(m, _ZH_NUMERALS[int(m.group())]))
    if chars := list(re.finditer(r"[\u4e00-\u9fff]", s)):
        m = rng.choice(chars)
        other = rng.choice([c for c in "的地得在再做作以已是有" if c != m.group()])
        found.append(_replace(m, other))
        found.append(_replace(rng.choice(chars), ""))
        spot = rng.choice(chars)
        found.append(lambda s: s[: spot.start()] + rng.choice("的了") + s[spot.start() :])
    if particles := list(re.finditer("[的了]", s)):
        found.append(_replace(rng.choice(particles), ""))
    return found


def edited(article: Article, share: float, rng: random.Random) -> list[str]:
    """The article's paragraphs with one light edit in ``share`` of its sentences."""
    spots = [(i, j) for i, p in enumerate(article.paragraphs) for j in range(len(p))]
    chosen = set(rng.sample(spots, max(1, round(share * len(spots)))))
    edits = chinese_edits if article.lang == "zh" else english_edits
    paragraphs = []
    for i, paragraph in enumerate(article.paragraphs):
        sentences = list(paragraph)
        for j, sentence in enumerate(sentences):
            if (i, j) in chosen and (options := edits(sentence, rng)):
                sentences[j] = rng.choice(options)(sentence)
        paragraphs.append(("" if article.lang == "zh" else " ").join(sentences))
    return paragraphs


# -- The cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    """A generated page: an article's original (share None) or an edited copy."""

    article: str
    lang: str
    site: str
    share: float | None
    html: str


def build_pages(root: Path, half: str, seed: int, quick: bool, slots: list) -> list[Page]:
    """Every article's original and its copies, in templates of ``half`` of split ``seed``."""
    rng = random.Random(seed)
    articles = load_articles(root)
    thucnews = [a for a in articles if a.source == "thucnews"]
    articles = [a for a in articles if a.source != "thucnews"] + thucnews[:: 15 if quick else 5]
    if quick:
        articles = articles[::3]
    by_lang = defaultdict(list)
    for slot in slots:
        if site_half(slot[0].site, seed) == half:
            by_lang[slot[0].lang].append(slot)
    pages = []
    for article in articles:
        own = [s for s in by_lang[article.lang] if s[0].id != article.id]
        first = rng.choice(own)
        others = [s for s in own if s[0].site != first[0].site]
        headline = " ".join(article.paragraphs[0][0].split()[:10])[:40]
        for share, (template, tree, path) in zip(
            (None, *SHARES), (first, *rng.sample(others, len(SHARES))), strict=True
        ):
            body = (
                [("" if article.lang == "zh" else " ").join(p) for p in article.paragraphs]
                if share is None
                else edited(article, share, rng)
            )
            html = render(tree, path, ([], body, [], headline))
            pages.append(Page(article.id, article.lang, template.site, share, html))
    return pages


def look_alikes(root: Path, quick: bool) -> list[tuple[int, str, str]]:
    """(m, sentence 1s, sentence 2s) of m PAWS-X pairs joined, for each m of PAWS_JOINED."""
    pairs = [(a, b) for a, b, _ in load_pawsx(root) if normalize(a) != normalize(b)]
    if quick:
        pairs = pairs[::4]
    return [
        (m, "\n".join(a for a, _ in pairs[i : i + m]), "\n".join(b for _, b in pairs[i : i + m]))
        for m in PAWS_JOINED
        for i in range(0, len(pairs) - m + 1, m)
    ]


# -- The plugin's decisions -----------------------------------------------------------------


Analysed = tuple[int | None, int | None, tuple[tuple[int, int], ...]]


def analyse_page(html: str) -> Analysed:
    """What the plugin keeps of a page: fingerprint, signature and sentence units."""
    a = analyze_html(html, MIN_LENGTH, DEFAULT_MAX_CHARS, FeatureSettings())
    return a.fingerprint, a.signature, a.sentences


def analyse_text(text: str) -> Analysed:
    """What the plugin keeps of a text (an item's text field)."""
    a = analyze_text(text, MIN_LENGTH, FeatureSettings())
    return a.fingerprint, a.signature, a.sentences


class Index:
    """A fresh index of the plugin's default header, embedded or in a Redis."""

    def __init__(self, stack: ExitStack, redis_url: str | None) -> None:
        header = IndexHeader.for_settings("4-table", DEFAULT_K, None, DEFAULT_CONFIRM_K)
        if redis_url is None:
            where = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "index"
            self.store = open_store(str(where), header)
        else:
            from nearDupe.store.redis import RedisStore

            self.store = RedisStore.from_url(redis_url, header, name=f"edits{os.urandom(4).hex()}")
        self.loop = asyncio.new_event_loop()
        stack.callback(self.loop.close)
        stack.callback(lambda: self.loop.run_until_complete(self.store.close()))

    def add(self, page: Analysed, key: str) -> str | None:
        """Check and add: the key of the page it is a copy of, or None (recorded)."""
        fp, sig, units = page
        found = self.loop.run_until_complete(self.store.check_and_add(fp, key, sig, units))
        return None if found is None else found.key

    def decide(self, page: Analysed) -> str | None:
        """The key of the page the plugin would name as the copy's original, or None."""
        fp, sig, units = page
        found = self.loop.run_until_complete(self.store.query(fp, None, sig, units))
        return found[0].key if found else None


def score(
    pages: list[Page], analysed: list[Analysed], paws: list, paws_analysed: list, redis_url
) -> dict:
    """Every decision of one backend, tallied (see the module's docstring)."""
    caught: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    by_site: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    drops = {lang: [0, 0] for lang in ("en", "zh")}  # [right, wrong]
    paws_false: dict[int, int] = defaultdict(int)
    order = list(range(len(pages)))
    random.Random(len(pages)).shuffle(order)
    with ExitStack() as stack:
        index = Index(stack, redis_url)
        for i in order:
            page, a = pages[i], analysed[i]
            if page.share is None and a[0] is not None:
                drops[page.lang][1] += index.add(a, page.article) is not None
        for page, a in zip(pages, analysed, strict=True):
            if page.share is None:
                continue
            found = index.decide(a) if a[0] is not None else None
            right = found == page.article
            caught[page.lang][str(page.share)].append(right)
            by_site[page.lang][page.site].append(right)
            if found is not None:
                drops[page.lang][0 if right else 1] += 1
    for m in PAWS_JOINED:
        with ExitStack() as stack:
            index = Index(stack, redis_url)
            texts = [(n, t) for n, t in enumerate(paws) if t[0] == m]
            for n, _ in texts:
                if paws_analysed[2 * n][0] is not None:
                    index.add(paws_analysed[2 * n], str(n))
            for n, (_, _, b) in texts:
                b_page = paws_analysed[2 * n + 1]
                found = index.decide(b_page) if b_page[0] is not None else None
                # A sentence 2 of one pair is at times a sentence 1 of another: no false drop.
                paws_false[m] += found is not None and normalize(paws[int(found)][1]) != normalize(
                    b
                )
    return {
        "recall": {
            lang: {f: sum(v) / len(v) for f, v in shares.items()}
            for lang, shares in caught.items()
        },
        "sites": {
            lang: [sum(v) / len(v) for v in sites.values() if len(v) >= MIN_COPIES]
            for lang, sites in by_site.items()
        },
        "drops": drops,
        "paws": {str(m): paws_false[m] for m in PAWS_JOINED},
        "paws_texts": {str(m): sum(1 for p in paws if p[0] == m) for m in PAWS_JOINED},
    }


def evaluate(args: argparse.Namespace) -> dict:
    """Scores per split seed and backend, for the code imported as ``nearDupe``."""
    root = data_dir()
    slots = list(_prepare(load_templates(root) + load_wcxb_templates(root)))
    paws = look_alikes(root, args.quick)
    paws_analysed = run_pool(analyse_text, [t for _, a, b in paws for t in (a, b)], args.workers)
    results: dict = {}
    with ExitStack() as stack:
        urls: dict[str, str | None] = {"embedded": None}
        if "redis" in args.backends:
            from redis_server import RedisServer

            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            urls["redis"] = stack.enter_context(RedisServer(tmp / "redis")).url
        for seed in args.seeds:
            pages = build_pages(root, args.half, seed, args.quick, slots)
            analysed = run_pool(analyse_page, [p.html for p in pages], args.workers)
            for backend in args.backends:
                results[f"{seed} {backend}"] = score(
                    pages, analysed, paws, paws_analysed, urls[backend]
                )
                results[f"{seed} {backend}"]["pages"] = len(pages)
    return results


# -- Report ---------------------------------------------------------------------------------


def _code_of(revision: str, into: Path) -> Path:
    """The package of ``revision`` (git archive), unpacked under ``into``."""
    archive = subprocess.run(
        ["git", "archive", revision, "nearDupe"],
        cwd=Path(__file__).resolve().parents[1],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _precision(drops: list[int]) -> float:
    return drops[0] / sum(drops) if sum(drops) else 1.0


def report(name: str, results: dict) -> Iterator[str]:
    """One markdown row per split seed and backend."""
    for run, r in results.items():
        cells = []
        for lang in ("en", "zh"):
            recall = r["recall"].get(lang, {})
            cells.append(" / ".join(f"{recall.get(str(f), float('nan')):.3f}" for f in SHARES))
            sites = r["sites"].get(lang) or [float("nan")]
            cells.append(f"{np.mean(sites):.3f} / {min(sites):.3f}")
            cells.append(f"{_precision(r['drops'][lang]):.4f}")
        zh = r["drops"]["zh"]
        cells.append(f"{_precision([zh[0], zh[1] + sum(r['paws'].values())]):.4f}")
        paws = ", ".join(f"{r['paws'][m]}/{r['paws_texts'][m]}" for m in r["paws"])
        yield f"| {name} | {run} | {' | '.join(cells)} | {paws} |"


def main() -> None:
    """Score this code and ``--against``'s side by side (or emit JSON, with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    split_arguments(parser)
    parser.add_argument("--against", default="main", help="git revision scored beside ('': none)")
    parser.add_argument("--backends", nargs="+", default=["embedded", "redis"])
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps({"code": nearDupe.__file__, "runs": evaluate(args)}))
        return
    started = time.perf_counter()
    runs = {}
    if args.against:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, PYTHONPATH=str(_code_of(args.against, Path(tmp))))
            out = subprocess.run(
                [sys.executable, __file__, "--json", *sys.argv[1:]],
                env=env, check=True, stdout=subprocess.PIPE, text=True,
            ).stdout  # fmt: skip
        baseline = json.loads(out.splitlines()[-1])
        assert baseline["code"].startswith(tmp), f"{baseline['code']} is not {args.against}'s"
        runs[args.against] = baseline["runs"]
    runs[f"this code ({Path(nearDupe.__file__).parents[1].name})"] = evaluate(args)
    print(f"# Copies with a light edit in a share of their sentences ({args.half} half)\n")
    print(
        f"Recall at f = {' / '.join(map(str, SHARES))}; recall per template: mean / worst "
        f"(templates of {MIN_COPIES}+ copies); precision of every drop (ZH: also with the PAWS-X "
        "look-alikes' drops); PAWS-X look-alike texts dropped of those checked, per pairs joined "
        f"({', '.join(map(str, PAWS_JOINED))}).\n"
    )
    print(
        "| code | seed, backend | EN recall per f | EN per template | EN precision "
        "| ZH recall per f | ZH per template | ZH precision | ZH with PAWS-X | PAWS-X dropped |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, results in runs.items():
        for line in report(name, results):
            print(line)
    pages = {run: r["pages"] for run, r in list(runs.values())[-1].items()}
    print(f"\n<!-- pages per seed: {pages}; {time.perf_counter() - started:.0f} s -->")


if __name__ == "__main__":
    main()
