"""Weighted features -> 64-bit simhash (Charikar 2002); Hamming distance."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xxhash import xxh3_64_intdigest

from nearDupe.features import FeatureSettings, extract_features

#: Bumped whenever a change alters the fingerprint of some text; stored in index headers.
ALGORITHM_VERSION = 3

#: Weights are rounded to this many units per 1.0 so the bit votes are summed exactly.
_WEIGHT_SCALE = 1000


def feature_hashes(features: Sequence[str]) -> np.ndarray:
    """xxh3-64 of each feature's UTF-8 bytes, as uint64 (stable across machines and runs)."""
    return np.fromiter(
        (xxh3_64_intdigest(f.encode("utf-8", "surrogatepass")) for f in features),
        dtype=np.uint64,
        count=len(features),
    )


def simhash(features: Sequence[str], weights: np.ndarray) -> int:
    """Sign of the weighted bit votes of the features' hashes: bit i of the result = vote i > 0."""
    if len(features) == 0:
        return 0
    hashes = feature_hashes(features).astype("<u8")
    # bits[j, i] is bit i (least significant first) of feature j's hash.
    bits = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    votes_per_bit = bits.astype(np.int64) * 2 - 1
    int_weights = np.rint(np.asarray(weights, dtype=np.float64) * _WEIGHT_SCALE).astype(np.int64)
    votes = int_weights @ votes_per_bit
    packed = np.packbits(votes > 0, bitorder="little")
    return int(packed.view("<u8")[0])


def fingerprint(text: str, settings: FeatureSettings | None = None) -> int:
    """The 64-bit simhash of ``text`` under the given feature settings."""
    features, weights = extract_features(text, settings)
    return simhash(features, weights)


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit fingerprints."""
    return (a ^ b).bit_count()


def to_hex(fp: int) -> str:
    """A fingerprint as 16 lowercase hex digits."""
    return f"{fp:016x}"
