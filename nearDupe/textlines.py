"""Lines of extracted text: the furniture, titles, dates and comment threads that templates
put at the edges of an article, told apart from its sentences."""

from __future__ import annotations

import re

#: C0 control characters (not tab, line feed or carriage return): text never has them,
#: binary files are full of them, and lxml refuses them.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
#: Runs of white space other than line breaks.
SPACE = re.compile(r"[^\S\n]+")

#: Share of Han/kana characters above which a text is Chinese or Japanese.
_CJK_SHARE = 0.3

_CJK_CHAR = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

#: Readability's commas and class bonuses can also rank page furniture above a short article:
#: a site footer (contact lines and legal notices, full of commas) or an "article-subhead"
#: byline and date box. A top candidate of at most BOX_MAX_CHARS characters that is a date
#: or byline among nothing but furniture lines, or a legal line among at least
#: _BOX_LEGAL_SHARE furniture, is passed over (at most _BOX_SKIPS times), and so is a comment
#: thread with no article before it (see THREAD_STAMPS): a short article in a block of its
#: own loses to its replies, and every article of the site would extract to the same thread.
BOX_MAX_CHARS = 1000

_BOX_LEGAL_SHARE = 0.5

#: Template furniture around the article that readability keeps (see trim_edges): lines at
#: either edge of the extracted text that are mostly link text (up to _FURNITURE_LINK_CHARS),
#: metadata (up to _FURNITURE_META_CHARS), legal notices (up to _FURNITURE_LEGAL_CHARS) or a
#: few words without a sentence; at most _MAX_TRIM of the text goes.
_MAX_TRIM = 0.6

#: Title-like lines (no sentence end; at most this many CJK characters or words) trimmed with
#: the furniture line that follows them at an edge, at most _TITLE_RUN of them.
_TITLE_CJK_CHARS = 40

_TITLE_WORDS = 15

_TITLE_RUN = 3

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

#: A comment thread: at least THREAD_STAMPS posts, each a stamp line (a day and a time of
#: day, no sentence, at most _FURNITURE_META_CHARS characters) with a sentence before the next
#: stamp, after at least _THREAD_MIN_PROSE characters of sentences. Readability's chosen
#: element can hold the article and the comments or replies under it (table layouts name
#: neither): they are cut from the first stamp (and the up to _TITLE_RUN short lines above it
#: that end no sentence, the commenter's name or a "comments" heading) on. A day without a
#: time (a timeline, a dated list) is not a stamp, and times without sentences between them
#: (a programme) are no posts.
THREAD_STAMPS = 3

_THREAD_MIN_PROSE = 50

_DAY_RE = re.compile(_DAY, re.I)

#: A time of day (9:05, 21:30:00, 9:05 p.m.).
TIME_RE = re.compile(_TIME, re.I)

_DATE_WORDS = re.compile(
    r"\b(?:updated|published|posted|last|on|at|est|edt|pst|pdt|gmt|utc|et|pt)\b", re.I
)

_WORD = re.compile(r"[^\W\d_]+")

_LETTER = re.compile(r"[^\W\d_]")

_SENTENCE_END = re.compile(r"[.!?。！？…]")


def is_furniture_box(lines: list[tuple[str, float]]) -> bool:
    """Whether a short block is page furniture, not an article: a date or byline among nothing
    but furniture lines (a byline box), or a legal line among mostly furniture (a footer)."""
    total = sum(len(line) for line, _ in lines)
    if total > BOX_MAX_CHARS:
        return False
    furniture = sum(len(line) for line, links in lines if is_furniture(line, links))
    texts = [line for line, _ in lines]
    if furniture == total and any(_META_LINE.search(x) or _is_date_line(x) for x in texts):
        return True
    legal = any(_LEGAL_LINE.search(line) is not None for line in texts)
    return legal and furniture >= _BOX_LEGAL_SHARE * total


def cut_comment_thread(lines: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The lines before the comment thread that follows the article, if there is one."""
    posts = _posts(lines)
    for first in posts[: len(posts) - THREAD_STAMPS + 1]:
        start = _with_heading(lines, first)
        if _prose(lines[:start]) >= _THREAD_MIN_PROSE:
            return lines[:start]
    return lines


def is_comment_thread(lines: list[tuple[str, float]]) -> bool:
    """Whether a block's lines are a comment thread with no article before it."""
    posts = _posts(lines)
    return (
        len(posts) >= THREAD_STAMPS
        and _prose(lines[: _with_heading(lines, posts[0])]) < _THREAD_MIN_PROSE
    )


def _posts(lines: list[tuple[str, float]]) -> list[int]:
    """The lines that start a post: a stamp with a sentence before the next stamp (the times
    of a programme have none)."""
    stamps = [i for i, (line, _) in enumerate(lines) if _is_stamp(line)]
    if len(stamps) < THREAD_STAMPS:
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
        and TIME_RE.search(line) is not None
        and _DAY_RE.search(line) is not None
        and _SENTENCE_END.search(_DATE.sub(" ", line)) is None
    )


def trim_edges(lines: list[tuple[str, float]]) -> list[tuple[str, float]]:
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
        if is_furniture(*lines[i]):
            return n + 1
        if not is_title(lines[i][0]):
            return 0
    return 0


def is_title(line: str) -> bool:
    """A headline, label or name: short, and no sentence in it."""
    if _SENTENCE_END.search(line) is not None:
        return False
    return len(line) <= _TITLE_CJK_CHARS if is_cjk(line) else len(line.split()) <= _TITLE_WORDS


def _cost(line: str) -> int:
    """What trimming a line takes from the budget: nothing for lines without a letter."""
    return len(line) if _LETTER.search(line) is not None else 0


def is_furniture(line: str, link_share: float) -> bool:
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
        len(line) <= 6 if is_cjk(line) else len(line) <= 25 and len(line.split()) <= 3
    )


def _is_date_line(line: str) -> bool:
    rest = _DATE.sub(" ", line)
    return rest != line and len(_WORD.findall(_DATE_WORDS.sub(" ", rest))) <= 3


def is_cjk(text: str) -> bool:
    return len(_CJK_CHAR.findall(text)) >= _CJK_SHARE * max(len(text), 1)


def dense_length(text: str) -> int:
    """Characters of ``text`` that are not spaces (line breaks count), at least 1."""
    # What SPACE would leave, counted without building it (str.split and re's \s agree).
    return max(sum(map(len, text.split())) + text.count("\n"), 1)
