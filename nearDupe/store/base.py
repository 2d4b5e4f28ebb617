"""What every fingerprint store answers: matches with the page they came from, and a header."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from nearDupe.designs import Design
from nearDupe.features import FeatureSettings
from nearDupe.simhash import ALGORITHM_VERSION

#: Version of the on-disk / in-Redis layout (not of the fingerprint algorithm).
FORMAT_VERSION = 1


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
    features: dict[str, Any] = field(default_factory=lambda: FeatureSettings().to_dict())
    algorithm: int = ALGORITHM_VERSION
    bits: int = 64
    format: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        design = Design.named(self.design)
        if not 0 <= self.k <= design.k:
            raise ValueError(f"k={self.k} is outside 0..{design.k} for design {self.design}")

    @classmethod
    def for_settings(
        cls, design: str, k: int, features: FeatureSettings | None = None
    ) -> IndexHeader:
        """The header for an index with these settings."""
        return cls(design=design, k=k, features=(features or FeatureSettings()).to_dict())

    def to_dict(self) -> dict[str, Any]:
        """As stored (JSON-able)."""
        return asdict(self)

    def mismatches(self, stored: dict[str, Any]) -> list[str]:
        """Human-readable differences between this header and a stored one (k may differ)."""
        wanted = self.to_dict()
        return [
            f"{name}: index has {stored.get(name)!r}, settings ask for {value!r}"
            for name, value in wanted.items()
            if name != "k" and stored.get(name) != value
        ]
