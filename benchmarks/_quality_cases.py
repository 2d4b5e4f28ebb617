"""Near-duplicate evaluation cases built from real pages and articles (see quality_eval.py)."""

from __future__ import annotations

import argparse
import copy
import csv
import gzip
import hashlib
import json
import random
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import lxml.etree
import lxml.html
from _data import data_dir, decode

#: Edit kinds applied to the second copy of a syndicated article (one kind per case).
EDITS = (
    "none",
    "counter",
    "timestamp",
    "source",
    "sentence-added",
    "sentence-dropped",
    "typo",
    "headline",
    "combined",
)

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_CHAR = re.compile(f"[{_CJK}]")
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(r"[^\W\d_]+")
_EN_SENTENCE = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"”’)]))\s+(?=[\"“‘(]?[A-Z0-9])")
_ZH_SENTENCE = re.compile(r"(?<=[。！？!?])(?![”」』）)])|(?<=[。！？!?][”」』）)])")
_SKIP = frozenset({"script", "style", "noscript", "template", "head", "title"})
_CONTAINERS = frozenset({"div", "article", "section", "main", "td", "body", "span", "font"})
_PARSER = lxml.html.HTMLParser(encoding="utf-8")
#: Neutral bodies used to check that a template's content slot works.
_PROBE_EN = ["Quartz lanterns hover above the orchard every evening, villagers report."] * 12
_PROBE_ZH = ["据村民介绍，石英灯笼每天傍晚都会悬浮在果园上空，场面十分壮观。"] * 12
_SOURCES_EN = ("The Daily Ledger", "Metro Wire", "Northside Herald", "Global Desk", "AP Partner")
_SOURCES_ZH = ("新华网", "人民网", "中国新闻网", "澎湃新闻", "新浪新闻", "央视网")


@dataclass(frozen=True)
class Article:
    """A real article body: paragraphs of sentences, a language, a source and a topic."""

    id: str
    lang: str
    source: str
    paragraphs: tuple[tuple[str, ...], ...]
    topic: str | None = None

    @property
    def text(self) -> str:
        """The body as plain text, one paragraph a line."""
        sep = "" if self.lang == "zh" else " "
        return "\n".join(sep.join(p) for p in self.paragraphs)


@dataclass(frozen=True)
class Template:
    """A real page whose main content element can take another article's body."""

    id: str
    lang: str
    html: str
    truth: str
    #: The site the page comes from (aeb: its URL's host; zh-extract pages carry no URL and
    #: come from many sites: each is taken as a site of its own).
    site: str = ""


@dataclass(frozen=True)
class Page:
    """One generated page: an article (with an edit) inside a template."""

    id: int
    article: str
    lang: str
    template: str
    edit: str
    html: str
    group: str = "long"


@dataclass
class CaseSet:
    """Generated pages and the labelled pairs among them."""

    pages: list[Page] = field(default_factory=list)
    #: (page a, page b, edit kind): the same article, syndicated (must match).
    positives: list[tuple[int, int, str]] = field(default_factory=list)
    #: (page a, page b, kind): different articles ("same-template", "same-topic").
    negatives: list[tuple[int, int, str]] = field(default_factory=list)
    articles: dict[str, Article] = field(default_factory=dict)


def split_sentences(text: str, lang: str) -> list[str]:
    """Sentences of one paragraph."""
    pattern = _ZH_SENTENCE if lang == "zh" else _EN_SENTENCE
    return [s.strip() for s in pattern.split(text) if s.strip()]


def _article(aid: str, lang: str, source: str, text: str, topic: str | None = None) -> Article:
    paragraphs = []
    for para in re.split(r"\n\s*\n" if lang == "zh" else r"\n+", text):
        if lang == "zh":
            para = re.sub(r"\s*\n\s*", "", para)
        para = re.sub(r"\s+", " ", para).strip()
        if para:
            paragraphs.append(tuple(split_sentences(para, lang)))
    if lang == "zh" and len(paragraphs) == 1 and len(paragraphs[0]) > 4:
        # thucnews glues paragraphs together: re-wrap every three sentences.
        sents = paragraphs[0]
        paragraphs = [tuple(sents[i : i + 3]) for i in range(0, len(sents), 3)]
    return Article(aid, lang, source, tuple(p for p in paragraphs if p), topic)


def load_articles(root: Path) -> list[Article]:
    """aeb ground-truth bodies (en), zh-extract cleaned texts and thucnews articles (zh)."""
    articles: list[Article] = []
    truth = json.loads((root / "aeb" / "ground-truth.json").read_text(encoding="utf-8"))
    for page_id, item in sorted(truth.items()):
        articles.append(_article(f"aeb:{page_id}", "en", "aeb", item["articleBody"]))
    for path in sorted((root / "zh-extract" / "cleaned").glob("*.txt")):
        text = path.read_text(encoding="utf-8-sig", errors="replace")
        articles.append(_article(f"zhx:{path.stem}", "zh", "zh-extract", text))
    lines = (root / "thucnews" / "cnews.sample.txt").read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        label, _, text = line.partition("\t")
        if text.strip():
            articles.append(_article(f"thuc:{i:03d}", "zh", "thucnews", text, label))
    return [a for a in articles if a.paragraphs]


def load_templates(root: Path) -> list[Template]:
    """Real aeb and zh-extract pages, decoded the Scrapy way, with their main text."""
    templates: list[Template] = []
    truth = json.loads((root / "aeb" / "ground-truth.json").read_text(encoding="utf-8"))
    for page_id, item in sorted(truth.items()):
        body = gzip.decompress((root / "aeb" / "html" / f"{page_id}.html.gz").read_bytes())
        html = decode(body, item["url"])
        site = urlsplit(item["url"]).hostname or page_id
        templates.append(Template(f"aeb:{page_id}", "en", html, item["articleBody"], site))
    zh = root / "zh-extract"
    for path in sorted((zh / "original").glob("*.html")):
        text = (zh / "cleaned" / f"{path.stem}.txt").read_text(encoding="utf-8-sig")
        html = decode(path.read_bytes(), f"http://zh-extract.invalid/{path.name}")
        templates.append(Template(f"zhx:{path.stem}", "zh", html, text, path.stem))
    return templates


def load_wcxb_templates(root: Path) -> list[Template]:
    """WCXB's development article pages (modern templates of 1,295 domains), by domain."""
    folder = root / "wcxb-dev"
    files = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))["files"]
    templates: list[Template] = []
    for file_id, info in sorted(files.items()):
        if info.get("split") != "dev" or info.get("page_type") != "article":
            continue
        truth = json.loads(
            (folder / "dev" / "ground-truth" / f"{file_id}.json").read_text(encoding="utf-8")
        )
        text = truth["ground_truth"].get("main_content") or ""
        if not text:
            continue
        body = gzip.decompress((folder / "dev" / "html" / f"{file_id}.html.gz").read_bytes())
        lang = "zh" if len(_CJK_CHAR.findall(text)) * 5 > len(text) else "en"
        html = decode(body, truth["url"])
        templates.append(Template(f"wcxb:{file_id}", lang, html, text, info["domain"]))
    return templates


def _units(text: str) -> list[str]:
    """Words, and CJK character bigrams: the units the content locator matches on."""
    units: list[str] = []
    text = text.casefold()
    pos = 0
    for m in _CJK_RUN.finditer(text):
        units.extend(_WORD.findall(text, pos, m.start()))
        run = m.group()
        units.extend(run[i : i + 2] for i in range(max(1, len(run) - 1)))
        pos = m.end()
    units.extend(_WORD.findall(text, pos))
    return units


def locate_content(root: lxml.html.HtmlElement, truth: str) -> lxml.html.HtmlElement | None:
    """The element whose text best matches the ground-truth main text (F1 of units)."""
    vocab = set(_units(truth))
    total_truth = max(1, len(_units(truth)))
    matched: dict[lxml.html.HtmlElement, int] = defaultdict(int)
    totals: dict[lxml.html.HtmlElement, int] = defaultdict(int)
    body = root.find("body")
    if body is None:
        return None

    def credit(elem: lxml.html.HtmlElement, text: str | None) -> None:
        if not text or not text.strip():
            return
        units = _units(text)
        hit = sum(1 for u in units if u in vocab)
        node: lxml.html.HtmlElement | None = elem
        while node is not None:
            matched[node] += hit
            totals[node] += len(units)
            if node is body:
                break
            node = node.getparent()

    walker = lxml.etree.iterwalk(body, events=("start",))
    for _, elem in walker:
        if not isinstance(elem.tag, str) or elem.tag in _SKIP:
            walker.skip_subtree()
            if elem is not body and elem.getparent() is not None:
                credit(elem.getparent(), elem.tail)
            continue
        credit(elem, elem.text)
        if elem is not body and elem.getparent() is not None:
            credit(elem.getparent(), elem.tail)
    # The most precise container holding at least 80 % of the main text: no second copy of
    # the template's own article may stay outside it.
    best, best_precision = None, 0.0
    for elem, hit in matched.items():
        if elem.tag not in _CONTAINERS or not hit or hit < 0.7 * min(total_truth, matched[body]):
            continue
        if hit / totals[elem] > best_precision:
            best, best_precision = elem, hit / totals[elem]
    while best is not None and best.tag in {"span", "font"}:
        best = best.getparent()
    return best


@dataclass
class _Slot:
    """A template prepared for bodies: parsed once, content element located."""

    template: Template
    ok: bool


def _headline(article: Article, variant: int = 0) -> str:
    sentences = [s for p in article.paragraphs for s in p]
    sentence = sentences[min(variant, len(sentences) - 1)]
    if article.lang == "zh":
        head = re.split(r"[，,。！？：:；]", sentence)[0][:24]
        return head if variant == 0 else f"{head}（组图）"
    words = sentence.split()[:10]
    head = " ".join(words).rstrip(".,;:")
    return head if variant == 0 else f"{head}: what we know"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _typo(sentence: str, lang: str, rng: random.Random) -> str:
    if lang == "zh":
        spots = [m.start() for m in _CJK_CHAR.finditer(sentence)]
        if not spots:
            return sentence
        i = rng.choice(spots)
        repl = rng.choice([c for c in "的地得在再做作以已" if c != sentence[i]])
        return sentence[:i] + repl + sentence[i + 1 :]
    words = [m for m in re.finditer(r"[A-Za-z]{5,}", sentence)]
    if not words:
        return sentence
    m = rng.choice(words)
    j = m.start() + rng.randrange(1, len(m.group()) - 2)
    return sentence[:j] + sentence[j + 1] + sentence[j] + sentence[j + 2 :]


def edit_body(
    article: Article, edit: str, rng: random.Random, filler: list[str]
) -> tuple[list[str], list[str], list[str], str]:
    """(lines before the body, body paragraphs, lines after, headline) for one edit kind."""
    lang = article.lang
    paras = [list(p) for p in article.paragraphs]
    before: list[str] = []
    after: list[str] = []
    headline = _headline(article)
    kinds = [edit]
    if edit == "combined":
        change = rng.choice(["sentence-added", "sentence-dropped"])
        kinds = ["counter", "timestamp", "source", change, "typo", "headline"]
    for kind in kinds:
        if kind == "counter":
            n = rng.randrange(100, 99999)
            before.append(f"阅读 {n}  评论 {n // 37}" if lang == "zh" else f"{n:,} views")
        elif kind == "timestamp":
            stamp = (
                f"{rng.randrange(2015, 2025)}-{rng.randrange(1, 13):02d}-"
                f"{rng.randrange(1, 29):02d} {rng.randrange(24):02d}:{rng.randrange(60):02d}"
            )
            before.append(f"发布时间：{stamp}" if lang == "zh" else f"Published {stamp} UTC")
        elif kind == "source":
            if lang == "zh":
                after.append(f"来源：{rng.choice(_SOURCES_ZH)}")
            else:
                after.append(f"Originally published by {rng.choice(_SOURCES_EN)}.")
        elif kind == "sentence-added":
            p = rng.randrange(len(paras))
            paras[p].insert(rng.randrange(len(paras[p]) + 1), rng.choice(filler))
        elif kind == "sentence-dropped":
            spots = [(i, j) for i, p in enumerate(paras) for j in range(len(p))]
            if len(spots) > 1:
                i, j = rng.choice(spots[1:])
                del paras[i][j]
        elif kind == "typo":
            spots = [(i, j) for i, p in enumerate(paras) for j in range(len(p))]
            i, j = rng.choice(spots)
            paras[i][j] = _typo(paras[i][j], lang, rng)
        elif kind == "headline":
            headline = _headline(article, 1)
    sep = "" if lang == "zh" else " "
    return before, [sep.join(p) for p in paras if p], after, headline


def _index_path(elem: lxml.html.HtmlElement) -> tuple[int, ...]:
    path: list[int] = []
    parent = elem.getparent()
    while parent is not None:
        path.append(parent.index(elem))
        elem, parent = parent, parent.getparent()
    return tuple(reversed(path))


def render(
    template_root: lxml.html.HtmlElement, content_path: tuple[int, ...], parts: tuple
) -> str:
    """A copy of the template with its content element's inside replaced by the parts."""
    before, paragraphs, after, headline = parts
    root = copy.deepcopy(template_root)
    content = root
    for i in content_path:
        content = content[i]
    tail = content.tail
    for child in list(content):
        content.remove(child)
    content.text = None
    html = "".join(f'<div class="meta">{_escape(b)}</div>' for b in before)
    html += "".join(f"<p>{_escape(p)}</p>" for p in paragraphs)
    html += "".join(f'<p class="source">{_escape(a)}</p>' for a in after)
    for child in lxml.html.fragments_fromstring(html):
        content.append(child)
    content.tail = tail
    for h in root.iter("h1", "title"):
        for child in list(h):
            h.remove(child)
        h.text = headline
    if not any(True for _ in root.iter("h1")):
        h1 = lxml.html.Element("h1")
        h1.text = headline
        content.insert(0, h1)
    return lxml.html.tostring(root, encoding="unicode", doctype="<!DOCTYPE html>")


def _prepare(
    templates: list[Template],
) -> Iterator[tuple[Template, lxml.html.HtmlElement, tuple[int, ...]]]:
    for t in templates:
        try:
            root = lxml.html.document_fromstring(t.html.encode("utf-8", "replace"), parser=_PARSER)
        except (lxml.etree.ParserError, ValueError):
            continue
        content = locate_content(root, t.truth)
        if content is None or content.tag == "body":
            continue
        path = _index_path(content)
        if _holds_one_article(t, root, path):
            yield t, root, path


def _holds_one_article(t: Template, root: lxml.html.HtmlElement, path: tuple[int, ...]) -> bool:
    """Whether a body put in the template is most of the extracted text and no copy of the
    template's own article survives elsewhere (list pages, hidden duplicates are not used).

    Judged with stock readability, not nearDupe's extractor: the cases must not change when
    the extractor under test does.
    """
    from extraction_eval import readability_text_content

    probe = _PROBE_ZH if t.lang == "zh" else _PROBE_EN
    text = readability_text_content(render(root, path, ([], probe, [], probe[0][:20])))
    units = _units(text)
    probe_units = set(_units(" ".join(probe)))
    own = set(_units(t.truth)) - probe_units
    if not units:
        return False
    probe_share = sum(u in probe_units for u in units) / len(units)
    own_share = sum(u in own for u in units) / len(units)
    return probe_share >= 0.6 and own_share <= 0.2


def split_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every evaluation split by site takes: split seeds, half, quick, workers."""
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--half", choices=["held-out", "tune"], default="held-out")
    parser.add_argument("--quick", action="store_true", help="a third of the articles")
    parser.add_argument("--workers", type=int, default=2)


def site_half(site: str, seed: int) -> str:
    """'tune' or 'held-out': a seeded split of sites in two halves (every page of a site on
    the same side, so no template is tuned on and scored on)."""
    digest = hashlib.sha256(f"{seed}:{site}".encode()).digest()
    return "held-out" if digest[0] & 1 else "tune"


def build_cases(
    root: Path | None = None,
    *,
    quick: bool = False,
    seed: int = 20240611,
    half: tuple[str, int] | None = None,
    modern: bool = False,
    site_pages: int = 0,
) -> CaseSet:
    """Syndicated copies (positives) and different articles in one template (negatives);
    ``half=("held-out", s)`` uses only the templates of that half of the sites (split s);
    ``modern`` adds WCXB's article templates; ``site_pages`` more articles are put in each
    template, as a crawled site has many pages (no pairs are listed for them)."""
    rng = random.Random(seed)
    root = root or data_dir()
    articles = load_articles(root)
    templates = load_templates(root) + (load_wcxb_templates(root) if modern else [])
    prepared = list(_prepare(templates))
    if half is not None:
        prepared = [p for p in prepared if site_half(p[0].site, half[1]) == half[0]]
    by_lang: dict[str, list[tuple[Template, lxml.html.HtmlElement, tuple[int, ...]]]] = (
        defaultdict(list)
    )
    for item in prepared:
        by_lang[item[0].lang].append(item)
    fillers: dict[str, list[str]] = defaultdict(list)
    for a in articles:
        fillers[a.lang].extend(s for p in a.paragraphs for s in p if 20 <= len(s) <= 200)
    if quick:
        picked = [a for a in articles if a.source != "thucnews"][::3]
        picked += [a for a in articles if a.source == "thucnews"][::6]
        articles = picked
    else:
        articles = [a for a in articles if a.source != "thucnews"] + [
            a for a in articles if a.source == "thucnews"
        ][::2]
    cases = CaseSet(articles={a.id: a for a in articles})
    edits = EDITS[1:-1]
    for n, article in enumerate(articles):
        slots = [s for s in by_lang[article.lang] if s[0].id != article.id]
        chosen = rng.sample(slots, 3)
        kinds = ["none", "combined", edits[n % len(edits)]]
        base = _add_page(cases, article, chosen[0], "base", rng, fillers[article.lang])
        for i, kind in enumerate(kinds):
            slot = chosen[1 + i % 2]
            page = _add_page(cases, article, slot, kind, rng, fillers[article.lang])
            cases.positives.append((base, page, kind))
    _add_negatives(cases)
    by_article_lang = defaultdict(list)
    for article in articles:
        by_article_lang[article.lang].append(article)
    for slot in prepared if site_pages else []:
        for article in rng.sample(by_article_lang[slot[0].lang], site_pages):
            _add_page(cases, article, slot, "none", rng, fillers[article.lang])
    return cases


def _add_page(
    cases: CaseSet,
    article: Article,
    slot: tuple[Template, lxml.html.HtmlElement, tuple[int, ...]],
    edit: str,
    rng: random.Random,
    filler: list[str],
) -> int:
    template, tree, path = slot
    parts = edit_body(article, "none" if edit == "base" else edit, rng, filler)
    html = render(tree, path, parts)
    page = Page(len(cases.pages), article.id, article.lang, template.id, edit, html)
    cases.pages.append(page)
    return page.id


def _add_negatives(cases: CaseSet) -> None:
    """Different articles in one template; different same-topic thucnews articles."""
    by_template: dict[str, list[Page]] = defaultdict(list)
    for page in cases.pages:
        by_template[page.template].append(page)
    for pages in by_template.values():
        for i, a in enumerate(pages):
            for b in pages[i + 1 :]:
                if a.article != b.article:
                    cases.negatives.append((a.id, b.id, "same-template"))
    by_topic: dict[str, list[Page]] = defaultdict(list)
    for page in cases.pages:
        topic = cases.articles[page.article].topic
        if topic and page.edit == "base":
            by_topic[topic].append(page)
    for pages in by_topic.values():
        for i, a in enumerate(pages):
            for b in pages[i + 1 :]:
                cases.negatives.append((a.id, b.id, "same-topic"))


def load_clough(root: Path) -> list[tuple[str, str, str, str]]:
    """(file, task, category, answer text) per answer, and ('orig', task, 'orig', source)."""
    folder = root / "clough-stevenson"
    rows: list[tuple[str, str, str, str]] = []
    with (folder / "file_information.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            text = (folder / row["File"]).read_bytes().decode("utf-8", "replace")
            rows.append((row["File"], row["Task"], row["Category"], text))
    return rows


def load_pawsx(root: Path) -> list[tuple[str, str, int]]:
    """(sentence1, sentence2, label) of the PAWS-X Chinese dev pairs."""
    rows = []
    with (root / "pawsx-zh" / "dev_2k.tsv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
            rows.append((row["sentence1"], row["sentence2"], int(row["label"])))
    return rows


def short_cases(
    articles: list[Article], rng: random.Random, lengths: tuple[int, ...] = (60, 120, 250, 400)
) -> list[tuple[str, str, str, str, int]]:
    """(article id, original brief, edited brief, edit, target length): short syndicated texts."""
    out = []
    fillers = [s for a in articles for p in a.paragraphs for s in p if 10 <= len(s) <= 60]
    for n, article in enumerate(articles):
        target = lengths[n % len(lengths)]
        sentences = [s for p in article.paragraphs for s in p]
        brief: list[str] = []
        while sentences and sum(map(len, brief)) < target:
            brief.append(sentences.pop(0))
        if not brief:
            continue
        short = Article(article.id, article.lang, article.source, (tuple(brief),))
        edit = EDITS[1 + (n // len(lengths)) % (len(EDITS) - 1)]
        before, paras, after, _ = edit_body(
            short,
            edit,
            rng,
            [f for f in fillers if (_CJK_CHAR.search(f) is None) ^ (short.lang == "zh")],
        )
        out.append((article.id, short.text, "\n".join(before + paras + after), edit, target))
    return out
