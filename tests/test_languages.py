"""Tests of the rules for scripts other than Latin and Chinese."""

from __future__ import annotations

from nearDupe.shorttext import sentences


def test_arabic_comma_ends_a_clause() -> None:
    # A long sentence of a short page is matched by its clauses: one changed letter keeps the
    # other clauses.
    text = (
        "أعلن المجلس البلدي يوم الثلاثاء عن توسيع شبكة ممرات الدراجات في وسط المدينة، "
        "وقال المسؤولون إن الخطة ستربط الجامعة بالمنطقة التجارية الجديدة."
    )
    changed = text.replace("الجامعة", "الجامعه")
    assert len(sentences(text)) == 2
    assert len(set(sentences(text)) & set(sentences(changed))) == 1
