"""nearDupe: keep near-duplicate web pages out of a Scrapy crawl's storage."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nearDupe.addon import Addon
from nearDupe.errors import (
    IndexFileError,
    IndexLocked,
    IndexSettingsMismatch,
    NearDupeError,
    NearDuplicate,
    StoreUnavailable,
)
from nearDupe.features import FeatureSettings, extract_features, tokenize
from nearDupe.simhash import fingerprint, fingerprint_and_signature, hamming, simhash

if TYPE_CHECKING:
    from scrapy.http import Response

__version__ = "0.1.0"

__all__ = [
    "Addon",
    "FeatureSettings",
    "IndexFileError",
    "IndexLocked",
    "IndexSettingsMismatch",
    "NearDupeError",
    "NearDuplicate",
    "StoreUnavailable",
    "__version__",
    "extract_features",
    "fingerprint",
    "fingerprint_and_signature",
    "hamming",
    "main_text",
    "simhash",
    "tokenize",
]


def main_text(response: Response) -> str | None:
    """The main text nearDupe extracted from ``response`` (``response.meta["neardupe"].text``),
    for a spider to store instead of extracting it again; None when nearDupe did not analyse
    the response (disabled, not HTML, ...) or skipped it (too short, its site's template...)."""
    from nearDupe.analysis import main_text as extracted  # the extractor loads on first use

    return extracted(response)


def __getattr__(name: str) -> object:
    """Lazily export the numba-backed index classes (workers never need to compile them)."""
    if name in {"BlockIndex", "Design", "EmbeddedIndex", "IndexHeader", "Match", "open_store"}:
        from nearDupe import designs, index, store

        return {
            "BlockIndex": index.BlockIndex,
            "Design": designs.Design,
            "EmbeddedIndex": store.EmbeddedIndex,
            "IndexHeader": store.IndexHeader,
            "Match": store.Match,
            "open_store": store.open_store,
        }[name]
    raise AttributeError(f"module 'nearDupe' has no attribute {name!r}")
