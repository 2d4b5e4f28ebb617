"""Response -> the HTML to analyse, or why not: the one rule the crawl and ``check`` share."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from scrapy.http import HtmlResponse, Response
from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom

from nearDupe.textlines import CONTROL

#: Characters of a page's start inspected for binary content.
_SNIFF_CHARS = 8192
#: A page's start with more controls than this (and than 1 %) is binary served as HTML.
_MAX_CONTROLS = 4
#: A decoded page with more U+FFFD than this (and than 0.5 % of it) is in another encoding.
_MAX_REPLACEMENTS = 8
#: Bytes of a page that declares no charset read to tell whether it is Chinese in GB18030.
_SAMPLE_BYTES = 65_536
#: Hanzi a page must have, and their mean run, to be read as Chinese (other CJK encodings read
#: as GB18030 give short runs between kana, symbols or spaces).
_MIN_HANZI = 20
_MIN_RUN = 4
#: Share of those hanzi among GB2312's first level, the 3,755 most used: Chinese text is
#: nearly all of them; single-byte text read as GB18030 pairs its letters into any hanzi.
_MIN_COMMON = 0.9
_HANZI_RUN = re.compile(r"[\u4e00-\u9fff]+")


@dataclass(frozen=True)
class Decoded:
    """A response's text, or the reason it is not analysed."""

    html: str = ""
    skip_reason: str | None = None
    #: The encoding used instead of the declared one, when the declared one was wrong.
    redecoded_as: str | None = None


def skip_reason(response: Response) -> str | None:
    """Why a response is not analysed at all: ``status``, ``not-html``, ``empty``; or None."""
    if not 200 <= response.status < 300:
        return "status"
    if not isinstance(response, HtmlResponse):
        return "not-html"
    if not response.body.strip():
        return "empty"
    return None


def decode(response: HtmlResponse) -> Decoded | None:
    """The page's text as Scrapy decoded it, or as UTF-8 when a body that is valid UTF-8 was
    declared as another charset; a ``binary`` skip; or None when the body does not decode in
    its declared charset (then :func:`redecode` with the detected encoding decides)."""
    text, body = response.text, response.body
    head = text[:_SNIFF_CHARS]
    if len(CONTROL.findall(head)) > max(_MAX_CONTROLS, len(head) // 100):
        return Decoded(skip_reason="binary")
    declared = codecs.lookup(response.encoding).name
    if not declared.startswith("utf") and not body.isascii():
        try:
            return Decoded(body.decode("utf-8"), redecoded_as="utf-8")
        except UnicodeDecodeError:
            pass
        # Scrapy's detection takes such pages, Chinese in a sea of markup, for Japanese or
        # Central European ones.
        if not declared.startswith("gb") and not _declares_charset(response) and _chinese(body):
            return Decoded(body.decode("gb18030", "replace"), redecoded_as="gb18030")
    if _readable(text):
        return Decoded(text)
    try:
        body.decode(declared)
        return Decoded(text)  # the page really contains U+FFFD characters
    except UnicodeDecodeError:
        return None


def redecode(response: HtmlResponse, detected: str | None) -> Decoded:
    """The body decoded in ``detected`` (charset detection's guess), or a ``bad-encoding`` skip."""
    declared = codecs.lookup(response.encoding).name
    if detected is not None and codecs.lookup(detected).name != declared:
        fixed = response.body.decode(detected, "replace")
        if _readable(fixed):
            return Decoded(fixed, redecoded_as=detected)
    return Decoded(skip_reason="bad-encoding")


def _declares_charset(response: HtmlResponse) -> bool:
    """Whether a response names its charset (a byte-order mark, its Content-Type, a ``<meta>``)
    rather than leaving Scrapy to detect it."""
    content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
    return bool(
        read_bom(response.body)[0]
        or http_content_type_encoding(content_type)
        or html_body_declared_encoding(response.body)
    )


def _common_hanzi() -> re.Pattern[str]:
    """A character class of GB2312's first-level hanzi (rows 0xB0-0xD7)."""
    chars = []
    for lead in range(0xB0, 0xD8):
        for trail in range(0xA1, 0xFF):
            try:
                chars.append(bytes((lead, trail)).decode("gb2312"))
            except UnicodeDecodeError:  # the row's last five places are empty
                continue
    return re.compile(f"[{''.join(chars)}]")


_COMMON_HANZI = _common_hanzi()


def _chinese(body: bytes) -> bool:
    """Whether a body's start reads as Chinese text in GB18030 (a stray byte aside: _MIN_HANZI,
    _MIN_RUN, _MIN_COMMON)."""
    text = body[:_SAMPLE_BYTES].decode("gb18030", "replace")
    if not _readable(text):
        return False
    runs = _HANZI_RUN.findall(text)
    hanzi = sum(map(len, runs))
    if hanzi < _MIN_HANZI or hanzi < _MIN_RUN * len(runs):
        return False
    return len(_COMMON_HANZI.findall(text)) >= _MIN_COMMON * hanzi


def _readable(text: str) -> bool:
    return text.count("\ufffd") <= max(_MAX_REPLACEMENTS, len(text) // 200)
