"""What a crawler reads of the buckets of one page, and the answers it draws from them with
numpy and the rules of :mod:`nearDupe.store.base` (the same for both backends)."""

from __future__ import annotations

from dataclasses import dataclass, field

from nearDupe.shorttext import Sentences
from nearDupe.store.base import SENTENCE_HOLDERS, Holder, Match, confirmed, looked_up
from nearDupe.store.redis_layout import Layout
from nearDupe.store.redis_pipes import Pipes
from nearDupe.store.redis_records import PageRecord, SentenceRecords, page_records, stored_head


def sentence_keys(layout: Layout, sentences: Sentences) -> list[str]:
    """The sentence bucket of each sentence a check of this page looks up (distinct, sorted)."""
    return sorted({layout.sentence_key(h) for h, _ in looked_up(sentences)})


def page_keys(layout: Layout, fp: int, sentences: Sentences) -> list[str]:
    """The buckets a check of this page reads (and leases): its bucket in every table, then
    its sentence_keys."""
    return [key for key, _prefix, _record in layout.buckets(fp)] + sentence_keys(layout, sentences)


@dataclass
class Reading:
    """A page's buckets as read, and the stored pages they lead to."""

    fp: int
    #: (distance, fingerprint) of every distinct stored fingerprint within k, nearest first.
    near: list[tuple[int, int]]
    #: Per table: whether the page's fingerprint is already in its bucket.
    present: list[bool]
    #: (sentence, page tag) of each stored page recorded under a query sentence (the tag: the
    #: top bits of its fingerprint, see :class:`~nearDupe.store.redis_records.SentenceRecords`).
    rows: list[tuple[int, int]]
    #: The query's sentences already recorded for SENTENCE_HOLDERS pages.
    crowded: set[int]
    #: The layout's sentence records (their tags).
    sentence_records: SentenceRecords
    pages: dict[int, list[PageRecord]] = field(default_factory=dict)
    #: The length of every bucket read (and so of every page bucket fetched): a commit
    #: checks that none has grown since.
    lengths: dict[str, int] = field(default_factory=dict)
    #: The writer of this check's own page records (see redis_records.WRITER): a record an
    #: earlier attempt wrote is left out of the answers, so a retry decides as it would have.
    own: bytes = b""

    def holders(self) -> list[Holder]:
        """The stored pages recorded under one of the query's sentences."""
        by_tag: dict[int, list[PageRecord]] = {}
        for fp, records in self.pages.items():
            by_tag.setdefault(self.sentence_records.tag(fp), []).extend(records)
        return [
            Holder(h, r.key, r.fp, r.sketch) for h, tag in self.rows for r in by_tag.get(tag, [])
        ]

    def confirmed(
        self, signature: int | None, confirm_k: int, other_than: str | None = None
    ) -> list[Match]:
        """Per stored fingerprint within k, nearest first: its first page (not keyed
        ``other_than``) that ``signature`` confirms."""
        out = []
        for d, fp in self.near:
            for r in self.pages.get(fp, []):
                if r.key != other_than and confirmed(r.signature, signature, d, confirm_k):
                    out.append(Match(r.key, fp, d))
                    break
        return out


def read(
    layout: Layout,
    fp: int,
    k: int,
    sentences: Sentences,
    values: dict[str, bytes],
    own: bytes = b"",
) -> Reading:
    """The near fingerprints and sentence holders in the buckets ``values`` (key -> bytes);
    ``own``: see Reading.own."""
    near, present = layout.near(fp, k, values)
    rows, crowded = _recorded_under(layout, sentences, values)
    lengths = {key: len(value) for key, value in values.items()}
    return Reading(fp, near, present, rows, crowded, layout.sentences, own=own, lengths=lengths)


def _recorded_under(
    layout: Layout, sentences: Sentences, values: dict[str, bytes]
) -> tuple[list[tuple[int, int]], set[int]]:
    """Reading.rows and Reading.crowded, found in each looked-up sentence's bucket."""
    rows: list[tuple[int, int]] = []
    crowded = set()
    for h, _ in looked_up(sentences):
        found = layout.sentences.tags(values.get(layout.sentence_key(h), b""), h)
        if len(found) >= SENTENCE_HOLDERS:
            crowded.add(h)
        rows += [(h, tag) for tag in found]
    return rows, crowded


async def fetch_pages(pipes: Pipes, layout: Layout, reading: Reading) -> None:
    """Read the page buckets of the near fingerprints and of the sentence holders."""
    heads: dict[str, set[bytes]] = {}  # per page bucket, how its wanted records start
    for _, fp in reading.near:
        heads.setdefault(layout.page_key(fp), set()).add(stored_head(fp))
    for _, tag in reading.rows:  # the tag's bits among the stored ones
        key = layout.page_key(tag << layout.sentences.tag_shift)
        heads.setdefault(key, set()).add(layout.sentences.head(tag))
    if not heads:
        return
    values = await pipes.get_all(sorted(heads))
    for key, value in values.items():
        reading.lengths[key] = len(value)
        for record in page_records(value, layout.page_key_top(key), heads[key]):
            if not (reading.own and record.writer == reading.own):
                reading.pages.setdefault(record.fp, []).append(record)
