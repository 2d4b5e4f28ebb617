"""Copies with a light edit in every sentence: found by their word shingles, on both backends,
while look-alike texts, template lines and old indexes stay apart."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from nearDupe.analysis import analyze_text
from nearDupe.errors import IndexSettingsMismatch
from nearDupe.features import FeatureSettings
from nearDupe.shorttext import (
    PROBE_SENTENCES,
    SHINGLE_PAGE_LETTERS,
    letters,
    normalize,
    sentences,
)
from nearDupe.simhash import ALGORITHM_VERSION
from nearDupe.store import IndexHeader
from nearDupe.store.base import (
    CLOSE_BITS,
    CLOSE_CONTAINED,
    SENTENCE_CONTAINED,
    holders_of,
    looked_up,
    recorded,
    shared_sentences,
)
from tests import test_store_contract as contract
from tests.test_sitetemplate import taught
from tests.test_store_contract import Backend, run

#: The contract's fixtures: each store test runs on a real embedded index and a real Redis.
backend = contract.backend
redis_for_contract = contract.redis_for_contract

ORIGINAL = [
    "Mr Patel said the council would organise a review of the harbour programme next month, "
    "once the engineers have delivered their report.",
    "The city spent 1,000 pounds on grey paving stones for the centre of the old market, "
    "which had been closed to traffic since the floods.",
    "Critics said two of the new ferries had travelled half empty since the spring, while "
    "the older boats were still crowded at weekends.",
    "Unemployment in the district fell to 4 per cent last year, the lowest figure recorded "
    "there in more than a decade of surveys.",
    "The mayor says the plan will be finished before the theatre reopens in the autumn with "
    "a season of plays by local writers.",
    "Residents have been asked to recognise the work of the volunteers who cleaned the beach "
    "after the storm in the first week of January.",
    "A second survey of the river banks found no sign of the pollution reported in June by "
    "anglers fishing below the paper mill.",
    "Dr Jones told reporters that the defence of the budget would take several weeks of "
    "meetings with the opposition parties on the council.",
]
#: One light edit in every sentence: an honorific dropped, a spelling, a number written
#: otherwise, "said" for "says", "%" for "per cent", two words swapped, a word deleted.
EDITED = [
    "Patel said the council would organise a review of the harbour programme next month, "
    "once the engineers have delivered their report.",
    "The city spent 1,000 pounds on gray paving stones for the centre of the old market, "
    "which had been closed to traffic since the floods.",
    "Critics say two of the new ferries had travelled half empty since the spring, while "
    "the older boats were still crowded at weekends.",
    "Unemployment in the district fell to 4% last year, the lowest figure recorded "
    "there in more than a decade of surveys.",
    "The mayor says the plan will be finished before the theater reopens in the autumn with "
    "a season of plays by local writers.",
    "Residents have been asked to recognize the work of the volunteers who cleaned the beach "
    "after the storm in the first week of January.",
    "A second survey of the banks river found no sign of the pollution reported in June by "
    "anglers fishing below the paper mill.",
    "Dr Jones told reporters that the defence of the budget would take weeks of "
    "meetings with the opposition parties on the council.",
]
OTHER = [
    "The library will open a reading room for children on the ground floor in March.",
    "Its director said the books had been donated by families from the whole county.",
    "Opening hours will be longer on Saturdays, and a cafe is planned for next year.",
    "The building, a former post office, was bought by the city for a modest sum.",
]


def _text(lines: list[str]) -> str:
    return "\n".join(lines)


def test_a_light_edit_in_every_sentence_keeps_most_shingles_and_no_sentence() -> None:
    assert {normalize(s) for s in ORIGINAL}.isdisjoint(normalize(s) for s in EDITED)
    original, copy = dict(sentences(_text(ORIGINAL))), dict(sentences(_text(EDITED)))
    shared = sum(original[h] for h in original.keys() & copy.keys())
    assert shared >= 0.6 * sum(original.values())
    # Copies choose alike: the original is recorded under units the copy looks up.
    recorded_under = {h for h, _ in recorded(sentences(_text(ORIGINAL)))}
    assert recorded_under & {h for h, _ in looked_up(sentences(_text(EDITED)))}


def test_an_edited_copy_is_found_and_another_story_is_not(backend: Backend) -> None:
    rng = random.Random(3)
    fps = [rng.getrandbits(64) for _ in range(3)]  # pairwise far apart

    async def body() -> None:
        store = backend.open()
        assert await store.check_and_add(fps[0], "a", None, sentences(_text(ORIGINAL))) is None
        template = ORIGINAL[-2:]  # two sentences every page of a site has
        other = sentences(_text(OTHER + template))
        assert await store.check_and_add(fps[1], "b", None, other) is None
        match = await store.check_and_add(fps[2], "c", None, sentences(_text(EDITED)))
        assert match is not None and (match.key, match.distance) == ("a", None)
        assert match.shared is not None and match.shared >= 0.6
        assert await store.count() == 2
        await store.close()

    run(body)


def _swapped(lines: list[str], at: float) -> list[str]:
    """Each line with two adjacent words swapped, ``at`` its way along: a second edit."""
    out = []
    for line in lines:
        words = line.split(" ")
        i = int(len(words) * at)
        words[i], words[i + 1] = words[i + 1], words[i]
        out.append(" ".join(words))
    return out


def test_a_copy_holding_under_55_percent_is_found_when_its_words_agree(
    backend: Backend,
) -> None:
    """Two edits in every sentence leave a copy under SENTENCE_CONTAINED of its original's
    shingles: a stored page within CLOSE_BITS of its fingerprint (beyond k) is its original;
    the same units under a far fingerprint are another text."""
    copy = sentences(_text(_swapped(EDITED, 0.6)))
    (shared,) = shared_sentences(copy, holders_of(sentences(_text(ORIGINAL)), "a", 0))
    assert CLOSE_CONTAINED <= max(shared.of_query, shared.of_stored) < SENTENCE_CONTAINED
    rng = random.Random(5)
    fp = rng.getrandbits(64)
    near = fp ^ sum(1 << b for b in rng.sample(range(64), CLOSE_BITS))
    far = fp ^ sum(1 << b for b in rng.sample(range(64), CLOSE_BITS + 1))

    async def body() -> None:
        store = backend.open()
        assert await store.check_and_add(fp, "a", None, sentences(_text(ORIGINAL))) is None
        assert await store.query(far, None, None, copy) == []
        match = await store.check_and_add(near, "c", None, copy)
        assert match is not None and (match.key, match.distance) == ("a", None)
        assert await store.count() == 1
        await store.close()

    run(body)


def test_pawsx_look_alikes_joined_are_not_copies(backend: Backend) -> None:
    """Real look-alike texts (PAWS-X Chinese pairs: the same words, an entity swapped or a
    clause moved), twelve pairs joined, are different texts of 200+ letters each."""
    import csv

    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "pawsx-zh" / "dev_2k.tsv"
    if not path.exists():
        pytest.skip(f"no evaluation data at {path}")
    with path.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    pairs = [(r["sentence1"], r["sentence2"]) for r in rows if r["label"] == "0"][:480]
    joined = [pairs[i : i + 12] for i in range(0, len(pairs), 12)]
    firsts = [sentences("\n".join(a for a, _ in group)) for group in joined]
    seconds = [sentences("\n".join(b for _, b in group)) for group in joined]
    assert min(sum(n for _, n in s) for s in firsts) >= SHINGLE_PAGE_LETTERS
    rng = random.Random(4)

    async def body() -> None:
        store = backend.open()
        for i, units in enumerate(firsts):
            assert await store.check_and_add(rng.getrandbits(64), f"a{i}", None, units) is None
        for units in seconds:
            assert await store.query(rng.getrandbits(64), 0, None, units) == []
        await store.close()

    run(body)


def test_lines_the_site_taught_give_no_units() -> None:
    features = FeatureSettings()
    notice = "Subscribe to our newsletter for the news of the harbor and the market every day."
    site = taught((1, "A story of its own about the ferries, told in a few words.\n" + notice))
    page = analyze_text(_text(ORIGINAL) + "\n" + notice, 0, features, site, 7)
    assert page.sentences == analyze_text(_text(ORIGINAL), 0, features).sentences
    # Without its site, the notice's shingles are the page's too.
    whole = analyze_text(_text(ORIGINAL) + "\n" + notice, 0, features).sentences
    assert set(whole) > set(page.sentences)


def test_hostile_text_gives_bounded_units() -> None:
    ugly = "\ud800 Lone surrogates\x00 and NULs \udfff in a sentence of many words here. " * 400
    units = sentences(ugly)
    assert 0 < len(units) <= PROBE_SENTENCES
    rng = random.Random(2)
    words = ["".join(rng.choices("abcdefghij", k=6)) for _ in range(200_000)]
    huge = " ".join(" ".join(words[i : i + 20]) + "." for i in range(0, len(words), 20))
    assert len(sentences(huge)) == PROBE_SENTENCES


def test_an_index_of_whole_sentence_units_is_refused(backend: Backend) -> None:
    """Pages stored by ALGORITHM_VERSION 3 hold whole-sentence units, which a shingle never
    equals: such an index is refused with a message naming the algorithm, never mixed."""
    assert ALGORITHM_VERSION >= 4

    async def body() -> None:
        store = backend.open(IndexHeader(algorithm=3))
        await store.check_and_add(1, "a", None, ((5, 40),))
        await store.close()
        with pytest.raises(IndexSettingsMismatch, match="algorithm: index has 3"):
            backend.open()

    run(body)


def test_a_long_page_cut_by_a_third_is_held_whole_by_its_original() -> None:
    """Both keep their 256 smallest shingles; their letters are those of the whole pages."""
    rng = random.Random(6)
    words = ["".join(rng.choices("abcdefghij", k=6)) for _ in range(3_000)]
    lines = [" ".join(words[i : i + 20]).capitalize() + "." for i in range(0, len(words), 20)]
    original, copy = sentences(_text(lines)), sentences(_text(lines[: 2 * len(lines) // 3]))
    assert len(original) == len(copy) == PROBE_SENTENCES
    assert 1.3 < letters(original) / letters(copy) < 1.7
    (shared,) = shared_sentences(copy, holders_of(original, "a", 0))
    assert shared.of_query > 0.9 and 0.5 < shared.of_stored < 0.85
    assert shared.is_copy(0.3)


BRIEF = (
    "市气象台今天发布消息，预计未来三天本市以晴为主。"
    "周末起有一次降雨过程，请市民注意出行安全。"
    "各区县已做好防汛准备。"
)
#: One light edit in each sentence: a numeral as a digit, a character deleted, one replaced.
BRIEF_EDITED = (
    "市气象台今天发布消息，预计未来3天本市以晴为主。"
    "周末有一次降雨过程，请市民注意出行安全。"
    "各区县以做好防汛准备。"
)
#: The same words told otherwise (a PAWS-X look-alike): the days and the weather swapped.
BRIEF_LOOK_ALIKE = (
    "市气象台今天发布消息，预计周末本市以晴为主。"
    "未来三天起有一次降雨过程，请市民注意出行安全。"
    "各区县已做好防汛准备。"
)
HEADLINE = "本市未来三天以晴为主"


def _brief(text: str, headline: str) -> tuple[int | None, tuple[tuple[int, int], ...]]:
    page = analyze_text(text, 200, FeatureSettings(), None, 1, headline)
    return page.fingerprint, page.sentences


def test_a_brief_edited_in_every_sentence_is_found_under_its_headline(backend: Backend) -> None:
    """A brief (under SHINGLE_PAGE_LETTERS, an exact-hash fingerprint) shares no sentence with
    its copy edited in every sentence, but most of its shingles; they count under its headline
    only: the copy under another headline, or without one, is another page."""
    fp, units = _brief(BRIEF, HEADLINE)
    assert sum(n for _, n in units) < SHINGLE_PAGE_LETTERS
    copy_fp, copy = _brief(BRIEF_EDITED, HEADLINE)
    assert copy_fp != fp and {u for u in units if u[1]}.isdisjoint(copy)

    async def body() -> None:
        store = backend.open()
        assert await store.check_and_add(fp, "a", None, units) is None
        (match,) = await store.query(copy_fp, 0, None, copy)
        assert (match.key, match.distance) == ("a", None)
        for text, headline in ((BRIEF_EDITED, "周末有雨"), (BRIEF_EDITED, "")):
            other_fp, other = _brief(text, headline)
            assert await store.query(other_fp, 0, None, other) == []
        await store.close()

    run(body)


def test_a_brief_look_alike_is_apart_under_another_headline_only() -> None:
    """Shingles of the same words told otherwise are held as a copy's are: under the brief's
    headline the look-alike would be taken for a copy; under its own, it is another page."""
    original = holders_of(_brief(BRIEF, HEADLINE)[1], "a", 0)
    (apart,) = shared_sentences(_brief(BRIEF_LOOK_ALIKE, "周末有雨")[1], original)
    assert apart.keyed == 0 and not apart.is_copy(0.3)
    (alike,) = shared_sentences(_brief(BRIEF_LOOK_ALIKE, HEADLINE)[1], original)
    assert alike.keyed >= 9 and alike.is_copy(0.3)
