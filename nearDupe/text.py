"""HTML page -> main article text (readability-lxml, with a boilerplate-stripping fallback)."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence

import lxml.etree
import lxml.html
from readability import Document
from readability.readability import REGEXES

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
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_INVISIBLE_TAGS = ("script", "style", "link", "meta", "template")
# The same test as readability's own, which _Readability._parse replaces.
_HIDDEN_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important\s*)?(?:;|$)",
    re.I,
)
_SPACE = re.compile(r"[^\S\n]+")
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
#: Share of Han/kana characters above which a text is Chinese or Japanese.
_CJK_SHARE = 0.3
_CJK_CHAR = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
#: Readability's commas and class bonuses can also rank page furniture above a short article:
#: a site footer (contact lines and legal notices, full of commas) or an "article-subhead"
#: byline and date box. A top candidate of at most _BOX_MAX_CHARS characters that is a date
#: or byline among nothing but furniture lines, or a legal line among at least
#: _BOX_LEGAL_SHARE furniture, is passed over (at most _BOX_SKIPS times), and so is a comment
#: thread with no article before it (see _THREAD_STAMPS): a short article in a block of its
#: own loses to its replies, and every article of the site would extract to the same thread.
_BOX_MAX_CHARS = 1000
_BOX_LEGAL_SHARE = 0.5
_BOX_SKIPS = 3

#: Template furniture around the article that readability keeps (see _trim_edges): lines at
#: either edge of the extracted text that are mostly link text (up to _FURNITURE_LINK_CHARS),
#: metadata (up to _FURNITURE_META_CHARS), legal notices (up to _FURNITURE_LEGAL_CHARS) or a
#: few words without a sentence; at most _MAX_TRIM of the text goes.
_MAX_TRIM = 0.6
#: Elements inside the article named like furniture, holding at most this share of its text,
#: are dropped.
_FURNITURE_BLOCK_SHARE = 0.3
#: Title-like lines (no sentence end; at most this many CJK characters or words) trimmed with
#: the furniture line that follows them at an edge, at most _TITLE_RUN of them.
_TITLE_CJK_CHARS = 40
_TITLE_WORDS = 15
_TITLE_RUN = 3
_FURNITURE_CLASS = re.compile(
    r"byline|dateline|author|timestamp|publish|comment|share|social|related|breadcrumb|"
    r"(?:^|[\s_-])tags?(?:$|[\s_-])|tag-?list|newsletter|subscribe|recommend|copyright|"
    r"disclaimer|(?:^|[\s_-])meta(?:$|[\s_-])",
    re.I,
)
_FURNITURE_LINKS = 0.5
_FURNITURE_LINK_CHARS = 200
_FURNITURE_META_CHARS = 100
_FURNITURE_LEGAL_CHARS = 200
_META_LINE = re.compile(
    r"^(?:by|posted|published|updated|last updated|written by|reporting by|editing by|"
    r"photo|photos|image|source|tags?|topics?|filed under|share|share this|related|"
    r"read more|see also|advertisement|follow us|subscribe)\b"
    r"|^(?:作者|来源|發佈時間|发布时间|发表时间|发布日期|时间|日期|编辑|责任编辑|责编|摄影|图片|"
    r"标签|关键词|关键字|分享到?|相关阅读|相关新闻|相关链接|阅读|浏览|点击|评论|上一篇|下一篇|"
    r"字号|打印|关闭)\s*[:：\d]"
    r"|\b(?:newsletter|sign up|subscribe|like this article|join our|click here)\b",
    re.I,
)
_LEGAL_LINE = re.compile(
    r"copyright|©|all rights reserved|版权|侵权|著作权|ICP|备案|许可证|举报|免责声明|"
    r"未经.{0,6}(?:许可|授权)|不得转载",
    re.I,
)
_DAY = (
    r"\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}\s*日?"
    r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}"
    r"(?:st|nd|rd|th)?,?\s+\d{4}"
    r"|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)"
    r"[a-z]*\.?,?\s+\d{4}"
)
_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?m\.?)?"
_DATE = re.compile(rf"{_DAY}|{_TIME}|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b", re.I)
#: A comment thread: at least _THREAD_STAMPS posts, each a stamp line (a day and a time of
#: day, no sentence, at most _FURNITURE_META_CHARS characters) with a sentence before the next
#: stamp, after at least _THREAD_MIN_PROSE characters of sentences. Readability's chosen
#: element can hold the article and the comments or replies under it (table layouts name
#: neither): they are cut from the first stamp (and the up to _TITLE_RUN short lines above it
#: that end no sentence, the commenter's name or a "comments" heading) on. A day without a
#: time (a timeline, a dated list) is not a stamp, and times without sentences between them
#: (a programme) are no posts.
_THREAD_STAMPS = 3
_THREAD_MIN_PROSE = 50
_DAY_RE = re.compile(_DAY, re.I)
_TIME_RE = re.compile(_TIME, re.I)
_DATE_WORDS = re.compile(
    r"\b(?:updated|published|posted|last|on|at|est|edt|pst|pdt|gmt|utc|et|pt)\b", re.I
)
_WORD = re.compile(r"[^\W\d_]+")
_LETTER = re.compile(r"[^\W\d_]")
_SENTENCE_END = re.compile(r"[.!?。！？…]")


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
        if best is not None and _is_cjk(_SPACE.sub("", best["elem"].text_content() or "")):
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
        return "\n".join(line for line, _ in _trim_edges(_cut_comment_thread(lines)))

    def score_paragraphs(self) -> dict:
        # readability's own scoring, except that it counts CJK commas too.
        candidates: dict = {}
        for elem in self.tags(self._html(), "p", "pre", "td", "blockquote"):
            parent = elem.getparent()
            if parent is None:
                continue
            grand_parent = parent.getparent()
            inner_text = _SPACE.sub(" ", elem.text_content() or "").strip()
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
    data = _CONTROL.sub("", html).encode("utf-8", "replace")
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
                line = _SPACE.sub(" ", "".join(text)).strip()
                if line:
                    lines.append((line, min(linked / _dense_length(line), 1.0)))
                text, linked = [], 0
            text.append(piece)
            if in_link:
                linked += _dense_length(piece)
    return lines


def _is_passed_over(elem: lxml.html.HtmlElement) -> bool:
    """Whether readability's top candidate is page furniture or a comment thread, not an
    article (its lines are only split when it is short or holds enough times of day)."""
    text = elem.text_content() or ""
    if len(text) > _BOX_MAX_CHARS and len(_TIME_RE.findall(text)) < _THREAD_STAMPS:
        return False
    lines = _block_lines(elem, _NON_TEXT_TAGS, _NON_TEXT_CLASS)
    return _is_furniture_box(lines) or _is_comment_thread(lines)


def _is_furniture_box(lines: list[tuple[str, float]]) -> bool:
    """Whether a short block is page furniture, not an article: a date or byline among nothing
    but furniture lines (a byline box), or a legal line among mostly furniture (a footer)."""
    total = sum(len(line) for line, _ in lines)
    if total > _BOX_MAX_CHARS:
        return False
    furniture = sum(len(line) for line, links in lines if _is_furniture(line, links))
    texts = [line for line, _ in lines]
    if furniture == total and any(_META_LINE.search(x) or _is_date_line(x) for x in texts):
        return True
    legal = any(_LEGAL_LINE.search(line) is not None for line in texts)
    return legal and furniture >= _BOX_LEGAL_SHARE * total


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


def _cut_comment_thread(lines: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The lines before the comment thread that follows the article, if there is one."""
    posts = _posts(lines)
    for first in posts[: len(posts) - _THREAD_STAMPS + 1]:
        start = _with_heading(lines, first)
        if _prose(lines[:start]) >= _THREAD_MIN_PROSE:
            return lines[:start]
    return lines


def _is_comment_thread(lines: list[tuple[str, float]]) -> bool:
    """Whether a block's lines are a comment thread with no article before it."""
    posts = _posts(lines)
    return (
        len(posts) >= _THREAD_STAMPS
        and _prose(lines[: _with_heading(lines, posts[0])]) < _THREAD_MIN_PROSE
    )


def _posts(lines: list[tuple[str, float]]) -> list[int]:
    """The lines that start a post: a stamp with a sentence before the next stamp (the times
    of a programme have none)."""
    stamps = [i for i, (line, _) in enumerate(lines) if _is_stamp(line)]
    if len(stamps) < _THREAD_STAMPS:
        return []
    ends = [*stamps[1:], len(lines)]
    return [
        i
        for i, end in zip(stamps, ends, strict=True)
        if any(_SENTENCE_END.search(line) for line, _ in lines[i + 1 : end])
    ]


def _with_heading(lines: list[tuple[str, float]], stamp: int) -> int:
    """Where a post starts: its stamp, or the name or heading lines just above it."""
    start = stamp
    while start > 0 and stamp - start < _TITLE_RUN and _is_heading(lines[start - 1][0]):
        start -= 1
    return start


def _prose(lines: list[tuple[str, float]]) -> int:
    """Characters of the lines that hold a sentence."""
    return sum(len(line) for line, _ in lines if _SENTENCE_END.search(line))


def _is_heading(line: str) -> bool:
    """A short line that does not end a sentence: a name above a post, a "comments" label."""
    return len(line) <= _FURNITURE_META_CHARS and _SENTENCE_END.search(line[-1]) is None


def _is_stamp(line: str) -> bool:
    """A post's date and time line ("引用 回复 (2) 2004-12-13 09:02:13"), no sentence."""
    return (
        len(line) <= _FURNITURE_META_CHARS
        and _TIME_RE.search(line) is not None
        and _DAY_RE.search(line) is not None
        and _SENTENCE_END.search(_DATE.sub(" ", line)) is None
    )


def _trim_edges(lines: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The lines without the page furniture that templates put before and after an article
    (bylines, dates, share and tag lines, link lists and teasers, copyright lines, and a
    block of title-like lines that ends in such furniture: another story's headline above its
    date and share line): never more than _MAX_TRIM of the text, and never the last line."""
    budget = _MAX_TRIM * sum(_cost(line) for line, _ in lines)
    start, end = 0, len(lines)
    while end - start > 1:
        run = _furniture_run(lines, start, end, 1)
        cost = sum(_cost(line) for line, _ in lines[start : start + run])
        if not run or cost > budget:
            break
        budget -= cost
        start += run
    while end - start > 1:
        run = _furniture_run(lines, end - 1, start - 1, -1)
        cost = sum(_cost(line) for line, _ in lines[end - run : end])
        if not run or cost > budget:
            break
        budget -= cost
        end -= run
    return lines[start:end]


def _furniture_run(lines: list[tuple[str, float]], first: int, stop: int, step: int) -> int:
    """How many lines from ``first`` (towards ``stop``) are furniture: the line itself, or up
    to _TITLE_RUN title-like lines followed by a furniture line; leaving at least one line."""
    for n, i in enumerate(range(first, stop, step)):
        if n + 1 >= abs(stop - first) or n > _TITLE_RUN:
            return 0
        if _is_furniture(*lines[i]):
            return n + 1
        if not _is_title(lines[i][0]):
            return 0
    return 0


def _is_title(line: str) -> bool:
    """A headline, label or name: short, and no sentence in it."""
    if _SENTENCE_END.search(line) is not None:
        return False
    return len(line) <= _TITLE_CJK_CHARS if _is_cjk(line) else len(line.split()) <= _TITLE_WORDS


def _cost(line: str) -> int:
    """What trimming a line takes from the budget: nothing for lines without a letter."""
    return len(line) if _LETTER.search(line) is not None else 0


def _is_furniture(line: str, link_share: float) -> bool:
    """Whether a line at the edge of an article is a template's, not the article's."""
    if link_share >= _FURNITURE_LINKS and len(line) <= _FURNITURE_LINK_CHARS:
        return True
    if _LETTER.search(line) is None:
        return True  # page numbers, separators, bullets
    if len(line) <= _FURNITURE_META_CHARS and (
        _META_LINE.search(line) is not None or _is_date_line(line)
    ):
        return True
    if len(line) <= _FURNITURE_LEGAL_CHARS and _LEGAL_LINE.search(line) is not None:
        return True
    # A name, a label, a calendar day: a few words and no sentence.
    return _SENTENCE_END.search(line) is None and (
        len(line) <= 6 if _is_cjk(line) else len(line) <= 25 and len(line.split()) <= 3
    )


def _is_date_line(line: str) -> bool:
    rest = _DATE.sub(" ", line)
    return rest != line and len(_WORD.findall(_DATE_WORDS.sub(" ", rest))) <= 3


def _is_cjk(text: str) -> bool:
    return len(_CJK_CHAR.findall(text)) >= _CJK_SHARE * max(len(text), 1)


def _dense_length(text: str) -> int:
    return max(len(_SPACE.sub("", text)), 1)


def _text_length(elem: lxml.html.HtmlElement) -> int:
    return len(" ".join((elem.text_content() or "").split()))


def _class_id(elem: lxml.html.HtmlElement) -> str:
    return f"{elem.get('class', '')} {elem.get('id', '')}"
