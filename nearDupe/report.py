"""Decisions: what happened to each item, as stats keys and as JSON lines (NEARDUPE_REPORT)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from nearDupe.simhash import to_hex


@dataclass(frozen=True)
class Decision:
    """The verdict on one item: kept, dropped (near-duplicate of another page) or skipped."""

    url: str
    decision: Literal["kept", "dropped", "skipped"]
    fingerprint: int | None = None
    duplicate_of: str | None = None
    distance: int | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The report line: the fingerprint as 16 hex digits."""
        return {
            "url": self.url,
            "decision": self.decision,
            "fingerprint": None if self.fingerprint is None else to_hex(self.fingerprint),
            "duplicate_of": self.duplicate_of,
            "distance": self.distance,
            "reason": self.reason,
        }

    @property
    def message(self) -> str:
        """Why an item was dropped, naming the page it duplicates."""
        return f"near-duplicate of {self.duplicate_of} (distance {self.distance}): {self.url}"


class ReportWriter:
    """Appends one JSON object per decision to a file (created with its parent directories)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")

    def write(self, decision: Decision) -> None:
        """Write and flush one line, so a crash loses no decision already made."""
        self._file.write(json.dumps(decision.to_json(), ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def read_report(path: str | Path) -> list[dict[str, Any]]:
    """Every decision in a report file."""
    with Path(path).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
