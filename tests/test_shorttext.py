"""Tests for nearDupe.shorttext: the sentences a page is matched by."""

from __future__ import annotations

from nearDupe.shorttext import BRIEF_SHINGLES, CLAUSE_SENTENCE_LETTERS, normalize, sentences

LONG = (
    "市图书馆昨天宣布，总投资约三亿元的新馆将于下月一日正式对外开放，馆内共设阅览座位八百个，"
    "纸质藏书超过六十万册，开放时间为每天上午九点到晚上九点，市民凭身份证即可免费办理借书证。"
)


def _letters(text: str) -> list[int]:
    return sorted(n for _, n in sentences(text))


def test_a_long_chinese_sentence_counts_as_its_clauses() -> None:
    assert len(normalize(LONG)) >= CLAUSE_SENTENCE_LETTERS
    clauses = [normalize(c) for c in LONG.split("，")]
    assert _letters(LONG) == sorted(map(len, clauses))
    typo = sentences(LONG.replace("六十万册", "六十万删"))
    assert len(set(sentences(LONG)) & set(typo)) == len(clauses) - 1


def test_a_short_clause_joins_the_next_and_a_short_last_one_the_one_before() -> None:
    sentence = (
        "今天晴，气温二十五度左右的天气适合出门散步和锻炼身体，下午三点起城区东部和南部可能有短时阵雨，"
        "请注意，市民出门时最好带上雨具以免被淋湿，晚间转多云，明天。"
    )
    assert len(normalize(sentence)) >= CLAUSE_SENTENCE_LETTERS
    got = _letters(sentence)
    # "今天晴" (3) and "请注意" (3) join the clauses after them; "晚间转多云" (5) and "明天" (2)
    # stay under 8 letters together and join the clause before them.
    assert sum(got) == len(normalize(sentence))
    assert got == sorted([3 + 22, 19, 3 + 16 + 5 + 2])


def test_short_sentences_and_latin_commas_stay_whole() -> None:
    short = "今天晴，气温二十五度，适合出门。"
    assert _letters(short) == [len(normalize(short))]
    english = (
        "The council approved the budget on Monday, and the ferries, which were late all "
        "winter, will run every twenty minutes from June."
    )
    assert _letters(english) == [len(normalize(english))]


def test_a_space_ends_a_thai_sentence_in_a_paragraph() -> None:
    paragraph = " ".join(
        [
            "ลักษณะเป็นไม้ยืนต้นขนาดกลาง",
            "สูงประมาณสิบเมตร",
            "ใบเป็นใบเดี่ยวเรียงสลับกันตามกิ่ง",
            "ผลมีขนาดเล็กรูปทรงกลมสีเขียว",
            "ดอกออกเป็นช่อที่ปลายกิ่ง",
        ]
    )
    assert len(sentences(paragraph)) == 5
    # A copy missing its last part keeps the sentences before the cut.
    cut = paragraph.rsplit(" ", 1)[0]
    assert len(set(sentences(cut)) & set(sentences(paragraph))) == 4


def test_a_short_thai_line_without_a_stop_is_its_sentences() -> None:
    # Thai has no full stop: each part between spaces of a line is a sentence, however short
    # its line (parts under SENTENCE_MIN_LETTERS letters, a menu item's, do not count).
    assert len(sentences("ฝนตกหนักทั่วกรุงเทพฯ น้ำท่วมขังหลายจุด")) == 2
    assert sentences("หน้าแรก ข่าว กีฬา") == ()


def test_dandas_and_other_script_stops_end_sentences() -> None:
    text = "यह पहला वाक्य है। यह दूसरा वाक्य है। শেষ বাক্যটি এখানে।"
    assert len(sentences(text)) == 3


BRIEF = (
    "市气象台今天发布消息，预计未来三天本市以晴为主。周末起有一次降雨过程，请市民注意出行安全。"
)


def test_a_brief_with_a_headline_adds_its_shingles_keyed_by_it() -> None:
    whole = sentences(BRIEF)
    assert sorted(n for _, n in whole) == sorted(len(normalize(s)) for s in BRIEF.split("。") if s)
    units = sentences(BRIEF, "本市未来三天以晴为主")
    # Its whole sentences first, then BRIEF_SHINGLES shingles of 0 letters, top byte set.
    assert units[: len(whole)] == whole
    keyed = units[len(whole) :]
    assert len(keyed) == BRIEF_SHINGLES and all(h >> 56 == 0xFF and n == 0 for h, n in keyed)
    # Chinese numerals are read as digits: a copy writing 三 as 3 keeps every shingle.
    assert sentences(BRIEF.replace("三天", "3天"), "本市未来三天以晴为主")[len(whole) :] == keyed
    # Under another headline, other shingles.
    assert set(sentences(BRIEF, "周末有雨")[len(whole) :]).isdisjoint(keyed)


def test_a_hostile_headline_keys_shingles() -> None:
    units = sentences(BRIEF, "\ud800标题\x00")
    assert sum(1 for _, n in units if n == 0) == BRIEF_SHINGLES
