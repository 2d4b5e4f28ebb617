"""Weighted features -> 64-bit simhash (Charikar 2002); Hamming distance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from xxhash import xxh3_64_intdigest

from nearDupe.features import FeatureSettings, extract_features, line_features, tokenize_lines

#: Bumped whenever a change alters the fingerprint of some text or the sentence units a page
#: is stored under (shorttext.sentences); stored in index headers.
ALGORITHM_VERSION = 4

#: Weights are rounded to this many units per 1.0 so the bit votes are summed exactly.
_WEIGHT_SCALE = 1000


#: Seed of the feature hashes of the confirmation signature (word pairs): see
#: :func:`fingerprint_and_signature`.
SIGNATURE_SEED = 0x6E64_7369_676E_6174


#: Seed of the exact keys of unfingerprinted pages (see :func:`stored_copy_key`).
_STORED_SEED = 0x5EED_0F_C0


def feature_hashes(features: Sequence[str], seed: int = 0) -> np.ndarray:
    """xxh3-64 of each feature's UTF-8 bytes, as uint64 (stable across machines and runs)."""
    return np.fromiter(
        (xxh3_64_intdigest(f.encode("utf-8", "surrogatepass"), seed) for f in features),
        dtype=np.uint64,
        count=len(features),
    )


def simhash(features: Sequence[str], weights: np.ndarray, seed: int = 0) -> int:
    """Sign of the weighted bit votes of the features' hashes: bit i of the result = vote i > 0."""
    if len(features) == 0:
        return 0
    hashes = feature_hashes(features, seed).astype("<u8")
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


def signature_settings(settings: FeatureSettings | None = None) -> FeatureSettings:
    """The features of the confirmation signature: word pairs, weighted like ``settings``."""
    return replace(settings or FeatureSettings(), kind="shingles", shingle=2, top_n=None)


def fingerprint_and_signature(
    text: str, settings: FeatureSettings | None = None
) -> tuple[int, int] | None:
    """The fingerprint and the confirmation signature of ``text`` (None: no words at all).

    The signature is a second simhash, of word pairs: it keeps word order, which the words'
    fingerprint ignores, so texts made of the same words in another order (paraphrases,
    different reports of one event) that come within k of each other are told apart.
    """
    lines = tokenize_lines(text)
    words, weights = line_features(lines, settings)
    if not words:
        return None
    pairs, pair_weights = line_features(lines, signature_settings(settings))
    return simhash(words, weights), simhash(pairs, pair_weights, SIGNATURE_SEED)


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit fingerprints."""
    return (a ^ b).bit_count()


def to_hex(fp: int) -> str:
    """A fingerprint as 16 lowercase hex digits."""
    return f"{fp:016x}"


def stored_copy_key(url: str, body: bytes) -> tuple[int, int]:
    """(key, signature) recording an unfingerprinted page exactly: hashes of its URL and body.

    A re-crawl finds the page stored under them when neither changed. The signature is an
    independent hash, so the key never confirms a fingerprint that falls within k of it."""
    data = url.encode("utf-8", "surrogatepass") + b"\0" + body
    return xxh3_64_intdigest(data, _STORED_SEED), xxh3_64_intdigest(data, _STORED_SEED + 1)
