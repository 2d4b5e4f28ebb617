"""An element's text a line per block (the walker readability's output and the fallback share)."""

from __future__ import annotations

import re

import lxml.etree
import lxml.html

from nearDupe.textlines import SPACE, dense_length

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
    areas = root.xpath("//main | //*[@role='main']")
    return areas[0] if areas else None


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
    lengths: dict[lxml.html.HtmlElement, int] = {}

    def named_aside(elem: lxml.html.HtmlElement) -> bool:
        if skip_class.search(class_id(elem)) is None:
            return False
        if not lengths:
            lengths.update(_text_lengths(root))
        return lengths[elem] < _LAYOUT_SHARE * lengths[root]

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
        pieces = part.split("\n")
        for i, piece in enumerate(pieces):
            if i:
                line = SPACE.sub(" ", "".join(text)).strip()
                if line:
                    lines.append((line, min(linked / dense_length(line), 1.0)))
                text, linked = [], 0
            text.append(piece)
            if in_link:
                linked += dense_length(piece)
    return lines


def _text_lengths(root: lxml.html.HtmlElement) -> dict[lxml.html.HtmlElement, int]:
    """Characters of each element's text below ``root`` (runs of spaces left out), in one
    pass."""
    lengths: dict[lxml.html.HtmlElement, int] = {}
    for _event, elem in lxml.etree.iterwalk(root, events=("end",)):
        length = len(SPACE.sub("", elem.text or ""))
        for child in elem:
            length += lengths.get(child, 0) + len(SPACE.sub("", child.tail or ""))
        lengths[elem] = length
    return lengths


def text_length(elem: lxml.html.HtmlElement) -> int:
    """Characters of an element's text, runs of whitespace counted as one space."""
    return len(" ".join((elem.text_content() or "").split()))


def class_id(elem: lxml.html.HtmlElement) -> str:
    """An element's class and id attributes, space-separated."""
    return f"{elem.get('class', '')} {elem.get('id', '')}"
