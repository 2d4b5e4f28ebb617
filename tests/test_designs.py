"""Tests of the block-permutation table designs."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from nearDupe.designs import PAPER_DESIGNS, Design

PAPER = {"4-table": (4, {16}), "10-table": (10, {25, 26}), "16-table": (16, {28}),
         "20-table": (20, {31, 32, 33})}  # fmt: skip


@pytest.mark.parametrize("name", list(PAPER))
def test_paper_designs(name: str) -> None:
    design = Design.named(name)
    n_tables, widths = PAPER[name]
    assert design.name == name and design.k == 3
    assert len(design.tables) == n_tables
    assert {t.prefix_bits for t in design.tables} == widths
    assert str(n_tables) in design.describe()
    assert set(PAPER_DESIGNS) == set(PAPER)


def test_default_for() -> None:
    assert Design.default_for(3).name == "4-table"
    for k in (0, 1, 2, 4, 8):
        assert len(Design.default_for(k).tables) == k + 1
        assert Design.default_for(k).k == k


def _designs() -> list[Design]:
    out = [Design.named(n) for n in PAPER]
    out += [Design.blocks(k, n) for k in range(9) for n in (k + 1, k + 2, k + 3)]
    out += [Design.two_level(k, k + 1, k + 2) for k in range(1, 5)]
    out += [Design.named("blocks-5-7"), Design.named("two-level-2-3-4")]
    return out


@pytest.mark.parametrize("design", _designs(), ids=lambda d: d.name)
def test_permute_unpermute_inverse_and_popcount(design: Design) -> None:
    rng = np.random.default_rng(1)
    fps = np.concatenate(
        [rng.integers(0, 2**64, 200, dtype=np.uint64), np.array([0, 2**64 - 1], np.uint64)]
    )
    for t, table in enumerate(design.tables):
        assert sum(w for _, w in table.segments) == 64
        keys = design.permute(t, fps)
        assert np.array_equal(design.unpermute(t, keys), fps)
        assert np.array_equal(np.bitwise_count(keys), np.bitwise_count(fps))
        # Each single bit lands on a single bit: a true permutation.
        singles = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))
        assert len(set(design.permute(t, singles).tolist())) == 64


@pytest.mark.parametrize("design", _designs(), ids=lambda d: d.name)
def test_any_k_flip_shares_a_prefix(design: Design) -> None:
    """The design guarantee: fingerprints within k agree on some table's prefix."""
    rng = np.random.default_rng(2)
    for _ in range(40):
        a = np.uint64(rng.integers(0, 2**64, dtype=np.uint64))
        flips = rng.choice(64, size=design.k, replace=False)
        b = a
        for bit in flips:
            b ^= np.uint64(1) << np.uint64(bit)
        pair = np.array([a, b], dtype=np.uint64)
        assert any(
            len({int(v) >> (64 - t.prefix_bits) for v in design.permute(i, pair)}) == 1
            for i, t in enumerate(design.tables)
        )


@pytest.mark.parametrize("k", range(9))
def test_generic_builders(k: int) -> None:
    n = k + 2
    d = Design.blocks(k, n)
    assert d.k == k and d.name == f"blocks-{k}-{n}"
    assert len(d.tables) == comb(n, k)
    assert Design.named(f"blocks-{k}-{n}") == d
    if k >= 1:
        t = Design.two_level(k, k + 1, k + 1)
        assert len(t.tables) == comb(k + 1, k) ** 2
        assert Design.named(f"two-level-{k}-{k + 1}-{k + 1}") == t


def test_named_blocks_5_7() -> None:
    d = Design.named("blocks-5-7")
    assert d.k == 5 and len(d.tables) == 21
    assert {t.prefix_bits for t in d.tables} == {18, 19}


def test_expected_candidates() -> None:
    assert Design.named("4-table").expected_candidates(2**20) == pytest.approx(4 * 16)


@pytest.mark.parametrize(
    "name", ["5-table", "blocks-3", "blocks-x-4", "blocks-4-4", "two-level-3-4", "two-level-3-3-4",
             "blocks-3-65", ""],
)  # fmt: skip
def test_bad_names_raise(name: str) -> None:
    with pytest.raises(ValueError):
        Design.named(name)


@pytest.mark.parametrize("args", [(3, 3), (-1, 4), (3, 65), (4, 2)])
def test_bad_block_args_raise(args: tuple[int, int]) -> None:
    with pytest.raises(ValueError):
        Design.blocks(*args)
    with pytest.raises(ValueError):
        Design.two_level(args[0], args[1], args[1])


def test_too_many_tables_raise() -> None:
    with pytest.raises(ValueError, match="tables"):
        Design.blocks(30, 64)
    with pytest.raises(ValueError):
        Design.named("two-level-3-64-64")
