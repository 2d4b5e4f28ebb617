"""readability-lxml made to return the chosen article's block text (CJK-aware, furniture out)."""

from __future__ import annotations

import copy
import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache

import lxml.etree
import lxml.html
from readability import Document
from readability.readability import REGEXES, is_video_url
from readability.readability import text_length as clean_length

from nearDupe.textblocks import (
    NON_TEXT_CLASS,
    NON_TEXT_TAGS,
    block_lines,
    class_id,
    lines_text,
    names_match,
    text_length,
)
from nearDupe.textlines import (
    BOX_MAX_CHARS,
    SPACE,
    THREAD_STAMPS,
    TIME_RE,
    is_cjk,
    is_comment_thread,
    is_furniture_box,
)
from nearDupe.texttail import story_lines

# readability logs every candidate it scores at DEBUG and INFO, charset_normalizer each guess
# at DEBUG (analysis.detect_encoding): not into a crawl's log, whatever its level.
for _name in ("readability", "charset_normalizer"):
    logging.getLogger(_name).setLevel(logging.WARNING)

# Readability scores a paragraph by its commas; Chinese and Japanese text uses these instead.
_COMMAS = re.compile(r"[,，、]")

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

#: Readability.js's step that readability-lxml lacks: when at least _ALTERNATIVES of the next
#: _TOP_CANDIDATES - 1 candidates score _ALTERNATIVE_SHARE of the best one, the nearest ancestor
#: of the best holding that many of them is the article (each of its paragraphs sits in a box of
#: its own: page builders, ads between paragraphs). Here the alternatives must be boxes of the
#: best one's kind (tag and class): a template's teasers and widgets that score alike pulled
#: their text into the article.
_TOP_CANDIDATES = 5
_ALTERNATIVE_SHARE = 0.75
_ALTERNATIVES = 3

#: Elements inside the article named like furniture, holding at most this share of its text,
#: are dropped.
_FURNITURE_BLOCK_SHARE = 0.3
_FURNITURE_CLASS = re.compile(
    r"byline|dateline|author|timestamp|publish|comment|share|social|related|breadcrumb|"
    r"(?:^|[\s_-])tags?(?:$|[\s_-])|tag-?list|newsletter|subscribe|recommend|copyright|"
    r"disclaimer|(?:^|[\s_-])meta(?:$|[\s_-])",
    re.I,
)


#: readability's unlikely candidates: the elements named, unless inside code or holding the
#: page's main content.
_IN_CODE = lxml.etree.XPath("ancestor-or-self::pre | ancestor-or-self::code")
_HOLDS_MAIN = lxml.etree.XPath(
    "descendant-or-self::main | descendant-or-self::article | descendant-or-self::math"
)

_DIV_TO_P = REGEXES["divToPElementsRe"]
_CALL_TO_ACTION = REGEXES["callToActionRe"]
#: The boxes readability's sanitize may drop, in the order it looks at them (each kind from
#: the page's end), and the descendants it counts in one.
_CLEANED_TAGS = ("table", "ul", "div", "aside", "header", "footer", "section")
_COUNTED_TAGS = ("p", "img", "li", "embed", "input")
_IN_ARTICLE = lxml.etree.XPath("ancestor::main | ancestor::article")
#: The tags readability's _DIV_TO_P finds in a <div>'s serialised children, as the first
#: letters of a tag name (its pattern is matched case-blind, and escapes all else).
_BLOCK_TAGS = (b"blockquote", b"dl", b"div", b"img", b"ol", b"p", b"table", b"ul")


def _holds_block(elem: lxml.html.HtmlElement) -> bool:
    """Whether readability's _DIV_TO_P matches the serialised children of ``elem``: a
    descendant's start tag names a block (escaped text and attributes never match), or a
    comment or processing instruction holds one."""
    for node in elem.iterdescendants():
        tag = node.tag
        if isinstance(tag, str):
            if tag.encode("utf-8").lower().startswith(_BLOCK_TAGS):
                return True
        elif _DIV_TO_P.search(str(lxml.etree.tostring(node, encoding="utf-8", with_tail=False))):
            return True
    return False


@lru_cache(maxsize=4096)
def _class_weight(class_: str | None, id_: str | None) -> int:
    """readability's weight of an element's class and id (without keyword lists)."""
    weight = 0
    for feature in (class_, id_):
        if feature:
            weight -= 25 if names_match(REGEXES["negativeRe"], feature) else 0
            weight += 25 if names_match(REGEXES["positiveRe"], feature) else 0
    return weight


@lru_cache(maxsize=4096)
def _unlikely(names: str) -> bool:
    """Whether class and id ``names`` make their element an unlikely candidate."""
    return names_match(REGEXES["unlikelyCandidatesRe"], names) and not names_match(
        REGEXES["okMaybeItsACandidateRe"], names
    )


class BlockReadability(Document):
    """readability-lxml that counts CJK commas and returns block-aware text, not HTML."""

    found_candidate = False
    #: The page is a discussion (nearDupe.text._DISCUSSION): its thread is its content.
    discussion = False
    _rivals: Sequence[lxml.html.HtmlElement] = ()

    def _parse(self, input: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
        # The tree comes cleaned by nearDupe.text (readability's own cleaner spends most of its
        # time rewriting javascript: links); each pass of summary() mutates a fresh copy.
        return copy.deepcopy(input)

    def select_best_candidate(self, candidates: dict) -> dict | None:
        for _ in range(_BOX_SKIPS):
            top = max(candidates.values(), key=lambda c: c["content_score"], default=None)
            if top is None or not _is_passed_over(top["elem"]):
                break
            del candidates[top["elem"]]
        best = _readability_best(candidates, self.get_link_density)
        if best is not None:
            best = self._common_ancestor(candidates, best)
        self.found_candidate = best is not None
        self._rivals = []
        if best is not None and is_cjk(SPACE.sub("", best["elem"].text_content() or "")):
            self._rivals = self._rival_blocks(candidates, best)
        return best

    def _common_ancestor(self, candidates: dict, best: dict) -> dict:
        """The nearest ancestor of the best candidate holding _ALTERNATIVES of the candidates of
        its kind that score nearly as high (_ALTERNATIVE_SHARE), or the best candidate."""
        ranked = sorted(candidates.values(), key=lambda c: c["content_score"], reverse=True)
        close = [
            set(c["elem"].iterancestors())
            for c in ranked[:_TOP_CANDIDATES]
            if c is not best
            and c["content_score"] >= _ALTERNATIVE_SHARE * best["content_score"]
            and _kind(c["elem"]) == _kind(best["elem"])
        ]
        if len(close) < _ALTERNATIVES:
            return best
        for ancestor in best["elem"].iterancestors():
            if ancestor.tag in ("body", "html"):
                break
            if sum(ancestor in ancestors for ancestors in close) >= _ALTERNATIVES:
                found = candidates.get(ancestor) or self.score_node(ancestor)
                score = max(found["content_score"], best["content_score"])
                return {**found, "content_score": score}
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
            and text_length(e) >= _RIVAL_MIN_CHARS
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
        built = super().get_article(candidates, best_candidate, html_partial=html_partial)
        # readability builds the article in a tree of lxml's default parser, whose elements get
        # their class in Python at every walk: it moves into one of the page's parser.
        output = self.html.makeelement(built.tag, built.attrib)
        output.text = built.text
        output.extend(built)
        for i, rival in enumerate(r for r in rivals if output not in r.iterancestors()):
            output.insert(i, rival)
        return output

    # The methods below are readability's own, made cheaper for large pages: a page repeats
    # its class names, whose regular expressions are matched once.

    def sanitize(
        self, node: lxml.html.HtmlElement, candidates: dict, keep_all_images: bool = False
    ) -> str:
        # readability's cleaning of the article, without the debug lines it formats for each
        # element it keeps or drops (costing as much as the cleaning); no image keeps a box.
        for header in self.tags(node, "h1", "h2", "h3", "h4", "h5", "h6"):
            if self.class_weight(header) < 0 or self.get_link_density(header) > 0.33:
                header.drop_tree()
        for elem in self.tags(node, "p"):
            if _CALL_TO_ACTION.search(elem.text_content()) and self.get_link_density(elem) > 0.2:
                elem.drop_tree()
        for elem in self.tags(node, "form", "textarea"):
            elem.drop_tree()
        for elem in self.tags(node, "iframe"):
            if "src" in elem.attrib and is_video_url(elem.attrib["src"]):
                elem.attrib.pop("srcdoc", None)
                elem.text = "VIDEO"
            else:
                elem.drop_tree()
        allowed = self.get_preserved_elements(node)
        for elem in self.reverse_tags(node, *_CLEANED_TAGS):
            if elem in allowed:
                continue
            weight = self.class_weight(elem)
            score = candidates[elem]["content_score"] if elem in candidates else 0
            if weight + score < 0 or (
                elem.text_content().count(",") < 10 and self._cluttered(elem, weight, allowed)
            ):
                elem.drop_tree()
        self.html = node
        return self.get_clean_html()

    def _cluttered(self, elem: lxml.html.HtmlElement, weight: int, allowed: dict) -> bool:
        """readability's reasons to drop a box of few commas: more images, list items or
        fields than paragraphs, too short, too many links or embeds, or empty (unless a
        neighbour is long: then the boxes inside it stay too, marked in ``allowed``). Each
        measure is taken when a reason needs it."""
        counts = Counter(d.tag for d in elem.iterdescendants(*_COUNTED_TAGS))
        paragraphs, images = counts["p"], counts["img"]
        hidden = sum(1 for d in elem.iterdescendants("input") if d.get("type") == "hidden")
        if paragraphs and images > 1 + paragraphs * 1.3:
            return True
        if counts["li"] - 100 > paragraphs and elem.tag not in ("ol", "ul"):
            return True
        if counts["input"] - hidden > paragraphs / 3:
            return True
        length = clean_length(elem)
        if length < self.min_text_length and (images == 0 or images > 2):
            return True
        links = self.get_link_density(elem)
        in_article = elem.tag in ("ul", "section") and bool(_IN_ARTICLE(elem))
        if weight < 25 and links > (0.25 if in_article else 0.2):
            return True
        if weight >= 25 and links > 0.5:
            return True
        if (counts["embed"] == 1 and length < 75) or counts["embed"] > 1:
            return True
        if length:
            return False
        neighbours = [
            next((n for n in map(clean_length, siblings) if n), 0)
            for siblings in (elem.itersiblings(), elem.itersiblings(preceding=True))
        ]
        if sum(neighbours) <= 1000:
            return True
        allowed.update(dict.fromkeys(self.tags(elem, "table", "ul", "div", "section"), True))
        return False

    def get_preserved_elements(self, node: lxml.html.HtmlElement) -> dict:
        # readability's; a quote's lead is only looked for in an article holding a quote.
        if next(node.iter("blockquote"), None) is not None:
            return super().get_preserved_elements(node)
        return {elem: True for elem in self.tags(node, "ul") if self.is_toc_list(elem)}

    def transform_misused_divs_into_paragraphs(self) -> None:
        # readability serialises each <div>'s children to look for a block tag in them (for
        # nested <div>s, the page again and again); the same look, without serialising.
        for elem in self.tags(self.html, "div"):
            if not _holds_block(elem):
                elem.tag = "p"
        inline = {"a", "b", "cite", "code", "em", "font", "i", "small", "span", "strong"}
        inline |= {"sub", "sup", "u"}
        for elem in self.tags(self.html, "div"):
            children = list(elem)
            paragraph = None
            if elem.text and elem.text.strip():
                paragraph = elem.makeelement("p")
                paragraph.text, elem.text = elem.text, None
                elem.insert(0, paragraph)
            for child in children:
                if child.tag == "br":
                    paragraph = None
                    continue
                # An inline tag's own start tag names no block, nor does its escaped tail.
                if child.tag not in inline or _holds_block(child):
                    paragraph = None
                    continue
                if paragraph is None:
                    paragraph = elem.makeelement("p")
                    child.addprevious(paragraph)
                paragraph.append(child)
            for pos, child in reversed(list(enumerate(elem))):
                if child.tail and child.tail.strip():
                    tail = elem.makeelement("p")
                    tail.text, child.tail = child.tail, None
                    elem.insert(pos + 1, tail)
                if child.tag == "br":
                    child.drop_tree()

    def class_weight(self, e: lxml.html.HtmlElement) -> int:
        if self.positive_keywords or self.negative_keywords:
            return int(super().class_weight(e))
        return _class_weight(e.get("class"), e.get("id"))

    def get_link_density(self, elem: lxml.html.HtmlElement) -> float:
        link_length = sum(text_length(link) for link in elem.iterdescendants("a"))
        return link_length / max(text_length(elem), 1)

    def remove_unlikely_candidates(self) -> None:
        # An element inside one dropped before it is left alone: it is gone from the page.
        # (Every element in a list, as readability's findall: dropping one ends a walk.)
        for elem in list(self.html.iter(lxml.etree.Element)):
            names = class_id(elem)
            if (
                len(names) >= 2
                and _unlikely(names)
                and elem.tag not in ("html", "body")
                and _top(elem) is self.html
                and not _IN_CODE(elem)
                and not _HOLDS_MAIN(elem)
            ):
                elem.drop_tree()

    def get_clean_html(self) -> str:
        _drop_furniture_blocks(self.html)
        lines = block_lines(self.html, NON_TEXT_TAGS | {"h1"}, NON_TEXT_CLASS)
        return lines_text(story_lines(lines, discussion=self.discussion))

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


def _readability_best(
    candidates: dict, link_density: Callable[[lxml.html.HtmlElement], float]
) -> dict | None:
    """readability's best candidate (without the debug lines it formats for the top five):
    the top scorer, unless a candidate is the page's marked article body, or an ``<article>``
    inside it scores a quarter as high."""
    ranked = sorted(candidates.values(), key=lambda c: c["content_score"], reverse=True)
    best = next(
        (
            c
            for c in ranked
            if "articleBody" in (c["elem"].get("itemprop") or "").split()
            and link_density(c["elem"]) <= 0.1
        ),
        ranked[0] if ranked else None,
    )
    if best is None:
        return None
    nested = (
        c
        for c in ranked
        if c["elem"].tag == "article"
        and best["elem"] in c["elem"].iterancestors()
        and clean_length(c["elem"]) >= 250
        and c["content_score"] >= best["content_score"] * 0.25
    )
    return next(nested, best)


def _top(elem: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    """The outermost ancestor of an element (itself if it has none)."""
    top = elem
    for ancestor in elem.iterancestors():
        top = ancestor
    return top


def _kind(elem: lxml.html.HtmlElement) -> tuple[str, frozenset[str]]:
    """An element's tag and class names, without those holding a digit (a page builder names
    each of its boxes apart: ``elementor-element-5f61a26``)."""
    names = (elem.get("class") or "").split()
    return elem.tag, frozenset(n for n in names if not any(ch.isdigit() for ch in n))


def _is_passed_over(elem: lxml.html.HtmlElement) -> bool:
    """Whether readability's top candidate is page furniture or a comment thread, not an
    article (its lines are only split when it is short or holds enough times of day)."""
    text = elem.text_content() or ""
    if len(text) > BOX_MAX_CHARS and len(TIME_RE.findall(text)) < THREAD_STAMPS:
        return False
    if len(text) <= BOX_MAX_CHARS and names_match(_FURNITURE_CLASS, class_id(elem)):
        return True
    lines = block_lines(elem, NON_TEXT_TAGS, NON_TEXT_CLASS)
    return is_furniture_box(lines) or is_comment_thread(lines)


def _drop_furniture_blocks(root: lxml.html.HtmlElement) -> None:
    """Drop the elements named like page furniture (bylines, share and tag bars, related
    links, comments) inside the chosen article, unless one holds much of its text (then the
    name is a site's quirk: a "post-author" or "has-comments" article)."""
    total = text_length(root)
    found = [
        e
        for e in root.iterdescendants()
        if isinstance(e.tag, str)
        and (e.get("class") or e.get("id"))
        and names_match(_FURNITURE_CLASS, class_id(e))
    ]
    for elem in found:
        if elem.getparent() is not None and text_length(elem) <= _FURNITURE_BLOCK_SHARE * total:
            elem.drop_tree()
