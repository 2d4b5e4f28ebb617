"""Short texts: an exact hash of the normalized text instead of an unreliable simhash."""

from __future__ import annotations

import unicodedata

from xxhash import xxh3_64_intdigest

#: Seed of the exact hash, so it never equals the simhash of the same text by construction.
_SEED = 0x6E64_7368_6F72_7431


def normalize(text: str, *, digits: bool = True) -> str:
    """NFKC, case-folded, letters (and digits) only: no whitespace, punctuation or symbols."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if digits:
        return "".join(c for c in text if c.isalnum())
    return "".join(c for c in text if c.isalpha())


def exact_fingerprint(text: str, *, digits: bool = True) -> int:
    """A 64-bit hash of the normalized text: equal only for texts that normalize alike."""
    data = normalize(text, digits=digits).encode("utf-8", "surrogatepass")
    return xxh3_64_intdigest(data, _SEED)


def is_short(text: str, min_length: int) -> bool:
    """Whether ``text`` has fewer than ``min_length`` letters once normalized."""
    return len(normalize(text)) < min_length
