"""What every fingerprint store answers: matches with the page they came from, and a header."""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import quote

import numpy as np
from xxhash import xxh3_64_intdigest

from nearDupe.designs import Design
from nearDupe.features import FeatureSettings
from nearDupe.shorttext import SENTENCE_PAGE_LETTERS, Sentences, letters
from nearDupe.simhash import ALGORITHM_VERSION, hamming
from nearDupe.units import Units

if TYPE_CHECKING:
    from nearDupe.store.recrawl import Seen


def storable_key(key: str) -> str:
    """``key`` (a URL from the web) as every store can hold it: a lone surrogate, which no
    UTF-8 store accepts (json.loads makes one of a feed's ``"\\udc80"``), is written as the
    percent-escapes of its bytes, as a browser would send it; everything else is unchanged."""
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(
            quote(c.encode("utf-8", "surrogatepass")) if 0xD800 <= ord(c) <= 0xDFFF else c
            for c in key
        )
    return key


#: Seed of the URL hashes that key the stores' URL tables.
_URL_SEED = 0x0055_524C


def url_hash(key: str) -> int:
    """The 64-bit hash under which a store's URL table holds ``key`` (as storable_key
    writes it)."""
    return xxh3_64_intdigest(storable_key(key).encode("utf-8"), _URL_SEED)


#: Version of the embedded index's on-disk layout, written in every index's header (not of
#: the fingerprint algorithm; a Redis index's keys have their own: redis_layout.REDIS_FORMAT).
FORMAT_VERSION = 3

#: A confirmation distance of this much accepts every candidate (64 bits of fingerprint and
#: 64 of signature).
NO_CONFIRMATION = 128
#: Default share of sentence letters two pages must have in common (docs/quality.md).
SENTENCE_SHARE = 0.3
#: The sentences two pages share must also make up this much of one of them: a copy holds
#: most of the page it copies, while two different short articles that share template text
#: (an author's bio, a notice) each have their own. A copy with a light edit in every
#: sentence keeps 0.6-0.9 of its shingles; texts of the same words told otherwise (PAWS-X
#: pairs joined) 0.2-0.5, and pass 0.5 by their sketch's noise; a story quoted among a
#: portal section's other sentences is held 0.5-0.6 (docs/quality.md).
SENTENCE_CONTAINED = 0.55
#: A stored page whose fingerprint is within CLOSE_BITS of the query's need only hold
#: CLOSE_CONTAINED of it (or be held so): a copy with a light edit in every sentence keeps
#: its words' fingerprint within a few bits (0-6 for nine in ten) while its sketch may show
#: under 55 %; texts of the same words told otherwise (PAWS-X pairs joined) and different
#: stories sharing a sentence came no closer than 7-9 bits on the tune half.
CLOSE_BITS = 6
CLOSE_CONTAINED = 0.4
#: A brief (a page under shorttext.SHINGLE_PAGE_LETTERS sentence letters, one or two
#: sentences) with a headline is also a copy of a stored page whose sketch holds this share
#: of its shingles keyed by that headline (shorttext.brief_shingles): a brief edited in every
#: sentence shares no sentence but most shingles, while texts of the same words told
#: otherwise (PAWS-X pairs) hold as many (docs/quality.md): the headline keeps them apart.
BRIEF_SHARED = 0.55
#: A sentence is recorded for at most this many pages: one on more is template text, and the
#: lookups of a page that has it stay bounded.
SENTENCE_HOLDERS = 16
#: A page of SENTENCE_PAGE_LETTERS letters or more is recorded under this many of its sentences
#: (those with the smallest hashes, so that two copies choose alike): a copy holding a share c
#: of a stored page's sentences holds one of them with probability 1 - (1 - c)^4 (0.94 at
#: c = 0.5, 0.998 at c = 0.8). Found pages are then judged by their sketches.
SAMPLE_SENTENCES = 4
#: A check reads the holders of this many of its page's sentences, those with the smallest
#: hashes (and is recorded under none other). The stored page's smallest sentence that a copy
#: holds is among the copy's LOOKUP_SENTENCES smallest unless 16 of the copy's own sentences
#: hash below it: (a / (a + n))^16 for a copy adding a sentences to n (1.5e-5 at a = n).
#: Each sentence read is a bucket (and a lease, in Redis): a 60-sentence article read 60.
LOOKUP_SENTENCES = 16
#: A stored page is judged by the SKETCH_SENTENCES smallest of its unit hashes (all of a
#: page of up to 31 units, so the rule is exact there): a bottom-k sketch, whose share found
#: in a query estimates the share of the whole page (two texts sharing 40 % of their
#: shingles pass 55 % of a sketch of 31 with probability 0.03; of 24, 0.05; of 16, 0.14).
#: A Redis page record holds at most 31 (redis_records.TAIL_COUNT).
SKETCH_SENTENCES = 31
#: Bytes kept of each sketched hash (its low bits): a query of 256 units meets a stored
#: sketch of 31 in a false pair with probability 31 * 256 / 2**16 ~ 0.12, which adds a 31st
#: of the stored page's share.
TAIL_BYTES = 2
_TAIL_MASK = np.uint64((1 << 8 * TAIL_BYTES) - 1)
#: A tail as a sketch stores it.
_TAIL = np.dtype(f">u{TAIL_BYTES}")


def tails_of(hashes: np.ndarray) -> np.ndarray:
    """The tails of ``hashes`` (their last TAIL_BYTES bytes, big-endian)."""
    return (hashes & _TAIL_MASK).astype(_TAIL)


def looked_up(page: Sentences) -> Units:
    """The sentences whose holders a check of ``page`` reads: the LOOKUP_SENTENCES with the
    smallest hashes."""
    return Units.of(page).head(LOOKUP_SENTENCES)


def recorded(page: Sentences, crowded: Container[int] = ()) -> Units:
    """The sentences a page is recorded under, among those it looked up: every one of a short
    page's, the SAMPLE_SENTENCES with the smallest hashes of a longer page's; never one that
    is ``crowded`` (already recorded for SENTENCE_HOLDERS pages)."""
    units = Units.of(page)
    free = looked_up(units).without(crowded)
    return free if letters(units) < SENTENCE_PAGE_LETTERS else free.head(SAMPLE_SENTENCES)


class Sketch(NamedTuple):
    """What a store keeps of a page's sentences to judge it against a query."""

    #: The letters of all its sentences, and of its sketched ones.
    letters: int
    sketched: int
    #: The last TAIL_BYTES bytes (big-endian) of each of its SKETCH_SENTENCES smallest hashes.
    tails: bytes


def sketch_of(page: Sentences) -> Sketch:
    """A page's sketch (see SKETCH_SENTENCES)."""
    units = Units.of(page)
    chosen = units.head(SKETCH_SENTENCES)
    tails = tails_of(chosen.hashes).tobytes()
    return Sketch(letters(units), letters(chosen), tails)


class Holder(NamedTuple):
    """A stored page recorded under one of a query's sentences, with its sketch."""

    sentence: int
    key: str
    fingerprint: int
    sketch: Sketch


def holders_of(page: Sentences, key: str, fp: int, crowded: Container[int] = ()) -> list[Holder]:
    """What a store holds of a page it records: one Holder per sentence of ``recorded``."""
    sketch = sketch_of(page)
    return [Holder(h, key, fp, sketch) for h, _ in recorded(page, crowded)]


def confirmed(stored: int | None, signature: int | None, distance: int, confirm_k: int) -> bool:
    """Whether a candidate at fingerprint ``distance`` is a match: that distance plus the
    distance of the two signatures is at most ``confirm_k``.

    A page stored or asked about without a signature is judged on its fingerprint alone.
    """
    if stored is None or signature is None or confirm_k >= NO_CONFIRMATION:
        return True
    return distance + hamming(stored, signature) <= confirm_k


@dataclass(frozen=True)
class Match:
    """A stored page like a query: its key (URL), fingerprint and Hamming distance, or (for
    pages matched by their sentences) no distance and the share of sentences shared."""

    key: str
    fingerprint: int
    distance: int | None
    shared: float | None = None
    #: Set when the checked page's URL is one the index holds (see nearDupe/store/recrawl.py):
    #: then the match is that URL's version (``key`` the URL), or, for a changed page, the
    #: other page it copies.
    seen: Seen | None = None


@dataclass(frozen=True)
class SharedSentences:
    """What a stored page has in common with a query by sentences (estimated from its sketch)."""

    key: str
    fingerprint: int
    #: The shared sentence letters as a share of the query's and of the stored page's letters.
    of_query: float
    of_stored: float
    #: How many distinct sentences they share.
    count: int
    #: The Hamming distance of the two fingerprints (None: the query's is not known).
    distance: int | None = None
    #: Of a query that is a brief with a headline: how many of its shingles keyed by it
    #: (shorttext.brief_shingles) the stored page's sketch holds, and how many it has.
    keyed: int = 0
    keyed_of: int = 0

    @property
    def of_both(self) -> float:
        """The smaller of the two shares."""
        return min(self.of_query, self.of_stored)

    def is_copy(self, share: float) -> bool:
        """Whether the pages are near-duplicates at ``share``: the shared sentences make up at
        least ``share`` of both pages (twice that when they are one sentence: a quote, a stock
        line, the same opening are weak evidence) and SENTENCE_CONTAINED of one of them (a
        copy holds most of the page it copies; two articles sharing template text each have
        their own), CLOSE_CONTAINED when their fingerprints are within CLOSE_BITS. Or, for a
        brief, when the stored page holds BRIEF_SHARED of its shingles keyed by its headline."""
        if self.keyed_of and self.keyed >= BRIEF_SHARED * self.keyed_of:
            return True
        needed = share if self.count > 1 else min(1.0, 2 * share)
        close = self.distance is not None and self.distance <= CLOSE_BITS
        contained = CLOSE_CONTAINED if close else SENTENCE_CONTAINED
        return (
            self.count > 0
            and self.of_both >= needed
            and max(self.of_query, self.of_stored) >= contained
        )


def shared_sentences(
    query: Sentences, holders: Iterable[Holder], fingerprint: int | None = None
) -> list[SharedSentences]:
    """Every stored page that shares a sentence with ``query`` (of ``fingerprint``) by its
    sketch, in the order first met; the share of its sketch found in the query stands for the
    share of the page (exact for a page of up to SKETCH_SENTENCES sentences)."""
    units = Units.of(query)
    total = letters(units)
    own = tails_of(units.hashes)
    by_letters = np.argsort(units.letters, kind="stable")  # the most letters of a tail last
    mine = dict(zip(own[by_letters].tolist(), units.letters[by_letters].tolist(), strict=True))
    keyed = set(own[units.letters == 0].tolist())
    found: dict[tuple[str, int], SharedSentences | None] = {}
    for holder in holders:
        page = holder.key, holder.fingerprint
        if page in found:
            continue
        sketch = holder.sketch
        tails = set(np.frombuffer(sketch.tails, dtype=_TAIL).tolist())
        shared = [mine[tail] for tail in tails if mine.get(tail)]
        told = len(keyed & tails)
        if not shared and not told:
            found[page] = None
            continue
        of_stored = min(1.0, sum(shared) / sketch.sketched) if sketch.sketched else 0.0
        of_query = min(1.0, of_stored * sketch.letters / total) if total else 0.0
        distance = None if fingerprint is None else hamming(fingerprint, holder.fingerprint)
        found[page] = SharedSentences(
            *page, of_query, of_stored, len(shared), distance, told, len(keyed)
        )
    return [s for s in found.values() if s is not None]


def sentence_matches(
    query: Sentences, holders: Iterable[Holder], share: float, fingerprint: int | None = None
) -> list[Match]:
    """The stored pages that are copies of ``query`` (of ``fingerprint``) by their sentences
    (see :meth:`SharedSentences.is_copy`), the largest share of both first (then the first
    met)."""
    copies = [s for s in shared_sentences(query, holders, fingerprint) if s.is_copy(share)]
    copies.sort(key=lambda s: -s.of_both)
    return [Match(s.key, s.fingerprint, None, round(s.of_both, 3)) for s in copies]


@dataclass(frozen=True)
class IndexHeader:
    """Everything that must agree for two fingerprints to be comparable in one index."""

    design: str = "4-table"
    k: int = 3
    #: A candidate within k is a match only if its distance plus the signatures' is at most this.
    confirm_k: int = NO_CONFIRMATION
    #: Pages with sentences match when they share this much of both pages' sentence letters.
    sentence_share: float = SENTENCE_SHARE
    features: dict[str, Any] = field(default_factory=lambda: FeatureSettings().to_dict())
    algorithm: int = ALGORITHM_VERSION
    bits: int = 64
    format: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        design = Design.named(self.design)
        if not 0 <= self.k <= design.k:
            raise ValueError(f"k={self.k} is outside 0..{design.k} for design {self.design}")
        if not 0 <= self.confirm_k <= NO_CONFIRMATION:
            raise ValueError(f"confirm_k={self.confirm_k} is outside 0..{NO_CONFIRMATION}")
        if not 0 < self.sentence_share <= 1:
            raise ValueError(f"sentence_share={self.sentence_share} is outside (0, 1]")

    @classmethod
    def for_settings(
        cls,
        design: str,
        k: int,
        features: FeatureSettings | None = None,
        confirm_k: int = NO_CONFIRMATION,
        sentence_share: float = SENTENCE_SHARE,
    ) -> IndexHeader:
        """The header for an index with these settings."""
        features_dict = (features or FeatureSettings()).to_dict()
        return cls(
            design=design,
            k=k,
            features=features_dict,
            confirm_k=confirm_k,
            sentence_share=sentence_share,
        )

    def to_dict(self) -> dict[str, Any]:
        """As stored (JSON-able)."""
        return asdict(self)

    def mismatches(self, stored: dict[str, Any], *, design: bool = True) -> list[str]:
        """Human-readable differences between this header and a stored one.

        The thresholds (k, confirm_k, sentence_share) may differ: they are chosen per crawl, not
        stored. So may the design when ``design`` is false (a store that rebuilds its tables for
        a new one).
        """
        free = ("k", "confirm_k", "sentence_share") + (() if design else ("design",))
        return [
            f"{name}: index has {stored.get(name)!r}, settings ask for {value!r}"
            for name, value in self.to_dict().items()
            if name not in free and stored.get(name) != value
        ]
