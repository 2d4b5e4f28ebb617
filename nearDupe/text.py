"""HTML page -> main article text (readability-lxml, with a boilerplate-stripping fallback)."""

from __future__ import annotations

import re

import lxml.etree
import lxml.html
from readability import Document

#: Pages longer than this many characters are truncated before parsing.
DEFAULT_MAX_CHARS = 2_000_000

_BLOCK_TAGS = frozenset(
    "address article aside blockquote body br center dd details dialog dir div dl dt fieldset "
    "figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html li main menu nav "
    "ol p pre section summary table tbody td tfoot th thead tr ul".split()
)
_SKIP_TAGS = frozenset(
    "script style noscript template head title meta link iframe object embed svg canvas "
    "button select option textarea input nav header footer aside form".split()
)
_BOILERPLATE = re.compile(
    r"nav|menu|footer|comment|(?:^|[\s_-])ads?(?:$|[\s_-])|advert|share|social|related|"
    r"sidebar|breadcrumb|banner|copyright|recommend",
    re.I,
)
# C0 controls that lxml refuses in text; \t \n \r are kept.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_SPACE = re.compile(r"[^\S\n]+")
_PARSER = lxml.html.HTMLParser(encoding="utf-8")

#: Readability's text is trusted unless it is shorter than this share of the fallback text.
_MIN_SHARE = 0.3


def extract_main_text(html: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The main article text of a decoded HTML page, one text block per line ("" if none)."""
    try:
        root = _parse(html[:max_chars])
        if root is None:
            return ""
        fallback = _fallback_text(root)
        try:
            summary = Document(html[:max_chars]).summary(html_partial=True)
            main = _block_text(lxml.html.fragment_fromstring(summary, parser=_PARSER))
        except Exception:
            main = ""
        if len(main) < _MIN_SHARE * len(fallback):
            return fallback
        return main
    except Exception:
        return ""


def _parse(html: str) -> lxml.html.HtmlElement | None:
    """Parse text as HTML, tolerating NULs, lone surrogates and encoding declarations."""
    if not html or html.isspace():
        return None
    data = _CONTROL.sub("", html).encode("utf-8", "replace")
    try:
        return lxml.html.document_fromstring(data, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return None


def _fallback_text(root: lxml.html.HtmlElement) -> str:
    """Visible body text without navigation, footers, forms, comments, ads and share widgets."""
    body = root.find("body")
    return _block_text(body if body is not None else root, strip_boilerplate=True)


def _block_text(root: lxml.html.HtmlElement, *, strip_boilerplate: bool = False) -> str:
    """Text of an element with a line break at every block boundary and spaces collapsed."""
    parts: list[str] = []

    def walk(elem: lxml.html.HtmlElement) -> None:
        tag = elem.tag if isinstance(elem.tag, str) else ""
        skip = not tag or (
            strip_boilerplate
            and (tag in _SKIP_TAGS or _BOILERPLATE.search(_class_id(elem)) is not None)
        )
        if not skip:
            block = tag in _BLOCK_TAGS
            if block:
                parts.append("\n")
            if elem.text:
                parts.append(elem.text)
            for child in elem:
                walk(child)
            if block:
                parts.append("\n")
        if elem.tail:
            parts.append(elem.tail)

    walk(root)
    lines = (_SPACE.sub(" ", line).strip() for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def _class_id(elem: lxml.html.HtmlElement) -> str:
    return f"{elem.get('class', '')} {elem.get('id', '')}"
