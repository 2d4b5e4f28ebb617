"""The demo network's second edition: a re-crawl's test bed. Two stories are rewritten as
follow-ups, two are new (linked from the home page), one page now carries another site's
story, and every article page's view counter and dates move: only the rewritten and the new
pages are news."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from . import render
from .content import PRINT_VIEWS, SITES_BY_KEY, Article, Placement, placements

#: (site key, slug) of the stories rewritten, and their paragraphs after the first.
REWRITTEN: dict[tuple[str, str], tuple[str, ...]] = {
    ("metro", "ferry-timetable"): (
        "One month into the trial, the evening crossings are carrying far more people than "
        "the operator expected. The late boats averaged ninety-four passengers a night in "
        "June, and the Saturday midnight sailing turned riders away twice.",
        "The company now plans to swap the leased vessel for a larger one before the "
        "August holiday weekend. A spokesperson said the bigger boat has a heated cabin, "
        "which would let the schedule run into the winter months.",
        "Residents of Harbour Lane say the walk from the landing has become quieter since "
        "staff began meeting the last boats, though two households asked for better "
        "street lighting on the hill above the pier.",
        "Restaurant owners on the island report their busiest June in a decade. One "
        "fish grill added a second sitting at half past nine to catch diners heading "
        "for the late crossings back to town.",
        "The council will review the subsidy in September, when the first three months of "
        "ridership figures are published. The timetable for the autumn is expected to "
        "appear at both piers in the last week of August.",
    ),
    ("hepan", "night-market"): (
        "开张一个月后，青石街夜市的人气依然不减。据街道办统计，夜市平均每晚接待市民游客约八千人次，"
        "周末高峰时超过一万五千人次，摊主营业额普遍比改造前增长了三成以上。",
        "人流增加也带来了新问题。部分居民反映，夜市散场后仍有游客在巷子里逗留喧哗，"
        "周边几条小路的临时停车也给出行带来不便。街道办已在两处路口增派了交通协管员。",
        "针对停车难，区交通部门在距夜市三百米的体育场开放了临时停车场，晚上免费停放，"
        "并开通了两条夜间接驳公交线路，末班车延长到晚上十二点。",
        "夜市管理方还推出了“无塑夜市”倡议，鼓励摊主使用可降解餐具，"
        "自带餐盒的顾客可在部分摊位享受小额优惠，目前已有六十多家摊位参与。",
        "街道办负责人说，下个月将召开居民议事会，就延长周末营业时间等问题征求意见，"
        "争取在热闹和安宁之间找到平衡。",
    ),
}

#: (site key, slug) of a page that now carries another story: (site key, slug) of its page.
REPLACED: dict[tuple[str, str], tuple[str, str]] = {
    ("courier", "old-mill-cinema"): ("ledger", "community-garden"),
}

#: Stories the second edition adds: (site key, number for its path, article).
ADDED: tuple[tuple[str, int, Article], ...] = (
    (
        "courier",
        14,
        Article(
            "school-orchestra",
            "en",
            "School Orchestra Wins Regional Contest With Piece Written by a Student",
            "Dana Whitfield",
            datetime(2024, 6, 2, 18, 30),
            "Education",
            (
                "The Millbrook High School orchestra took first place at the regional youth "
                "music contest on Saturday, playing a piece composed by one of its own "
                "cellists, seventeen-year-old Priya Nandakumar.",
                "The eight-minute work, called River Lights, was written over the winter "
                "and rehearsed after school for three months. The judges praised its "
                "ambition and the orchestra's control of the quiet passages.",
                "Conductor Leon Abara said the students chose the piece themselves. "
                '"They wanted to play something nobody had heard before," he said. '
                '"It was a risk, and they carried it."',
                "The win earns the orchestra a place at the state festival in October and "
                "a grant of five thousand dollars for instruments. The school plans to buy "
                "a second double bass and repair its timpani.",
                "Nandakumar said she is already working on a second piece, this time for "
                "the school choir, and hopes to study composition after graduating.",
            ),
        ),
    ),
    (
        "hepan",
        15,
        Article(
            "bike-lanes",
            "zh",
            "滨江路自行车道贯通 骑行通勤更安全",
            "赵明远",
            datetime(2024, 9, 20, 8, 15),
            "城建",
            (
                "记者昨日从市城建局获悉，滨江路全长六点五公里的自行车专用道已全线贯通，"
                "沿线设置了隔离护栏、夜间照明和十二处自行车停放点。",
                "此前，滨江路非机动车与机动车混行，早晚高峰时段事故隐患较多。"
                "改造后，自行车道宽度统一为二点五米，与机动车道之间用绿化带分隔。",
                "不少骑车上班的市民对此表示欢迎。在滨江一号桥附近上班的小刘说，"
                "以前骑车要和公交车抢道，现在二十分钟就能安全到达单位。",
                "城建局相关负责人介绍，明年还将对江北片区的三条主干道进行类似改造，"
                "逐步形成连通全城的骑行网络。",
            ),
        ),
    ),
)

#: How far the second edition moves every article page's view counter and dates.
MORE_VIEWS = 1_000
LATER = timedelta(days=1, hours=3)


@dataclass(frozen=True)
class _Moved(Placement):
    """A placement as the second edition shows it: more views, a later date."""

    @property
    def views(self) -> int:
        """The first edition's counter, moved on."""
        return super().views + MORE_VIEWS + self.seed % 997

    @property
    def timestamp(self) -> datetime:
        """The first edition's date, moved on."""
        return super().timestamp + LATER


def _moved(page: Placement) -> _Moved:
    """``page`` in the second edition, rewritten if it is one of REWRITTEN."""
    article = page.article
    rest = REWRITTEN.get((page.site.key, article.slug))
    if rest is not None:
        article = replace(article, paragraphs=(article.paragraphs[0], *rest))
    other = REPLACED.get((page.site.key, article.slug))
    if other is not None:
        source = next(p for p in placements() if (p.site.key, p.article.slug) == other)
        article = replace(source.article, paragraphs=source.paragraphs)
    return _Moved(page.site, article, page.origin, page.edits, page.path)


def added() -> tuple[_Moved, ...]:
    """The second edition's new article pages."""
    out = []
    for key, number, article in ADDED:
        site = SITES_BY_KEY[key]
        out.append(_Moved(site, article, site, (), site.article_path(article.slug, number)))
    return tuple(out)


def pages() -> dict[str, tuple[str, str]]:
    """Every page the second edition serves differently: path -> (HTML, charset)."""
    out = {}
    for page in placements():
        moved = _moved(page)
        out[page.path] = (render.article_page(moved), page.site.charset)
        if (page.site.key, page.article.slug) in PRINT_VIEWS:
            out[f"/print/{page.site.key}/{page.article.slug}"] = (
                render.print_page(moved),
                page.site.charset,
            )
    new = added()
    for page in new:
        out[page.path] = (render.article_page(page), page.site.charset)
    links = "".join(f'<li><a href="{p.path}">{p.article.title}</a></li>' for p in new)
    home = render.home_page().replace("</body>", f"<h2>New</h2><ul>{links}</ul></body>")
    out["/"] = (home, "utf-8")
    return out
