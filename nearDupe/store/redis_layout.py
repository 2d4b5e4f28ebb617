"""How a Redis index cuts its buckets, and the check of its stored header and layout at open."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from nearDupe.designs import Design
from nearDupe.errors import IndexSettingsMismatch
from nearDupe.store.base import FORMAT_VERSION, IndexHeader

#: Logged under the store's module name, which logging settings know.
logger = logging.getLogger("nearDupe.store.redis")

#: Largest bucket prefix: tables with longer prefixes (10-, 16-, 20-table designs) are cut
#: here so that a bucket holds several fingerprints instead of costing one key per page.
MAX_BUCKET_BITS = 20


def wanted_layout(design: Design, max_bucket_bits: int) -> dict[str, Any]:
    """The layout a new index gets: each table's prefix bits, cut at ``max_bucket_bits``."""
    return {
        "format": FORMAT_VERSION,
        "bucket_bits": [min(t.prefix_bits, max_bucket_bits) for t in design.tables],
    }


def checked_layout(
    reply: Sequence[Any],
    header: IndexHeader,
    design: Design,
    wanted: dict[str, Any],
    *,
    name: str,
    url: str,
) -> dict[str, Any]:
    """The stored layout in the handshake's ``reply``, once the stored header and layout are
    found to fit this crawl's ``header`` and ``design``."""
    stored_header, stored_layout = (json.loads(v) for v in reply[:2])
    if len(reply) > 2 and int(reply[2]):
        logger.warning(
            "Redis index %r at %s held pages but no header (written while Redis had lost "
            "it); re-created with this crawl's settings",
            name,
            url,
        )
    problems = header.mismatches(stored_header)
    if problems:
        raise IndexSettingsMismatch(
            f"Redis index {name!r} at {url} was built with other settings: "
            f"{'; '.join(problems)}. Open it with its own settings or choose another "
            "index name (NEARDUPE_INDEX_NAME) or Redis database."
        )
    if stored_layout.get("format") != FORMAT_VERSION or len(
        stored_layout.get("bucket_bits", [])
    ) != len(design.tables):
        raise IndexSettingsMismatch(
            f"Redis index {name!r} at {url} has an unknown layout {stored_layout}"
        )
    if stored_layout != wanted:
        logger.info(
            "Redis index %r at %s keeps its own bucket layout %s",
            name,
            url,
            stored_layout["bucket_bits"],
        )
    return stored_layout
