"""HTML page -> main article text (readability-lxml, with a boilerplate-stripping fallback)."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence

import lxml.etree
import lxml.html
from readability import Document
from readability.readability import REGEXES

from nearDupe.textlines import (
    BOX_MAX_CHARS,
    CONTROL,
    SPACE,
    THREAD_STAMPS,
    TIME_RE,
    cut_comment_thread,
    dense_length,
    is_cjk,
    is_comment_thread,
    is_furniture_box,
    trim_edges,
)
from nearDupe.texttail import cut_tail

#: Pages longer than this many characters are truncated before parsing.
DEFAULT_MAX_CHARS = 2_000_000

# fmt: off
_BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "body", "br", "center", "dd", "details",
    "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
    "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "li", "main", "menu",
    "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr", "ul",
})
# Never article text, even inside the element readability picked: image captions and photo
# credits (the benchmarks' human-written bodies leave them out), navigation and widgets.
_NON_TEXT_TAGS = frozenset({
    "aside", "button", "canvas", "embed", "figcaption", "figure", "iframe", "nav", "noscript",
    "object", "select", "svg", "textarea",
})
# Without readability's choice, also drop page chrome and anything named like boilerplate.
_CHROME_TAGS = _NON_TEXT_TAGS | {
    "footer", "form", "head", "header", "input", "title",
}
# fmt: on
_NON_TEXT_CLASS = re.compile(r"caption|credit", re.I)
_CHROME_CLASS = re.compile(
    r"caption|credit|nav|menu|footer|comment|(?:^|[\s_-])ads?(?:$|[\s_-])|advert|share|social|"
    r"related|sidebar|breadcrumb|banner|copyright|recommend",
    re.I,
)
# Readability scores a paragraph by its commas; Chinese and Japanese text uses these instead.
_COMMAS = re.compile(r"[,，、]")
# C0 controls that lxml refuses in text; \t \n \r are kept.
_INVISIBLE_TAGS = ("script", "style", "link", "meta", "template")
# The same test as readability's own, which _Readability._parse replaces.
_HIDDEN_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important\s*)?(?:;|$)",
    re.I,
)
#: huge_tree: libxml2 otherwise drops text nested deeper than 256 elements (it keeps up to
#: 2,048 levels then); the other limits it lifts are covered by NEARDUPE_MAX_HTML_CHARS and
#: the analysis time limit.
_PARSER = lxml.html.HTMLParser(encoding="utf-8", huge_tree=True)

#: Readability's text is trusted unless it found no article candidate or its text is both
#: shorter than _SHORT characters and than _MIN_SHARE of the fallback text.
_SHORT = 500
_MIN_SHARE = 0.03

#: readability retries without dropping unlikely candidates (comments, sidebars, footers) when
#: its first pass kept less than retry_length characters of HTML (250); here the pass returns
#: text, which is shorter than its HTML: 250 characters of it are a short article, not a failed
#: pass, and the retry would then let a comment thread win over it.
_RETRY_LENGTH = 100
#: On Chinese and Japanese pages readability's paragraph scores (commas, a length bonus capped
#: at 300 characters, a base score per paragraph) can rank a block of several short paragraphs
#: (a copyright notice, a long reply under a forum post) above a short one-paragraph article.
#: Every page of such a site would then yield the same text. So there, prose blocks that come
#: before the chosen one (an article precedes its notices, comments and replies), outside it,
#: scoring at least _RIVAL_SHARE of it (without class-name bonuses), of at least
#: _RIVAL_MIN_CHARS characters and not link lists, are kept too: some boilerplate in the text is
#: better than the article missing from it. (Not on English pages: there the scores are
#: reliable and the blocks before the article are cookie banners and teasers.)
_RIVAL_SHARE = 0.5
_RIVAL_MIN_CHARS = 100
_RIVAL_MAX_LINKS = 0.25
_BOX_SKIPS = 3

#: Elements inside the article named like furniture, holding at most this share of its text,
#: are dropped.
_FURNITURE_BLOCK_SHARE = 0.3
_FURNITURE_CLASS = re.compile(
    r"byline|dateline|author|timestamp|publish|comment|share|social|related|breadcrumb|"
    r"(?:^|[\s_-])tags?(?:$|[\s_-])|tag-?list|newsletter|subscribe|recommend|copyright|"
    r"disclaimer|(?:^|[\s_-])meta(?:$|[\s_-])",
    re.I,
)


def extract_main_text(html: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The main article text of a decoded HTML page, one text block per line ("" if none)."""
    try:
        root = _parse_html(html[:max_chars])
        if root is None:
            return ""
        readability = _Readability(root, retry_length=_RETRY_LENGTH)
        try:
            main = readability.summary(html_partial=True)
        except Exception:
            main = ""
        if readability.found_candidate and len(main) >= _SHORT:
            return main
        fallback = _fallback_text(root)
        if not readability.found_candidate or len(main) < _MIN_SHARE * len(fallback):
            return fallback
        return main
    except Exception:
        return ""


class _Readability(Document):
    """readability-lxml that counts CJK commas and returns block-aware text, not HTML."""

    found_candidate = False
    _rivals: Sequence[lxml.html.HtmlElement] = ()

    def _parse(self, input: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
        # The tree comes cleaned by _parse_html (readability's own cleaner spends most of its
        # time rewriting javascript: links); each pass of summary() mutates a fresh copy.
        return copy.deepcopy(input)

    def select_best_candidate(self, candidates: dict) -> dict | None:
        for _ in range(_BOX_SKIPS):
            top = max(candidates.values(), key=lambda c: c["content_score"], default=None)
            if top is None or not _is_passed_over(top["elem"]):
                break
            del candidates[top["elem"]]
        best = super().select_best_candidate(candidates)
        self.found_candidate = best is not None
        self._rivals = []
        if best is not None and is_cjk(SPACE.sub("", best["elem"].text_content() or "")):
            self._rivals = self._rival_blocks(candidates, best)
        return best

    def _rival_blocks(self, candidates: dict, best: dict) -> list[lxml.html.HtmlElement]:
        """Prose blocks before the best candidate, outside it, scoring nearly as high: the
        outermost ones, in page order."""
        elem = best["elem"]
        floor = _RIVAL_SHARE * best["content_score"]
        # Rivals without their class-name bonus: "content"/"post" teasers are not article text.
        rivals = {
            e
            for e, c in candidates.items()
            if e is not elem
            and c["content_score"] - max(self.class_weight(e), 0) >= floor
            and _text_length(e) >= _RIVAL_MIN_CHARS
            and self.get_link_density(e) <= _RIVAL_MAX_LINKS
        }
        if not rivals:
            return []
        rivals -= set(elem.iterancestors())
        rivals -= set(elem.iterdescendants())
        order = {e: i for i, e in enumerate(self.html.iter())}
        return sorted(
            (
                e
                for e in rivals
                if order[e] < order[elem] and not any(a in rivals for a in e.iterancestors())
            ),
            key=order.__getitem__,
        )

    def get_article(
        self, candidates: dict, best_candidate: dict, html_partial: bool = False
    ) -> lxml.html.HtmlElement:
        # readability may have swapped the best candidate for an enclosing <article>/<main>.
        elem = best_candidate["elem"]
        related = set(elem.iterancestors()) | set(elem.iterdescendants())
        rivals = [e for e in self._rivals if e not in related]
        output = super().get_article(candidates, best_candidate, html_partial=html_partial)
        for i, rival in enumerate(r for r in rivals if output not in r.iterancestors()):
            output.insert(i, rival)
        return output

    # The two methods below are readability's own, made cheaper for large pages.

    def get_link_density(self, elem: lxml.html.HtmlElement) -> float:
        link_length = sum(_text_length(link) for link in elem.iterdescendants("a"))
        return link_length / max(_text_length(elem), 1)

    def remove_unlikely_candidates(self) -> None:
        for elem in self.html.xpath("//*[@class or @id]"):
            names = _class_id(elem)
            if (
                len(names) >= 2
                and REGEXES["unlikelyCandidatesRe"].search(names)
                and not REGEXES["okMaybeItsACandidateRe"].search(names)
                and elem.tag not in ("html", "body")
                and not elem.xpath("ancestor-or-self::pre | ancestor-or-self::code")
                and not elem.xpath(
                    "descendant-or-self::main | descendant-or-self::article | "
                    "descendant-or-self::math"
                )
            ):
                elem.drop_tree()

    def get_clean_html(self) -> str:
        _drop_furniture_blocks(self.html)
        lines = _block_lines(self.html, _NON_TEXT_TAGS | {"h1"}, _NON_TEXT_CLASS)
        return "\n".join(line for line, _ in trim_edges(cut_tail(cut_comment_thread(lines))))

    def score_paragraphs(self) -> dict:
        # readability's own scoring, except that it counts CJK commas too.
        candidates: dict = {}
        for elem in self.tags(self._html(), "p", "pre", "td", "blockquote"):
            parent = elem.getparent()
            if parent is None:
                continue
            grand_parent = parent.getparent()
            inner_text = SPACE.sub(" ", elem.text_content() or "").strip()
            if len(inner_text) < self.min_text_length:
                continue
            score = 2 + len(_COMMAS.findall(inner_text)) + min(len(inner_text) / 100, 3)
            if parent not in candidates:
                candidates[parent] = self.score_node(parent)
            candidates[parent]["content_score"] += score
            if grand_parent is not None:
                if grand_parent not in candidates:
                    candidates[grand_parent] = self.score_node(grand_parent)
                candidates[grand_parent]["content_score"] += score / 2
        for elem, candidate in candidates.items():
            candidate["content_score"] *= 1 - self.get_link_density(elem)
        return candidates


def _parse_html(html: str) -> lxml.html.HtmlElement | None:
    """Parse text as HTML without hidden and non-content elements (None if there is no tree)."""
    if not html or html.isspace():
        return None
    # Encoded to UTF-8 bytes because lxml rejects str with NULs, lone surrogates or an encoding
    # declaration.
    data = CONTROL.sub("", html).encode("utf-8", "replace")
    try:
        root = lxml.html.document_fromstring(data, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return None
    lxml.etree.strip_elements(
        root,
        *_INVISIBLE_TAGS,
        lxml.etree.Comment,
        lxml.etree.ProcessingInstruction,
        with_tail=False,
    )
    for elem in root.xpath("//*[@hidden] | //*[@style]"):
        if elem.get("hidden") is not None or _HIDDEN_STYLE.search(elem.get("style", "")):
            elem.drop_tree()
    return root


def _fallback_text(root: lxml.html.HtmlElement) -> str:
    """Visible body text without navigation, footers, forms, comments, ads and share widgets."""
    body = root.find("body")
    return _block_text(body if body is not None else root, _CHROME_TAGS, _CHROME_CLASS)


def _block_text(
    root: lxml.html.HtmlElement, skip_tags: frozenset[str], skip_class: re.Pattern[str]
) -> str:
    """Text of an element, a line per block, without the skipped tags and classes/ids."""
    return "\n".join(line for line, _ in _block_lines(root, skip_tags, skip_class))


def _block_lines(
    root: lxml.html.HtmlElement, skip_tags: frozenset[str], skip_class: re.Pattern[str]
) -> list[tuple[str, float]]:
    """(text, share of it inside links) of each block of an element, in order, without the
    skipped tags and classes/ids."""
    parts: list[tuple[str, bool]] = []
    links = 0  # depth inside <a> elements
    walker = lxml.etree.iterwalk(root, events=("start", "end", "comment", "pi"))
    for event, elem in walker:
        tag = elem.tag
        if event == "start":
            if tag == "a":
                links += 1  # its "end" event comes even when its subtree is skipped
            if tag in skip_tags or skip_class.search(_class_id(elem)) is not None:
                walker.skip_subtree()
                continue
            if tag in _BLOCK_TAGS:
                parts.append(("\n", False))
            if elem.text:
                parts.append((elem.text, links > 0))
            continue
        if tag in _BLOCK_TAGS:
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


def _is_passed_over(elem: lxml.html.HtmlElement) -> bool:
    """Whether readability's top candidate is page furniture or a comment thread, not an
    article (its lines are only split when it is short or holds enough times of day)."""
    text = elem.text_content() or ""
    if len(text) > BOX_MAX_CHARS and len(TIME_RE.findall(text)) < THREAD_STAMPS:
        return False
    lines = _block_lines(elem, _NON_TEXT_TAGS, _NON_TEXT_CLASS)
    return is_furniture_box(lines) or is_comment_thread(lines)


def _drop_furniture_blocks(root: lxml.html.HtmlElement) -> None:
    """Drop the elements named like page furniture (bylines, share and tag bars, related
    links, comments) inside the chosen article, unless one holds much of its text (then the
    name is a site's quirk: a "post-author" or "has-comments" article)."""
    total = _text_length(root)
    found = [
        e
        for e in root.iterdescendants()
        if isinstance(e.tag, str)
        and (e.get("class") or e.get("id"))
        and _FURNITURE_CLASS.search(_class_id(e)) is not None
    ]
    for elem in found:
        if elem.getparent() is not None and _text_length(elem) <= _FURNITURE_BLOCK_SHARE * total:
            elem.drop_tree()


def _text_length(elem: lxml.html.HtmlElement) -> int:
    return len(" ".join((elem.text_content() or "").split()))


def _class_id(elem: lxml.html.HtmlElement) -> str:
    return f"{elem.get('class', '')} {elem.get('id', '')}"
