"""What every benchmark shares: its command line, side-by-side rounds, and a printed table."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


def arguments(
    doc: str | None,
    *,
    sizes: Sequence[int] | None = None,
    rounds: int | None = None,
    seeds: Sequence[int] | None = None,
) -> argparse.ArgumentParser:
    """A parser described by the first line of ``doc``, with the shared options asked for:
    ``--sizes`` (stored pages, ``1e7`` accepted), ``--rounds`` (side-by-side repeats) and
    ``--seeds`` (data splits or orders)."""
    parser = argparse.ArgumentParser(description=(doc or "").strip().split("\n", 1)[0])
    if sizes is not None:
        parser.add_argument(
            "--sizes", nargs="+", type=_count, default=list(sizes), help="stored pages"
        )
    if rounds is not None:
        parser.add_argument(
            "--rounds", type=int, default=rounds, help="rounds, the sides alternating"
        )
    if seeds is not None:
        parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds))
    return parser


def _count(text: str) -> int:
    """A count written as ``100000``, ``100_000`` or ``1e5``."""
    return int(float(text.replace("_", "")))


def alternating(sides: dict[str, Callable[[], T]], rounds: int) -> dict[str, list[T]]:
    """Each side's results over ``rounds`` rounds, run in turn (the order reversed every
    other round), so that a machine's noise falls on every side alike."""
    results: dict[str, list[T]] = {name: [] for name in sides}
    order = list(sides)
    for turn in range(rounds):
        for name in order if turn % 2 == 0 else reversed(order):
            results[name].append(sides[name]())
    return results


def p50_p99(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """The median and the 99th percentile."""
    array = np.asarray(values, dtype=float)
    return float(np.median(array)), float(np.percentile(array, 99))


@dataclass(frozen=True)
class Column:
    """A table column: its heading, width, the format of its cells (``,.0f``, ``.3f``) and
    whether they are left-aligned (the first column always is)."""

    heading: str
    width: int
    spec: str = ""
    left: bool = False


class Table:
    """Rows printed as they come, in columns of fixed width under one heading line."""

    def __init__(self, *columns: Column) -> None:
        self.columns = columns

    def heading(self) -> None:
        """Print the heading line."""
        self._print([column.heading for column in self.columns])

    def row(self, *cells: Any) -> None:
        """Print one row, each cell in its column's format (a string as it is)."""
        self._print(
            [
                cell if isinstance(cell, str) else format(cell, column.spec)
                for column, cell in zip(self.columns, cells, strict=True)
            ]
        )

    def _print(self, cells: list[str]) -> None:
        line = " ".join(
            f"{cell:{'<' if column.left or i == 0 else '>'}{column.width}}"
            for i, (column, cell) in enumerate(zip(self.columns, cells, strict=True))
        )
        print(line.rstrip(), flush=True)


def markdown(headings: Sequence[str], rows: Iterable[Sequence[Any]] = ()) -> list[str]:
    """The lines of a Markdown table: the headings, the rule under them, one line a row (its
    cells as ``str`` gives them)."""
    return [
        "| " + " | ".join(headings) + " |",
        "|" + "---|" * len(headings),
        *("| " + " | ".join(map(str, row)) + " |" for row in rows),
    ]
