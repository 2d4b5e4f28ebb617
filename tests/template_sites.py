"""Four news sites on four loopback hosts whose templates fool a page-by-page extractor.

* ``clean``: a plain template; two full articles.
* ``teasers``: every page ends with the same long block of other posts' teasers, inside the
  article's own element, so the extracted text is mostly the site's: two different short
  articles would share most of their words and be joined.
* ``jobs``: every page ends with the same job board, so its copy of a clean article differs
  by a third of its words and would be kept.
* ``logo``: like ``teasers`` (a "most read" block of its own), but its ``<h1>`` is the site's
  name, as in themes that head every page with their logo; the story is named in the title.

Each template site first serves three other stories (its template is learned from them), then
the pages under test. :data:`ORDER` is the crawl order.
"""

from __future__ import annotations

from tests.mockserver import Page
from tests.site import article

TEASERS = [
    "In other news from the valley, the regional orchestra announced its winter season, with "
    "six concerts planned at the old town hall and tickets on sale from Monday morning.",
    "Elsewhere, the county's farmers say the late frost has cut this year's apple harvest by "
    "nearly half, and several orchards are asking the council for emergency support.",
    "Our weekend guide picks the best walks along the northern ridge, from gentle family loops "
    "to a demanding climb that rewards hikers with views across three counties.",
    "The hospital trust has opened a new children's ward, after two years of fundraising by "
    "parents, nurses and local businesses who collected more than a million pounds.",
    "Readers have until Friday to vote in our annual awards, which celebrate the shops, cafes "
    "and volunteers that make the town centre a better place to live and work.",
    "A retired teacher has written a history of the town's railway, tracing the line from its "
    "opening in the last century to the closure of the goods yard and the new station.",
    "Police are asking drivers to take care on the coast road, where resurfacing works will "
    "close one lane each night for the next three weeks, with delays expected at peak times.",
    "The university's rowing crew won the regional championship for the first time in a "
    "decade, beating the favourites by half a length in a tense final on the river.",
]
JOBS = [
    "Senior accountant wanted at a growing logistics firm in the harbour district, full time, "
    "competitive salary, pension scheme and hybrid working, apply by the end of the month.",
    "Experienced electrician required for commercial projects across the county, own van "
    "provided, overtime available, certificates essential, immediate start for the right person.",
    "Part-time receptionist needed for a busy dental practice near the market square, friendly "
    "manner and good computer skills, weekday mornings, training given to the successful person.",
    "Warehouse operatives wanted for day and night shifts, forklift licence an advantage, "
    "weekly pay, paid holidays and free parking on site, no experience needed for most roles.",
    "Qualified chef de partie sought for a riverside restaurant, split shifts, tips shared "
    "equally, staff meals and uniform provided, two years of experience in a busy kitchen.",
    "Delivery drivers needed across the district, clean licence required, flexible hours, "
    "fuel card and phone supplied, extra pay for weekend and bank holiday rounds.",
    "Primary school teaching assistant wanted from September, term time only, experience with "
    "special educational needs welcome, an enhanced background check will be required.",
    "Software developer wanted for a small agency building booking systems for hotels, remote "
    "friendly, modern tools, generous holiday allowance and a yearly training budget.",
    "Care workers needed for home visits in the northern villages, mileage paid, full training "
    "and ongoing support, rewarding work with a friendly team of experienced carers.",
    "Sales assistant wanted for a family-run garden centre, weekends essential, plant knowledge "
    "helpful but not required, staff discount on everything in the shop and cafe.",
]

MOST_READ = [
    "Most read this week: the lifeboat crew that answered three calls in a single stormy night "
    "and brought every sailor home safely before dawn broke over the bay.",
    "Most read this week: a baker on the high street has won a national prize for her sourdough, "
    "and the queue outside her shop now starts well before seven each morning.",
    "Most read this week: the castle gardens will stay open late through the summer, with music "
    "on the lawn every Thursday evening and free entry for children under twelve.",
    "Most read this week: volunteers counted more than two hundred species of birds on the "
    "estuary, the highest number since the reserve began keeping records.",
    "Most read this week: the town's oldest pub is for sale after a hundred and forty years in "
    "one family, and regulars have formed a group hoping to buy it together.",
    "Most read this week: a new cycle path will link the station to the business park, "
    "taking cyclists off the busy ring road by the end of next spring.",
    "Most read this week: the museum has put a rare medieval map of the county on display, "
    "found rolled up in a cupboard during the building's long restoration.",
    "Most read this week: students from the college built a solar car that finished fourth "
    "in an international race across the desert against far larger teams.",
]


def _page(site: str, title: str, paragraphs: list[str], tail: list[str]) -> Page:
    body = "".join(f"<p>{p}</p>" for p in paragraphs + tail)
    name = f"The {site.title()} Gazette"
    heading = name if site == "logo" else title
    html = (
        f"<html><head><title>{title} | {name}</title></head><body>"
        f'<nav><a href="/">Home</a> <a href="/news">News</a></nav>'
        f'<div class="story"><h1>{heading}</h1>{body}</div>'
        f"<footer>© {name}</footer></body></html>"
    )
    return Page(html.encode("utf-8"))


def first(slug: str) -> list[str]:
    """A short story: the article's first paragraph."""
    return article(slug)[:1]


def last(slug: str) -> list[str]:
    """Another short story: the article's last paragraph."""
    return article(slug)[-1:]


#: site -> path -> (title, paragraphs) of its pages, in the order they are crawled.
STORIES: dict[str, dict[str, tuple[str, list[str]]]] = {
    "clean": {
        "/bridge": ("Harbor bridge reopens", article("harbor-bridge")),
        "/budget": ("Council passes budget", article("council-budget")),
    },
    "teasers": {
        "/w1": ("Marathon closes roads", first("riverside-marathon")),
        "/w2": ("Library launches app", first("library-app")),
        "/w3": ("Old mill cinema saved", first("old-mill-cinema")),
        "/garden": ("Community garden opens", first("community-garden")),
        "/ferry": ("Ferry timetable changes", first("ferry-timetable")),
    },
    "jobs": {
        "/w1": ("Runners thank volunteers", last("riverside-marathon")),
        "/w2": ("App gets mixed reviews", last("library-app")),
        "/w3": ("Cinema plans first season", last("old-mill-cinema")),
        "/bridge": ("Harbor bridge reopens", article("harbor-bridge")),
    },
    "logo": {
        "/w1": ("Flood defences tested", last("flood-warning")),
        "/w2": ("Science fair winners named", last("science-fair")),
        "/w3": ("Budget vote delayed", last("council-budget")),
        "/garden": ("Garden seeks volunteers", last("community-garden")),
        "/ferry": ("Ferry fares frozen", last("ferry-timetable")),
    },
}
TAILS = {"clean": [], "teasers": TEASERS, "jobs": JOBS, "logo": MOST_READ}
#: The loopback address of each site: four hosts, four sites.
HOSTS = {"clean": "127.0.0.1", "teasers": "127.0.0.2", "jobs": "127.0.0.3", "logo": "127.0.0.4"}
#: (site, path) in crawl order.
ORDER = [(site, path) for site, pages in STORIES.items() for path in pages]


def build_sites() -> dict[str, dict[str, Page]]:
    """site -> path -> Page."""
    return {
        site: {path: _page(site, t, paras, TAILS[site]) for path, (t, paras) in pages.items()}
        for site, pages in STORIES.items()
    }


#: A long block a site shows beside every story (a newsletter's essay): a page-by-page
#: extractor takes it for a short story's article.
ESSAY = "".join(
    f"<p>Our newsletter, written by readers, for readers, in town {i}, brings you the week's "
    f"events, the markets, the schools, the parks, and the council's plans.</p>"
    for i in range(8)
)


def essay_page(story: list[str], title: str = "", with_essay: bool = True) -> str:
    """A short ``story`` in its own box and, unless not ``with_essay``, the site's essay."""
    head = f"<head><title>{title}</title></head>" if title else ""
    side = f"<div class='side'><div class='essay'>{ESSAY}</div></div>" if with_essay else ""
    paragraphs = "".join(f"<p>{line}</p>" for line in story)
    return (
        f"<html>{head}<body><div><div class='story'>{paragraphs}</div></div>{side}</body></html>"
    )


#: A story republished under another headline, in another section of a portal.
REPUBLISHED = ("Harbor Street bridge reopened to traffic", article("harbor-bridge"))


def portal_pages() -> dict[str, Page]:
    """Every template site's pages as sections of one portal (``/<site><path>``), and the
    harbor bridge story republished under another headline in the teasers section: three
    copies of one story, in three templates of one host."""
    pages = {
        f"/{site}{path}": page
        for site, paths in build_sites().items()
        for path, page in paths.items()
    }
    pages["/teasers/bridge-again"] = _page("teasers", *REPUBLISHED, TEASERS)
    return pages
