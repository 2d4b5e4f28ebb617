"""Where the shared evaluation data lives, and pages decoded the way Scrapy decodes them."""

from __future__ import annotations

import os
from pathlib import Path

from scrapy.http import HtmlResponse


def data_dir() -> Path:
    """The shared evaluation data directory (NEARDUPE_DATA overrides ``../shared/data``)."""
    override = os.environ.get("NEARDUPE_DATA")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def decode(body: bytes, url: str) -> str:
    """Page text as Scrapy decodes it when the server sends no charset."""
    return HtmlResponse(url=url, body=body, headers={"Content-Type": "text/html"}).text
