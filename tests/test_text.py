"""Tests for nearDupe.text: main-content extraction."""

from __future__ import annotations

import importlib.util
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from readability import Document
from readability.readability import REGEXES

from nearDupe.readability_text import BlockReadability
from nearDupe.text import _RETRY_LENGTH, _parse_html, extract_main_text, without_code
from nearDupe.textblocks import _CHROME_CLASS, names_match

ARTICLE = [
    "The city council voted on Tuesday to expand the river park by forty acres, ending a debate "
    "that had divided the neighbourhood for more than a decade.",
    "Supporters said the new wetlands would protect nearby homes from floods, while opponents "
    "worried about the cost, which the council put at twelve million dollars.",
    "Construction is expected to begin next spring, and the first trails could open to walkers "
    "and cyclists by the end of the following year, officials said.",
]

#: The article's paragraphs, for pages built around them.
PARAGRAPHS = "".join(f"<p>{sentence}</p>" for sentence in ARTICLE)

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


@pytest.mark.parametrize(
    ("page", "left_out"),
    [
        # React's streaming server rendering: the suspended part is sent last, in a hidden
        # <div id="S:0"> that a script moves to its <template id="B:0">; other hidden
        # elements stay out.
        (
            "<html><body><nav><a href='/'>Home</a></nav><main><h1>River park grows</h1>"
            "<template id='B:0'></template><p>Loading the story</p></main>"
            "<div hidden id='subscribe'>Subscribe for only one dollar a week</div>"
            f"<div hidden id='S:0'><article>{PARAGRAPHS}</article></div>"
            "<script>$RC('B:0','S:0')</script></body></html>",
            "Subscribe",
        ),
        # libxml2 leaves a second <html> beside the first, outside the tree lxml returns.
        (
            "<!DOCTYPE html><html><head><title>x</title></head><body><nav>Home</nav></body>"
            f"</html><html><head><style>p {{ color: red }}</style></head><body><article>"
            f"{PARAGRAPHS}</article></body></html>",
            "color",
        ),
    ],
    ids=["streamed-segment", "second-html"],
)
def test_an_article_the_parser_would_lose_is_read(page: str, left_out: str) -> None:
    text = extract_main_text(page)
    for sentence in ARTICLE:
        assert sentence in text
    assert left_out not in text


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


@pytest.mark.parametrize(
    "body", ["<body>", "<body class='single-post theme-right-sidebar has-fixed-menu'>"]
)
def test_falls_back_on_section_span_page(body: str) -> None:
    # A theme names the <body> after its layout: the fallback still reads the page below it.
    text = extract_main_text(SECTION_PAGE.replace("<body>", body))
    for i in range(6):
        assert f"{SENTENCE_ZH}第{i}段。" in text.split("\n")
    assert "新闻中心" not in text
    assert "版权所有" not in text


# A product listing: readability ranks the featured item's box first; the page's <main> holds
# every item.
_FEATURED = [
    "A walnut chair with a woven seat, made by hand in a small workshop, shipped flat, glued "
    "and screwed at home in ten minutes, with every tool in the box.",
    "A ten-year warranty covers the joints, the seat, the finish and the legs, and spare parts "
    "are sent free, at any time, to any address.",
]
_ITEMS = [
    "A solid oak desk with two drawers, cable holes and a scratch-proof finish.",
    "Five shelves of pine, easy to assemble, for books, plants and boxes.",
    "A light birch stool that stacks, for kitchens, studios and workshops.",
    "A beech bench for a hall, with a shelf for shoes under its seat.",
    "A cherry side table with one drawer and tapered legs, oiled by hand.",
    "A maple bookcase, tall and narrow, that fits beside a door or a window.",
]
_LISTING_BODY = (
    "<div class='card'><div class='info'><h3>Walnut chair</h3>"
    + "".join(f"<p>{line}</p>" for line in _FEATURED)
    + "</div></div>"
    + "".join(
        f"<div class='card'><div class='info'><h3>Item {i}</h3><p>{line}</p></div></div>"
        for i, line in enumerate(_ITEMS)
    )
)


@pytest.mark.parametrize(
    ("start", "end"), [("<main>", "</main>"), ("<div role='main'>", "</div>")]
)
def test_listing_marked_main_is_read_whole(start: str, end: str) -> None:
    page = (
        "<html><body><nav><a href='/'>Home</a><a href='/shop'>Shop</a></nav>"
        f"{start}<h1>Furniture</h1>{_LISTING_BODY}{end}"
        "<footer>Copyright 2024 Example Shop</footer></body></html>"
    )
    lines = extract_main_text(page).split("\n")
    assert all(line in lines for line in _FEATURED + _ITEMS)
    assert "Home" not in lines and "Copyright 2024 Example Shop" not in lines


def test_listing_without_main_keeps_readability_choice() -> None:
    # Without a marked <main>, the blocks readability leaves are other stories' teasers.
    page = f"<html><body><div>{_LISTING_BODY}</div></body></html>"
    assert extract_main_text(page).split("\n") == _FEATURED


_SHOP_ITEMS = [f"{line[:-1]}, in size {size}." for size in "SMLX" for line in _ITEMS]


@pytest.mark.parametrize(
    ("declared", "whole"),
    [
        ('<meta property="og:type" content="website">', True),
        ('<meta content="product.group" property="og:type" />', True),
        ('<meta property="og:type" content="article">', False),
        (
            '<meta property="og:type" content="website"><script type="application/ld+json">'
            '{"@type": "NewsArticle"}</script>',
            False,
        ),
        ("", False),
    ],
)
def test_a_page_declared_no_article_is_read_whole(declared: str, whole: bool) -> None:
    # A shop's page (Open Graph "website", no article in its structured data) spreads its
    # content over its items: readability's one box, a small share of the text, is not all.
    items = "".join(
        f"<div class='card'><div class='info'><h3>Item {i}</h3><p>{line}</p></div></div>"
        for i, line in enumerate(_SHOP_ITEMS)
    )
    page = (
        f"<html><head>{declared}</head><body><div><div class='card'><div class='info'>"
        "<h3>Walnut chair</h3>"
        + "".join(f"<p>{line}</p>" for line in _FEATURED)
        + f"</div></div>{items}</div></body></html>"
    )
    lines = extract_main_text(page).split("\n")
    assert all(line in lines for line in _FEATURED)
    assert all(line in lines for line in _SHOP_ITEMS) is whole


def test_an_article_of_one_box_a_paragraph_is_read_whole() -> None:
    # A page builder puts each paragraph in boxes of its own, and the article's sections are
    # cousins, not siblings: readability's one box is one paragraph.
    paragraphs = [
        *ARTICLE,
        "Residents can comment on the plans at the library until March, and the council will "
        "publish their views, with its answers, before the summer recess, the mayor said.",
    ]
    bio = "Jane Doe writes about cities and rivers for this paper since the spring of 2012."

    def boxed(text: str) -> str:
        return (
            "<section class='sec'><div class='col'><div class='wrap'><div class='box'>"
            f"<p>{text}</p></div></div></div></section>"
        )

    page = (
        "<html><body><nav><a href='/'>Home</a> <a href='/city'>City</a></nav>"
        f"<div class='builder'>{''.join(boxed(p) for p in paragraphs)}</div>"
        f"<div class='more'>{boxed(bio)}</div>"
        "<footer>Copyright 2024 Example News</footer></body></html>"
    )
    lines = extract_main_text(page).split("\n")
    assert all(paragraph in lines for paragraph in paragraphs)
    assert bio not in lines


def test_box_named_like_a_sidebar_that_holds_the_page_is_its_layout() -> None:
    # A theme's layout box named after the sidebar beside the article ("sidebar-container"):
    # readability drops it as unlikely and picks the author's box; the fallback reads it.
    paragraphs = [f"{s} Part {i} of the report." for i in range(12) for s in ARTICLE]
    page = (
        "<html><body><nav><a href='/'>Home</a></nav><div class='sidebar-container'>"
        "<div class='lr-content'>" + "".join(f"<p>{p}</p>" for p in paragraphs) + "</div>"
        "<div class='sidebar'><p>Subscribe to our newsletter for weekly tips.</p></div></div>"
        "<div class='author-box'><p>Jane is a writer and editor, a mentor and an open source "
        "enthusiast, who in her spare time watches films, reads novels and cheers her team on, "
        "whatever the weather, every weekend of the year.</p></div></body></html>"
    )
    lines = extract_main_text(page).split("\n")
    assert all(p in lines for p in paragraphs)
    assert "Subscribe to our newsletter for weekly tips." not in lines


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


def test_a_page_over_the_limit_loses_its_scripts_before_it_is_cut() -> None:
    state = "<script>var state = {" + '"x": "</div>", ' * 200_000 + "};</script>"
    html = f"<html><head>{state}<style>p {{}}</style></head><body>{PARAGRAPHS}</body></html>"
    assert len(html) > 3_000_000
    assert extract_main_text(html, max_chars=2_000_000).split("\n") == ARTICLE
    assert extract_main_text(html[:2_000_000]) == ""  # what the cut alone would keep


@pytest.mark.parametrize(
    ("html", "left"),
    [
        ("a<script>if (x) document.write('</div>')</script>b", "ab"),
        ("a<SCRIPT type=x>1</Script >b<style>p {}</style\n>c", "abc"),
        ("a<!-- <script> -->b<script><!-- x --></script>c", "abc"),
        ("a<script-x>b</script-x><scripts>c", "a<script-x>b</script-x><scripts>c"),
        ("a<script>never closed</p>", "a"),
        ("a<!-- never closed <p>b</p>", "a"),
    ],
)
def test_scripts_styles_and_comments_are_left_out(html: str, left: str) -> None:
    assert without_code(html) == left


def test_a_page_hidden_until_its_scripts_run_is_read() -> None:
    layout = '<div style="visibility:hidden;min-height:100vh">'
    modal = '<div style="display:none"><p>Sign up for our newsletter today, it is free.</p></div>'
    html = f"<html><body>{layout}{modal}<article>{PARAGRAPHS}</article></div></body></html>"
    assert extract_main_text(html).split("\n") == ARTICLE


def test_dialogs_hidden_until_opened_are_left_out() -> None:
    notice = (
        "<p>We value your privacy, and we use cookies to improve your experience on our site, "
        "to measure our audience, and to show you offers that may interest you.</p>"
    )
    dialogs = (
        f'<div class="modal fade" role="dialog">{notice}</div>'
        f"<dialog>{notice.replace('privacy', 'time')}</dialog>"
    )
    html = f"<html><body><article>{PARAGRAPHS}{dialogs}</article></body></html>"
    assert extract_main_text(html).split("\n") == ARTICLE
    opened = html.replace("<dialog>", "<dialog open>")
    assert "We value your time" in extract_main_text(opened)


#: A shop's category page: a promotion line in a box readability favours, then the products,
#: links whose text readability does not score.
PRODUCTS = "".join(
    f"<li><a href='/p/{i}'><h3>Monitor arm model {i}</h3><div>Holds two screens of up to "
    f"{20 + i} inches, with cable management and a clamp for desks of any depth.</div></a></li>"
    for i in range(8)
)
PROMOTION = "<div class='headline text-center'><p>New LX Pro, the next generation</p></div>"


def test_a_category_page_is_read_whole_past_its_promotion_line() -> None:
    intro = "<h1>Monitor mounts</h1><div>Mounts for two, three or four displays.</div>"
    html = (
        f"<html><body><div><header><a href='/'>Home</a></header>{PROMOTION}{intro}"
        f"<ul class='list'>{PRODUCTS}</ul></div></body></html>"
    )
    text = extract_main_text(html)
    assert "Mounts for two" in text and "Monitor arm model 7" in text
    assert "Home" not in text


def test_a_short_chinese_story_is_not_taken_for_a_headline() -> None:
    story = (
        "市政府周二宣布，河滨公园将扩建四十英亩，"
        "新建湿地可以保护附近居民免受洪水侵袭，工程预计明年春天开工。"
    )
    teasers = "".join(f"<li><a href='/n/{i}'>其他新闻第{i}条</a></li>" for i in range(12))
    html = f"<html><body><article><p>{story}</p></article><ul>{teasers}</ul></body></html>"
    assert extract_main_text(html) == story


MORE = [
    "The plan also sets aside land for a community garden, a boathouse and two playgrounds, "
    "which residents asked for at a series of public meetings held last winter.",
    "City engineers said the river's banks would be planted with native grasses, which hold the "
    "soil in place and slow the water when the river rises after heavy rain.",
    "The council will review the budget again in the autumn, once the first bids from builders "
    "have come in, and may scale back parts of the plan if costs climb.",
    "Neighbours who opposed the plan said they would keep watching the costs, and that they "
    "hoped the council would keep its promise to hold more public meetings.",
]


def test_a_page_builders_boxes_named_apart_are_one_article() -> None:
    texts = ARTICLE + MORE
    boxes = "".join(
        f'<div class="column col-{i}"><div class="block block-{i}a{i}f">'
        f"<p>{texts[i]}</p><p>{texts[i + 3]}</p></div></div>"
        for i in range(4)
    )
    nav = "<div class='nav'><a href='/'>Home</a></div>"
    html = f"<html><body>{nav}<div class='section'>{boxes}</div></body></html>"
    text = extract_main_text(html)
    assert all(sentence in text for sentence in texts)


def test_an_author_box_does_not_outrank_the_article() -> None:
    bio = (
        "Jane Doe, a reporter, writer, and editor, covers the city, its parks, its budget, its "
        "schools, its roads, and its people, for the paper, since 2001, and lives by the river."
    )
    html = (
        f"<html><body><div class='site'><div class='wrap'><div>{PARAGRAPHS}</div></div>"
        f"<div class='aside'><div class='author-box__text'><p>{bio}</p></div></div></div>"
        "</body></html>"
    )
    assert extract_main_text(html).split("\n") == ARTICLE


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
    cases = evaluation.load_extraction_cases(sets=("en", "zh"))
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


# Templates whose boilerplate block reads like prose and outweighs a short article: every page
# of such a site must still yield its own article, or all of them look like one duplicate.
SHORT_ARTICLES_ZH = [
    "本报讯，市气象台今天上午发布消息，受北方强冷空气影响，本周末全市将迎来明显降温，最低气温降至零下五度，"
    "北部山区有小到中雪。气象部门提醒市民注意防寒保暖，及时增添衣物，出行时注意交通安全，"
    "老人和儿童尽量减少外出。农业部门也提醒农户，要提前做好大棚蔬菜和果树的防冻工作，"
    "养殖户要加固圈舍，储备足够的饲料。",
    "记者昨日从市教育局获悉，今年全市将新建和改扩建中小学校十二所，新增学位一万余个，"
    "重点缓解城区和新建小区的入学压力。教育局有关负责人表示，新学校将在明年秋季学期前全部投入使用，"
    "同时配套建设体育场馆、图书馆和食堂，所需教师将通过公开招聘、城乡交流等方式补充，"
    "确保每一所新学校都能按时开学。",
]

COMMENTS_ZH = "".join(
    f"<div><p>网友{i}：这篇文章写得很好，内容详实，观点鲜明，"
    f"希望以后多发表这样的文章，我们会一直关注，支持一下！</p><span>2024-01-{i:02d}</span></div>"
    for i in range(1, 21)
)

BLOG_TEMPLATE_ZH = (
    "<html><head><title>{title}</title></head><body>"
    "<div id='header'><a href='/'>首页</a> <a href='/blog'>博客</a></div>"
    "<div id='main'><div class='post'><h1>{title}</h1><p>{body}</p></div>"
    "<div id='comments'><h3>评论</h3>" + COMMENTS_ZH + "</div></div>"
    "<div id='footer'>版权所有</div></body></html>"
)

NOTICE_ZH = (
    "<p>根据《中华人民共和国著作权法》、《信息网络传播权保护条例》等法律法规，未经书面许可，"
    "擅自转载本报作品的，将涉嫌侵犯著作权人合法权益，本报郑重公告如下：</p>"
    "<p>一、任何单位或个人，在任何公开传播平台上使用本报的原创内容，必须事先取得本报书面授权，"
    "并注明来源、作者和原文链接；</p>"
    "<p>二、对侵犯本报著作权益的违法行为，本报将采取一切合法措施，追究行为人的侵权责任，"
    "包括但不限于公开谴责、举报、提起诉讼等；</p>"
    "<p>三、对于各类非法转载行为，欢迎读者提供侵权线索，一经查实，本报将给予奖励，"
    "并对举报人的个人信息严格保密。</p>"
)

NOTICE_TEMPLATE_ZH = (
    "<html><head><title>{title}</title></head><body>"
    "<div class='nav'><a href='/'>首页</a> <a href='/news'>新闻</a></div>"
    "<div class='wrap'><h1>{title}</h1>"
    "<div class='article'><div class='editor'><div><p>{body}</p></div></div></div>"
    "<div class='notice'><span>" + NOTICE_ZH + "</span></div></div>"
    "</body></html>"
)


@pytest.mark.parametrize("template", [BLOG_TEMPLATE_ZH, NOTICE_TEMPLATE_ZH])
def test_template_block_does_not_replace_short_article(template: str) -> None:
    texts = [
        extract_main_text(template.format(title=body[:10], body=body))
        for body in SHORT_ARTICLES_ZH
    ]
    for body, text in zip(SHORT_ARTICLES_ZH, texts, strict=True):
        assert body in text
    assert texts[0] != texts[1]


def test_comment_thread_does_not_replace_short_article() -> None:
    text = extract_main_text(BLOG_TEMPLATE_ZH.format(title="降温", body=SHORT_ARTICLES_ZH[0]))
    assert "网友" not in text


SITE_FOOTER_ZH = (
    "<div id='tail'><p><a href='/a'>关于我们</a>，<a href='/c'>联系我们</a>，"
    "<a href='/ad'>广告服务</a>，<a href='/m'>网站地图</a>，<a href='/h'>帮助中心</a></p>"
    "<p>联系电话：010-12345678，传真：010-12345679，邮箱：web@example.cn，地址：北京市海淀区</p>"
    "<p>Copyright © 2004 Example Inc. All Rights Reserved，版权所有，未经授权，不得转载</p>"
    "<p>京ICP备12345678号，京公网安备11010802000001号，违法和不良信息举报电话：12377</p></div>"
)


def test_site_footer_does_not_outrank_a_short_article() -> None:
    # The footer's commas outscore a one-paragraph article: it is passed over, not kept.
    article = SHORT_ARTICLES_ZH[0][:60] + "。"
    page = (
        f"<html><body><table><tr><td class='l17'>{article}</td></tr></table>"
        f"{SITE_FOOTER_ZH}</body></html>"
    )
    assert extract_main_text(page) == article


def test_byline_box_does_not_outrank_a_short_article() -> None:
    # Both score readability's "article" class bonus; the byline and date box is passed over.
    article = ARTICLE[0]
    page = (
        "<html><body><article class='article'><header class='article--header'>"
        "<div class='articleHeader--subhead-right'><p>By Janie Har, Associated Press</p>"
        "<p>Nov. 20, 2019 Updated: Nov. 20, 2019 1:35 a.m.</p></div></header>"
        f"<section class='article--body'><p>{article}</p></section></article></body></html>"
    )
    assert extract_main_text(page) == article


# The same article in two templates that wrap it in different furniture, inside the element
# readability picks: a byline and date, a share bar, a tag list, teasers and a copyright line.
_BODY_HTML = "".join(f"<p>{s}</p>" for s in ARTICLE)
FURNITURE_PAGES = [
    "<html><body><nav><a href='/'>Home</a></nav><div class='story'>"
    "<h1>River park grows</h1><p>By Jane Doe</p><p>Nov. 20, 2019 5:52 AM EST</p>"
    f"{_BODY_HTML}"
    "<p>Tags: <a href='/t/parks'>parks</a>, <a href='/t/city'>city council</a></p>"
    "<p>Copyright 2019 Example Media. All rights reserved.</p>"
    "</div></body></html>",
    "<html><body><div id='main'><h1>Council expands river park</h1>"
    "<div class='article-meta'>Published 11:34 PM EST Nov 19, 2019 | Staff Reports</div>"
    "<ul class='share-tools'><li><a href='#'>Facebook</a></li><li><a href='#'>Twitter</a></li>"
    "</ul>"
    f"{_BODY_HTML}"
    "<p><a href='/other'>Mayor unveils budget plan for the coming fiscal year</a></p>"
    "<p>Like this article? Sign up for our newsletter</p>"
    "</div></body></html>",
    "<html><body><article><header><span class='byline'>Staff</span></header>"
    "<p>发布时间：2019-11-20 05:52 来源：示例日报</p>"
    f"{_BODY_HTML}"
    "<div class='related-links'><a href='/a'>Earlier: the park debate, explained</a></div>"
    "<p>分享到：</p></article></body></html>",
]


def test_template_furniture_around_the_article_is_trimmed() -> None:
    texts = [extract_main_text(page) for page in FURNITURE_PAGES]
    for text in texts:
        assert text.split("\n") == ARTICLE


def test_trimming_keeps_a_text_of_short_lines() -> None:
    # Nothing but short lines: a few of them go at most, never the whole text.
    items = ["Milk", "Eggs", "Flour", "Sugar", "Butter", "Salt", "Lemons", "Vanilla"]
    page = (
        "<html><body><div class='recipe'><p>" + "</p><p>".join(items) + "</p>"
        f"<p>{ARTICLE[0]}</p></div></body></html>"
    )
    text = extract_main_text(page)
    assert ARTICLE[0] in text


def test_article_named_like_furniture_is_kept() -> None:
    # A class that matches the furniture names but holds the article: kept.
    page = (
        "<html><body><div class='post has-comments'>"
        f"{_BODY_HTML}<div class='comment-count'>3 comments</div></div></body></html>"
    )
    text = extract_main_text(page)
    assert text.split("\n") == ARTICLE


def test_chinese_legal_notice_after_article_is_trimmed() -> None:
    body = [f"{SENTENCE_ZH}第{i}段，记者从有关部门获悉。" for i in range(3)]
    page = (
        "<html><body><div class='content'>"
        + "".join(f"<p>{p}</p>" for p in body)
        + "<p>责任编辑：王明</p><p>本网站版权所有，未经书面许可不得转载。</p>"
        "</div></body></html>"
    )
    assert extract_main_text(page).split("\n") == body


def test_another_storys_headline_above_its_date_and_share_line_is_trimmed() -> None:
    # A template's own story title, its date and source, a share label, then the article.
    body = [f"{SENTENCE_ZH}第{i}段，记者从有关部门获悉。" for i in range(3)]
    page = (
        "<html><body><div class='content'>"
        "<p>17种产品、1个园区入选国家绿色制造名单</p>"
        "<p>发布时间：2022-02-13 04:22:18 来源：云南日报</p><p>分享到：</p>"
        + "".join(f"<p>{p}</p>" for p in body)
        + "</div></body></html>"
    )
    assert extract_main_text(page).split("\n") == body


def test_a_subtitle_not_followed_by_furniture_is_kept() -> None:
    page = (
        "<html><body><div class='story'><p>How the river park grew</p>"
        f"{_BODY_HTML}</div></body></html>"
    )
    assert extract_main_text(page).split("\n") == ["How the river park grew", *ARTICLE]


def _page_with_thread(article: str, stamps: list[str], replies: list[str]) -> str:
    # One layout row holds the article and the replies under it; nothing is named.
    thread = "".join(
        f"<tr><td>user{i}[219.130.79.*] 认为：</td><td>{stamp}</td></tr>"
        f"<tr><td colspan='2'>{reply}</td></tr>"
        for i, (stamp, reply) in enumerate(zip(stamps, replies, strict=True))
    )
    return (
        f"<html><body><table><tr><td><table><tr><td colspan='2'><p>{article}</p></td></tr>"
        f"<tr><td colspan='2'>热门评论</td></tr>{thread}</table></td></tr></table></body></html>"
    )


REPLIES_ZH = [
    "赞同楼上所说的，其实好多东西都是国内制造的，只不过转了个圈，被贴上别人的标签而已。",
    "我穿了十年这种鞋了，没想过要跳得高，主要是为了减轻着地时对脚的震荡，感觉还不错。",
    "说一下价格，工厂供货价二十美元，商店里卖一百美元以上，中间的差价都去了哪里呢？",
    "这篇报道说得有道理，希望有关部门能够重视起来，认真调查一下，给消费者一个交代。",
]


def test_comment_thread_under_a_short_article_is_cut() -> None:
    article = SHORT_ARTICLES_ZH[1]
    stamps = [f"引用 投诉 支持 ({i}) 2004-12-1{i} 09:0{i}:13" for i in range(4)]
    text = extract_main_text(_page_with_thread(article, stamps, REPLIES_ZH))
    assert text == article


def test_english_comment_stamps_are_recognised() -> None:
    stamps = [f"Reply · Jan. {i + 3}, 2019 at 3:0{i} p.m." for i in range(3)]
    replies = [f"I agree with the writer on this point, thanks. {s}" for s in ARTICLE]
    text = extract_main_text(_page_with_thread(ARTICLE[0], stamps, replies))
    assert text == ARTICLE[0]


@pytest.mark.parametrize(
    "declaration",
    [
        '<script type="application/ld+json">{"@type": "DiscussionForumPosting"}</script>',
        '<div itemscope itemtype="https://schema.org/QAPage"></div>',
    ],
)
def test_a_discussion_keeps_its_replies(declaration: str) -> None:
    # A page whose structured data calls it a forum thread or a question with its answers: the
    # replies are its content, where under an article they would be cut.
    stamps = [f"Reply · Jan. {i + 3}, 2019 at 3:0{i} p.m." for i in range(3)]
    replies = [f"I agree with the writer on this point, thanks. {s}" for s in ARTICLE]
    page = _page_with_thread(ARTICLE[0], stamps, replies).replace("<body>", declaration + "<body>")
    text = extract_main_text(page)
    assert text.startswith(ARTICLE[0])
    assert all(reply in text for reply in replies)


def test_a_timeline_of_days_is_not_a_comment_thread() -> None:
    # Dated lines without a time of day are the article's own (a timeline), never cut.
    days = [f"2019年{i}月{i + 10}日" for i in range(1, 5)]
    text = extract_main_text(_page_with_thread(SHORT_ARTICLES_ZH[1], days, REPLIES_ZH))
    assert all(reply in text for reply in REPLIES_ZH)


def test_a_schedule_of_dated_times_is_not_a_comment_thread() -> None:
    # Day-and-time lines with no sentence between them are the article's own programme.
    schedule = [
        "2024年3月1日 10:00 开幕式",
        "2024年3月1日 14:00 分组讨论",
        "2024年3月2日 09:30 闭幕式",
    ]
    closing = "会议期间，主办方还将组织代表参观当地的科技园区和农业示范基地，并举行签约仪式。"
    body = "".join(f"<p>{line}</p>" for line in [SHORT_ARTICLES_ZH[1], *schedule, closing])
    text = extract_main_text(f"<html><body><div class='content'>{body}</div></body></html>")
    assert text.split("\n") == [SHORT_ARTICLES_ZH[1], *schedule, closing]


def test_a_comment_thread_that_outranks_a_short_article_is_passed_over() -> None:
    # The replies (commas, long lines) outscore a one-line article in a block of its own: every
    # article of the site would otherwise extract to the same thread.
    stamps = [f"2004-12-27 12:{i:02d}" for i in range(8)]
    thread = "".join(
        f"<p># re: 很高兴入住博客堂</p><p>{stamp}</p><p>{reply}</p>"
        for stamp, reply in zip(stamps, REPLIES_ZH * 2, strict=True)
    )
    texts = []
    for article in (SHORT_ARTICLES_ZH[0][:70] + "。", SHORT_ARTICLES_ZH[1][:70] + "。"):
        page = (
            f"<html><body><div id='a'><div><div class='x'><p>{article}</p></div></div></div>"
            f"<div id='b'>{thread}</div></body></html>"
        )
        texts.append(extract_main_text(page))
        assert texts[-1] == article
    assert texts[0] != texts[1]


# The tail of the chosen block: lists of other posts under the article (nearDupe.texttail).
LONG_ARTICLE = [
    *ARTICLE,
    "The park department said the wetlands would also give migrating birds a resting place, "
    "and that volunteers had already counted more than sixty species along the river.",
    "Local businesses welcomed the plan, saying more visitors would walk past their shops on "
    "the way to the water, though some asked for more parking near the main entrance.",
    "The council will publish the final design in the autumn, after a last round of public "
    "meetings in each of the three neighbourhoods that border the river.",
]
_LONG_BODY = "".join(f"<p>{s}</p>" for s in LONG_ARTICLE)
_TEASERS = [
    ("Mayor unveils budget plan", "The mayor presented a budget that cuts spending."),
    ("School board picks new head", "The board named a new superintendent on Monday."),
    ("Library opens late on Fridays", "Readers will be able to borrow books until ten."),
]
TAIL_PAGES = {
    # (readability itself drops linked <h1>-<h6> headlines, not these.)
    "teaser list": "".join(f"<p><a href='/x'>{h}</a></p><p>{t}</p>" for h, t in _TEASERS),
    "job board": "<h2>Jobs</h2>"
    + "".join(
        f"<p><a href='/job'>{job}</a></p><p>{place}</p><p>Full-time role. Apply by Friday.</p>"
        for job, place in [("Park ranger", "Ames"), ("Clerk", "Dover"), ("Driver", "Salem")]
    ),
    "more >": "".join(f"<p>{t}</p><p><a href='/x'>more &gt;</a></p>" for _, t in _TEASERS),
    "read more": "".join(
        f"<p><b>{h}</b></p><p>{t}</p><p><a href='/x'>Read More...</a></p>" for h, t in _TEASERS
    ),
    "related stories": "<h3>Related stories</h3>"
    + "".join(f"<p>{h}</p><p>{t}</p>" for h, t in _TEASERS[:2]),
}


@pytest.mark.parametrize("tail", TAIL_PAGES.values(), ids=TAIL_PAGES.keys())
def test_a_list_of_other_posts_under_the_article_is_cut(tail: str) -> None:
    page = f"<html><body><div class='story'>{_LONG_BODY}{tail}</div></body></html>"
    assert extract_main_text(page).split("\n") == LONG_ARTICLE


KEPT_ENDINGS = {
    "short paragraphs": ["Thanks for reading.", "See you next week."],
    "links in prose": [
        "Read the <a href='/r'>council report</a> for the full list of costs.",
        "The <a href='/m'>meeting minutes</a> are online, as is the <a href='/v'>video</a>.",
        "Questions can go to the <a href='/c'>park office</a>.",
    ],
    "a link among short paragraphs": [
        "Photos by the park department.",
        "<a href='/p'>The river park plan</a>",
        "The park opens at dawn.",
    ],
    "an FAQ of links": [
        line for i in "123" for line in (f"<a href='#q{i}'>Is path {i} open?</a>", f"Soon, {i}.")
    ],
}


@pytest.mark.parametrize("ending", KEPT_ENDINGS.values(), ids=KEPT_ENDINGS.keys())
def test_an_articles_own_last_paragraphs_are_kept(ending: list[str]) -> None:
    body = _LONG_BODY + "".join(f"<p>{p}</p>" for p in ending)
    text = extract_main_text(f"<html><body><div class='story'>{body}</div></body></html>")
    assert text.split("\n")[: len(LONG_ARTICLE)] == LONG_ARTICLE
    assert len(text.split("\n")) == len(LONG_ARTICLE) + len(ending)


def test_a_list_that_is_most_of_the_page_is_kept() -> None:
    # A "best of" page: short prose above entries that each end in "read more".
    entries = "".join(
        f"<h3>{h}</h3><p>{t} {ARTICLE[0]}</p><p><a href='/x'>Read more</a></p>"
        for h, t in _TEASERS
    )
    page = f"<html><body><div class='story'><p>{ARTICLE[1]}</p>{entries}</div></body></html>"
    text = extract_main_text(page)
    assert all(t in text for _, t in _TEASERS)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("aAdDsSkKeEbBrRuUcCmMnN-_ \u017f\u212a\u0130"), max_size=30)
)
def test_class_names_match_as_a_case_blind_search_finds(names: str) -> None:
    """names_match (lowercased ASCII, case-sensitive pattern) finds what the case-blind
    pattern finds, non-ASCII letters included (a long s matches "s" case-blind)."""
    for pattern in (_CHROME_CLASS, REGEXES["unlikelyCandidatesRe"], REGEXES["positiveRe"]):
        assert names_match(pattern, names) == (pattern.search(names) is not None)


def test_a_pattern_naming_capitals_is_searched_as_written() -> None:
    """A pattern with a capital letter or an escape such as \\S keeps its case-blind search."""
    pattern = re.compile(r"Side\Sbar", re.I)
    assert names_match(pattern, "SIDE-BAR") and names_match(pattern, "side_bar")
    assert not names_match(pattern, "side bar")


class _ReadabilitysCleaning(BlockReadability):
    """The extractor with readability's own cleaning pass (and its debug lines) restored."""

    def sanitize(self, node: Any, candidates: dict, keep_all_images: bool = False) -> str:
        return str(Document.sanitize(self, node, candidates, keep_all_images))

    def get_preserved_elements(self, node: Any) -> dict:
        return dict(Document.get_preserved_elements(self, node))


def _summary(kind: type[BlockReadability], html: str) -> str:
    """The text ``kind`` makes of a page, as extract_main_text asks it."""
    doc = kind(_parse_html(html), retry_length=_RETRY_LENGTH)
    return str(doc.summary(html_partial=True))


#: A box of three paragraphs beside a search field: kept (fewer fields than a third of them).
ARCHIVE = [f"<p>Archive {n}: every council vote since 1990, street by street.</p>" for n in "ABC"]
#: A story with one box of each kind readability's cleaning drops or keeps.
CLEANED_PAGE = f"""<html><body><div class="story">
<h2 class="comment-heading">Reader comments</h2><h3><a href="/a">Linked heading text</a></h3>
{PARAGRAPHS}<p><a href="/s">Sign up</a> for our daily newsletter and get the latest</p>
<form><input name="q"><textarea>Write here</textarea></form>
<iframe src="https://www.youtube.com/embed/x"></iframe><iframe src="/ad"></iframe>
<table><tr><td><img src="1.png"><img src="2.png"><img src="3.png"><p>Gallery</p></td></tr></table>
<ul>{"".join(f'<li><a href="/{i}">Another story number {i}</a></li>' for i in range(8))}</ul>
<div><input type="text"><input type="hidden"><p>Search the archive</p></div>
<div><input type="text"><input type="hidden">{"".join(ARCHIVE)}</div>
<div class="filler"></div><p>{" ".join(ARTICLE * 3)}</p>
<div>Short box</div><div><embed src="x.swf"><p>{ARTICLE[2]}</p></div>
<div><p>The mayor told reporters on the steps of the hall:</p></div>
<blockquote><p>{ARTICLE[1]}</p></blockquote>
<h2>Table of contents</h2>
<ul><li><a href="#a">Part one</a></li><li><a href="#b">Part two</a></li></ul>
<section><a href="/more">More</a> <a href="/most">Most read</a></section>
</div></body></html>"""


def test_the_cleaning_pass_keeps_what_readabilitys_keeps() -> None:
    """The article's cleaning (headings, calls to action, forms, frames, boxes of images, list
    items, fields, links or embeds, empty boxes beside long text, quote leads, tables of
    contents) leaves the text readability's own pass leaves, on a page of each such box and
    on real pages."""
    pages = [CLEANED_PAGE, NEWS_PAGE]
    evaluation = _load_eval_module()
    if (evaluation.data_dir() / "aeb").is_dir():
        cases = evaluation.load_extraction_cases(sets=("en", "zh"))
        pages += [html for _, _, html, _ in cases[::6]]
    for html in pages:
        assert _summary(BlockReadability, html) == _summary(_ReadabilitysCleaning, html)
    text = _summary(BlockReadability, CLEANED_PAGE)
    assert ARTICLE[0] in text and "Archive C" in text
    assert not any(dropped in text for dropped in ("Another story", "Write here", "Search the"))
