"""A page's units as the analysis hands them to the stores: sorted pairs with arrays beside."""

from __future__ import annotations

import pickle

import numpy as np

from nearDupe.analysis import analyze_text
from nearDupe.features import FeatureSettings
from nearDupe.shorttext import letters, sentences
from nearDupe.store.base import holders_of, recorded, shared_sentences, sketch_of
from nearDupe.units import Units

TEXT = " ".join(
    f"Sentence number {i} of the story tells what the council decided about road {i}."
    for i in range(40)
)


def _pages(seed: int) -> list[tuple[tuple[int, int], ...]]:
    """Pages of 0-300 units, unsorted, some with a hash twice (of other letters)."""
    rng = np.random.default_rng(seed)
    pages = []
    for i in range(60):
        hashes = rng.integers(0, 2**64, int(rng.integers(0, 300)), dtype=np.uint64).tolist()
        if i % 4 == 0 and len(hashes) > 2:
            hashes[1] = hashes[0]
        pages.append(tuple((h, int(rng.integers(0, 200))) for h in hashes))
    return pages


def test_units_are_the_sorted_pairs_with_their_arrays() -> None:
    for page in _pages(1):
        units = Units.of(page)
        assert units == tuple(sorted(page))
        assert units.hashes.dtype == np.uint64 and units.letters.dtype == np.int64
        assert units.hashes.tolist() == [h for h, _ in units]
        assert units.letters.tolist() == [n for _, n in units]
        assert Units.of(units) is units
        assert units.head(16) == units[:16] and units.head(16).hashes.tolist() == [
            h for h, _ in units[:16]
        ]
        dropped = set(units.hashes[::3].tolist())
        kept = units.without(dropped)
        assert kept == tuple(u for u in units if u[0] not in dropped)
        assert kept.letters.tolist() == [n for _, n in kept]


def test_the_rules_read_units_as_they_read_the_pairs() -> None:
    pages = _pages(2)
    for page, other in zip(pages, pages[1:] + pages[:1], strict=True):
        units = Units.of(page)
        assert letters(units) == letters(page)
        assert sketch_of(units) == sketch_of(page)
        assert recorded(units, set(units.hashes[:2].tolist())) == recorded(
            page, set(units.hashes[:2].tolist())
        )
        query = tuple(sorted(page))[: len(page) // 2] + other
        if query:
            holders = holders_of(page, "https://example.com/a", 5)
            assert shared_sentences(Units.of(query), holders, 7) == shared_sentences(
                query, holders, 7
            )


def test_the_analysis_hands_units_that_pickle_with_their_arrays() -> None:
    analysis = analyze_text(TEXT, 200, FeatureSettings())
    assert isinstance(analysis.sentences, Units)
    assert analysis.sentences == sentences(TEXT)
    again = pickle.loads(pickle.dumps(analysis))
    assert isinstance(again.sentences, Units)
    assert again.sentences.hashes.tolist() == [h for h, _ in sentences(TEXT)]
    assert again.sentences.letters.tolist() == [n for _, n in sentences(TEXT)]
