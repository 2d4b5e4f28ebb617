"""Tests of text normalisation, tokenizing and TF-IDF feature weights."""

from __future__ import annotations

import numpy as np
import pytest

from nearDupe.features import FeatureSettings, extract_features, tokenize
from nearDupe.simhash import fingerprint, hamming


def test_nfkc_and_casefold() -> None:
    assert tokenize("Ｆｕｌｌ width ＡＢＣ Straße ﬁle CAFÉ") == [
        "full",
        "width",
        "abc",
        "strasse",
        "file",
        "café",
    ]


def test_unicode_words() -> None:
    assert tokenize("naïve Ελληνικά, русский-текст; ok") == [
        "naïve",
        "ελληνικά",
        "русский",
        "текст",
        "ok",
    ]


def test_chinese_is_segmented_with_jieba() -> None:
    assert tokenize("我们一起去公园散步") == ["我们", "一起", "去", "公园", "散步"]


def test_mixed_page() -> None:
    tokens = tokenize("Python是一种编程语言, released in 1991 年")
    assert tokens[0] == "python"
    assert "编程语言" in tokens
    assert tokens[-3:] == ["in", "1991", "年"]
    assert all(t.strip() for t in tokens)


def test_digits_dropped_by_default() -> None:
    features, _ = extract_features("apple 123 banana ４５６ x9")
    assert features == ["apple", "banana", "x9"]
    kept, _ = extract_features("apple 123", FeatureSettings(digits=True))
    assert kept == ["apple", "123"]


def test_empty_text() -> None:
    features, weights = extract_features("  ,. 42 ")
    assert features == []
    assert weights.shape == (0,) and weights.dtype == np.float64


@pytest.mark.parametrize(
    "text",
    [
        "the the the quick brown fox zzzunknownword",
        "今天天气很好，我们一起去公园散步。",
        "Python 是一种广泛使用的编程语言 created by Guido",
    ],
)
def test_tfidf_weights_positive_and_distinct(text: str) -> None:
    features, weights = extract_features(text)
    assert len(features) == len(set(features)) == len(weights)
    assert weights.dtype == np.float64
    assert np.all(weights > 0)


def test_tfidf_rare_words_weigh_more_and_tf_is_sublinear() -> None:
    features, weights = extract_features("the zebra the")
    w = dict(zip(features, weights, strict=True))
    assert w["zebra"] > w["the"]
    tf = FeatureSettings(weighting="tf", sublinear_tf=True)
    tf_only = dict(zip(*extract_features("a a a a b", tf), strict=True))
    share = 5 / 20  # a line of 5 words weighs 5/20 (full_line=20)
    assert tf_only["a"] == pytest.approx((1 + np.log(4)) * share)
    assert tf_only["b"] == pytest.approx(share)
    raw = FeatureSettings(weighting="tf", sublinear_tf=False, full_line=0)
    assert dict(zip(*extract_features("a a a b", raw), strict=True)) == {"a": 3.0, "b": 1.0}


def test_top_n_keeps_heaviest() -> None:
    text = "the of and zebra quagga okapi"
    features, weights = extract_features(text)
    top, top_w = extract_features(text, FeatureSettings(top_n=3))
    assert len(top) == 3
    heaviest = sorted(zip(weights, features, strict=True), reverse=True)[:3]
    assert set(top) == {f for _, f in heaviest}
    assert list(top_w) == sorted(top_w, reverse=True)
    assert extract_features("a b", FeatureSettings(top_n=5))[0] == ["a", "b"]


def test_shingles() -> None:
    features, weights = extract_features("a b c d b c", FeatureSettings(kind="shingles"))
    assert features == ["a b", "b c", "c d", "d b"]
    assert np.all(weights > 0)
    tri, _ = extract_features("a b c d", FeatureSettings(kind="shingles", shingle=3))
    assert tri == ["a b c", "b c d"]
    # Too short for one shingle: falls back to the words.
    assert extract_features("a", FeatureSettings(kind="shingles"))[0] == ["a"]


def test_settings_to_dict() -> None:
    assert FeatureSettings().to_dict() == {
        "kind": "words",
        "shingle": 2,
        "weighting": "tfidf",
        "sublinear_tf": False,
        "top_n": None,
        "digits": False,
        "full_line": 20,
    }


def test_short_lines_weigh_in_proportion() -> None:
    body = " ".join(f"word{i}" for i in range(30))
    text = f"{body}\nmenu home\nmenu"
    weight = dict(zip(*extract_features(text, FeatureSettings(weighting="tf")), strict=True))
    assert weight["word1"] == 1.0
    assert weight["home"] == pytest.approx(2 / 20)
    assert weight["menu"] == pytest.approx(2 / 20 + 1 / 20)
    flat = FeatureSettings(weighting="tf", full_line=0)
    assert dict(zip(*extract_features(text, flat), strict=True))["home"] == 1.0
    # One line, or lines all shorter than full_line by the same factor: scale only.
    assert fingerprint("alpha beta gamma") == fingerprint(
        "alpha beta gamma", FeatureSettings(full_line=0)
    )


def test_template_lines_move_fewer_bits() -> None:
    body = (
        "Independent experts said the results of the recycling trial were promising but cautioned "
        "that scaling the technology to industrial levels would take years of further testing.\n"
    ) * 3
    a = body + "Home\nWorld\nSport\nContact us\n"
    b = body + "Weather\nCareers\nAdvertise\nPrivacy policy\n"
    weighted = hamming(fingerprint(a), fingerprint(b))
    flat = FeatureSettings(full_line=0)
    assert weighted < hamming(fingerprint(a, flat), fingerprint(b, flat))
