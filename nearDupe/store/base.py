"""What every fingerprint store answers: matches with the page they came from, and a header."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from nearDupe.designs import Design
from nearDupe.features import FeatureSettings
from nearDupe.simhash import ALGORITHM_VERSION, hamming

#: Version of the on-disk / in-Redis layout (not of the fingerprint algorithm).
FORMAT_VERSION = 2

#: Bits of a signature; a confirmation distance of this much accepts every candidate.
_SIGNATURE_BITS = 64


def confirmed(stored: int | None, signature: int | None, confirm_k: int) -> bool:
    """Whether a candidate within k is a match: both signatures within ``confirm_k`` bits.

    A page stored or asked about without a signature is judged on its fingerprint alone.
    """
    if stored is None or signature is None or confirm_k >= _SIGNATURE_BITS:
        return True
    return hamming(stored, signature) <= confirm_k


@dataclass(frozen=True)
class Match:
    """A stored page near a query: its key (URL), fingerprint and Hamming distance."""

    key: str
    fingerprint: int
    distance: int


@dataclass(frozen=True)
class IndexHeader:
    """Everything that must agree for two fingerprints to be comparable in one index."""

    design: str = "4-table"
    k: int = 3
    #: A candidate within k is a match only if the signatures differ in at most this many bits.
    confirm_k: int = _SIGNATURE_BITS
    features: dict[str, Any] = field(default_factory=lambda: FeatureSettings().to_dict())
    algorithm: int = ALGORITHM_VERSION
    bits: int = 64
    format: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        design = Design.named(self.design)
        if not 0 <= self.k <= design.k:
            raise ValueError(f"k={self.k} is outside 0..{design.k} for design {self.design}")
        if not 0 <= self.confirm_k <= _SIGNATURE_BITS:
            raise ValueError(f"confirm_k={self.confirm_k} is outside 0..{_SIGNATURE_BITS}")

    @classmethod
    def for_settings(
        cls,
        design: str,
        k: int,
        features: FeatureSettings | None = None,
        confirm_k: int = _SIGNATURE_BITS,
    ) -> IndexHeader:
        """The header for an index with these settings."""
        features_dict = (features or FeatureSettings()).to_dict()
        return cls(design=design, k=k, features=features_dict, confirm_k=confirm_k)

    def to_dict(self) -> dict[str, Any]:
        """As stored (JSON-able)."""
        return asdict(self)

    def mismatches(self, stored: dict[str, Any], *, design: bool = True) -> list[str]:
        """Human-readable differences between this header and a stored one.

        The distances (k, confirm_k) may differ: they are chosen per crawl, not stored. So may
        the design when ``design`` is false (a store that rebuilds its tables for a new one).
        """
        free = ("k", "confirm_k") if design else ("k", "confirm_k", "design")
        return [
            f"{name}: index has {stored.get(name)!r}, settings ask for {value!r}"
            for name, value in self.to_dict().items()
            if name not in free and stored.get(name) != value
        ]
