"""A page's sentence units as the stores read them: the (hash, letters) pairs, sorted once, with
their hashes and letters as numpy arrays beside them."""

from __future__ import annotations

from collections.abc import Container
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from nearDupe.shorttext import Sentences


class Units(tuple[tuple[int, int], ...]):
    """A page's sentence units (shorttext.Sentences) sorted as ``sorted`` sorts the pairs,
    with ``hashes`` (uint64) and ``letters`` (int64) in that order: the stores' rules
    (store/base.py) slice and sum the arrays instead of sorting the pairs on every check. The
    analysis makes them in its worker; they pickle with their arrays."""

    hashes: np.ndarray
    letters: np.ndarray

    @classmethod
    def of(cls, page: Sentences) -> Units:
        """``page`` as Units (itself if it is): sorted if it is not."""
        if isinstance(page, Units):
            return page
        flat = np.fromiter(chain.from_iterable(page), dtype=np.uint64, count=2 * len(page))
        hashes, letters = flat[0::2], flat[1::2].astype(np.int64)
        if hashes.size > 1 and not bool(np.all(hashes[:-1] < hashes[1:])):
            order = np.lexsort((letters, hashes))
            hashes, letters = hashes[order], letters[order]
            page = tuple(sorted(page))
        return cls._made(page, np.ascontiguousarray(hashes), letters)

    @classmethod
    def _made(cls, pairs: Sentences, hashes: np.ndarray, letters: np.ndarray) -> Units:
        units = tuple.__new__(cls, pairs)
        units.hashes, units.letters = hashes, letters
        return units

    def head(self, count: int) -> Units:
        """The ``count`` first units (those of the smallest hashes)."""
        if len(self) <= count:
            return self
        return Units._made(self[:count], self.hashes[:count], self.letters[:count])

    def without(self, hashes: Container[int]) -> Units:
        """These units but those whose hash is one of ``hashes``."""
        if not hashes:
            return self
        keep = [h not in hashes for h in self.hashes.tolist()]
        if all(keep):
            return self
        mask = np.array(keep, dtype=bool)
        pairs = tuple(pair for pair, kept in zip(self, keep, strict=True) if kept)
        return Units._made(pairs, self.hashes[mask], self.letters[mask])

    def total(self) -> int:
        """The sum of the units' letters."""
        return int(self.letters.sum())

    def top(self) -> int:
        """The largest hash (0 without units)."""
        return int(self.hashes[-1]) if len(self) else 0
