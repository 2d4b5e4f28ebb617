"""The demo news network: articles, sites and which article is syndicated where."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path

ARTICLES_DIR = Path(__file__).parent / "articles"


@dataclass(frozen=True)
class Article:
    """One original story, loaded from ``articles/<lang>/<slug>.txt``."""

    slug: str
    lang: str
    title: str
    author: str
    published: datetime
    section: str
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class Site:
    """One news site of the network; ``template`` names its HTML template in ``render``."""

    key: str
    name: str
    lang: str
    charset: str
    template: str
    domain: str
    prefix: str

    def article_path(self, slug: str, number: int) -> str:
        """The site-specific URL path of an article page."""
        if self.template == "ledger":
            return f"{self.prefix}news/{slug}.html"
        if self.template == "wire":
            return f"{self.prefix}story/{24000 + number}-{slug}"
        if self.template == "courier":
            return f"{self.prefix}articles/{slug}/"
        return f"{self.prefix}content/{20240 + number}.htm"


SITES: tuple[Site, ...] = (
    Site("ledger", "The Daily Ledger", "en", "utf-8", "ledger", "dailyledger.example", "/ledger/"),
    Site("metro", "Metro Wire", "en", "utf-8", "wire", "metrowire.example", "/metro/"),
    Site("metro-zh", "Metro Wire 中文", "zh", "utf-8", "wire", "metrowire.example", "/metro/zh/"),
    Site("courier", "Valley Courier", "en", "utf-8", "courier", "courier.example", "/courier/"),
    Site("hepan", "河畔日报", "zh", "gbk", "hepan", "hepan-daily.example", "/hepan/"),
)
SITES_BY_KEY = {site.key: site for site in SITES}

# Edits are (old, new) replacements applied to a syndicated copy's text: a dropped or added
# sentence or a typo.  The first site listed for an article is its original publisher.
Edits = tuple[tuple[str, str], ...]
SYNDICATION: tuple[tuple[str, str, tuple[tuple[str, Edits], ...]], ...] = (
    (
        "en",
        "council-budget",
        (
            ("ledger", ()),
            ("metro", ()),
            ("courier", ((" The council agreed to phase that increase in over two years.", ""),)),
        ),
    ),
    (
        "en",
        "riverside-marathon",
        (
            ("metro", ()),
            ("ledger", ()),
            ("courier", (("volunteers staffed", "volunteers stafed"),)),
        ),
    ),
    (
        "en",
        "harbor-bridge",
        (
            ("courier", ()),
            (
                "ledger",
                (
                    (
                        "two cafes closed for good.",
                        "two cafes closed for good. A third cafe changed hands in the spring"
                        " and reopened under a new name.",
                    ),
                ),
            ),
            ("metro", ()),
        ),
    ),
    (
        "en",
        "library-app",
        (("ledger", ()), ("metro", (("live availability", "live availabilty"),))),
    ),
    (
        "en",
        "flood-warning",
        (
            ("metro", ()),
            (
                "courier",
                (
                    (
                        "not to the emergency line.",
                        "not to the emergency line. Update: the warning has been extended"
                        " until Friday morning.",
                    ),
                ),
            ),
        ),
    ),
    (
        "en",
        "science-fair",
        (("courier", ()), ("ledger", ((' "My parents are very happy it is over."', ""),))),
    ),
    ("en", "community-garden", (("ledger", ()),)),
    ("en", "ferry-timetable", (("metro", ()),)),
    ("en", "old-mill-cinema", (("courier", ()),)),
    ("zh", "metro-line", (("hepan", ()), ("metro-zh", ()))),
    (
        "zh",
        "library-hours",
        (
            ("hepan", ()),
            ("metro-zh", (("也有读者建议，馆方可以在夜间增设简单的饮水和休息区域。", ""),)),
        ),
    ),
    (
        "zh",
        "rainstorm",
        (
            ("metro-zh", ()),
            (
                "hepan",
                (
                    (
                        "及时发布预警信息。",
                        "及时发布预警信息。记者从市水务局了解到，全市各大水库目前水位均在安全范围内。",
                    ),
                ),
            ),
        ),
    ),
    (
        "zh",
        "riverside-marathon-zh",
        (("hepan", ()), ("metro-zh", (("二十个补给站", "二十个补级站"),))),
    ),
    ("zh", "night-market", (("hepan", ()),)),
)

# (site key, article slug) pairs that also have a print view at /print/<site>/<slug>.
PRINT_VIEWS: tuple[tuple[str, str], ...] = (("ledger", "council-budget"),)


@dataclass(frozen=True)
class Placement:
    """An article as published on one site: the original or a syndicated copy."""

    site: Site
    article: Article
    origin: Site
    edits: Edits
    path: str

    @property
    def is_copy(self) -> bool:
        """Whether this placement is syndicated from another site."""
        return self.origin is not self.site

    @property
    def seed(self) -> int:
        """A stable per-page number that drives timestamps, view counters and rotations."""
        return zlib.crc32(f"{self.site.key}/{self.article.slug}".encode())

    @property
    def paragraphs(self) -> tuple[str, ...]:
        """The article text with this site's syndication edits applied."""
        text = "\n\n".join(self.article.paragraphs)
        for old, new in self.edits:
            if text.count(old) != 1:
                raise ValueError(f"edit {old!r} must match {self.article.slug} exactly once")
            text = text.replace(old, new)
        return tuple(text.split("\n\n"))

    @property
    def timestamp(self) -> datetime:
        """Publication time on this site: copies appear a few hours after the original."""
        if not self.is_copy:
            return self.article.published
        return self.article.published + timedelta(hours=2 + self.seed % 20, minutes=self.seed % 60)

    @property
    def views(self) -> int:
        """This page's view counter."""
        return 150 + self.seed % 48000


def load_article(path: Path) -> Article:
    """Parse an article file: ``key: value`` header lines, a blank line, then paragraphs."""
    header, _, body = path.read_text(encoding="utf-8").partition("\n\n")
    meta = dict(line.split(": ", 1) for line in header.splitlines())
    return Article(
        slug=path.stem,
        lang=path.parent.name,
        title=meta["title"],
        author=meta["author"],
        published=datetime.fromisoformat(meta["date"]),
        section=meta["section"],
        paragraphs=tuple(p.strip() for p in body.split("\n\n") if p.strip()),
    )


@cache
def placements() -> tuple[Placement, ...]:
    """Every article page of the network, in a fixed order."""
    result = []
    for number, (lang, slug, sites) in enumerate(SYNDICATION):
        article = load_article(ARTICLES_DIR / lang / f"{slug}.txt")
        origin = SITES_BY_KEY[sites[0][0]]
        for key, edits in sites:
            site = SITES_BY_KEY[key]
            if site.lang != article.lang:
                raise ValueError(f"{slug} ({lang}) cannot appear on {key} ({site.lang})")
            result.append(Placement(site, article, origin, edits, site.article_path(slug, number)))
    return tuple(result)


def site_placements(site: Site) -> tuple[Placement, ...]:
    """The article pages of one site, newest first."""
    own = (p for p in placements() if p.site is site)
    return tuple(sorted(own, key=lambda p: p.timestamp, reverse=True))
