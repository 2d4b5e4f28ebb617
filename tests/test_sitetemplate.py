"""The site-template rules: a page's headline, its lines, and what its site's pages taught."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from nearDupe.analysis import analyze_extracted, analyze_html, analyze_page, analyze_text
from nearDupe.features import FeatureSettings
from nearDupe.sitetemplate import (
    HOST_TEMPLATES,
    LINE_TITLES,
    TEMPLATE_PAGES,
    YOUNG_STORIES,
    SiteTemplate,
    headline_of,
    identity_of,
    site_memory,
    site_of,
    strip_template,
    template_signature,
)
from nearDupe.store.sites import learned
from nearDupe.text import extract_main_text
from nearDupe.textlines import SPACE, dense_length
from tests.template_sites import essay_page

#: Made-up class names.
WORDS = [f"{a}{b}{c}" for a in "abcdefgh" for b in "ijklmnop" for c in "qrstuvwx"]
ARTICLE = "\n".join(
    f"Paragraph {i} of the council's budget story, with its own words number {i}."
    for i in range(8)
)
TAIL = "\n".join(
    [
        "More from the Ledger: harbor bridge reopens after repairs",
        "Jobs: senior accountant wanted, apply today",
        "Read more stories about the city's ferry timetable",
    ]
)


def taught(*pages: tuple[int, str]) -> SiteTemplate:
    """What a site's earlier pages, as (identity, text), taught."""
    book: dict[int, tuple[int, ...]] = {}
    for identity, text in pages:
        learned(book, identity, strip_template(text, identity, SiteTemplate()).lines)
    return SiteTemplate(book)


def test_site_is_the_host_without_www() -> None:
    assert site_of("https://WWW.Example.com:8080/a?b") == "example.com"
    assert site_of("http://127.0.0.2:81/x") == "127.0.0.2"
    assert site_of("not a url") == "" and site_of("http://[::1") == ""


def section_page(chrome: str, headline: str, body: str) -> str:
    """A portal's page: its section's chrome (class names), then the headline and article."""
    nav = "".join(f'<div class="{name}"><a href="/">{name}</a></div>' for name in chrome.split())
    return (
        f'<html><head><title>{headline}</title></head><body class="post-{len(body)}">{nav}'
        f"<h1>{headline}</h1>{body}</body></html>"
    )


def test_a_pages_memory_is_its_host_and_the_chrome_before_its_headline() -> None:
    """Pages of one template share a memory whatever their article holds (its own classes,
    numbers); another section of the host, with its own chrome, has another; a page with
    almost nothing before its headline is judged by its host's."""
    news = "top-bar nav menu menu-item search logo breadcrumbs section-news"
    sport = "top-bar nav menu menu-item search logo breadcrumbs section-sport scores"
    story = section_page(news, "Bridge reopens", '<p class="byline">By A. Writer</p><p>Text</p>')
    other = section_page(news + " ad-7", "Budget passed", '<p class="lead">Other</p><p>x</p>')
    assert template_signature(story) == template_signature(other) != ""
    assert site_memory("portal.example", story) == site_memory("portal.example", other)
    assert site_memory("portal.example", story) != site_memory(
        "portal.example", section_page(sport, "Cup final", "<p>Score</p>")
    )
    plain = section_page("nav", "Bridge reopens", '<p class="a b c d e">Text</p>')
    assert site_memory("portal.example", plain) == "portal.example"
    assert site_memory("", story) == ""


def table_page(chrome: str, headline: str, body: str) -> str:
    """A table layout's page: no class names, its chrome as nested tables of links (a cell
    per name of ``chrome``), then the headline and article."""
    cells = "".join(
        f'<tr><td id="{name}"><a href="/{name}">{name}</a><a href="/">home</a></td></tr>'
        for name in chrome.split()
    )
    article = f"<center><h1>{headline}</h1>{body}</center>"
    return f"<html><body><table>{cells}</table>{article}</body></html>"


def test_a_table_layout_is_signed_by_its_skeleton() -> None:
    """Pages naming no classes are signed by the tags and ids before their headline: one
    template's pages share a memory (however many links a menu holds, whatever the article
    after the headline), another template of the host has another."""
    news = table_page("top menu news", "Bridge reopens", "<p>Text</p><table><tr><td>x</td></tr>")
    more = news.replace('<a href="/">home</a>', '<a href="/">home</a><a href="/a">a</a>')
    other = table_page("top menu news", "Budget passed", '<p class="lead">Other</p>' * 9)
    sport = table_page("top menu sport scores", "Cup final", "<p>Score</p>")
    assert template_signature(news) == template_signature(more) == template_signature(other)
    assert site_memory("portal.example", news) != "portal.example"
    assert site_memory("portal.example", news) != site_memory("portal.example", sport)
    assert template_signature("<body><div><h1>Bridge reopens</h1><p>Text</p></body>") == ""


def test_a_template_signature_survives_hostile_markup() -> None:
    """Lone surrogates, unclosed tags and a huge page give a signature, never an error, and
    a page of made-up class names costs one of a bounded number of memories."""
    odd = section_page("a\udc80 b\x00 c\ufffd d", "Headline", "<p>text</p>")
    assert len(template_signature(odd)) == 2
    unclosed = "<body>" + '<div class="x' * 50_000
    assert template_signature(unclosed) == ""
    assert len(template_signature("<body>" + "<td id='\udc80'><b>" * 50_000)) == 2
    rng = random.Random(5)
    made_up = [" ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(2000)]
    signatures = {template_signature(section_page(chrome, "H", "")) for chrome in made_up}
    assert len(signatures) == HOST_TEMPLATES


def test_identity_is_the_headline_whatever_the_site_adds() -> None:
    same = [
        "<title>Council passes budget | The Ledger</title>",
        "<title>Print: Council passes budget</title>",
        "<title>Council passes budget (print)</title>",
        "<TITLE>The Ledger — Council passes budget</TITLE>",
        "<title>Story | The Ledger</title><h1 class='x'>Council <b>passes</b> budget</h1>",
    ]
    assert {headline_of(html) for html in same} == {"Council passes budget"}
    assert len({identity_of(headline_of(html), "http://a/") for html in same}) == 1
    other = identity_of(headline_of("<title>Bridge reopens | The Ledger</title>"), "")
    assert other != identity_of("Council passes budget", "")
    # No title nor heading: the URL tells pages apart.
    assert identity_of(headline_of("<p>x</p>"), "http://a/1") != identity_of("", "http://a/2")
    assert identity_of("", "") != 0


def test_a_heading_that_names_the_site_is_not_the_headline() -> None:
    """A theme that heads every page with its logo makes the site's name the ``<h1>``: the
    story is then the title's longest part, so the site's pages stay different stories."""
    logo = "<title>{} | The Ledger</title><h1><a href='/'>The Ledger</a></h1>"
    assert headline_of(logo.format("Council passes budget")) == "Council passes budget"
    stories = {
        identity_of(headline_of(logo.format(t)), "")
        for t in ("Bridge reopens", "Ferry fares frozen")
    }
    assert len(stories) == 2
    # A short story heading that is not the title's last part, nor longer than it, is kept.
    assert headline_of("<title>Budget | The Ledger Daily</title><h1>Budget</h1>") == "Budget"
    assert headline_of("<title>The Ledger</title><h1>The Ledger</h1>") == "The Ledger"
    assert headline_of("<title>Vote | Budget</title><h1>Budget</h1>") == "Budget"
    # A heading that links to a home page names the site, wherever the title names it.
    for home in ("/", "https://ledger.example/", "//ledger.example"):
        page = f"<title>Ledger: Ferry fares frozen</title><h1><a href='{home}'>Ledger</a></h1>"
        assert headline_of(page) == "Ferry fares frozen"
    assert (
        headline_of("<title>A</title><h1><a href='/ferry'>Ferry fares</a></h1>") == "Ferry fares"
    )
    # A heading holding a drawing (a logo's SVG) is no headline; the next one is.
    drawing = "<h1><svg>" + "<path d='M0 0'/>" * 200 + "</svg></h1><h1>Bridge reopens</h1>"
    assert headline_of(drawing) == "Bridge reopens"


def test_lines_seen_on_other_stories_are_left_out() -> None:
    text = ARTICLE + "\n" + TAIL
    others = [(100 + i, f"Story {i} alone here, long enough.\n" + TAIL) for i in range(2)]
    assert strip_template(text, 7, taught(*others[: TEMPLATE_PAGES - 1])).text == text
    site = taught(*others[:TEMPLATE_PAGES])
    stripped = strip_template(text, 7, site)
    assert stripped.text.strip() == ARTICLE
    assert not stripped.template_text
    # Digits do not make a line another one: a counter or a date changes every page.
    assert strip_template(ARTICLE + "\nJobs: senior accountant wanted, apply today 42", 7, site)
    # The page's own earlier copies (its headline) do not count: a print view is no template.
    own = taught(*[(7, text)] * 3)
    assert strip_template(text, 7, own).text == text


def test_text_seen_on_the_sites_other_stories_is_template_text() -> None:
    """Another post's teaser block extracted for every page: not fingerprinted, so no two
    different articles are joined by it at distance 0."""
    teaser = "Read more: the library app now lets members renew books online.\n" * 3
    site = taught((1, teaser))
    assert strip_template(teaser, 2, site).template_text
    analysis = analyze_text(teaser, 200, FeatureSettings(), site, 2)
    assert analysis.skip_reason == "template-text" and analysis.fingerprint is None
    assert analysis.lines and analysis.identity == 2
    # The same text under the same headline is that page again, not template.
    assert not strip_template(teaser, 1, site).template_text


def test_a_one_line_story_under_its_sites_lines_is_its_own() -> None:
    """A short story (fewer than TEMPLATE_OWN_LETTERS letters) under the site's breadcrumbs:
    its line tells its headline, so it is fingerprinted like its copy on a site that frames
    it with nothing; under another post's headline the same line is the site's text."""
    crumbs = "You are here: Home > Science > Physics\nFlight physics basics"
    story = "Oscar nominations forecast: the favourites in every category"
    site = taught((1, crumbs + "\nA story of the site in words of its own, told at length."))
    headline = "Oscar nominations forecast"
    framed = strip_template(crumbs + "\n" + story, 2, site, headline)
    assert framed.text == story and not framed.template_text
    features = FeatureSettings()
    page = analyze_text(crumbs + "\n" + story, 200, features, site, 2, headline)
    assert page.fingerprint == analyze_text(story, 200, features).fingerprint is not None
    teaser = crumbs + "\n" + story
    assert strip_template(teaser, 2, site, "Council passes budget").template_text
    assert strip_template(teaser, 2, site).template_text


def test_a_story_republished_under_a_new_headline_is_judged_whole() -> None:
    """Every line seen on one other story, but the text tells this page's headline: the site
    republished that story; the page keeps its text, so the index finds it a copy (without
    the lines more stories had: its site's template)."""
    site = taught((1, ARTICLE))
    again = strip_template(ARTICLE, 2, site, "Council budget story: paragraph words")
    assert again.text == ARTICLE and not again.template_text
    framed = ARTICLE + "\n" + TAIL
    site = taught((1, framed), (3, "The ferry story, in words of its own.\n" + TAIL))
    again = strip_template(framed, 2, site, "Council budget story: paragraph words")
    assert again.text == ARTICLE and not again.template_text
    # A headline the text does not tell: the text is the site's, not this page's story.
    assert strip_template(ARTICLE, 2, site, "Harbor bridge reopens").template_text
    # Seen on two other stories: template, whatever the headline.
    site = taught((1, ARTICLE), (3, ARTICLE))
    assert strip_template(ARTICLE, 2, site, "Council budget story").template_text


def test_learning_counts_each_story_once_and_caps_titles() -> None:
    book: dict[int, tuple[int, ...]] = {}
    for identity in (1, 1, 2, 3, 4, 5):
        learned(book, identity, [10, 11])
    assert book[10] == (1, 2, 3)[:LINE_TITLES]


def test_a_young_sites_page_carries_its_text_until_the_site_is_grown() -> None:
    """A page analysed while its site taught fewer than YOUNG_STORIES stories carries its text;
    it is outdated once the site knows more of its lines as template, and analysed again with
    them it loses them. A grown site's page, or a page of no known site, carries nothing."""
    features = FeatureSettings()
    page = analyze_text(ARTICLE + "\n" + TAIL, 0, features, SiteTemplate(), 7)
    assert page.recheck is not None and page.known == 0
    assert page.recheck.text == ARTICLE + "\n" + TAIL
    assert not page.outdated(SiteTemplate())
    site = taught((1, "Another story of the site, all its own words.\n" + TAIL))
    assert site.young() and len(site.template_lines(page.lines, page.told, 0, 7)) == 3
    assert page.outdated(site)
    again = analyze_text(page.recheck.text, 0, features, site, 7)
    assert again.fingerprint == analyze_text(ARTICLE, 0, features).fingerprint
    assert again.recheck is not None and not again.outdated(site)
    words = ["harbor", "ferry", "library", "garden", "cinema", "budget"][:YOUNG_STORIES]
    grown = taught(
        *((i, f"The {word} story, in words of its own.\n" + TAIL) for i, word in enumerate(words))
    )
    assert not grown.young()
    assert analyze_text(ARTICLE, 0, features, grown, 7).recheck is None
    assert analyze_text(ARTICLE, 0, features).recheck is None


def test_a_page_became_template_when_its_site_taught_all_its_lines_after_its_analysis() -> None:
    """A page whose every line its site learned from another story after the page was
    analysed became its site's text; one with a line of its own, or already stripped of
    those lines, did not."""
    features = FeatureSettings()
    words = ["harbor", "ferry", "library", "garden"]
    grown = taught(
        *((i, f"The {word} story, in words of its own.") for i, word in enumerate(words))
    )
    notice = analyze_text(TAIL, 0, features, grown, 9)
    assert notice.fingerprint is not None and notice.known == 0
    later = taught(*((i, f"The {w} story, in words of its own.") for i, w in enumerate(words)),
                   (5, TAIL))  # fmt: skip
    assert notice.became_template(later)
    assert not analyze_text(ARTICLE + "\n" + TAIL, 0, features, grown, 9).became_template(later)
    assert not analyze_text(TAIL, 0, features, later, 9).became_template(later)
    # The one other story's lines tell its headline: that story, republished (a copy).
    republished = analyze_text(TAIL, 0, features, grown, 9, "Harbor bridge reopens")
    assert not republished.became_template(later)


def test_a_page_whose_text_is_its_sites_block_is_read_again_without_it() -> None:
    """The extractor takes a site's long block (an essay beside every story) for a short
    story's article; once the site taught the block, the page is read without it."""
    story = [
        "The harbor bridge reopened on Monday after three weeks of repairs to its deck.",
        "Drivers had used the ferry meanwhile; the city thanked them for their patience.",
    ]
    other = ["The library now lends tools.", "Members may borrow a drill for a week."]
    features = FeatureSettings()
    # The block outranks the story, which is not in the text.
    assert story[0] not in extract_main_text(essay_page(story))
    site = taught((1, extract_main_text(essay_page(other))))
    url = "https://ledger.test/b"
    analysis = analyze_html(essay_page(story), 0, 2_000_000, features, site, url)
    alone = analyze_html(essay_page(story, with_essay=False), 0, 2_000_000, features)
    assert analysis.skip_reason is None and analysis.fingerprint == alone.fingerprint
    # Without what the site taught, the page is its block (and the block is its text).
    first = analyze_html(essay_page(story), 0, 2_000_000, features, SiteTemplate())
    assert first.fingerprint != alone.fingerprint
    # Analysed so while its site was young, it is read again from its HTML at its decision.
    assert first.recheck is not None and first.recheck.html == essay_page(story)
    again = first.recheck
    assert analyze_text(again.text, 0, features, site, first.identity).skip_reason == (
        "template-text"
    )
    decided = analyze_page(again.text, again.html, 0, features, site, first.identity, "")
    assert decided.fingerprint == alone.fingerprint


def test_a_heading_on_the_sites_other_pages_is_its_name_not_a_headline() -> None:
    """A blog heading every page with its name (not a link home, first in its titles): once
    two other pages showed the name over other titles, a page's story is its own title part
    (the two pages that showed it keep it as theirs); a story's copies (one title) and a
    second headline of it make no name."""
    blog = "<title>Silicon Exposed: {}</title><h1 class='blog'>Silicon Exposed</h1>"
    titles = ("Decapping a flash chip", "A tour of the FPGA", "Probes", "Logic analyzers")
    posts = [blog.format(title) for title in titles]
    assert {headline_of(post) for post in posts} == {"Silicon Exposed"}
    book: dict[int, tuple[int, ...]] = {}

    def story(html: str) -> int:
        """The page's identity as its site knows it, the site learning from the page."""
        analysis = analyze_extracted(ARTICLE, html, "http://b/", 200, FeatureSettings(),
                                     SiteTemplate(dict(book)))  # fmt: skip
        for identity, lines in analysis.lessons():
            learned(book, identity, lines)
        return analysis.identity

    name = identity_of("Silicon Exposed", "")
    assert [story(post) for post in posts] == [
        name,
        name,
        identity_of("Probes", ""),
        identity_of("Logic analyzers", ""),
    ]
    # A story's copies and its second headline: its heading stays its own.
    page = "<title>{} | The Ledger</title><h1>Council passes budget</h1>"
    book.clear()
    for title in ["Council passes budget"] * 3 + ["Budget passed: what we know"] * 2:
        assert story(page.format(title)) == identity_of("Council passes budget", "")
    # Headlines that differ by a number are different headlines, not one heading of the site.
    book.clear()
    numbered = "<title>Story {0} | The Ledger</title><h1>Story {0}</h1>"
    for n in range(5):
        assert story(numbered.format(n)) == identity_of(f"Story {n}", "")


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(" \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000ab新")))
def test_dense_length_counts_what_the_space_pattern_leaves(text: str) -> None:
    """Every character but a space counts, a line break included."""
    assert dense_length(text) == max(len(SPACE.sub("", text)), 1)
