"""Page -> Analysis: main text, language and fingerprint (runs in worker processes)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from nearDupe.features import FeatureSettings
from nearDupe.shorttext import (
    Sentences,
    exact_fingerprint,
    normalize,
    sentences,
)
from nearDupe.simhash import fingerprint_and_signature
from nearDupe.sitetemplate import (
    SiteTemplate,
    headings_of,
    identity_of,
    site_headline,
    strip_template,
)
from nearDupe.text import DEFAULT_MAX_CHARS, extract_main_text, within_limit
from nearDupe.units import Units

if TYPE_CHECKING:
    from scrapy.http import Response

_CJK_MIN, _CJK_MAX = "\u3400", "\u9fff"

#: Texts with fewer letters and digits than this are too small to judge (skipped, kept).
TINY_TEXT = 30

#: The request/response meta key holding a page's :class:`Analysis`.
META_KEY = "neardupe"


@dataclass(frozen=True)
class Recheck:
    """What a page of a young site (sitetemplate.YOUNG_STORIES) needs to be analysed again at
    its decision (:func:`analyze_page`): its site may have taught more of its lines while it
    waited."""

    text: str
    headline: str
    #: The HTML the text came from ("" for an item's text field): read again without its
    #: site's blocks if all of the text turns out to be its site's (:func:`look_again`).
    html: str = ""


@dataclass(frozen=True)
class Analysis:
    """What nearDupe learned from one page; ``skip_reason`` set means it is not fingerprinted.

    It is all the crawl needs of a page, and the main text the spider reads
    (``response.meta["neardupe"].text``, :func:`main_text`); the HTML stays in the worker
    that read it, unless its site is young (see :class:`Recheck`)."""

    fingerprint: int | None
    skip_reason: str | None = None
    #: Confirmation signature: a match within k must also agree on it (see simhash.py).
    signature: int | None = None
    #: The page's sentences (see shorttext.py): it also matches pages sharing enough of them.
    sentences: Sentences = ()
    #: The crawl's serial number of the response (or text) analysed, 0 if none: the items of
    #: one response share one decision, while a second response of the same page is checked.
    page: int = 0
    #: The hashes of the page's lines and its identity (title), for its site to learn from
    #: once the page is decided (see sitetemplate.py).
    lines: tuple[int, ...] = ()
    identity: int = 0
    #: The hashes of its headings (sitetemplate.headings_of) and its key among the site's
    #: pages: the site learns them too, to tell its name from a story's headline.
    headings: tuple[int, ...] = ()
    heading_key: int = 0
    #: The site memory the page was judged by and teaches (sitetemplate.site_memory): its
    #: host and template; "" until the crawl sets it (then its URL's host).
    site: str = ""
    #: How many of the page's lines were its site's template when it was analysed.
    known: int = 0
    #: The units of its headline (sitetemplate.headline_units) and, per line, those it holds.
    units: int = 0
    told: tuple[int, ...] = ()
    recheck: Recheck | None = None
    #: An unfingerprinted page's exact key and signature (simhash.stored_copy_key): it is
    #: recorded under them, so a re-crawl drops it as already stored.
    stored_key: tuple[int, int] | None = None
    #: The main text extracted from a fingerprinted page, for the spider and
    #: NEARDUPE_TEXT_ITEM_FIELD; None when nearDupe skipped the page (or judged an item's text).
    text: str | None = None

    def outdated(self, site: SiteTemplate) -> bool:
        """Whether ``site`` now knows more of the page's lines as its template than when the
        page was analysed (a young site's page is then analysed again)."""
        return self._known(site) > self.known

    def lessons(self) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """What the page teaches its site once decided, as (identity, line hashes): its lines
        under its story, its headings under its key."""
        lessons = ((self.identity, self.lines), (self.heading_key, self.headings))
        return tuple((identity, lines) for identity, lines in lessons if identity and lines)

    def redone(self, again: Analysis) -> Analysis:
        """The page analysed ``again`` at its decision, keeping what only this first analysis
        knew: its serial number, stored key, site and headings."""
        return replace(
            again,
            page=self.page,
            site=self.site,
            stored_key=self.stored_key,
            headings=self.headings,
            heading_key=self.heading_key,
        )

    def _known(self, site: SiteTemplate) -> int:
        """How many of the page's lines are ``site``'s template."""
        return len(site.template_lines(self.lines, self.told, self.units, self.identity))

    def became_template(self, site: SiteTemplate) -> bool:
        """Whether every line of the page is ``site``'s template now, and was not when it was
        analysed: its text is its site's (``template-text``), which pages decided while it was
        in flight taught, unless the lines one other story had tell its headline (that story,
        republished)."""
        return self.known < self._known(site) == len(self.lines)


def language_of(text: str) -> str:
    """'zh' when CJK ideographs make up over a fifth of the letters, else 'en' (Latin etc.)."""
    letters = sum(1 for c in text if c.isalpha())
    if not letters:
        return "unknown"
    cjk = sum(1 for c in text if _CJK_MIN <= c <= _CJK_MAX)
    return "zh" if cjk * 5 > letters else "en"


def analyze_text(
    text: str,
    min_length: int,
    features: FeatureSettings,
    site: SiteTemplate | None = None,
    identity: int = 0,
    headline: str = "",
) -> Analysis:
    """Fingerprint main text, without its ``site``'s template lines: simhash, or an exact hash
    below ``min_length`` letters/digits.

    Simhash is unreliable on short texts (different sentences with the same words share it),
    so a short page matches by its fingerprint only a page with identical normalized text.
    Every page also keeps its sentences, matching a page with which it shares enough of them
    (a copy with a paragraph cut or added, beyond the fingerprint's k). Tiny pages (a heading,
    "Contact us", a "please enable JavaScript" shell) are not judged at all, nor is text
    mostly seen on the site's other pages (``template-text``). A fingerprinted page of a young
    ``site`` carries what it needs to be analysed again (:class:`Recheck`).
    """
    taught = site or SiteTemplate()
    stripped = strip_template(text.strip(), identity, taught, headline)
    if stripped.template_text:
        analysis = Analysis(None, "template-text")
    else:
        analysis = _fingerprint(stripped.text.strip(), min_length, features, headline)
    recheck = None
    if site is not None and analysis.fingerprint is not None and site.young():
        recheck = Recheck(text, headline)
    return replace(
        analysis,
        lines=stripped.lines,
        identity=identity,
        known=len(taught.template_lines(stripped.lines, stripped.told, stripped.units, identity)),
        units=stripped.units,
        told=stripped.told,
        recheck=recheck,
    )


def _fingerprint(
    text: str, min_length: int, features: FeatureSettings, headline: str = ""
) -> Analysis:
    if not text:
        return Analysis(None, "no-text")
    size = len(normalize(text))
    if size < TINY_TEXT:
        return Analysis(None, "tiny-text")
    # Sorted once, here in the worker: the store's rules read the arrays.
    kept = Units.of(sentences(text, headline))
    if size < min_length:
        exact = exact_fingerprint(text)
        return Analysis(exact, signature=exact, sentences=kept)
    fingerprints = fingerprint_and_signature(text, features)
    if fingerprints is None:
        # Only punctuation, symbols or digits: every such page would hash to 0 and match.
        return Analysis(None, "no-words")
    fp, signature = fingerprints
    return Analysis(fp, signature=signature, sentences=kept)


def analyze_html(
    html: str,
    min_length: int,
    max_chars: int,
    features: FeatureSettings,
    site: SiteTemplate | None = None,
    url: str = "",
) -> Analysis:
    """Extract the main text of a decoded HTML page (at ``url``; cut to ``max_chars``, see
    :func:`~nearDupe.text.within_limit`), then :func:`analyze_text` it without its site's
    template lines."""
    html = within_limit(html, max_chars)
    text = extract_main_text(html, max_chars=max_chars)
    return analyze_extracted(text, html, url, min_length, features, site, max_chars)


def analyze_extracted(
    text: str,
    html: str,
    url: str,
    min_length: int,
    features: FeatureSettings,
    site: SiteTemplate | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> Analysis:
    """:func:`analyze_page` of the main text extracted from ``html`` (at ``url``), the page's
    headline (the first of its headings that is not its site's) telling its story apart from
    its site's others."""
    headline, headings, key = site_headline(headings_of(html), site or SiteTemplate())
    identity = identity_of(headline, url)
    analysis = analyze_page(text, html, min_length, features, site, identity, headline, max_chars)
    return replace(analysis, headings=headings, heading_key=key)


def analyze_page(
    text: str,
    html: str,
    min_length: int,
    features: FeatureSettings,
    site: SiteTemplate | None,
    identity: int,
    headline: str,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> Analysis:
    """:func:`analyze_text` of a page's main ``text``, extracted from ``html``; a page whose
    text is all its ``site``'s is read again from ``html`` (:func:`look_again`); a young
    site's page keeps ``html``, to be read so again at its decision."""
    analysis = _keeping(html, analyze_text(text, min_length, features, site, identity, headline))
    if site is None or analysis.skip_reason != "template-text" or not html:
        return _with_text(text, analysis)
    return look_again(analysis, html, min_length, features, site, headline, max_chars)


def look_again(
    analysis: Analysis,
    html: str,
    min_length: int,
    features: FeatureSettings,
    site: SiteTemplate,
    headline: str,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> Analysis:
    """A ``template-text`` page analysed again from its HTML without the blocks its ``site``
    taught: the extractor took the site's block for the page's article (a long teaser or
    notice beside a short story). The first analysis stands if nothing of its own is left."""
    identity = analysis.identity

    def unwanted(line: str) -> bool:
        return site.is_template_line(line, identity)

    text = extract_main_text(html, max_chars=max_chars, unwanted=unwanted)
    again = analyze_text(text, min_length, features, site, identity, headline)
    return analysis if again.fingerprint is None else _with_text(text, _keeping(html, again))


def _with_text(text: str, analysis: Analysis) -> Analysis:
    """``analysis`` carrying the main ``text`` it was made from, if it is fingerprinted (a
    young site's page shares the one string with its :class:`Recheck`: pickled once)."""
    if analysis.fingerprint is None:
        return analysis
    return replace(analysis, text=text)


def _keeping(html: str, analysis: Analysis) -> Analysis:
    """``analysis`` whose :class:`Recheck`, if it has one, keeps the page's ``html``."""
    if analysis.recheck is None:
        return analysis
    return replace(analysis, recheck=replace(analysis.recheck, html=html))


def main_text(response: Response) -> str | None:
    """The main text nearDupe extracted from ``response``, or None when nearDupe did not analyse
    it (disabled, not HTML, ...) or skipped it (too short, its site's template, ...)."""
    analysis = getattr(response, "meta", {}).get(META_KEY)
    if not isinstance(analysis, Analysis) or analysis.skip_reason is not None:
        return None
    return analysis.text


def detect_encoding(body: bytes) -> str | None:
    """The most likely encoding of a body whose declared charset does not decode it."""
    from charset_normalizer import from_bytes

    best = from_bytes(body).best()
    return best.encoding if best is not None else None


def warm_up(features: FeatureSettings) -> None:
    """Load the English IDF table and the extractor once per worker process, before pages come
    (jieba waits for the first Chinese page: see workers.analyze_within)."""
    analyze_text("warm up " * 50, 0, features)
