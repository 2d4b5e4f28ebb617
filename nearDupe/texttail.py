"""The tail of an extracted article: lists of other posts (headlines, teasers, "read more"
lines, job boards) that templates put under it inside the block readability picks."""

from __future__ import annotations

import re

from nearDupe.textlines import cut_comment_thread, is_cjk, is_furniture, is_title, trim_edges

# Figures: F1 on the tune half of split 1 (aeb metric; EN aeb / WCXB dev articles) of each
# value against the one chosen (EN 0.9632, WCXB 0.9109; no tail cut: 0.9621 / 0.9107).

#: A line at least this share of which is link text is another page's headline (0.4 and 0.7:
#: the same F1; 0.5 is trim_edges' furniture link share).
TAIL_LINKS = 0.5

#: A sentence line of at most this many characters (CJK: a third) can be a teaser (200: WCXB
#: 0.9107; 450: EN 0.9624, WCXB 0.9105).
TEASER_CHARS = 300

#: The trailing run is cut only when it holds at least this many headline links and "read
#: more" lines (2: EN 0.9631; 4: the same F1) ...
TAIL_ITEMS = 3

#: ... making up at least this share of its lines (0.2: the same; 0.5: EN 0.9621) ...
TAIL_ITEM_SHARE = 0.3

#: ... holding at most this share of the text's characters (0.5 or 0.7: WCXB 0.9100; the
#: runs that cost F1 held 39-68 % of their page: a "best of" list whose entries end in "read
#: more", a blog hop; those that paid 5-22 %) ...
TAIL_MAX_SHARE = 0.35

#: ... and when at least this many characters of prose (sentence lines, mostly not links)
#: come before it (100 and 600: the same F1; 300 is about two sentences).
TAIL_MIN_PROSE = 300

#: A heading over a list of other posts (see _HEADING) of at most this many characters starts
#: the list, whatever its items (40: WCXB 0.9108; 80: the same F1).
HEADING_CHARS = 60

#: A "read more" line: short, and only a link to the rest of a teaser's story (25 and 60: the
#: same F1).
MORE_CHARS = 40

_MORE = re.compile(
    r"^\W*(?:(?:read|view|see|show|continue|keep)\s+(?:more|reading|"
    r"the\s+(?:full\s+)?(?:story|article|post)|full\s+(?:story|article|post))|more|"
    r"阅读全文|查看全文|阅读更多|查看更多|查看详情|详细内容|全文|详情|更多)\W*$"
    r"|^(?:more|更多)\s*(?:[>»›→]|\.\.\.|…)",
    re.I,
)

#: A heading over a list of other posts ("Related stories", "You may also like", "相关阅读").
_HEADING = re.compile(
    r"^\W*(?:(?:related|see also|also read|read (?:next|also)|explore more|discover more|"
    r"recommended|trending|most (?:read|popular|viewed)|you (?:may|might) (?:also )?"
    r"(?:like|enjoy)|(?:more|other|popular|latest|recent|similar)\s+(?:\w+\s+){0,2}?"
    r"(?:stories|articles|posts|news|reads|from))\b|相关|推荐|热门|猜你喜欢|延伸阅读|更多)"
    r"[^.!?。！？]{0,40}$",
    re.I,
)

_URL = re.compile(r"\S+://|www\.")

_SENTENCE_END = re.compile(r"[.!?。！？…]")


def story_lines(
    lines: list[tuple[str, float]], *, discussion: bool = False
) -> list[tuple[str, float]]:
    """The lines of a story's block without what follows the story (a comment thread, unless
    the page is a ``discussion``, whose posts are its content; a list of other posts) and
    without the furniture at its edges."""
    return trim_edges(cut_tail(lines if discussion else cut_comment_thread(lines)))


def cut_tail(lines: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The lines before a trailing list of other posts (see TAIL_ITEMS), if there is one."""
    kinds: list[str] = []  # of the trailing lines, last first
    for line, links in reversed(lines):
        kind = _kind(line, links)
        if kind == "prose" or (kind == "teaser" and kinds[-1:] == ["teaser"]):
            break
        kinds.append(kind)
        if kind == "label" and len(line) <= HEADING_CHARS and _HEADING.search(line):
            kinds[-1] = "heading"  # the list's own heading: it starts here
            break
    # A short sentence opening the run is the article's last one unless a "read more" follows.
    while len(kinds) > 1 and kinds[-1] == "teaser" and kinds[-2] != "more":
        kinds.pop()
    start = len(lines) - len(kinds)
    if kinds[-1:] == ["heading"]:  # under its heading, a teaser is an item too
        items = sum(kind in ("link", "more", "teaser") for kind in kinds)
        if items < TAIL_ITEM_SHARE * (len(kinds) - 1):
            return lines  # a table of short cells, no list of posts
    else:
        items = sum(kind in ("link", "more") for kind in kinds)
        if items < TAIL_ITEMS or items < TAIL_ITEM_SHARE * len(kinds):
            return lines
    total = sum(len(line) for line, _ in lines)
    if sum(len(line) for line, _ in lines[start:]) > TAIL_MAX_SHARE * total:
        return lines
    prose = sum(
        len(line)
        for line, links in lines[:start]
        if links < TAIL_LINKS and _SENTENCE_END.search(line)
    )
    return lines[:start] if prose >= TAIL_MIN_PROSE else lines


def _kind(line: str, link_share: float) -> str:
    """The line's part in a list of posts: more, link, label, teaser, or prose (none)."""
    if len(line) <= MORE_CHARS and _MORE.search(line) is not None:
        return "more"
    if line[:1].islower():
        return "prose"  # a sentence broken by the inline links around it
    if link_share >= TAIL_LINKS and _URL.match(line) is None and not line.endswith("?"):
        return "link"  # not a source's address, not a question (an FAQ's toggle)
    if is_furniture(line, link_share) or is_title(line):
        return "label"
    limit = TEASER_CHARS // 3 if is_cjk(line) else TEASER_CHARS
    return "teaser" if len(line) <= limit else "prose"
