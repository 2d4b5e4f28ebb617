"""Tests of the rules for scripts other than Latin and Chinese."""

from __future__ import annotations

from nearDupe.analysis import analyze_text
from nearDupe.features import FeatureSettings
from nearDupe.shorttext import sentences
from tests import test_store_contract as contract
from tests.test_store_contract import Backend, run

#: The contract's fixtures: each store test runs on a real embedded index and a real Redis.
backend = contract.backend
redis_for_contract = contract.redis_for_contract

#: A Thai notice of short lines (each under 70 letters), its sentences ended by spaces.
NOTICE = [
    "เทศบาลเมืองประกาศปิดถนนสายหลัก ตั้งแต่วันจันทร์หน้า",
    "เพื่อซ่อมแซมท่อระบายน้ำที่ชำรุด จากพายุเมื่อเดือนที่แล้ว",
    "ผู้ขับขี่ควรใช้เส้นทางเลี่ยง ผ่านถนนริมแม่น้ำ",
    "นายกเทศมนตรีกล่าวว่างานจะเสร็จ ภายในสามสัปดาห์",
    "ร้านค้าในย่านตลาดเก่ายังเปิดตามปกติ แต่ที่จอดรถมีจำกัด",
    "รถประจำทางสายสิบสองจะเปลี่ยนเส้นทางชั่วคราว ตลอดช่วงการก่อสร้าง",
    "ชาวบ้านบางส่วนกังวลเรื่องฝุ่นและเสียงดัง ในช่วงกลางคืน",
    "เจ้าหน้าที่จะตรวจวัดคุณภาพอากาศทุกวัน และรายงานผลทางเว็บไซต์",
    "โรงเรียนสองแห่งในพื้นที่ได้รับแจ้ง ให้เลื่อนเวลาเข้าเรียน",
    "ผู้ที่มีข้อสงสัยสามารถติดต่อสำนักงานเขต ได้ในวันและเวลาราชการ",
    "งบประมาณของโครงการนี้มาจากกองทุนฟื้นฟู ของจังหวัด",
    "เทศบาลขออภัยในความไม่สะดวก ที่เกิดขึ้นกับประชาชน",
]
#: Another Thai text on another topic, of lines as short.
HARVEST = [
    "เกษตรกรในภาคเหนือเริ่มเก็บเกี่ยวข้าว เร็วกว่าปีก่อนหนึ่งสัปดาห์",
    "ฝนที่ตกตามฤดูกาลทำให้ผลผลิตดีขึ้น ในหลายอำเภอ",
    "ราคาข้าวเปลือกที่โรงสีรับซื้อยังทรงตัว ตั้งแต่ต้นเดือน",
    "สหกรณ์การเกษตรเตรียมโกดังเพิ่ม เพื่อเก็บข้าวของสมาชิก",
    "เจ้าหน้าที่แนะนำให้ตากข้าวให้แห้งก่อนขาย เพื่อให้ได้ราคาดี",
    "บางหมู่บ้านจัดงานบุญหลังเก็บเกี่ยว ตามประเพณีท้องถิ่น",
    "นักวิชาการคาดว่าผลผลิตรวมจะสูงขึ้น เมื่อเทียบกับปีที่แล้ว",
    "แต่ยังมีความกังวลเรื่องต้นทุนปุ๋ย ที่เพิ่มขึ้นต่อเนื่อง",
]


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


def test_a_thai_text_of_short_lines_cut_by_a_third_is_found(backend: Backend) -> None:
    """Thai ends its sentences with a space, not a stop: the parts of short lines are its
    sentences, so a copy missing its last third shares the rest; another text does not."""
    features = FeatureSettings()
    original, other, cut = (
        analyze_text("\n".join(lines), 200, features) for lines in (NOTICE, HARVEST, NOTICE[:8])
    )
    assert original.sentences and cut.sentences

    async def body() -> None:
        store = backend.open()
        for key, page in (("notice", original), ("harvest", other)):
            assert page.fingerprint is not None
            fp, signature, units = page.fingerprint, page.signature, page.sentences
            assert await store.check_and_add(fp, key, signature, units) is None
        assert cut.fingerprint is not None
        match = await store.check_and_add(cut.fingerprint, "cut", cut.signature, cut.sentences)
        assert match is not None and (match.key, match.distance) == ("notice", None)
        assert await store.count() == 2
        await store.close()

    run(body)


def test_a_thai_name_among_latin_ones_is_no_sentence() -> None:
    # A language menu of an English page names Thai in its script: no unit of Thai text.
    assert sentences("English Français ภาษาไทย Deutsch Español") == ()
    assert sentences("English Français ภาษาไทย Deutsch Español.") != ()
