"""HTML page -> main article text (readability-lxml, with a boilerplate-stripping fallback)."""

from __future__ import annotations

import re
from collections.abc import Callable

import lxml.etree
import lxml.html

from nearDupe.readability_text import BlockReadability
from nearDupe.textblocks import (
    BLOCK_TAGS,
    chrome_free_lines,
    fallback_text,
    lines_text,
    main_area,
    text_length,
)
from nearDupe.textlines import CONTROL, is_cjk
from nearDupe.texttail import story_lines

#: Pages longer than this many characters are cut before parsing (see :func:`within_limit`).
DEFAULT_MAX_CHARS = 2_000_000
#: A page over its limit loses its scripts, styles and comments before it is cut, looked for in
#: its first CODE_SCAN times the limit: a shop's or an app's megabytes of inline JSON otherwise
#: push its content past the cut (19 of WCXB's 1,497 dev pages are over 2 MB; 5 of them kept
#: none of their content).
CODE_SCAN = 4
#: Where a script, a style or a comment starts, and what ends each.
_CODE_START = re.compile(r"<!--|<(script|style)(?=[\s/>])", re.I)
_CODE_END = {
    None: re.compile(r"-->"),
    "script": re.compile(r"</script(?=[\s/>])[^>]*>", re.I),
    "style": re.compile(r"</style(?=[\s/>])[^>]*>", re.I),
}

_INVISIBLE_TAGS = ("script", "style", "link", "meta", "template")
# The same test as readability's own, which BlockReadability._parse replaces.
_HIDDEN_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important\s*)?(?:;|$)",
    re.I,
)
#: A hidden element holding more than this share of a page's text is its layout, hidden until
#: its scripts run (a page that would otherwise flash unstyled), not hidden content: it stays.
#: (WCXB dev: 8 pages of 1,497 have one; 3 of them came out empty.)
_HIDDEN_LAYOUT_SHARE = 0.5
#: The attributes that can hide an element (see _is_hidden) or make it a dialog (_is_dialog).
_HIDING = frozenset(("hidden", "style", "role", "aria-modal"))
#: Dialogs' roles: hidden until opened (a cookie or terms notice, a sign-up form, a cart).
_DIALOG_ROLES = ("dialog", "alertdialog")
#: React's streaming server rendering sends the content of a page's suspended parts last, each
#: in a hidden ``<div id="S:n">`` that its own script moves into place: shown, not hidden.
_STREAMED_SEGMENT = re.compile(r"S:\d+")
#: huge_tree: libxml2 otherwise drops text nested deeper than 256 elements (it keeps up to
#: 2,048 levels then); the other limits it lifts are covered by NEARDUPE_MAX_HTML_CHARS and
#: the analysis time limit.
_PARSER = lxml.html.HTMLParser(encoding="utf-8", huge_tree=True)
# lxml.html picks a class per element in Python (form fields get their own), for every element
# a walk touches; nothing here uses those classes, and a lookup in C costs nothing.
_PARSER.set_element_class_lookup(
    lxml.etree.ElementDefaultClassLookup(
        element=lxml.html.HtmlElement,
        comment=lxml.html.HtmlComment,
        pi=lxml.html.HtmlProcessingInstruction,
        entity=lxml.html.HtmlEntity,
    )
)
#: CONTROL's characters, as UTF-8 bytes (ASCII: one byte each, in no other character's code).
_CONTROL_BYTES = bytes(code for code in range(128) if CONTROL.match(chr(code)))

#: On a page that marks its main content (``<main>``), readability's text is trusted when it
#: holds at least this share of that element's text (without chrome, cut like a story's
#: block): below it, readability chose one box of a page whose content is spread over several
#: (a listing, a forum thread, a product's parts), and the marked text is the page's.
_MAIN_SHARE = 0.5
#: Elsewhere readability's text is trusted unless it found no article candidate or its text is
#: both shorter than _SHORT characters and than _MIN_SHARE of the fallback text (the body's:
#: there, the blocks readability leaves are mostly other stories' teasers).
_SHORT = 500
_MIN_SHARE = 0.03
#: readability's text shorter than this many characters (but not Chinese or Japanese, denser)
#: is a headline or a promotion line, not an article: a longer fallback text is the page's then
#: (a shop's category page, a listing). At 200 (WCXB dev tune half: 7 pages gain, none lose) a
#: one-paragraph brief with comments under it lost its place to the page.
_TINY = 100

#: A page whose structured data (schema.org microdata or JSON-LD) names one of these types is a
#: forum thread or a question with its answers: its replies are its content, not a comment
#: thread under it. (Plain substring tests: a regular expression took 9 ms on a 2 MB page.)
_DISCUSSION = ("DiscussionForumPosting", "QAPage")

#: A page whose Open Graph type names something other than an article ("website" on a home,
#: section or service page, "product", "product.group") and whose structured data names no
#: article spreads its content over several boxes (items, posts, a product's parts):
#: readability's one box is its text only when it holds at least _SPREAD_SHARE of the fallback
#: text. (Measured on WCXB dev by site halves: one page in seven of the other types changes.)
_SPREAD_SHARE = 0.2
_OG_TYPE = re.compile(r"<meta\b[^>]{0,200}?\bog:type\b[^>]{0,200}>", re.I)
_CONTENT = re.compile(r"""\bcontent\s*=\s*["']?\s*([^"'>\s]*)""", re.I)
#: (Two patterns, each starting with its text: the search skips to where that text is.)
_ARTICLE_TYPES = (
    re.compile(r"schema\.org/\w*(?:Article|BlogPosting)\b"),
    re.compile(r'"@type"\s*:\s*\[?\s*"\w*(?:Article|BlogPosting)"'),
)

#: readability retries without dropping unlikely candidates (comments, sidebars, footers) when
#: its first pass kept less than retry_length characters of HTML (250); here the pass returns
#: text, which is shorter than its HTML: 250 characters of it are a short article, not a failed
#: pass, and the retry would then let a comment thread win over it.
_RETRY_LENGTH = 100


def extract_main_text(
    html: str,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    unwanted: Callable[[str], bool] | None = None,
) -> str:
    """The main article text of a decoded HTML page, one text block per line ("" if none);
    without the innermost blocks whose text is ``unwanted`` (a site's template lines)."""
    try:
        html = within_limit(html, max_chars)
        root = _parse_html(html)
        if root is None:
            return ""
        if unwanted is not None:
            _drop_blocks(root, unwanted)
        readability = BlockReadability(root, retry_length=_RETRY_LENGTH)
        readability.discussion = any(name in html for name in _DISCUSSION)
        try:
            main = readability.summary(html_partial=True)
        except Exception:
            main = ""
        marked = _marked_text(
            root, main if readability.found_candidate else "", readability.discussion
        )
        if marked:
            return marked
        spread = _spread_page(html)
        if readability.found_candidate and len(main) >= _SHORT and not spread:
            return main
        fallback = fallback_text(root)
        share = _SPREAD_SHARE if spread else _MIN_SHARE
        if (
            not readability.found_candidate
            or len(main) < share * len(fallback)
            or (len(main) < _TINY < len(fallback) and not is_cjk(main))
        ):
            return fallback
        return main
    except Exception:
        return ""


def within_limit(html: str, max_chars: int) -> str:
    """``html`` if it has at most ``max_chars`` characters; else its first ``max_chars``
    without its scripts, styles and comments (looked for in its first CODE_SCAN times as many)."""
    if len(html) <= max_chars:
        return html
    return without_code(html[: CODE_SCAN * max_chars])[:max_chars]


def without_code(html: str) -> str:
    """``html`` without its scripts, styles and comments (one left open runs to the end), in
    one pass: each search starts where the last ended."""
    parts, at = [], 0
    while (start := _CODE_START.search(html, at)) is not None:
        parts.append(html[at : start.start()])
        name = start.group(1)
        end = _CODE_END[name.lower() if name else None].search(html, start.end())
        if end is None:
            return "".join(parts)
        at = end.end()
    parts.append(html[at:])
    return "".join(parts)


def _drop_blocks(root: lxml.html.HtmlElement, unwanted: Callable[[str], bool]) -> None:
    """Drop the innermost blocks (holding no other block) whose text is ``unwanted``."""
    for elem in list(root.iter(*BLOCK_TAGS)):
        if next(elem.iterdescendants(*BLOCK_TAGS), None) is not None:
            continue
        line = " ".join((elem.text_content() or "").split())
        if line and unwanted(line):
            elem.drop_tree()


def _spread_page(html: str) -> bool:
    """Whether a page's Open Graph type is another than an article's and its structured data
    names no article (_SPREAD_SHARE)."""
    meta = _OG_TYPE.search(html) if "og:type" in html else None
    content = _CONTENT.search(meta.group()) if meta else None
    if content is None or content.group(1).lower() in ("", "article"):
        return False
    return all(pattern.search(html) is None for pattern in _ARTICLE_TYPES)


def _marked_text(root: lxml.html.HtmlElement, main: str, discussion: bool) -> str:
    """The text of the element the page marks as its main content (a ``discussion``'s posts
    included), when readability's text ``main`` holds less than _MAIN_SHARE of it; ""
    otherwise."""
    area = main_area(root)
    # Its whole text bounds the marked text: most articles are settled without walking it.
    if area is None or len(main) >= _MAIN_SHARE * text_length(area):
        return ""
    marked = lines_text(story_lines(chrome_free_lines(area), discussion=discussion))
    return marked if len(main) < _MAIN_SHARE * len(marked) else ""


def _parse_html(html: str) -> lxml.html.HtmlElement | None:
    """Parse text as HTML without hidden and non-content elements (None if there is no tree)."""
    if not html or html.isspace():
        return None
    # Encoded to UTF-8 bytes because lxml rejects str with NULs, lone surrogates or an encoding
    # declaration.
    data = html.encode("utf-8", "replace").translate(None, _CONTROL_BYTES)
    try:
        root = lxml.html.document_fromstring(data, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return None
    _join_roots(root)
    lxml.etree.strip_elements(
        root,
        *_INVISIBLE_TAGS,
        lxml.etree.Comment,
        lxml.etree.ProcessingInstruction,
        with_tail=False,
    )
    # (A walk in Python: libxml2's XPath tests every element's attributes slower.)
    found = [
        elem
        for elem in root.iter(lxml.etree.Element)
        if elem.tag == "dialog" or not _HIDING.isdisjoint(elem.keys())
    ]
    hidden = [elem for elem in found if _is_hidden(elem)]
    hidden += [elem for elem in found if _is_dialog(elem)]
    if hidden:
        layout = _HIDDEN_LAYOUT_SHARE * len(root.text_content())
        for elem in hidden:
            if elem.getparent() is not None and len(elem.text_content()) <= layout:
                elem.drop_tree()
    return root


def _is_hidden(elem: lxml.html.HtmlElement) -> bool:
    """Whether an element is hidden by its style or its ``hidden`` attribute (not a streamed
    segment: _STREAMED_SEGMENT)."""
    if _HIDDEN_STYLE.search(elem.get("style", "")):
        return True
    return elem.get("hidden") is not None and not _STREAMED_SEGMENT.fullmatch(elem.get("id", ""))


def _is_dialog(elem: lxml.html.HtmlElement) -> bool:
    """Whether an element is a dialog, closed or named so by its role or ``aria-modal``."""
    if elem.tag == "dialog" and elem.get("open") is None:
        return True
    return elem.get("role") in _DIALOG_ROLES or elem.get("aria-modal") == "true"


def _join_roots(root: lxml.html.HtmlElement) -> None:
    """Move what a malformed page puts after its root (a second ``<html>``, most often: libxml2
    leaves it beside the first, outside the tree lxml returns) into the root: head into head,
    the rest into the body."""
    extras = [e for e in root.itersiblings() if isinstance(e.tag, str)]
    if not extras:
        return
    body = root.find("body")
    if body is None:
        body = lxml.etree.SubElement(root, "body")
    for extra in extras:
        for part in list(extra) if extra.tag == "html" else [extra]:
            if part.tag == "head":
                head = root.find("head")
                (head if head is not None else body).extend(list(part))
                continue
            if part.tag == "body":
                part.tag = "div"
            body.append(part)
