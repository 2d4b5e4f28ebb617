"""Response -> the HTML to analyse, or why not: the one rule the crawl and ``check`` share."""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from scrapy.http import HtmlResponse, Response

from nearDupe.textlines import CONTROL

#: Characters of a page's start inspected for binary content.
_SNIFF_CHARS = 8192
#: A page's start with more controls than this (and than 1 %) is binary served as HTML.
_MAX_CONTROLS = 4
#: A decoded page with more U+FFFD than this (and than 0.5 % of it) is in another encoding.
_MAX_REPLACEMENTS = 8


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


def _readable(text: str) -> bool:
    return text.count("\ufffd") <= max(_MAX_REPLACEMENTS, len(text) // 200)
