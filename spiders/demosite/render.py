"""HTML templates of the demo sites: each site wraps articles in its own boilerplate."""

from __future__ import annotations

import zlib
from html import escape

from .content import PRINT_VIEWS, SITES, Placement, Site, site_placements

LABELS = {
    "en": {
        "views": "{n:,} views",
        "related": "Related stories",
        "comments": "Comments ({n})",
        "sponsored": "Sponsored",
        "origin": "Originally published by {site}.",
        "by": "By {author}",
        "latest": "Latest stories",
        "print": "Print this article",
        "home": "Home",
        "updated": "Updated",
    },
    "zh": {
        "views": "阅读 {n}",
        "related": "相关阅读",
        "comments": "网友评论（{n}）",
        "sponsored": "推广",
        "origin": "本文转载自{site}。",
        "by": "记者 {author}",
        "latest": "最新新闻",
        "print": "打印本文",
        "home": "首页",
        "updated": "更新于",
    },
}

NAV = {
    "en": (
        "Local", "Politics", "Business", "Sports", "Weather", "Transport", "Education", "Arts",
        "Community", "Opinion", "Obituaries", "Classifieds", "Events", "Podcasts", "Newsletters",
        "Puzzles", "Subscribe", "Log in",
    ),
    "zh": (
        "要闻", "本地", "社会", "财经", "体育", "文化", "教育", "天气", "交通", "生活", "评论",
        "图片", "视频", "专题", "房产", "汽车", "订阅", "登录",
    ),
}  # fmt: skip

FOOTER_LINKS = {
    "en": ("About us", "Privacy policy", "Terms of use", "Advertise", "Careers", "Corrections"),
    "zh": ("关于我们", "隐私政策", "用户协议", "广告服务", "招聘信息", "违法和不良信息举报"),
}

ADS = {
    "en": (
        "Harbor Mattress Outlet: the spring sale is on, every bed 40 percent off this weekend.",
        "Learn to sail this summer. Beginner classes at the Gull Island yacht club start June 3.",
        "Is your roof ready for storm season? Free inspections from Ridgeway Roofing.",
        "Refinance with Millbrook Savings and lower your monthly payment. Ask us how.",
        "Fresh bagels every morning at Canal Road Bakery. Show this ad for a free coffee.",
        "Hearing aids that fit in your ear, not your budget. Book a test at Clearsound.",
    ),
    "zh": (
        "江景学区房火热认购中，首付低至两成，欢迎到售楼处参观。",
        "暑期游泳培训班招生，专业教练小班教学，报名即送泳镜。",
        "老字号茶楼推出早茶套餐，两人同行一人半价。",
        "家电以旧换新，最高补贴一千元，活动仅限本周末。",
        "驾校暑期特惠，学车包过，学生凭证件立减三百元。",
        "体检套餐限时优惠，全身检查只需三百九十九元。",
    ),
}

COMMENTS = {
    "en": (
        ("riverrat61", "About time. I have been waiting for this for years."),
        ("J. Moreno", "Does anyone know if this affects the east side too?"),
        ("quietneighbor", "Great reporting, thank you for covering this."),
        ("BudgetHawk", "Follow the money. Who is paying for all of it?"),
        ("mapleleaf22", "My kids will be thrilled when they hear about this."),
        ("Ed from Canal Rd", "I remember when this happened back in the nineties too."),
        ("sunnyside_sue", "Shared this with my book club, we talked about it all evening."),
        ("T. Wallace", "The photo in the print edition was much better."),
    ),
    "zh": (
        ("江边散步的人", "终于等到了，点赞！"),
        ("老城区居民", "希望后续能落实到位，不要只是说说。"),
        ("小周同学", "转给家里人看看，很实用的消息。"),
        ("晨跑爱好者", "这个消息太好了，周末去看看。"),
        ("热心市民王先生", "报道很及时，辛苦记者了。"),
        ("临江老李", "以前也有过类似的情况，大家注意安全。"),
        ("阿花", "什么时候我们小区附近也能这样就好了。"),
        ("路过看看", "支持一下，希望越办越好。"),
    ),
}

TAGLINES = {
    "ledger": "Millbrook's newspaper since 1887",
    "wire": "Fast news for a busy city",
    "courier": "Serving the valley every morning",
    "hepan": "立足本地 服务市民",
}


def _pick(pool: tuple, seed: int, count: int) -> list:
    """A deterministic rotation of ``count`` entries of ``pool`` chosen by ``seed``."""
    return [pool[(seed + i * 3) % len(pool)] for i in range(count)]


def _nav(site: Site, css: str) -> str:
    """The header navigation: many links to the site's (off-network) section pages."""
    links = "".join(
        f'<li><a href="https://www.{site.domain}/section/{i}">{escape(name)}</a></li>'
        for i, name in enumerate(NAV[site.lang], start=1)
    )
    home = LABELS[site.lang]["home"]
    return f'<ul class="{css}"><li><a href="{site.prefix}">{home}</a></li>{links}</ul>'


def _ads(site: Site, seed: int) -> str:
    """A sidebar of sponsored blocks."""
    label = LABELS[site.lang]["sponsored"]
    blocks = "".join(
        f'<div class="sponsored"><span class="label">{label}</span>'
        f'<a href="https://ads.example/click?id={seed % 997}-{i}">{escape(text)}</a></div>'
        for i, text in enumerate(_pick(ADS[site.lang], seed, 3))
    )
    return f'<div class="ads">{blocks}</div>'


def _comments(site: Site, seed: int) -> str:
    """A reader comments block whose size and content vary per page."""
    chosen = _pick(COMMENTS[site.lang], seed, 2 + seed % 3)
    items = "".join(
        f'<li><b class="who">{escape(who)}</b> <span class="what">{escape(what)}</span></li>'
        for who, what in chosen
    )
    title = LABELS[site.lang]["comments"].format(n=len(chosen))
    return f'<section class="comments"><h3>{title}</h3><ol>{items}</ol></section>'


def _related(page: Placement) -> str:
    """Links to other stories on the same site."""
    others = [p for p in site_placements(page.site) if p is not page]
    chosen = others[page.seed % len(others) :] + others[: page.seed % len(others)]
    items = "".join(
        f'<li><a href="{p.path}">{escape(p.article.title)}</a></li>' for p in chosen[:4]
    )
    heading = LABELS[page.site.lang]["related"]
    return f'<section class="related"><h3>{heading}</h3><ul>{items}</ul></section>'


def _footer(site: Site) -> str:
    """Copyright line and corporate links."""
    links = "".join(
        f'<a href="https://www.{site.domain}/about/{i}">{escape(name)}</a> '
        for i, name in enumerate(FOOTER_LINKS[site.lang], start=1)
    )
    contact = f'<a href="/contact">{"Contact" if site.lang == "en" else "联系我们"}</a>'
    rights = (
        f"Copyright 2024 {escape(site.name)}. All rights reserved."
        if site.lang == "en"
        else f"版权所有 {escape(site.name)} 未经授权禁止转载"
    )
    return f'<p class="links">{links}{contact}</p><p class="copyright">{rights}</p>'


def _paragraphs(page: Placement, dateline: str = "") -> str:
    """The article body as HTML paragraphs, with an optional dateline on the first one."""
    paras = list(page.paragraphs)
    paras[0] = dateline + paras[0]
    return "".join(f"<p>{escape(p)}</p>" for p in paras)


def _source(page: Placement, css: str) -> str:
    """The syndication source line, or nothing on the original."""
    if not page.is_copy:
        return ""
    text = LABELS[page.site.lang]["origin"].format(site=escape(page.origin.name))
    return f'<p class="{css}">{text}</p>'


def _document(site: Site, title: str, head_extra: str, body: str, body_class: str) -> str:
    """A complete HTML document for one of the network's sites."""
    return (
        f'<!DOCTYPE html>\n<html lang="{site.lang}"><head>'
        f'<meta http-equiv="Content-Type" content="text/html; charset={site.charset}">'
        f"<title>{escape(title)}</title>"
        f'<meta property="og:site_name" content="{escape(site.name)}">{head_extra}'
        f'<link rel="stylesheet" href="https://static.{site.domain}/css/site.css">'
        f"<script>window.analytics = window.analytics || [];</script>"
        f'</head><body class="{body_class}">{body}</body></html>\n'
    )


def _ledger(site: Site, title: str, main: str, seed: int) -> str:
    """The Daily Ledger: masthead, nav bar, main column with a right rail."""
    body = (
        f'<div id="masthead"><a href="{site.prefix}"><img src="/static/logo.png" alt=""></a>'
        f'<span class="name">{escape(site.name)}</span>'
        f'<p class="tagline">{TAGLINES["ledger"]}</p></div>'
        f'{_nav(site, "nav")}<div id="wrap"><div id="main">{main}</div>'
        f'<div id="rail">{_ads(site, seed)}</div></div>'
        f'<div id="footer">{_footer(site)}</div>'
    )
    return _document(site, f"{title} | {site.name}", "", body, "ledger")


def _wire(site: Site, title: str, main: str, seed: int) -> str:
    """Metro Wire (English and Chinese editions): top header, main, promo aside, footer."""
    ticker = "DOW +0.4% · OIL -1.2% · 10Y 4.1%" if site.lang == "en" else "沪指 +0.4% · 油价 -1.2%"
    body = (
        f'<header class="wire-top"><a class="brand" href="{site.prefix}">'
        f"{escape(site.name.upper())}</a><nav>{_nav(site, 'sections')}</nav>"
        f'<div class="ticker">{ticker}</div></header>'
        f'<main class="wire-main">{main}</main><aside class="promo">{_ads(site, seed)}</aside>'
        f'<footer class="wire-foot"><p>{TAGLINES["wire"]}</p>{_footer(site)}</footer>'
    )
    return _document(site, f"{site.name} - {title}", "", body, f"wire wire-{site.lang}")


def _courier(site: Site, title: str, main: str, seed: int) -> str:
    """Valley Courier: old-fashioned layout with the ads column on the left."""
    body = (
        f'<table id="layout"><tr><td colspan="2" id="top"><h2><a href="{site.prefix}">'
        f"{escape(site.name)}</a></h2><small>{TAGLINES['courier']}</small>"
        f"{_nav(site, 'menu')}</td></tr>"
        f'<tr><td id="left">{_ads(site, seed)}</td><td id="content">{main}</td></tr>'
        f'<tr><td colspan="2" id="bottom">{_footer(site)}</td></tr></table>'
    )
    return _document(site, f"{title} :: {site.name}", "", body, "courier")


def _hepan(site: Site, title: str, main: str, seed: int) -> str:
    """河畔日报: Chinese portal layout with a top bar, channel nav and breadcrumb."""
    body = (
        '<div class="top-bar"><a href="https://passport.hepan-daily.example/login">登录</a> '
        '<a href="https://passport.hepan-daily.example/register">注册</a> '
        '<a href="https://m.hepan-daily.example/">手机版</a></div>'
        f'<div class="logo"><a href="{site.prefix}">{escape(site.name)}</a>'
        f"<span>{TAGLINES['hepan']}</span></div>{_nav(site, 'channel-nav')}"
        f'<div class="crumb"><a href="/">首页</a> &gt; <a href="{site.prefix}">本地</a>'
        " &gt; 正文</div>"
        f'<div class="container"><div class="left">{main}</div>'
        f'<div class="right">{_ads(site, seed)}</div></div>'
        f'<div class="footer">{_footer(site)}<p>备案号：临ICP备00000000号</p></div>'
    )
    keywords = '<meta name="keywords" content="临江,新闻">'
    return _document(site, f"{title}_{site.name}", keywords, body, "hepan")


SHELLS = {"ledger": _ledger, "wire": _wire, "courier": _courier, "hepan": _hepan}


def _article_main(page: Placement) -> str:
    """The main column of an article page, in the site's own markup."""
    site, article = page.site, page.article
    labels = LABELS[site.lang]
    stamp = page.timestamp
    views = labels["views"].format(n=page.views)
    byline = labels["by"].format(author=escape(article.author))
    title = escape(article.title)
    if site.template == "ledger":
        tools = ""
        if (site.key, article.slug) in PRINT_VIEWS:
            link = f'<a href="/print/{site.key}/{article.slug}">{labels["print"]}</a>'
            tools = f'<p class="tools">{link}</p>'
        main = (
            f'<article class="story"><h1>{title}</h1><p class="byline">{byline} | '
            f'<time datetime="{stamp.isoformat()}">{stamp:%B %d, %Y %I:%M %p}</time> | '
            f"{views}</p>{_source(page, 'source')}"
            f'<div class="story-body">{_paragraphs(page)}</div></article>{tools}'
        )
    elif site.template == "wire":
        dateline = "MILLBROOK (Metro Wire) - " if site.lang == "en" else "【Metro Wire 中文讯】"
        main = (
            f'<article><div class="kicker">{escape(article.section)}</div><h1>{title}</h1>'
            f'<div class="meta"><span class="author">{byline}</span> '
            f'<span class="stamp">{labels["updated"]} {stamp:%Y-%m-%d %H:%M} UTC</span> '
            f'<span class="counter">{views}</span></div>'
            f'<div class="text">{_paragraphs(page, dateline)}</div>'
            f"{_source(page, 'credit')}</article>"
        )
    elif site.template == "courier":
        main = (
            f'<div class="headline"><h1>{title}</h1></div><article class="entry">'
            f'<div class="posted">Posted {stamp:%A, %B %d, %Y at %H:%M} by '
            f"{escape(article.author)} - Read {page.views:,} times</div>"
            f"{_paragraphs(page)}{_source(page, 'origin-note')}</article>"
        )
    else:
        source = page.origin.name
        main = (
            f'<article><h1 class="title">{title}</h1><div class="info">来源：{escape(source)}'
            f"　作者：{escape(article.author)}　时间：{stamp:%Y-%m-%d %H:%M}　"
            f'{views}</div><div class="content">{_paragraphs(page)}</div>'
            f'<p class="editor">责任编辑：{"王磊" if page.seed % 2 else "陈静"}</p></article>'
        )
    return main + _related(page) + _comments(site, page.seed)


def article_page(page: Placement) -> str:
    """A full article page."""
    shell = SHELLS[page.site.template]
    return shell(page.site, page.article.title, _article_main(page), page.seed)


def index_page(site: Site) -> str:
    """A site's front page listing its stories."""
    labels = LABELS[site.lang]
    items = "".join(
        f'<li><a href="{p.path}">{escape(p.article.title)}</a> '
        f"<small>{p.timestamp:%Y-%m-%d}</small></li>"
        for p in site_placements(site)
    )
    main = f'<div class="front"><h2>{labels["latest"]}</h2><ul class="stories">{items}</ul></div>'
    return SHELLS[site.template](site, labels["latest"], main, zlib.crc32(site.key.encode()))


def print_page(page: Placement) -> str:
    """A minimal printer-friendly view of an article."""
    article, site = page.article, page.site
    body = (
        f"<article><h1>{escape(article.title)}</h1>"
        f"<p>{escape(article.author)}, {escape(site.name)}, {page.timestamp:%d %B %Y}</p>"
        f"{_paragraphs(page)}</article><p><small>Printed from {page.path}</small></p>"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="{site.lang}"><head><meta charset="{site.charset}">'
        f"<title>{escape(article.title)} (print)</title>"
        f'<meta property="og:site_name" content="{escape(site.name)}"></head>'
        f'<body onload="window.print()">{body}</body></html>\n'
    )


def home_page() -> str:
    """The network's home page linking to every site and the non-HTML resources."""
    sites = "".join(f'<li><a href="{s.prefix}">{escape(s.name)}</a></li>' for s in SITES)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>Demo News Network</title></head><body>"
        '<h1>Demo News Network</h1><p><img src="/static/logo.png" alt="logo"></p>'
        "<p>An offline set of small news sites that syndicate each other's stories.</p>"
        f"<ul>{sites}</ul>"
        '<p><a href="/static/logo.png">Logo (PNG)</a> | '
        '<a href="/static/press-kit.pdf">Press kit (PDF)</a> | '
        '<a href="/api/articles.json">Article feed (JSON)</a> | '
        '<a href="/contact">Contact</a></p></body></html>\n'
    )


CONTACT_PAGE = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Contact</title></head>'
    "<body><p>Write to desk@newsroom.example.</p></body></html>\n"
)
