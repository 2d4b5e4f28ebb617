"""Decisions: what happened to each item, as stats keys and as JSON lines (NEARDUPE_REPORT)."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from nearDupe.simhash import to_hex
from nearDupe.store.base import Match
from nearDupe.store.droplog import Drop
from nearDupe.store.recrawl import Seen, Version

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Decision:
    """The verdict on one item: kept, dropped (near-duplicate of another page) or skipped."""

    url: str
    decision: Literal["kept", "dropped", "skipped"]
    fingerprint: int | None = None
    duplicate_of: str | None = None
    distance: int | None = None
    reason: str | None = None
    #: For a page whose URL the index held (a re-crawl): ``changed`` or ``unchanged``, its
    #: fingerprint distance and share of sentences against the stored version, and when
    #: the URL was first stored and last changed before (Unix times; None: unknown, never).
    recrawl: Literal["changed", "unchanged"] | None = None
    stored_distance: int | None = None
    stored_shared: float | None = None
    first_stored: float | None = None
    last_changed: float | None = None

    @classmethod
    def drop(cls, url: str, fingerprint: int, match: Match) -> Decision:
        """The page at ``url`` dropped as a copy of ``match`` (reason ``shared-sentences`` when
        matched by its sentences)."""
        reason = None if match.shared is None else "shared-sentences"
        return cls(url, "dropped", fingerprint, match.key, match.distance, reason).seen(match.seen)

    @classmethod
    def stored(
        cls, url: str, fingerprint: int | None = None, match: Match | None = None
    ) -> Decision:
        """A page dropped because the index already holds its URL (a re-crawl): ``match``
        is its URL's version (Match.seen says how the page compares), or the page stored
        before the URL table that its fingerprint found; None: an unfingerprinted page found
        by its exact key."""
        if match is None:
            decision = cls(url, "dropped", None, url, None, "already-stored")
            return replace(decision, recrawl="unchanged", stored_distance=0)
        decision = cls(url, "dropped", fingerprint, match.key, None, "already-stored")
        if match.seen is None:
            return replace(
                decision,
                recrawl="unchanged",
                stored_distance=match.distance,
                stored_shared=match.shared,
            )
        return decision.seen(match.seen)

    @classmethod
    def held(cls, url: str, version: Version, body: int | None) -> Decision:
        """An unfingerprinted response (an error status, template-only text) under a URL the
        index holds, read from a response of exact key ``body``: dropped as already stored,
        as no new version of its page; changed unless it is the response stored."""
        decision = cls(url, "dropped", None, url, None, "already-stored")
        return replace(
            decision,
            recrawl="unchanged" if body is not None and body == version.body else "changed",
            first_stored=version.first_stored,
            last_changed=version.last_changed,
        )

    @classmethod
    def changed(cls, url: str, fingerprint: int, seen: Seen) -> Decision:
        """A changed page kept, stored in place of its URL's version."""
        return cls(url, "kept", fingerprint).seen(seen)

    def seen(self, seen: Seen | None) -> Decision:
        """This decision with how its page compared with its URL's stored version."""
        if seen is None:
            return self
        return replace(
            self,
            recrawl="changed" if seen.changed else "unchanged",
            stored_distance=seen.distance,
            stored_shared=seen.shared,
            first_stored=seen.version.first_stored,
            last_changed=seen.version.last_changed,
        )

    def to_drop(self) -> Drop:
        """A drop as the index remembers it (see nearDupe.store.droplog), dated now."""
        assert self.fingerprint is not None and self.duplicate_of is not None, "a drop"
        return Drop(
            self.url, self.fingerprint, self.duplicate_of, self.distance, self.reason, time.time()
        )

    def to_json(self) -> dict[str, Any]:
        """The report line: the fingerprint as 16 hex digits."""
        return {
            "url": self.url,
            "decision": self.decision,
            "fingerprint": None if self.fingerprint is None else to_hex(self.fingerprint),
            "duplicate_of": self.duplicate_of,
            "distance": self.distance,
            "reason": self.reason,
            "recrawl": self.recrawl,
            "stored_distance": self.stored_distance,
            "stored_shared": self.stored_shared,
            "first_stored": iso_time(self.first_stored),
            "last_changed": iso_time(self.last_changed),
        }

    @property
    def message(self) -> str:
        """Why an item was dropped, naming the page it duplicates (and, for a page whose URL
        the index held, how it compares with the version stored)."""
        if self.reason == "already-stored":
            return f"already stored ({self.against_stored}): {self.url}"
        why = "its sentences" if self.distance is None else f"distance {self.distance}"
        line = f"near-duplicate of {self.duplicate_of} ({why}): {self.url}"
        return line if self.recrawl is None else f"{line}, {self.against_stored}"

    @property
    def against_stored(self) -> str:
        """How the page compares with its URL's stored version, e.g. ``unchanged, distance
        1`` or ``changed, distance 24, 0.1 of its sentences``."""
        parts = [str(self.recrawl), f"distance {self.stored_distance}"]
        if self.stored_shared is not None:
            parts.append(f"{self.stored_shared:g} of its sentences")
        return ", ".join(parts)


def iso_time(seconds: float | None) -> str | None:
    """A Unix time as an ISO 8601 UTC string to the second (None stays None)."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


class ReportWriter:
    """Appends one JSON object per decision to a file (created with its parent directories)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # backslashreplace: a lone surrogate in a URL becomes a JSON \uXXXX escape, not an error.
        self._file = self.path.open("a", encoding="utf-8", errors="backslashreplace")
        self.failed = False

    def write(self, decision: Decision) -> None:
        """Write and flush one line, so a crash loses no decision already made.

        A report that cannot be written (disk full, file gone) never costs an item: the
        error is logged once and the report stops.
        """
        if self.failed:
            return
        try:
            self._file.write(json.dumps(decision.to_json(), ensure_ascii=False) + "\n")
            self._file.flush()
        except OSError as exc:
            self.failed = True
            logger.error(
                "nearDupe: cannot write the report %s (%s); report stopped", self.path, exc
            )

    def close(self) -> None:
        """Close the file."""
        try:
            self._file.close()
        except OSError as exc:
            logger.error("nearDupe: cannot finish the report %s (%s)", self.path, exc)


def read_report(path: str | Path) -> list[dict[str, Any]]:
    """Every decision in a report file."""
    with Path(path).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def record(stats: Any, report: ReportWriter | None, decision: Decision) -> None:
    """Count a decision under ``neardupe/`` in the crawl's stats and write its report line."""
    stats.inc_value("neardupe/seen")
    if decision.decision == "skipped":
        stats.inc_value(f"neardupe/skipped/{decision.reason}")
        logger.debug("nearDupe: kept %s unchecked (%s)", decision.url, decision.reason)
    else:
        stats.inc_value(f"neardupe/{decision.decision}")
    if decision.distance is not None:
        stats.inc_value(f"neardupe/distance/{decision.distance}")
    elif decision.decision == "dropped":  # matched by its sentences, or already stored
        stats.inc_value(f"neardupe/dropped_by/{decision.reason}")
    if decision.recrawl is not None:
        stats.inc_value(f"neardupe/recrawl/{decision.recrawl}")
        if decision.stored_distance is not None:
            stats.inc_value(f"neardupe/recrawl/distance/{decision.stored_distance}")
    if report is not None:
        report.write(decision)
