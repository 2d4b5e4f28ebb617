"""Re-crawls: a page seen again under a URL the index holds, changed or unchanged
(NEARDUPE_RECRAWL)."""

from __future__ import annotations

from dataclasses import dataclass

from nearDupe.shorttext import Sentences
from nearDupe.simhash import hamming
from nearDupe.store.base import Holder, Sketch, confirmed, shared_sentences

#: NEARDUPE_RECRAWL's values: every page already stored is dropped; or only unchanged ones,
#: a changed page being kept and stored in place of its URL's version.
DROP = "drop"
CHANGED = "changed"
MODES = (DROP, CHANGED)


@dataclass(frozen=True)
class Version:
    """What the index holds under a URL: its newest page, and when the URL was first stored
    and last changed (None: never)."""

    fingerprint: int
    signature: int | None
    #: Its sentences' sketch (None: stored without sentences).
    sketch: Sketch | None
    first_stored: float
    last_changed: float | None
    #: The exact key of the response it was read from (simhash.stored_copy_key; None:
    #: unknown).
    body: int | None = None


@dataclass(frozen=True)
class Seen:
    """A page checked under a URL the index holds: that URL's stored version, and how the
    page compares with it."""

    version: Version
    #: Whether the page is no near-duplicate of the stored version.
    changed: bool
    #: The fingerprint distance to the stored version, and the share of sentences the two
    #: have in common (of both, estimated from the stored sketch; None: no sentences).
    distance: int
    shared: float | None
    #: Whether the page was stored in the version's place (NEARDUPE_RECRAWL = "changed").
    replaced: bool = False


def compare(
    version: Version,
    fp: int,
    signature: int | None,
    sentences: Sentences,
    body: int | None,
    *,
    k: int,
    confirm_k: int,
    share: float,
) -> Seen:
    """How a page compares with its URL's stored ``version``: unchanged when its response
    is the same (its exact ``body`` key), or when it is a near-duplicate of the version by
    the index's own rules (within k, confirmed by the signature; or sharing ``share`` of
    both versions' sentences). So a crawler's other view of the site's template (lines cut
    or kept around the same sentences, or a whole page read again once its site's template
    was learned) is no change."""
    distance = hamming(version.fingerprint, fp)
    if body is not None and body == version.body:
        return Seen(version, False, distance, None)
    if distance <= k and confirmed(version.signature, signature, distance, confirm_k):
        return Seen(version, False, distance, None)
    if version.sketch is None or not sentences:
        return Seen(version, True, distance, None)
    holder = Holder(0, "", version.fingerprint, version.sketch)
    found = shared_sentences(sentences, [holder], fp)
    if not found:
        return Seen(version, True, distance, 0.0)
    same = found[0]
    return Seen(version, not same.is_copy(share), distance, round(same.of_both, 3))
