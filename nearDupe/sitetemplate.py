"""A site's template text, learned from the crawl: lines that recur on a site's different pages.

A crawl sees many pages of each site, and whatever recurs across a site's *different* pages (a
"more >" list of headlines, a job board, another post's teaser, a bio, a notice) is that
site's template, not its article. Each line of a page's main text is hashed; the store counts,
per site, the distinct pages (by :func:`page_identity`: the title and first heading) that
carried each line. A line seen on enough other pages is left out of the page's fingerprint,
signature and sentences; a page whose text was mostly seen on the site's other pages is not
fingerprinted at all (``template-text``): no two different articles are joined by the text
their site wraps them in.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from xxhash import xxh3_64_intdigest

from nearDupe.shorttext import normalize

#: A line is left out of a page's fingerprint once it was seen on this many *other* stories
#: of its site (pages of other headlines). One: a site's second story already loses the lines
#: its first one had (docs/quality.md, "Site templates": with 2, a template tail that
#: outweighs a short story joins the site's first two stories before it is learned).
TEMPLATE_PAGES = 1
#: A page is ``template-text`` when, its template lines left out, fewer letters than this are
#: its own: its text is its site's (another post's teaser block extracted on every page).
TEMPLATE_OWN_LETTERS = 100
#: Titles remembered per line: enough to reach TEMPLATE_PAGES others besides any one page.
LINE_TITLES = TEMPLATE_PAGES + 1
#: Lines remembered per site (a site's template is tens of lines; the rest are articles' own
#: lines, seen once, evicted first): about 24 B each, so at most ~50 KB per site.
SITE_LINES = 1024
#: Lines of one page that are counted: a page of more lines is a listing or a dump.
PAGE_LINES = 400

_SEED = 0x6E64_7369_7465_6C6E
_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.I | re.S)
_H1 = re.compile(r"<h1[^>]*>(.*?)</h1", re.I | re.S)
_TAG = re.compile(r"<[^>]*>")
#: What separates a title's headline from the site's name or a label ("Print: ", "(print)").
_TITLE_PARTS = re.compile(r"\s[-–—/]\s|[|｜_–—:：·»«()（）\[\]【】]|(?<=[\u3400-\u9fff])-")
#: Title and heading are looked for in the first this many characters of a page.
_HEAD_CHARS = 300_000


def site_of(url: str) -> str:
    """The site a URL belongs to: its host, lower-cased, without a leading ``www.``."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return ""
    return host.removeprefix("www.")


def page_identity(html: str, url: str) -> int:
    """A 32-bit hash of a page's headline: its first ``<h1>``, else the longest part of its
    title between separators (``Headline | Site``, ``Print: Headline``, ``标题_网站``), else its
    URL. Pages of one site with other headlines are different stories, however alike their
    extracted text; a print view or a second URL of one story is the same story."""
    head = html[:_HEAD_CHARS]
    headline = ""
    found = _H1.search(head)
    if found:
        headline = normalize(_text(found.group(1)))
    if not headline and (found := _TITLE.search(head)):
        headline = max(
            (normalize(part) for part in _TITLE_PARTS.split(_text(found.group(1)))), key=len
        )
    data = (headline or url).encode("utf-8", "surrogatepass")
    return xxh3_64_intdigest(data, _SEED) & 0xFFFF_FFFF or 1


def _text(fragment: str) -> str:
    return html_lib.unescape(_TAG.sub(" ", fragment))


def _line_hash(line: str) -> tuple[int, int] | None:
    """(hash of a line's letters, their number), or None for a line without letters; digits
    are left out, so lines that differ by a date or a counter are the same line."""
    norm = normalize(line, digits=False)
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


@dataclass(frozen=True)
class Stripped:
    """A page's text without its site's template lines, and what was found."""

    text: str
    #: The page's lines (to be learned once the page is decided).
    lines: tuple[int, ...]
    #: Whether the text is its site's, not an article of its own (see TEMPLATE_OWN_LETTERS).
    template_text: bool


def strip_template(text: str, identity: int, site: SiteTemplate) -> Stripped:
    """``text`` without the lines its site's other pages had on TEMPLATE_PAGES pages or more."""
    kept, hashes = [], []
    own = removed = 0
    for line in text.splitlines():
        hashed = _line_hash(line)
        if hashed is None:
            kept.append(line)
            continue
        h, letters = hashed
        hashes.append(h)
        if site.lines and site.others(h, identity) >= TEMPLATE_PAGES:
            removed += letters
        else:
            own += letters
            kept.append(line)
    template_text = removed > 0 and own < TEMPLATE_OWN_LETTERS
    distinct = tuple(dict.fromkeys(hashes))[:PAGE_LINES]
    return Stripped("\n".join(kept), distinct, template_text)
