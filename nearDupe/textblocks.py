"""An element's text a line per block (the walker readability's output and the fallback share)."""

from __future__ import annotations

import re
from functools import lru_cache

import lxml.etree
import lxml.html

from nearDupe.textlines import dense_length

# fmt: off
BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "body", "br", "center", "dd", "details",
    "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
    "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "li", "main", "menu",
    "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr", "ul",
})
#: Never article text, even inside the element readability picked: image captions and photo
#: credits (the benchmarks' human-written bodies leave them out), navigation and widgets.
NON_TEXT_TAGS = frozenset({
    "aside", "button", "canvas", "embed", "figcaption", "figure", "iframe", "nav", "noscript",
    "object", "select", "svg", "textarea",
})
# Without readability's choice, also drop page chrome and anything named like boilerplate.
_CHROME_TAGS = NON_TEXT_TAGS | {
    "footer", "form", "head", "header", "input", "title",
}
# fmt: on
NON_TEXT_CLASS = re.compile(r"caption|credit", re.I)
_CHROME_CLASS = re.compile(
    r"caption|credit|nav|menu|footer|comment|(?:^|[\s_-])ads?(?:$|[\s_-])|advert|share|social|"
    r"related|sidebar|breadcrumb|banner|copyright|recommend",
    re.I,
)
#: Share of the walked element's text that makes a box named like page furniture its layout.
_LAYOUT_SHARE = 0.5


def fallback_text(root: lxml.html.HtmlElement) -> str:
    """Visible body text without navigation, footers, forms, comments, ads and share widgets."""
    body = root.find("body")
    return lines_text(chrome_free_lines(body if body is not None else root))


def lines_text(lines: list[tuple[str, float]]) -> str:
    """The text of :func:`block_lines`' lines, one per line."""
    return "\n".join(line for line, _ in lines)


def main_area(root: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    """The element a page marks as its main content (its first ``<main>`` or
    ``role="main"``), if any."""
    # (A walk in Python: libxml2's XPath tests every element's attributes slower.)
    return next(
        (e for e in root.iter(lxml.etree.Element) if e.tag == "main" or e.get("role") == "main"),
        None,
    )


def chrome_free_lines(elem: lxml.html.HtmlElement) -> list[tuple[str, float]]:
    """:func:`block_lines` of an element without navigation, footers, forms, comments, ads and
    share widgets."""
    return block_lines(elem, _CHROME_TAGS, _CHROME_CLASS)


def block_lines(
    root: lxml.html.HtmlElement, skip_tags: frozenset[str], skip_class: re.Pattern[str]
) -> list[tuple[str, float]]:
    """(text, share of it inside links) of each block of an element, in order, without the
    skipped tags and classes/ids below it. A class or id says nothing of the element the
    caller asked for, nor of a box holding _LAYOUT_SHARE of that element's text: a theme names
    its layout's boxes after their neighbours ("right-sidebar", "sidebar-container")."""
    parts: list[tuple[str, bool]] = []
    links = 0  # depth inside <a> elements
    whole: list[int] = []  # the length of root's text, once needed

    def named_aside(elem: lxml.html.HtmlElement) -> bool:
        if not names_match(skip_class, class_id(elem)):
            return False
        if not whole:
            whole.append(_dense_length(root))
        return _dense_length(elem) < _LAYOUT_SHARE * whole[0]

    walker = lxml.etree.iterwalk(root, events=("start", "end", "comment", "pi"))
    for event, elem in walker:
        tag = elem.tag
        if event == "start":
            if tag == "a":
                links += 1  # its "end" event comes even when its subtree is skipped
            if elem is not root and (tag in skip_tags or named_aside(elem)):
                walker.skip_subtree()
                continue
            if tag in BLOCK_TAGS:
                parts.append(("\n", False))
            if elem.text:
                parts.append((elem.text, links > 0))
            continue
        if tag in BLOCK_TAGS:
            parts.append(("\n", False))
        if tag == "a":
            links -= 1
        if elem.tail and elem is not root:
            parts.append((elem.tail, links > 0))
    lines: list[tuple[str, float]] = []
    text: list[str] = []
    linked = 0
    for part, in_link in [*parts, ("\n", False)]:
        # A line's runs of spaces become one (split() sees the spaces textlines.SPACE sees;
        # a line holds no line break).
        for i, piece in enumerate(part.split("\n") if "\n" in part else (part,)):
            if i:
                line = " ".join("".join(text).split())
                if line:
                    lines.append((line, min(linked / dense_length(line), 1.0)))
                text, linked = [], 0
            text.append(piece)
            if in_link:
                linked += dense_length(piece)
    return lines


def _dense_length(elem: lxml.html.HtmlElement) -> int:
    """Characters of an element's text, runs of spaces left out (line breaks counted: as
    ``textlines.SPACE.sub("", text)`` counts, three times faster on a page's text)."""
    text = elem.text_content()
    return sum(map(len, text.split())) + text.count("\n")


def text_length(elem: lxml.html.HtmlElement) -> int:
    """Characters of an element's text, runs of whitespace counted as one space."""
    return len(" ".join((elem.text_content() or "").split()))


def class_id(elem: lxml.html.HtmlElement) -> str:
    """An element's class and id attributes, space-separated."""
    return f"{elem.get('class', '')} {elem.get('id', '')}"


@lru_cache(maxsize=8192)
def names_match(pattern: re.Pattern[str], names: str) -> bool:
    """Whether a case-blind ``pattern`` of lowercase words is found in class and id ``names``."""
    if names.isascii():
        # Python's case-blind search tries each case of each letter: on ASCII names a
        # case-sensitive search of the lowercased names finds the same, ten times faster.
        return _case_sensitive(pattern).search(names.lower()) is not None
    return pattern.search(names) is not None


@lru_cache(maxsize=64)
def _case_sensitive(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` without its IGNORECASE flag if it names no capital letter (itself if not)."""
    if pattern.pattern != pattern.pattern.lower():
        return pattern  # a capital letter or a class such as \S, \W
    return re.compile(pattern.pattern, pattern.flags & ~re.IGNORECASE)
