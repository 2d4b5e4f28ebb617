"""``scrapy neardupe report``: a self-contained HTML page about an index and its decisions."""

from __future__ import annotations

import datetime
from html import escape
from typing import Any

import numpy as np

from nearDupe.commands._index import IndexView
from nearDupe.commands.clusters import Cluster, find_clusters, pages_of, size_histogram
from nearDupe.commands.stats import decision_counts, human_bytes, nearest_histogram
from nearDupe.commands.svg import bar_chart, stacked_bar
from nearDupe.simhash import hamming, to_hex

#: How far above k the closest kept pairs are looked for.
ABOVE_K = 3
_KEPT, _DROPPED = "#2f9e6a", "#d9534f"
_SKIP_COLORS = ("#9aa3b5", "#b9a06b", "#7f8fb0", "#c3b8d8", "#a7c4c2")
_NEAR = "#e8a33d"

_CSS = """
body{margin:0;background:#f4f6fa;color:#1d2433;font:14px/1.45 system-ui,-apple-system,'Segoe UI',
Roboto,sans-serif}
main{max-width:1100px;margin:0 auto;padding:28px 28px 60px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:18px;margin:34px 0 10px}
.sub{color:#5b6475;margin:0 0 20px}.sub code{background:#e8ecf3;padding:1px 5px;border-radius:4px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(128px,1fr));gap:12px}
.card{background:#fff;border-radius:10px;padding:14px 16px;box-shadow:0 1px 3px #0001}
.card b{display:block;font-size:26px;line-height:1.2}.card span{color:#5b6475;font-size:13px}
.panel{background:#fff;border-radius:10px;padding:16px;box-shadow:0 1px 3px #0001;margin-top:12px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:12px}
.charts .panel{margin:0;text-align:center}.note{color:#5b6475;font-size:13px;margin:6px 0 0}
table{width:100%;border-collapse:collapse;background:#fff}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid #e8ecf3;vertical-align:top}
th{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:#5b6475}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap;width:1%}
a{color:#2454b5;text-decoration:none;word-break:break-all}a:hover{text-decoration:underline}
.tag{display:inline-block;font-size:11px;font-weight:600;border-radius:4px;padding:0 6px;
margin-right:6px;color:#fff}.kept{background:#2f9e6a}.dropped{background:#d9534f}
.fp{font-family:ui-monospace,Menlo,monospace;color:#5b6475;font-size:12px;margin-left:6px}
ul.pages{margin:0;padding:0;list-style:none}ul.pages li{margin:2px 0}
"""


def close_kept_pairs(view: IndexView, k: int, above: int = ABOVE_K) -> list[tuple[int, str, str]]:
    """(distance, url, url) of stored pages up to k+above bits apart: look here when tuning
    k (pairs within k were kept because their signatures differ)."""
    if len(view) < 2:
        return []
    unique = np.unique(view.fps)
    keys = view.keys_by_fp()
    pairs = set()
    for fp, near in zip(unique.tolist(), view.among_stored(k + above), strict=True):
        for other, d in near:
            if fp < other:
                pairs.add((d, keys[fp][0], keys[other][0]))
    return sorted(pairs)


def build_report(
    view: IndexView,
    decisions: list[dict[str, Any]] | None,
    *,
    k: int,
    top: int = 20,
    source: str | None = None,
) -> str:
    """The whole HTML page."""
    clusters = find_clusters(pages_of(view, decisions), k, confirm_k=view.header.confirm_k)
    pairs = close_kept_pairs(view, k)
    counts = decision_counts(decisions) if decisions is not None else None
    generated = datetime.datetime.now().isoformat(sep=" ", timespec="seconds")
    body = [
        "<h1>nearDupe report</h1>",
        f"<p class='sub'>Index <code>{escape(view.source)}</code> · design "
        f"{escape(view.design.describe())} · k = {k}"
        + (f" · decisions <code>{escape(source)}</code>" if source else "")
        + f" · generated {generated}</p>",
        _cards(view, counts, clusters),
    ]
    if counts is not None:
        body.append(_decisions(counts))
    body.append(_charts(view, counts, clusters, k))
    body.append(_clusters(clusters, top, decisions is not None))
    body.append(_pairs(pairs, k))
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>nearDupe report: {escape(view.source)}</title><style>{_CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )


def _cards(view: IndexView, counts: dict[str, Any] | None, clusters: list[Cluster]) -> str:
    cards = [
        (f"{len(view):,}", "pages in the index"),
        (human_bytes(view.index.nbytes), "tables in memory"),
    ]
    if counts is not None:
        cards += [
            (f"{counts['items']:,}", "items decided"),
            (f"{counts['kept']:,}", "kept"),
            (f"{counts['dropped']:,}", "dropped"),
            (f"{counts['skipped']:,}", "skipped"),
        ]
    cards.append((f"{len(clusters):,}", "clusters (2+ pages)"))
    inner = "".join(
        f"<div class='card'><b>{v}</b><span>{escape(t)}</span></div>" for v, t in cards
    )
    return f"<div class='cards'>{inner}</div>"


def _decisions(counts: dict[str, Any]) -> str:
    segments = [("kept", counts["kept"], _KEPT), ("dropped", counts["dropped"], _DROPPED)]
    for i, (reason, n) in enumerate(counts["skipped_by_reason"].items()):
        segments.append((f"skipped: {reason}", n, _SKIP_COLORS[i % len(_SKIP_COLORS)]))
    chart = stacked_bar(segments, title=f"What happened to the {counts['items']:,} items")
    return f"<h2>Decisions</h2><div class='panel'>{chart}</div>"


def _charts(
    view: IndexView, counts: dict[str, Any] | None, clusters: list[Cluster], k: int
) -> str:
    panels = []
    if counts is not None:
        drops = [(str(d), int(counts["drop_distances"].get(str(d), 0))) for d in range(k + 1)]
        panels.append(
            bar_chart(
                drops,
                title="Distance of each drop to its original",
                x_label="Hamming distance (bits)",
                y_label="dropped items",
                color=_DROPPED,
            )
        )
    radius = k + ABOVE_K
    nearest = nearest_histogram(view, radius)
    panels.append(
        bar_chart(
            list(nearest.items()),
            title="Nearest other kept page",
            x_label=f"Hamming distance (bits); red: within k={k}, amber: just above k",
            y_label="kept pages",
            color="#9aa3b5",
            highlight={
                **{str(d): _DROPPED for d in range(k + 1)},
                **{str(d): _NEAR for d in range(k + 1, radius + 1)},
            },
        )
    )
    if clusters:
        sizes = [(str(s), n) for s, n in size_histogram(clusters).items()]
        panels.append(
            bar_chart(
                sizes,
                title="Cluster sizes",
                x_label="pages per cluster",
                y_label="clusters",
                color="#6c5fc7",
            )
        )
    inner = "".join(f"<div class='panel'>{p}</div>" for p in panels)
    return f"<h2>Distances</h2><div class='charts'>{inner}</div>"


def _link(url: str) -> str:
    if not url.lower().startswith(("http://", "https://")):
        return escape(url)  # a javascript: or data: URL from a feed is text, never a link
    href = escape(url, quote=True)
    return f"<a href='{href}' target='_blank' rel='noopener'>{escape(url)}</a>"


def _clusters(clusters: list[Cluster], top: int, with_report: bool) -> str:
    title = f"<h2>Biggest clusters ({min(top, len(clusters))} of {len(clusters):,})</h2>"
    if not clusters:
        hint = "" if with_report else " Pass a decisions report (--report) to include drops."
        return f"{title}<div class='panel'>No two pages within k of each other.{hint}</div>"
    rows = []
    for rank, cluster in enumerate(clusters[:top], 1):
        first = cluster.pages[0].fingerprint
        items = "".join(
            f"<li><span class='tag {'kept' if p.stored else 'dropped'}'>"
            f"{'kept' if p.stored else 'dropped'}</span>{_link(p.url)}"
            f"<span class='fp'>{to_hex(p.fingerprint)}"
            + (f" · d={hamming(p.fingerprint, first)}" if i else "")
            + "</span></li>"
            for i, p in enumerate(cluster.pages)
        )
        rows.append(
            f"<tr><td class='n'>{rank}</td><td class='n'>{cluster.size}</td>"
            f"<td class='n'>{cluster.max_distance}</td>"
            f"<td><ul class='pages'>{items}</ul></td></tr>"
        )
    return (
        f"{title}<table><tr><th>#</th><th>pages</th><th>max&nbsp;d</th><th>pages (d: bits from "
        f"the first)</th></tr>{''.join(rows)}</table>"
    )


def _pairs(pairs: list[tuple[int, str, str]], k: int, limit: int = 50) -> str:
    title = (
        f"<h2>Closest kept pairs ({len(pairs):,} pairs up to {k + ABOVE_K} bits apart)</h2>"
        "<p class='note'>Both pages were kept. Pairs within k were told apart by their word-pair "
        "signatures (NEARDUPE_CONFIRM_K). If pairs just above k look like duplicates, raise "
        "NEARDUPE_K; if the drops above are different pages, lower it.</p>"
    )
    if not pairs:
        return f"{title}<div class='panel'>No kept pages this close.</div>"
    rows = "".join(
        f"<tr><td class='n'>{d}</td><td>{_link(a)}</td><td>{_link(b)}</td></tr>"
        for d, a, b in pairs[:limit]
    )
    more = f"<p class='note'>… and {len(pairs) - limit:,} more.</p>" if len(pairs) > limit else ""
    return f"{title}<table><tr><th>d</th><th>page</th><th>page</th></tr>{rows}</table>{more}"
