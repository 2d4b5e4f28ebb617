"""The benchmarks' shared harness: options, alternating rounds and tables."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _harness import Column, Table, alternating, arguments, markdown, p50_p99


def test_sides_alternate_their_order_every_round() -> None:
    ran: list[str] = []

    def side(name: str) -> str:
        ran.append(name)
        return name * len(ran)

    results = alternating({"plain": lambda: side("p"), "plugin": lambda: side("q")}, rounds=3)
    assert ran == ["p", "q", "q", "p", "p", "q"]
    assert results == {"plain": ["p", "pppp", "ppppp"], "plugin": ["qq", "qqq", "qqqqqq"]}


def test_sizes_read_as_written_and_the_description_is_the_first_line() -> None:
    parser = arguments("One line.\n\nMore.", sizes=[100_000], rounds=2, seeds=[1])
    args = parser.parse_args(["--sizes", "1e5", "1_000_000", "--seeds", "3", "4"])
    assert (args.sizes, args.rounds, args.seeds) == ([100_000, 1_000_000], 2, [3, 4])
    assert parser.description == "One line."
    assert not hasattr(arguments(None).parse_args([]), "sizes")


def test_a_table_aligns_its_cells_in_their_formats(capsys: pytest.CaptureFixture[str]) -> None:
    table = Table(Column("side", 6), Column("n", 7, ",d"), Column("p50 µs", 7, ".1f"))
    table.heading()
    table.row("main", 10_000, 12.345)
    table.row("this", 5, "–")
    assert capsys.readouterr().out.splitlines() == [
        "side         n  p50 µs",
        "main    10,000    12.3",
        "this         5       –",
    ]
    assert p50_p99(range(101)) == (50.0, 99.0)


def test_a_markdown_table_has_a_rule_under_its_headings() -> None:
    rows = [("embedded", 1_234, "5 KB"), ("Redis", 7, "")]
    assert markdown(["backend", "n", "size"], rows) == [
        "| backend | n | size |",
        "|---|---|---|",
        "| embedded | 1234 | 5 KB |",
        "| Redis | 7 |  |",
    ]
    assert markdown(["only"]) == ["| only |", "|---|"]
