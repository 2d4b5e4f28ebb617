"""Tests for nearDupe.text: main-content extraction."""

from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nearDupe.text import extract_main_text

ARTICLE = [
    "The city council voted on Tuesday to expand the river park by forty acres, ending a debate "
    "that had divided the neighbourhood for more than a decade.",
    "Supporters said the new wetlands would protect nearby homes from floods, while opponents "
    "worried about the cost, which the council put at twelve million dollars.",
    "Construction is expected to begin next spring, and the first trails could open to walkers "
    "and cyclists by the end of the following year, officials said.",
]

NEWS_PAGE = f"""<!DOCTYPE html>
<html><head><title>River park grows</title><script>var tracking = "TRACKING CODE";</script>
<style>.x {{ color: red }}</style></head>
<body>
<nav class="main-nav"><a href="/">Home</a> <a href="/world">World news</a>
<a href="/sport">Sport section</a></nav>
<div class="ad-banner">Buy cheap watches now</div>
<div id="content"><article>
<h1>River park grows</h1>
<p>{ARTICLE[0]}</p>
<figure><img src="park.jpg"><figcaption>The river at dawn. Photo credit: staff</figcaption>
</figure>
<p>{ARTICLE[1]}</p>
<p>{ARTICLE[2]}</p>
</article></div>
<aside class="sidebar"><h3>Most read</h3><ul><li><a href="/a">Celebrity gossip roundup</a></li>
<li><a href="/b">Ten weird tricks</a></li></ul></aside>
<footer id="footer">Copyright 2024 Example News Ltd. All rights reserved.</footer>
</body></html>"""

SENTENCE_ZH = (
    "这是一段很长的中文正文内容，用来测试没有段落标签的页面结构，看看提取器是否能够找到文章主体。"
)

# WeChat-style: the body is <section>/<span>, no <p>, and images between the sections.
SECTION_PAGE = (
    "<html><body><div class='top-nav'><a href='/'>首页</a> <a href='/news'>新闻中心</a></div>"
    "<div class='rich_media_content' id='js_content'>"
    + "".join(
        f"<section><span>{SENTENCE_ZH}第{i}段。</span></section>"
        f"<section><img src='{i}.png'></section>"
        for i in range(6)
    )
    + "</div><div class='footer'>版权所有 示例公司</div></body></html>"
)


def test_extracts_article_without_boilerplate() -> None:
    text = extract_main_text(NEWS_PAGE)
    for sentence in ARTICLE:
        assert sentence in text
    for noise in ["World news", "Sport section", "Buy cheap watches", "Copyright 2024"]:
        assert noise not in text
    for noise in ["Celebrity gossip", "TRACKING CODE", "color: red", "Photo credit"]:
        assert noise not in text


def test_block_boundaries_become_newlines() -> None:
    text = extract_main_text(NEWS_PAGE)
    lines = text.split("\n")
    for sentence in ARTICLE:
        assert sentence in lines
    items = "".join(f"<li>List item {i} explains one more detail of the plan.</li>" for i in "ab")
    html = (
        "<html><body><div>"
        + "".join(f"<p>{s}</p>" for s in ARTICLE[:2])
        + f"<ul>{items}</ul><p>{ARTICLE[2]}<br>after <b>a</b>   line\tbreak</p>"
        + "</div></body></html>"
    )
    text = extract_main_text(html)
    assert "dollars.\nList item a explains" in text
    assert "plan.\nList item b explains" in text
    assert "plan.\nConstruction is" in text
    assert text.endswith("officials said.\nafter a line break")
    assert "  " not in text


def test_falls_back_on_section_span_page() -> None:
    text = extract_main_text(SECTION_PAGE)
    for i in range(6):
        assert f"{SENTENCE_ZH}第{i}段。" in text.split("\n")
    assert "新闻中心" not in text
    assert "版权所有" not in text


@pytest.mark.parametrize(
    "html",
    [
        "",
        " ",
        "\n\t \r\n",
        "\x00",
        "\x00\x00<p>\x00</p>",
        "<html></html>",
        "<html><body></body></html>",
        "<!-- only a comment -->",
        "<?xml version='1.0' encoding='ISO-8859-1'?><html><body><p>x</p></body></html>",
        "<p>lone \ud800 surrogate</p>",
        "</div></p></body>",
        "<<<>>>",
        "<script>alert(1)</script>",
    ],
)
def test_edge_cases_never_raise(html: str) -> None:
    assert isinstance(extract_main_text(html), str)


def test_nothing_found_is_empty() -> None:
    assert extract_main_text("") == ""
    assert extract_main_text("   ") == ""
    assert extract_main_text("<html><body><script>x()</script></body></html>") == ""


def test_nul_and_xml_declaration_keep_text() -> None:
    html = "<?xml version='1.0' encoding='gb2312'?>\n" + NEWS_PAGE.replace(
        "river park", "ri\x00ver park"
    )
    text = extract_main_text(html)
    assert ARTICLE[1] in text
    assert "river park" in text


TAGS = st.sampled_from(
    ["p", "div", "span", "section", "table", "tr", "td", "br", "a", "li", "ul", "script", "h1"]
)
HTMLISH = st.lists(
    st.one_of(
        st.text(max_size=30),
        TAGS.map(lambda t: f"<{t}>"),
        TAGS.map(lambda t: f"</{t}>"),
        st.sampled_from(["<!--", "-->", "<?xml encoding='utf-8'?>", "&amp;", "&#0;", "<", ">"]),
    ),
    max_size=60,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), HTMLISH))
def test_random_input_never_raises(html: str) -> None:
    assert isinstance(extract_main_text(html), str)


def test_huge_page_returns() -> None:
    paragraph = "<p>" + " ".join(["word"] * 60) + ", more words, and more.</p>"
    html = "<html><body><div>" + paragraph * 50_000 + "</div></body></html>"
    assert len(html) > 10_000_000
    text = extract_main_text(html, max_chars=300_000)
    assert text.startswith("word word")
    assert len(text) < 300_000


def _load_eval_module():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "extraction_eval.py"
    spec = importlib.util.spec_from_file_location("extraction_eval", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_real_pages_quality() -> None:
    evaluation = _load_eval_module()
    if not (evaluation.data_dir() / "aeb").is_dir():
        pytest.skip(f"evaluation data not found in {evaluation.data_dir()}")
    cases = evaluation.load_extraction_cases()
    # A deterministic sample of each language keeps the test fast.
    sample = [c for c in cases if c[0] == "en"][::9] + [c for c in cases if c[0] == "zh"][::4]
    for lang in ("en", "zh"):
        matches = [
            evaluation.shingle_match(truth, extract_main_text(html))
            for case_lang, _, html, truth in sample
            if case_lang == lang
        ]
        precision, recall, f1 = evaluation.score(matches)
        assert f1 > 0.9, (lang, precision, recall, f1, statistics.mean(m[0] for m in matches))
