"""Tests of the 64-bit simhash: pinned fingerprints, stability, Hamming distance."""

from __future__ import annotations

import random

import numpy as np
import pytest

from nearDupe.features import FeatureSettings
from nearDupe.simhash import ALGORITHM_VERSION, fingerprint, hamming, simhash, to_hex

EN = (
    "The quick brown fox jumps over the lazy dog near the riverbank, while a group of "
    "children watch from the old stone bridge and the afternoon sun sinks behind the hills."
)
ZH = "今天天气很好，我们一起去公园散步，看到了很多美丽的花朵和在湖边嬉戏的孩子们。"
#: Lines of different lengths: short lines weigh less (FeatureSettings.full_line).
LINES = (
    "Home | World | Sport\nThe quick brown fox jumps over the lazy dog near the riverbank, while "
    "a group of children watch from the old stone bridge.\n12,345 views\n"
    "今天天气很好，我们一起去公园散步。"
)
MIX = "Python 是一种广泛使用的编程语言，由 Guido van Rossum 创建，第一版发布于 1991 年。"

LONG = (
    "Researchers at the university announced on Tuesday that they had developed a new "
    "method for recycling plastic waste into fuel. The process uses a catalyst made from "
    "inexpensive metals and works at lower temperatures than existing techniques. According "
    "to the team, the approach could reduce the cost of recycling by nearly half and help "
    "cities deal with the growing mountains of packaging that end up in landfills every year. "
    "Independent experts said the results were promising but cautioned that scaling the "
    "technology to industrial levels would take years of further testing and investment."
)

#: Fingerprints under ALGORITHM_VERSION == PINNED_VERSION (default FeatureSettings).
PINNED_VERSION = 4
PINNED = {
    EN: "859b82931cc2bb97",
    ZH: "3d3dce4c02b37c20",
    MIX: "f4b34e29107b120a",
    LINES: "871c829218e2ffd3",
}


@pytest.mark.parametrize("text", list(PINNED), ids=["english", "chinese", "mixed", "lines"])
def test_pinned_fingerprints(text: str) -> None:
    assert ALGORITHM_VERSION == PINNED_VERSION, "ALGORITHM_VERSION changed: re-pin PINNED"
    got = to_hex(fingerprint(text))
    assert got == PINNED[text], (
        f"fingerprint changed ({got} != {PINNED[text]}): fingerprints of stored indexes are no "
        f"longer comparable; bump ALGORITHM_VERSION (now {ALGORITHM_VERSION}) in "
        "nearDupe/simhash.py and update the pinned values"
    )


def test_identical_text_identical_fingerprint() -> None:
    assert fingerprint(LONG) == fingerprint(LONG)
    assert fingerprint(LONG) == fingerprint(LONG.upper())  # case-folded
    assert fingerprint(ZH) == fingerprint(ZH)


def test_small_edit_small_distance() -> None:
    edited = LONG.replace("Tuesday", "Wednesday")
    assert 0 < hamming(fingerprint(LONG), fingerprint(edited)) <= 6
    appended = LONG + " The study was published in a journal."
    assert hamming(fingerprint(LONG), fingerprint(appended)) <= 10


def test_unrelated_texts_about_32_apart() -> None:
    rng = random.Random(7)
    vocab = [f"word{i}" for i in range(5000)]
    distances = []
    for _ in range(60):
        a = " ".join(f"x{w}" for w in rng.sample(vocab, 80))
        b = " ".join(f"y{w}" for w in rng.sample(vocab, 80))
        distances.append(hamming(fingerprint(a), fingerprint(b)))
    assert 28 <= float(np.mean(distances)) <= 36
    assert hamming(fingerprint(EN), fingerprint(ZH)) >= 15


def test_empty_is_zero() -> None:
    assert fingerprint("") == 0
    assert fingerprint("  .,!? 123") == 0
    assert simhash([], np.zeros(0)) == 0


def test_single_feature_is_its_hash() -> None:
    from nearDupe.simhash import feature_hashes

    assert simhash(["abc"], np.array([1.0])) == int(feature_hashes(["abc"])[0])


def test_fingerprint_fits_64_bits_and_settings_matter() -> None:
    fp = fingerprint(LONG)
    assert 0 <= fp < 2**64
    assert len(to_hex(fp)) == 16
    assert fingerprint(LONG, FeatureSettings(kind="shingles")) != fp


def test_hamming() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0, 2**64 - 1) == 64
    assert hamming(0b1011, 0b0001) == 2
    assert hamming(1 << 63, 0) == 1
