"""Block-permutation table designs (Manku, Jain, Das Sarma, WWW 2007) for 64-bit fingerprints."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import combinations
from math import comb

import numpy as np

BITS = 64

#: More tables than this is a typo, not a design (and would take forever to build).
MAX_TABLES = 4096


def _split(positions: list[int], n_blocks: int) -> list[list[int]]:
    """Split bit positions (most significant first) into n nearly equal blocks, larger first."""
    size, extra = divmod(len(positions), n_blocks)
    blocks, start = [], 0
    for i in range(n_blocks):
        width = size + (1 if i < extra else 0)
        blocks.append(positions[start : start + width])
        start += width
    return blocks


def _segments(order: list[int]) -> tuple[tuple[int, int], ...]:
    """Compress a most-significant-first list of source bits into (source_low_bit, width) runs."""
    runs: list[list[int]] = []
    for bit in order:
        if runs and runs[-1][0] - 1 == bit:
            runs[-1][0] = bit
            runs[-1][1] += 1
        else:
            runs.append([bit, 1])
    return tuple((low, width) for low, width in runs)


@dataclass(frozen=True)
class Table:
    """One permutation: source bit runs placed from the top bit down; the top bits are the key."""

    segments: tuple[tuple[int, int], ...]
    prefix_bits: int


@dataclass(frozen=True)
class Design:
    """A set of tables such that any two fingerprints within distance k share a table prefix."""

    name: str
    k: int
    tables: tuple[Table, ...]

    @classmethod
    def blocks(cls, k: int, n_blocks: int, name: str | None = None) -> Design:
        """C(n_blocks, k) tables: every choice of n_blocks - k leading blocks."""
        if not 0 <= k < n_blocks <= BITS:
            raise ValueError(f"need 0 <= k < n_blocks <= 64, got k={k}, n_blocks={n_blocks}")
        _check_table_count(comb(n_blocks, k))
        top_first = list(range(BITS - 1, -1, -1))
        tables = tuple(_tables_for(k, _split(top_first, n_blocks), []))
        return cls(name or f"blocks-{k}-{n_blocks}", k, tables)

    @classmethod
    def two_level(cls, k: int, first: int, second: int, name: str | None = None) -> Design:
        """C(first, k) * C(second, k) tables: leading blocks chosen at two levels."""
        if not 0 <= k < min(first, second) or first > BITS or second > k * (BITS // first):
            raise ValueError(
                "need 0 <= k < first, k < second, first <= 64 and second <= the bits left "
                f"in k first-level blocks, got k={k}, first={first}, second={second}"
            )
        _check_table_count(comb(first, k) * comb(second, k))
        top_first = list(range(BITS - 1, -1, -1))
        tables: list[Table] = []
        blocks = _split(top_first, first)
        for lead in combinations(range(first), first - k):
            lead_bits = [b for i in lead for b in blocks[i]]
            rest = [b for i in range(first) if i not in lead for b in blocks[i]]
            tables.extend(_tables_for(k, _split(rest, second), lead_bits))
        return cls(name or f"two-level-{k}-{first}-{second}", k, tuple(tables))

    @classmethod
    def named(cls, name: str) -> Design:
        """A paper design for k=3 by name, or a generic 'blocks-K-N' / 'two-level-K-A-B'."""
        if name in PAPER_DESIGNS:
            return PAPER_DESIGNS[name]()
        if name.startswith("blocks-"):
            k, n = (int(x) for x in name.split("-")[1:])
            return cls.blocks(k, n)
        if name.startswith("two-level-"):
            k, a, b = (int(x) for x in name.split("-")[2:])
            return cls.two_level(k, a, b)
        raise ValueError(f"unknown index design {name!r}; known: {known_designs()}")

    @classmethod
    def default_for(cls, k: int) -> Design:
        """The design nearDupe uses for k when none is named: the smallest, k + 1 blocks with
        one leading block per table (``4-table`` for k=3); both backends compute distances in
        compiled or numpy code, where candidates are cheap."""
        if k == 3:
            return cls.named("4-table")
        return cls.blocks(k, k + 1)

    def expected_candidates(self, n: int) -> float:
        """Expected fingerprints scanned per query among n random stored ones."""
        return sum(n / 2**t.prefix_bits for t in self.tables)

    @cached_property
    def packed(self) -> np.ndarray:
        """Per table: [segments, prefix_shift, src shifts.., dst shifts.., masks..] (uint64)."""
        n_seg = max(len(t.segments) for t in self.tables)
        packed = np.zeros((len(self.tables), 2 + 3 * n_seg), dtype=np.uint64)
        for t, table in enumerate(self.tables):
            n = len(table.segments)
            packed[t, 0], packed[t, 1] = n, BITS - table.prefix_bits
            top = BITS
            for s, (low, width) in enumerate(table.segments):
                top -= width
                packed[t, 2 + s], packed[t, 2 + n + s] = low, top
                packed[t, 2 + 2 * n + s] = (1 << width) - 1
        return packed

    def moves(self, t: int) -> list[tuple[np.uint64, np.uint64, np.uint64]]:
        """Table t's permutation as (source shift, destination shift, mask) per segment: the
        one reading of :attr:`packed` outside the compiled kernels."""
        p = self.packed[t]
        n = int(p[0])
        return [(p[2 + s], p[2 + n + s], p[2 + 2 * n + s]) for s in range(n)]

    def permute(self, t: int, fps: np.ndarray) -> np.ndarray:
        """Table t's permutation of an array of fingerprints (vectorised)."""
        out = np.zeros_like(fps, dtype=np.uint64)
        for src, dst, mask in self.moves(t):
            out |= ((fps >> src) & mask) << dst
        return out

    def unpermute(self, t: int, keys: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`permute`."""
        out = np.zeros_like(keys, dtype=np.uint64)
        for src, dst, mask in self.moves(t):
            out |= ((keys >> dst) & mask) << src
        return out

    def describe(self) -> str:
        """One line: name, k, number of tables, prefix widths."""
        widths = sorted({t.prefix_bits for t in self.tables})
        return f"{self.name} (k={self.k}, {len(self.tables)} tables, prefix bits {widths})"


def _check_table_count(n: int) -> None:
    if n > MAX_TABLES:
        raise ValueError(f"design would have {n} tables; at most {MAX_TABLES} are supported")


def _tables_for(k: int, blocks: list[list[int]], lead_bits: list[int]) -> list[Table]:
    tables = []
    for lead in combinations(range(len(blocks)), len(blocks) - k):
        order = lead_bits + [b for i in lead for b in blocks[i]]
        prefix = len(order)
        order += [b for i in range(len(blocks)) if i not in lead for b in blocks[i]]
        tables.append(Table(_segments(order), prefix))
    return tables


PAPER_DESIGNS = {
    "4-table": lambda: Design.blocks(3, 4, "4-table"),
    "10-table": lambda: Design.blocks(3, 5, "10-table"),
    "16-table": lambda: Design.two_level(3, 4, 4, "16-table"),
    "20-table": lambda: Design.blocks(3, 6, "20-table"),
}


def known_designs() -> str:
    """The design names NEARDUPE_DESIGN takes, for messages."""
    return ", ".join([*PAPER_DESIGNS, "blocks-K-N", "two-level-K-A-B"])
