"""The drops an index remembers, so that the inspect commands explain any index.

The index itself keeps only kept pages; this log keeps the last :data:`DROP_LOG_LIMIT` drops
(the page, the page it duplicates, the distance, when), in the index's SQLite file or in a
capped Redis list beside the index's keys.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass
from typing import Any

from nearDupe.simhash import to_hex

#: Drops remembered per index (the oldest go first): ~150 B each, 15 MB at most.
DROP_LOG_LIMIT = 100_000

#: The embedded index's table of drops (in its SQLite file, written with its pages).
SCHEMA = """
CREATE TABLE IF NOT EXISTS drops (
    id INTEGER PRIMARY KEY, url TEXT NOT NULL, fp TEXT NOT NULL, duplicate_of TEXT NOT NULL,
    distance INTEGER, reason TEXT, added REAL NOT NULL);
"""


@dataclass(frozen=True)
class Drop:
    """One dropped page: its URL and fingerprint, the page it duplicates, how close, when."""

    url: str
    fingerprint: int
    duplicate_of: str
    distance: int | None
    reason: str | None
    added: float

    def to_decision(self) -> dict[str, Any]:
        """The drop as a line of a NEARDUPE_REPORT file."""
        return {
            "url": self.url,
            "decision": "dropped",
            "fingerprint": to_hex(self.fingerprint),
            "duplicate_of": self.duplicate_of,
            "distance": self.distance,
            "reason": self.reason,
        }

    def to_json(self) -> str:
        """The drop as one JSON value (the Redis list's entries)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, value: str | bytes) -> Drop:
        """Inverse of :meth:`to_json`."""
        return cls(**json.loads(value))


def insert(db: sqlite3.Connection, drops: list[Drop]) -> None:
    """Add drops to the embedded table and forget the oldest past the limit (in the caller's
    transaction). Fingerprints are stored as hex: SQLite integers are signed."""
    db.executemany(
        "INSERT INTO drops (url, fp, duplicate_of, distance, reason, added) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [
            (d.url, to_hex(d.fingerprint), d.duplicate_of, d.distance, d.reason, d.added)
            for d in drops
        ],
    )
    db.execute("DELETE FROM drops WHERE id <= (SELECT MAX(id) FROM drops) - ?", (DROP_LOG_LIMIT,))


def read(db: sqlite3.Connection) -> list[Drop]:
    """Every remembered drop of an embedded index, oldest first (none in an older index)."""
    try:
        rows = db.execute(
            "SELECT url, fp, duplicate_of, distance, reason, added FROM drops ORDER BY id"
        ).fetchall()
    except sqlite3.OperationalError:  # written before drops were kept
        return []
    return [
        Drop(url, int(fp, 16), dup, d, reason, added) for url, fp, dup, d, reason, added in rows
    ]
