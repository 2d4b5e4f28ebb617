"""Chinese words cut from jieba's dictionary held in arrays are jieba's own, word for word."""

from __future__ import annotations

from pathlib import Path

import jieba
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nearDupe import chinese

ARTICLES = Path(__file__).resolve().parent.parent / "spiders" / "demosite" / "articles" / "zh"

#: Common characters, so random strings hit dictionary words, unknown runs (jieba's HMM) and
#: ties between routes.
COMMON = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动"
    "同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自"
    "二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日"
    "那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变"
    "条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总"
    "次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指"
    "几九区强放决西被干做必战先回则任取据处理世车"
)


def test_demo_articles_cut_as_jieba_cuts_them() -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted(ARTICLES.glob("*.txt"))]
    assert texts
    for text in texts:
        assert chinese.cut(text) == jieba.lcut(text, HMM=True)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(COMMON + "，。ab1 \n壹𠀀㐀"), max_size=80))
def test_any_text_cut_as_jieba_cuts_it(text: str) -> None:
    assert chinese.cut(text) == jieba.lcut(text, HMM=True)


def test_texts_cut_together_as_each_alone() -> None:
    texts = [
        "他来到了网易杭研大厦",
        "",
        "工信处女干事每月经过下属科室",
        "小明硕士毕业于中国科学院计算所",
    ]
    assert chinese.cut_each(texts) == [jieba.lcut(t, HMM=True) for t in texts]


def test_idf_is_jiebas() -> None:
    from jieba.analyse import default_tfidf

    table, median = default_tfidf.idf_freq, default_tfidf.median_idf
    words = [*list(table)[::97], "不存在的词语甲乙", "a"]
    assert chinese.idfs(words).tolist() == [table.get(w, median) for w in words]
    assert len(chinese.idfs([])) == 0


def test_hostile_text_is_cut() -> None:
    text = "中文\udc80\x00文本" + "的" * 5000
    assert "".join(chinese.cut(text)) == text


def test_a_torn_cache_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEARDUPE_KERNEL_CACHE", str(tmp_path))
    chinese.tables.cache_clear()
    try:
        built = chinese.tables()
        [cached] = tmp_path.glob("jieba-*.npz")
        cached.write_bytes(cached.read_bytes()[:1000])
        chinese.tables.cache_clear()
        again = chinese.tables()
        assert (again.word_keys == built.word_keys).all()
        assert again.log_total == built.log_total
        assert cached.stat().st_size > 1000
    finally:
        chinese.tables.cache_clear()


def test_an_unwritable_cache_still_cuts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("a file where the cache directory would be")
    monkeypatch.setenv("NEARDUPE_KERNEL_CACHE", str(tmp_path / "file" / "cache"))
    chinese.tables.cache_clear()
    try:
        assert chinese.cut("我们一起去公园散步") == ["我们", "一起", "去", "公园", "散步"]
    finally:
        chinese.tables.cache_clear()
