"""Property tests: no input makes analysis raise, and every result is a well-formed Analysis."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy.http import HtmlResponse

from nearDupe.analysis import Analysis, analyze_html, analyze_text
from nearDupe.features import FeatureSettings

FEATURES = (FeatureSettings(), FeatureSettings(kind="shingles", shingle=3, weighting="tf"))
REASONS = {None, "no-text", "tiny-text", "no-words"}

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_TAGS = [
    "html",
    "head",
    "body",
    "div",
    "p",
    "span",
    "a",
    "table",
    "td",
    "tr",
    "script",
    "style",
    "article",
    "nav",
    "pre",
    "br",
    "frameset",
    "title",
    "meta",
    "!--",
    "![CDATA[",
    "?xml",
]
_WORDS = st.sampled_from(
    [
        "the",
        "bridge",
        "reopened",
        "地铁",
        "新线",
        "开通",
        "，",
        "。",
        "&amp;",
        "&#0;",
        "&#xD800;",
        "&nbsp",
        "<",
        ">",
        '"',
        "'",
        "=",
        "\x00",
        "\ufffd",
        "\ud800",
        "\u200b",
        "\r\n",
        "1234",
        "Ünïcödé",
        "🙂",
        "charset=gbk",
        "\x0c",
        "\u2028",
    ]
)


@st.composite
def html_ish(draw: st.DrawFn) -> str:
    """Tag soup: random open/close tags, attributes, entities and words in any order."""
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 120))):
        kind = draw(st.integers(0, 4))
        tag = draw(st.sampled_from(_TAGS))
        if kind == 0:
            attr = draw(st.sampled_from(["", " class='nav'", " id=main", ' class="ad', " x=>"]))
            parts.append(f"<{tag}{attr}>")
        elif kind == 1:
            parts.append(f"</{tag}>")
        elif kind == 2:
            parts.append(" ".join(draw(st.lists(_WORDS, max_size=40))))
        elif kind == 3:
            parts.append(draw(st.text(max_size=60)))
        else:
            parts.append(f"<{tag}>" * draw(st.integers(0, 400)))
    return "".join(parts)


def _check(analysis: Analysis) -> None:
    assert isinstance(analysis, Analysis)
    assert analysis.skip_reason in REASONS
    if analysis.fingerprint is None:
        assert analysis.skip_reason is not None
    else:
        assert analysis.skip_reason is None
        assert isinstance(analysis.fingerprint, int) and 0 <= analysis.fingerprint < 2**64


@FUZZ
@given(
    body=st.binary(max_size=4000),
    content_type=st.sampled_from(
        [
            None,
            "text/html",
            "text/html; charset=utf-8",
            "text/html; charset=gbk",
            "text/html; charset=utf-16",
            "text/html; charset=bogus-enc",
        ]
    ),
    min_length=st.sampled_from([0, 1, 200]),
)
def test_random_bytes_decoded_like_scrapy(
    body: bytes, content_type: str | None, min_length: int
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    html = HtmlResponse("https://example.com/", body=body, headers=headers).text
    _check(analyze_html(html, min_length, 2_000_000, FEATURES[0]))


@FUZZ
@given(
    html=html_ish(),
    min_length=st.sampled_from([0, 50, 200]),
    features=st.sampled_from(FEATURES),
    max_chars=st.sampled_from([1, 100, 2_000_000]),
)
def test_tag_soup(html: str, min_length: int, features: FeatureSettings, max_chars: int) -> None:
    _check(analyze_html(html, min_length, max_chars, features))


@FUZZ
@given(
    text=st.text(max_size=3000),
    min_length=st.sampled_from([0, 1, 200]),
    features=st.sampled_from(FEATURES),
)
def test_random_text(text: str, min_length: int, features: FeatureSettings) -> None:
    analysis = analyze_text(text, min_length, features)
    _check(analysis)
    if analysis.fingerprint is not None:
        assert analyze_text(text, min_length, features) == analysis  # deterministic


def test_text_without_words_is_not_fingerprinted() -> None:
    """Digit-only text (digits are not features) would hash to 0 and match every such page."""
    analysis = analyze_text(" ".join(str(i) for i in range(300)), 200, FEATURES[0])
    assert (analysis.fingerprint, analysis.skip_reason) == (None, "no-words")
