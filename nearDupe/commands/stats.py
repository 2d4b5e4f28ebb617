"""``scrapy neardupe stats``: what an index holds, how it is built and how close its pages are."""

from __future__ import annotations

import datetime
from collections import Counter
from typing import Any

from nearDupe.commands._index import IndexView


def decision_counts(decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """Items kept, dropped and skipped (by reason), and the distances of the drops."""
    outcomes = Counter(line.get("decision") for line in decisions)
    reasons = Counter(
        line.get("reason") or "?" for line in decisions if line["decision"] == "skipped"
    )
    distances = Counter(
        line["distance"]
        for line in decisions
        if line.get("decision") == "dropped" and line.get("distance") is not None
    )
    return {
        "items": len(decisions),
        "kept": outcomes.get("kept", 0),
        "dropped": outcomes.get("dropped", 0),
        "skipped": outcomes.get("skipped", 0),
        "skipped_by_reason": dict(sorted(reasons.items())),
        "drop_distances": {str(d): n for d, n in sorted(distances.items())},
    }


def nearest_histogram(view: IndexView, radius: int) -> dict[str, int]:
    """Distance of each stored page's nearest other stored page (``none`` beyond radius)."""
    found = Counter(view.nearest_other(radius))
    histogram = {str(d): found.get(d, 0) for d in range(radius + 1)}
    histogram[f">{radius}"] = found.get(None, 0)
    return histogram


def index_stats(
    view: IndexView, radius: int, decisions: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Everything ``stats`` prints, as one JSON-able dict."""
    stats: dict[str, Any] = {
        "index": view.source,
        "pages": len(view),
        "design": view.design.describe(),
        "header": view.header.to_dict(),
        "format": view.format,
        "memory_bytes": view.index.nbytes,
        "disk_bytes": view.reader.disk_bytes(),
        "first_added": _when(min(view.added)) if view.added else None,
        "last_added": _when(max(view.added)) if view.added else None,
        "nearest_radius": radius,
        "nearest_distance": nearest_histogram(view, radius),
        "mirrors": dict(sorted(view.reader.mirrors().items())),
    }
    if decisions is not None:
        stats["report"] = decision_counts(decisions)
    return stats


def format_stats(stats: dict[str, Any]) -> str:
    """The text ``stats`` prints."""
    header = stats["header"]
    features = ", ".join(f"{k}={v}" for k, v in header["features"].items())
    lines = [
        f"index         {stats['index']}",
        f"pages         {stats['pages']:,}",
        f"design        {stats['design']}",
        f"k             {header['k']} (pages within {header['k']} bits are near-duplicates)",
        f"features      {features}",
        f"algorithm     v{header['algorithm']}, {header['bits']}-bit, format {stats['format']}",
        f"memory        {human_bytes(stats['memory_bytes'])} of tables",
        "disk          "
        + (
            "none: the index lives in Redis's memory"
            if stats["disk_bytes"] is None
            else human_bytes(stats["disk_bytes"])
        ),
    ]
    if stats["first_added"]:
        lines.append(f"added         {stats['first_added']} .. {stats['last_added']}")
    mirrors = stats.get("mirrors") or {}
    lines.append(
        "mirrors       "
        + (", ".join(f"{host} (of {of})" for host, of in mirrors.items()) or "none")
    )
    lines += ["", f"nearest other stored page (within {stats['nearest_radius']} bits):"]
    lines += histogram_lines(stats["nearest_distance"], "pages")
    report = stats.get("report")
    if report:
        skipped = ", ".join(f"{r} {n}" for r, n in report["skipped_by_reason"].items())
        lines += [
            "",
            f"report: {report['items']} items, {report['kept']} kept, {report['dropped']} dropped,"
            f" {report['skipped']} skipped" + (f" ({skipped})" if skipped else ""),
            "distance of each drop to its original:",
            *histogram_lines(report["drop_distances"], "drops"),
        ]
    return "\n".join(lines)


def histogram_lines(histogram: dict[str, int], unit: str, width: int = 40) -> list[str]:
    """A text histogram: one line per bucket with a bar scaled to the largest count."""
    if not histogram:
        return [f"  (no {unit})"]
    top = max(histogram.values()) or 1
    label_width = max(len(label) for label in histogram)
    count_width = len(f"{top:,}")
    return [
        f"  {label:>{label_width}}  {n:>{count_width},}  {'#' * round(width * n / top)}".rstrip()
        for label, n in histogram.items()
    ]


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _when(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp).isoformat(sep=" ", timespec="seconds")
