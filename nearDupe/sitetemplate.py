"""A site's template text, learned from the crawl: lines that recur on a site's different pages.

A crawl sees many pages of each site, and whatever recurs across a site's *different* pages (a
"more >" list of headlines, a job board, another post's teaser, a bio, a notice) is that
site's template, not its article. Each line of a page's main text is hashed; the store counts,
per site, the stories (:func:`identity_of` a page's headline) that had each line. A line seen
on another story of the site is left out of the page's fingerprint, signature and sentences;
a page left with almost nothing of its own is not fingerprinted at all (``template-text``):
no two different articles are joined by the text their site wraps them in.
"""

from __future__ import annotations

import html as html_lib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import or_
from urllib.parse import urlsplit

from xxhash import xxh3_64_intdigest

from nearDupe.shorttext import normalize

#: A line is left out of a page's fingerprint once it was seen on this many *other* stories
#: of its site (pages of other headlines). One: a site's second story already loses the lines
#: its first one had (docs/quality.md, "Site templates": with 2, a template tail that
#: outweighs a short story joins the site's first two stories before it is learned).
TEMPLATE_PAGES = 1
#: A page is ``template-text`` when, its template lines left out, fewer letters than this are
#: its own and they do not tell its headline (TELLS_SHARE): its text is its site's (another
#: post's teaser block extracted on every page).
TEMPLATE_OWN_LETTERS = 100
#: A text tells a headline's story when it holds this share of the headline's words: a
#: headline is made of its story's words (tune half: same-site copies under a new headline).
TELLS_SHARE = 0.5
#: A heading or title part seen on this many other pages (titles) of a site is the site's, not
#: a story's headline: a story's own headline is repeated by its copies (one title), or by a
#: second headline (two), while a site's name heads every page.
HEADING_PAGES = 2

#: Titles remembered per line: enough to reach TEMPLATE_PAGES others besides any one page, and
#: HEADING_PAGES others of a heading.
LINE_TITLES = max(TEMPLATE_PAGES + 1, HEADING_PAGES)
#: Lines remembered per site: a site's template is tens of lines, the rest are its stories'
#: own lines, seen once and evicted first, so ~6 stories' worth is enough to learn from (the
#: held-out crawl, seed 1, is the same with 256, 512 or 1,024); the site travels to a worker
#: with each page (3.8 KB) and costs 4 KB on disk, 6 KB in Redis when full (site_bench.py).
SITE_LINES = 256
#: Lines of one page that are counted: a page of more lines is a listing or a dump.
PAGE_LINES = 400
#: A site is young until its pages taught this many stories: a crawl analyses a new site's
#: first pages at once, before any is decided, so each is analysed again at its decision if
#: its site taught more of its lines while it waited (a page of a young site carries its text).
YOUNG_STORIES = 4

_SEED = 0x6E64_7369_7465_6C6E
_HEADING_SEED = 0x6E64_6865_6164_6C6E
#: A story's identity is 31 bits; a page's headings are learned under a key with the 32nd set.
_STORIES = 0x7FFF_FFFF
_HEADINGS_KEY = 0x8000_0000
#: Characters a title or heading element may hold, its markup included: a longer ``<h1>`` is
#: a logo's drawing or a banner, not a headline, and the bound keeps a page of unclosed tags
#: linear (20,000 unclosed ``<h1>`` took 43 s to search, 0.2 s now).
_ELEMENT_CHARS = 1000
_TITLE = re.compile(
    rf"<title[^>]{{0,{_ELEMENT_CHARS}}}>(.{{0,{_ELEMENT_CHARS}}}?)</title", re.I | re.S
)
_H1 = re.compile(rf"<h1[^>]{{0,{_ELEMENT_CHARS}}}>(.{{0,{_ELEMENT_CHARS}}}?)</h1", re.I | re.S)
_TAG = re.compile(r"<[^>]*>")
_HREF = re.compile(r"""<a\b[^>]*?\bhref\s*=\s*["']?([^"'\s>]*)""", re.I)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORDS = re.compile(r"[^\W\d_]+")
_NOT_LETTERS = re.compile(r"[\W\d_]+")
#: What separates a title's headline from the site's name or a label ("Print: ", "(print)").
_TITLE_PARTS = re.compile(r"\s[-–—/]\s|[|｜_–—:：·»«()（）\[\]【】]|(?<=[\u3400-\u9fff])-")
#: Title and heading are looked for in the first this many characters of a page.
_HEAD_CHARS = 300_000
#: Class names that sign a page's template (see :func:`template_signature`), looked for in the
#: first _CLASS_CHARS characters of its body: the first 8 before the headline are one
#: signature on every page of each held-out template (the article's classes put in it
#: included), and on 82 % of the pairs of WCXB's pages of one domain and page type (the first
#: 16: 75 %; the first 8 of the whole body: 83 %, but they split 9 of the 120 templates).
TEMPLATE_CLASSES = 8
#: A page naming fewer than 4 classes before its headline (a table layout) is signed by its
#: skeleton there instead: the first this many of its elements' tag names and ids (those
#: without digits), a run of one such name counted once (a menu of 9 links or of 10 is one
#: menu). The tune half's Chinese templates without a class signature (14 of 32) each get one
#: signature, and WCXB's pairs of one domain and page type keep one memory as often (86 %).
TEMPLATE_TAGS = 32
#: Fewer class names, or skeleton names, than this before the headline sign no template.
_FEWEST_NAMES = 4
#: Memories a host's pages are spread over by their template signature: a host costs at most
#: this many sites' memory, however many templates (or made-up class names) it serves; a
#: portal of hundreds of templates shares a memory between two or three of them.
HOST_TEMPLATES = 256
_CLASS_CHARS = 100_000
_BODY = re.compile(r"<body\b[^<>]{0,1000}>", re.I)
_CLASS = re.compile(
    r"""<[a-z][a-z0-9]{0,20}\s[^<>]{0,1000}?\bclass\s*=\s*["']?([^"'>]{0,300})""", re.I
)
_START_TAG = re.compile(r"<([a-z][a-z0-9]{0,20})\b([^<>]{0,1000})>", re.I)
_ID = re.compile(r"""\bid\s*=\s*["']?([^"'\s>]{1,300})""", re.I)
_DIGIT = re.compile(r"\d")
_H1_START = re.compile(r"<h1\b", re.I)


def site_of(url: str) -> str:
    """The site a URL belongs to: its host, lower-cased, without a leading ``www.``."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return ""
    return host.removeprefix("www.")


def site_memory(host: str, html: str) -> str:
    """The key of the memory a page of ``host`` is judged by and teaches: its host and the
    signature of its template (:func:`template_signature`), so each of a portal's templates
    learns its own lines within its own bounds; the host alone for a page without one."""
    signature = template_signature(html)
    return f"{host}#{signature}" if host and signature else host


def template_signature(html: str) -> str:
    """A page's template, as the hash of the first TEMPLATE_CLASSES distinct class names of its
    body's elements before its first ``<h1>`` (names with digits left out: a post's or an
    ad's number): a site's chrome (header, navigation, breadcrumbs) comes before the headline
    and is the same on each page of one template, another on a portal's other sections, while
    the article's own classes (a byline, a source line) come after it. A page naming fewer
    than 4 classes there is signed by its skeleton there (:func:`_skeleton`). One of
    HOST_TEMPLATES signatures (two hex digits), "" when neither holds 4 names."""
    body = _BODY.search(html, 0, _HEAD_CHARS)
    start = body.end() if body else 0
    headline = _H1_START.search(html, start, start + _CLASS_CHARS)
    end = headline.start() if headline else start + _CLASS_CHARS
    names: dict[str, None] = {}
    for found in _CLASS.finditer(html, start, end):
        for name in found.group(1).casefold().split():
            if not _DIGIT.search(name):
                names[name] = None
        if len(names) >= TEMPLATE_CLASSES:
            break
    chosen = list(names)[:TEMPLATE_CLASSES]
    if len(chosen) < _FEWEST_NAMES:
        chosen = _skeleton(html, start, end)
        if len(chosen) < _FEWEST_NAMES:
            return ""
    signed = " ".join(chosen).encode("utf-8", "surrogatepass")
    return f"{xxh3_64_intdigest(signed, _SEED) % HOST_TEMPLATES:02x}"


def _skeleton(html: str, start: int, end: int) -> list[str]:
    """The first TEMPLATE_TAGS elements of ``html[start:end]`` as ``<tag`` or ``<tag#id`` (ids
    with digits left out), a run of one name counted once."""
    names: list[str] = []
    for found in _START_TAG.finditer(html, start, end):
        name = "<" + found.group(1).casefold()
        named = _ID.search(found.group(2))
        if named and not _DIGIT.search(named.group(1)):
            name += "#" + named.group(1).casefold()
        if not names or names[-1] != name:
            names.append(name)
            if len(names) >= TEMPLATE_TAGS:
                break
    return names


def headline_of(html: str) -> str:
    """A page's headline: its first ``<h1>``, else the longest part of its title between
    separators (``Headline | Site``, ``Print: Headline``, ``标题_网站``); "" if it has none.

    An ``<h1>`` that links to a home page, or that is the last of its title's parts while
    another part is longer, is the site's name (a theme's heading around its logo,
    ``<title>Story | Site</title>``): the longest part is the headline then, or every page of
    the site would be one story.
    """
    return next(iter(headings_of(html)), "")


def headings_of(html: str) -> tuple[str, ...]:
    """What may be a page's headline, best first: its first ``<h1>`` (unless it names the site,
    see :func:`headline_of`), then its title's parts, longest first."""
    head = html[:_HEAD_CHARS]
    found = _H1.search(head)
    fragment = found.group(1) if found else ""
    heading = _text(fragment)
    title = _TITLE.search(head)
    parts = [p.strip() for p in _TITLE_PARTS.split(_text(title.group(1)))] if title else []
    ranked = sorted((p for p in parts if normalize(p)), key=lambda p: -len(normalize(p)))
    if normalize(heading) and not _names_site(fragment, heading, parts, next(iter(ranked), "")):
        ranked.insert(0, heading)
    return tuple(dict.fromkeys(ranked))


def site_headline(headings: Sequence[str], site: SiteTemplate) -> tuple[str, tuple[int, ...], int]:
    """The first of a page's ``headings`` (:func:`headings_of`) that is not its ``site``'s: a
    heading or title part seen on HEADING_PAGES other pages of the site (other titles) is the
    site's name, the section's or a slogan, never a story's ("" if every one is the site's).
    Also the hashes of the headings and the page's key (the site learns them with it)."""
    hashes = tuple(_heading_hash(heading) for heading in headings)
    key = xxh3_64_intdigest(b"".join(h.to_bytes(8, "big") for h in sorted(hashes)))
    key = key & _STORIES | _HEADINGS_KEY
    for heading, hashed in zip(headings, hashes, strict=True):
        if site.others(hashed, key) < HEADING_PAGES:
            return heading, hashes, key
    return "", hashes, key


def _heading_hash(heading: str) -> int:
    """A heading's hash in its site's memory (apart from the lines': another seed), of its
    normalized text as its story's identity (digits kept: "Story 17" is not "Story 18")."""
    data = (normalize(heading) or heading).encode("utf-8", "surrogatepass")
    return xxh3_64_intdigest(data, _HEADING_SEED)


def _names_site(fragment: str, heading: str, parts: Sequence[str], longest: str) -> bool:
    """Whether a page's ``<h1>`` (its markup ``fragment``, its text ``heading``) is its site's
    name: a link to a home page, or the last of its title's ``parts``, of which ``longest`` is
    longer."""
    if any(_is_home(href) for href in _HREF.findall(fragment)):
        return True
    name = normalize(heading)
    return len(parts) > 1 and name == normalize(parts[-1]) and len(normalize(longest)) > len(name)


def _is_home(href: str) -> bool:
    """Whether a link leads to a site's home page: ``/``, or a URL whose path is ``/`` or empty."""
    try:
        url = urlsplit(html_lib.unescape(href))
    except ValueError:
        return False
    return url.path in ("", "/") and not url.query and (bool(url.netloc) or href.startswith("/"))


def identity_of(headline: str, url: str) -> int:
    """A page's story, as a 31-bit hash of its headline (of its URL if it has none): pages of
    one site with other headlines are different stories, however alike their extracted text;
    a print view or a second URL of one story is the same story."""
    data = (normalize(headline) or url).encode("utf-8", "surrogatepass")
    return xxh3_64_intdigest(data, _SEED) & _STORIES or 1


def headline_units(headline: str) -> tuple[str, ...]:
    """What a text holds to tell ``headline``'s story: its words of 3+ letters, its Chinese
    character pairs."""
    folded = unicodedata.normalize("NFKC", headline).casefold()
    units = {w for w in _WORDS.findall(_CJK.sub(" ", folded)) if len(w) >= 3}
    for run in _CJK.findall(folded):
        units.update(run[i : i + 2] for i in range(len(run) - 1))
    return tuple(sorted(units))


def told(text: str, units: Sequence[str]) -> int:
    """Which of a headline's ``units`` ``text`` holds, as a bit mask: a word as a word of its
    own ("garden" is not told by "gardens"), a Chinese pair anywhere."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    words = set(_WORDS.findall(_CJK.sub(" ", folded)))
    return sum(
        1 << i
        for i, unit in enumerate(units)
        if (unit in folded if _CJK.match(unit) else unit in words)
    )


def enough_told(mask: int, units: int) -> bool:
    """Whether a text holding the units in ``mask`` tells a headline of ``units``: at least
    TELLS_SHARE of them."""
    return units > 0 and mask.bit_count() >= TELLS_SHARE * units


def _text(fragment: str) -> str:
    return " ".join(html_lib.unescape(_TAG.sub(" ", fragment)).split())


def _line_hash(line: str) -> tuple[int, int] | None:
    """(hash of a line's letters, their number), or None for a line without letters; digits
    are left out, so lines that differ by a date or a counter are the same line."""
    norm = _NOT_LETTERS.sub("", unicodedata.normalize("NFKC", line).casefold())
    if not norm:
        return None
    return xxh3_64_intdigest(norm.encode("utf-8", "surrogatepass"), _SEED), len(norm)


@dataclass(frozen=True)
class SiteTemplate:
    """What a site's earlier pages taught: line hash -> the identities of pages that had it."""

    lines: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    def others(self, line: int, identity: int) -> int:
        """On how many pages other than ``identity`` the line was seen."""
        titles = self.lines.get(line, ())
        return len(titles) - (identity in titles)

    def is_template(self, line: int, identity: int) -> bool:
        """Whether a line of a page of ``identity`` is its site's template: seen on
        TEMPLATE_PAGES other stories."""
        return self.others(line, identity) >= TEMPLATE_PAGES

    def is_template_line(self, line: str, identity: int) -> bool:
        """Whether a line of text of a page of ``identity`` is its site's template."""
        hashed = _line_hash(line)
        return hashed is not None and self.is_template(hashed[0], identity)

    def template_lines(
        self, lines: Sequence[int], told: Sequence[int], units: int, identity: int
    ) -> set[int]:
        """Which of the ``lines`` of a page of ``identity`` are its site's template: those seen
        on TEMPLATE_PAGES other stories, but for the lines whose one other story is this page's
        under another headline (the lines it alone shares with the page tell the page's
        headline: ``told``, the headline's ``units`` each line holds, as bit masks). A site
        republishing a story, or serving it in two sections, teaches no template by it."""
        shared: dict[int, int] = {}  # the one other story that had a line -> units told
        for line, bits in zip(lines, told, strict=True):
            others = [title for title in self.lines.get(line, ()) if title != identity]
            if len(others) == 1:
                shared[others[0]] = shared.get(others[0], 0) | bits
        same = {story for story, mask in shared.items() if enough_told(mask, units)}
        return {
            line
            for line in lines
            if self.is_template(line, identity) and not set(self.lines[line]) - {identity} <= same
        }

    def young(self) -> bool:
        """Whether the site's pages taught fewer than YOUNG_STORIES stories (as far as the
        lines remembered tell)."""
        stories: set[int] = set()
        for titles in self.lines.values():
            stories.update(title for title in titles if not title & _HEADINGS_KEY)
            if len(stories) >= YOUNG_STORIES:
                return False
        return True


@dataclass(frozen=True)
class Stripped:
    """A page's text without its site's template lines, and what was found."""

    text: str
    #: The page's lines (to be learned once the page is decided).
    lines: tuple[int, ...]
    #: Whether the text is its site's, not an article of its own (see TEMPLATE_OWN_LETTERS).
    template_text: bool
    #: The number of the headline's units, and those each of the ``lines`` holds, as bit
    #: masks (see :func:`told`).
    units: int = 0
    told: tuple[int, ...] = ()


def strip_template(text: str, identity: int, site: SiteTemplate, headline: str = "") -> Stripped:
    """``text`` without its site's template lines (:meth:`SiteTemplate.template_lines`).

    A page left with too little of its own is ``template-text``: another post's teaser block,
    extracted on every page of a site, tells no page's headline, while a story the site
    republished under a new headline keeps the lines it shares with its first publication, and
    the index finds it a copy. A short story's own lines that tell its headline are its
    article, however few their letters (a one-line story under the site's breadcrumbs).
    """
    masks: dict[int, int] = {}  # line hash -> the headline's units it holds
    units = headline_units(headline)
    lines = [(line, _line_hash(line)) for line in text.splitlines()]
    for line, hashed in lines:
        if hashed is not None:
            masks[hashed[0]] = masks.get(hashed[0], 0) | (told(line, units) if units else 0)
    template = site.template_lines(tuple(masks), tuple(masks.values()), len(units), identity)
    kept = [line for line, hashed in lines if hashed is None or hashed[0] not in template]
    mine = [hashed for _, hashed in lines if hashed is not None and hashed[0] not in template]
    own = sum(letters for _, letters in mine)
    distinct = tuple(masks)[:PAGE_LINES]
    marks = tuple(masks[h] for h in distinct)
    tells = enough_told(reduce(or_, (masks[line] for line, _ in mine), 0), len(units))
    if template and own < TEMPLATE_OWN_LETTERS and not tells:
        return Stripped("", distinct, True, len(units), marks)
    return Stripped("\n".join(kept), distinct, False, len(units), marks)
