"""nearDupe: keep near-duplicate web pages out of a Scrapy crawl's storage."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.http import Response

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


#: Public name -> the module that holds it, imported on first use: a worker process that
#: imports nearDupe.workers loads neither Scrapy (through the add-on and the errors) nor the
#: index.
_LAZY = {
    "Addon": "nearDupe.addon",
    "IndexFileError": "nearDupe.errors",
    "IndexLocked": "nearDupe.errors",
    "IndexSettingsMismatch": "nearDupe.errors",
    "NearDupeError": "nearDupe.errors",
    "NearDuplicate": "nearDupe.errors",
    "StoreUnavailable": "nearDupe.errors",
    "FeatureSettings": "nearDupe.features",
    "extract_features": "nearDupe.features",
    "tokenize": "nearDupe.features",
    "fingerprint": "nearDupe.simhash",
    "fingerprint_and_signature": "nearDupe.simhash",
    "hamming": "nearDupe.simhash",
    "simhash": "nearDupe.simhash",
    "BlockIndex": "nearDupe.index",
    "Design": "nearDupe.designs",
    "EmbeddedIndex": "nearDupe.store",
    "IndexHeader": "nearDupe.store",
    "Match": "nearDupe.store",
    "open_store": "nearDupe.store",
}


def __getattr__(name: str) -> object:
    """The public names, each imported from its module on first use."""
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nearDupe' has no attribute {name!r}")
