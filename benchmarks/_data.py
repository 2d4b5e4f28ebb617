"""Where the shared evaluation data lives, and pages decoded the way the plugin reads them."""

from __future__ import annotations

import os
from pathlib import Path

from scrapy.http import HtmlResponse

from nearDupe.analysis import detect_encoding
from nearDupe.decoding import decode as read_response
from nearDupe.decoding import redecode


def data_dir() -> Path:
    """The shared evaluation data directory (NEARDUPE_DATA overrides ``../shared/data``)."""
    override = os.environ.get("NEARDUPE_DATA")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def decode(body: bytes, url: str) -> str:
    """Page text as the plugin reads it when the server sends no charset (Scrapy's decoding,
    mended where nearDupe.decoding finds it wrong; "" for a body it skips)."""
    response = HtmlResponse(url=url, body=body, headers={"Content-Type": "text/html"})
    decoded = read_response(response) or redecode(response, detect_encoding(body))
    return decoded.html
