"""Small inline-SVG charts (no plotting dependency): labelled bar charts for the HTML report."""

from __future__ import annotations

import math
from html import escape

_FONT = "font-family='system-ui, -apple-system, Segoe UI, Roboto, sans-serif'"


def _ticks(top: int) -> list[int]:
    """About five round tick values from 0 to at least ``top``."""
    if top <= 0:
        return [0, 1]
    raw = top / 5
    magnitude = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = max(1, next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw))
    return list(range(0, top + step, step))


def bar_chart(
    bars: list[tuple[str, int]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    color: str = "#3b6fd8",
    highlight: dict[str, str] | None = None,
    width: int = 520,
    height: int = 280,
) -> str:
    """A vertical bar chart with axes, ticks, axis labels and the count above each bar."""
    highlight = highlight or {}
    left, right, top, bottom = 56, 16, 40, 56
    plot_w, plot_h = width - left - right, height - top - bottom
    ticks = _ticks(max((v for _, v in bars), default=0))
    y_max = ticks[-1] or 1
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}' "
        f"width='{width}' height='{height}' role='img' aria-label='{escape(title)}' {_FONT}>",
        f"<text x='{width / 2}' y='22' text-anchor='middle' font-size='15' font-weight='600' "
        f"fill='#1d2433'>{escape(title)}</text>",
    ]
    for tick in ticks:
        y = top + plot_h - plot_h * tick / y_max
        parts.append(
            f"<line x1='{left}' x2='{left + plot_w}' y1='{y:.1f}' y2='{y:.1f}' "
            f"stroke='#e3e7ef'/><text x='{left - 8}' y='{y + 4:.1f}' text-anchor='end' "
            f"font-size='11' fill='#5b6475'>{tick:,}</text>"
        )
    slot = plot_w / max(len(bars), 1)
    bar_w = min(56.0, slot * 0.7)
    for i, (label, value) in enumerate(bars):
        x = left + slot * i + (slot - bar_w) / 2
        h = plot_h * value / y_max
        y = top + plot_h - h
        fill = highlight.get(label, color)
        parts.append(
            f"<rect x='{x:.1f}' y='{y:.1f}' width='{bar_w:.1f}' height='{h:.1f}' rx='3' "
            f"fill='{fill}'><title>{escape(label)}: {value:,}</title></rect>"
            f"<text x='{x + bar_w / 2:.1f}' y='{top + plot_h + 16}' text-anchor='middle' "
            f"font-size='12' fill='#1d2433'>{escape(label)}</text>"
        )
        if value:
            parts.append(
                f"<text x='{x + bar_w / 2:.1f}' y='{y - 5:.1f}' text-anchor='middle' "
                f"font-size='11' font-weight='600' fill='#1d2433'>{value:,}</text>"
            )
    parts += [
        f"<line x1='{left}' x2='{left + plot_w}' y1='{top + plot_h}' y2='{top + plot_h}' "
        "stroke='#8a93a5'/>",
        f"<line x1='{left}' x2='{left}' y1='{top}' y2='{top + plot_h}' stroke='#8a93a5'/>",
        f"<text x='{left + plot_w / 2}' y='{height - 12}' text-anchor='middle' font-size='12' "
        f"fill='#5b6475'>{escape(x_label)}</text>",
        f"<text transform='translate(16 {top + plot_h / 2}) rotate(-90)' text-anchor='middle' "
        f"font-size='12' fill='#5b6475'>{escape(y_label)}</text>",
        "</svg>",
    ]
    return "".join(parts)


def stacked_bar(
    segments: list[tuple[str, int, str]], *, title: str, width: int = 1040, height: int = 92
) -> str:
    """One horizontal bar split into labelled, coloured shares (label, count, color)."""
    total = sum(n for _, n, _ in segments) or 1
    left, bar_y, bar_h = 8, 34, 26
    plot_w = width - 2 * left
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}' "
        f"width='100%' role='img' aria-label='{escape(title)}' {_FONT}>",
        f"<text x='{left}' y='20' font-size='15' font-weight='600' fill='#1d2433'>"
        f"{escape(title)}</text>",
    ]
    x = float(left)
    legend_x = float(left)
    for label, n, color in segments:
        w = plot_w * n / total
        if w:
            parts.append(
                f"<rect x='{x:.1f}' y='{bar_y}' width='{w:.1f}' height='{bar_h}' fill='{color}'>"
                f"<title>{escape(label)}: {n:,}</title></rect>"
            )
            if w > 46:
                parts.append(
                    f"<text x='{x + w / 2:.1f}' y='{bar_y + 17}' text-anchor='middle' "
                    f"font-size='12' font-weight='600' fill='#fff'>{n / total:.0%}</text>"
                )
        x += w
        text = f"{label} {n:,}"
        parts.append(
            f"<rect x='{legend_x:.1f}' y='{bar_y + bar_h + 12}' width='12' height='12' rx='2' "
            f"fill='{color}'/><text x='{legend_x + 17:.1f}' y='{bar_y + bar_h + 22}' "
            f"font-size='12' fill='#1d2433'>{escape(text)}</text>"
        )
        legend_x += 30 + 7.2 * len(text)
    parts.append("</svg>")
    return "".join(parts)
