"""NEARDUPE_* setting names, defaults and the frozen config read once from Scrapy settings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings
from scrapy.utils.project import data_path

from nearDupe.designs import Design
from nearDupe.features import FeatureSettings
from nearDupe.store import is_redis_url, public_location
from nearDupe.store.base import NO_CONFIRMATION, SENTENCE_SHARE, IndexHeader

#: Default k, for both backends: the paper's k=3, whose 4-table design answers a lookup from a
#: few thousand candidates even at 10^8 pages; the copies that need k=8-10 are caught by
#: their sentences (docs/quality.md).
DEFAULT_K = 3
#: Default bound on fingerprint distance plus confirmation-signature distance (docs/quality.md).
DEFAULT_CONFIRM_K = 22

#: Every setting nearDupe reads, with its default (documented in the README's table).
DEFAULTS: dict[str, Any] = {
    "NEARDUPE_ENABLED": True,
    "NEARDUPE_INDEX": None,  # None: <project>/.scrapy/neardupe
    "NEARDUPE_INDEX_NAME": "neardupe",
    "NEARDUPE_REDIS_CLUSTER": False,
    "NEARDUPE_REDIS_PAGES": 0,  # pages a new Redis index is laid out for (0: up to ~10^7)
    "NEARDUPE_K": DEFAULT_K,
    "NEARDUPE_CONFIRM_K": DEFAULT_CONFIRM_K,
    "NEARDUPE_SENTENCE_SHARE": SENTENCE_SHARE,
    "NEARDUPE_DESIGN": None,  # None: the smallest design for k (4-table for 3, blocks-K-K+1)
    "NEARDUPE_MIN_TEXT_LENGTH": 200,
    "NEARDUPE_MAX_HTML_CHARS": 2_000_000,
    "NEARDUPE_TEXT_FIELD": None,
    "NEARDUPE_REPORT": None,
    "NEARDUPE_WORKERS": None,  # None: one process per CPU core; 0: a thread, no processes
    "NEARDUPE_COMMIT_INTERVAL": 1.0,
    "NEARDUPE_GC_FREEZE": True,  # long-lived objects out of full garbage collections
    # Seconds a worker process may spend on one page (a typical page takes ~10 ms; 600,000
    # <p> took 5.8 s): past it the page is skipped as too-slow. 0: no limit.
    "NEARDUPE_ANALYSIS_TIMEOUT": 2.0,
    # How text becomes features (FeatureSettings' fields); recorded in the index header.
    "NEARDUPE_FEATURES": {},
}


@dataclass(frozen=True)
class Config:
    """nearDupe's settings, read and checked once (defaults: :data:`DEFAULTS`)."""

    index: str
    index_name: str
    redis_cluster: bool
    k: int
    confirm_k: int
    sentence_share: float
    design: str
    min_text_length: int
    max_html_chars: int
    text_field: str | None
    report: str | None
    workers: int
    commit_interval: float
    gc_freeze: bool = True
    analysis_timeout: float = 2.0
    features: FeatureSettings = field(default_factory=FeatureSettings)
    redis_pages: int = 0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Config:
        """Read NEARDUPE_* settings; raise NotConfigured when nearDupe is disabled."""

        def get(name: str) -> Any:
            return settings.get(name, DEFAULTS[name])

        if not settings.getbool("NEARDUPE_ENABLED", True):
            raise NotConfigured("nearDupe is disabled (NEARDUPE_ENABLED=False)")
        k = settings.getint("NEARDUPE_K", DEFAULT_K)
        try:
            design = Design.named(get("NEARDUPE_DESIGN")) if get("NEARDUPE_DESIGN") else None
            design = design or Design.default_for(k)
        except ValueError as exc:
            raise ValueError(f"NEARDUPE_DESIGN / NEARDUPE_K: {exc}") from None
        if not 0 <= k <= design.k:
            raise ValueError(
                f"NEARDUPE_K={k} must be within 0..{design.k} for design {design.name}"
            )
        confirm_k = settings.getint("NEARDUPE_CONFIRM_K", DEFAULT_CONFIRM_K)
        if not 0 <= confirm_k <= NO_CONFIRMATION:
            raise ValueError(
                f"NEARDUPE_CONFIRM_K={confirm_k} must be within 0..{NO_CONFIRMATION} "
                f"({NO_CONFIRMATION}: off)"
            )
        sentence_share = settings.getfloat("NEARDUPE_SENTENCE_SHARE", SENTENCE_SHARE)
        if not 0 < sentence_share <= 1:
            raise ValueError(f"NEARDUPE_SENTENCE_SHARE={sentence_share} must be within (0, 1]")
        try:
            features = FeatureSettings.from_dict(settings.getdict("NEARDUPE_FEATURES"))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"NEARDUPE_FEATURES: {exc}") from None
        workers = get("NEARDUPE_WORKERS")
        redis_pages = settings.getint("NEARDUPE_REDIS_PAGES", 0)
        if redis_pages < 0:
            raise ValueError(f"NEARDUPE_REDIS_PAGES={redis_pages} must be 0 or more")
        return cls(
            index=get("NEARDUPE_INDEX") or data_path("neardupe"),
            index_name=get("NEARDUPE_INDEX_NAME") or "neardupe",
            redis_cluster=settings.getbool("NEARDUPE_REDIS_CLUSTER", False),
            k=k,
            confirm_k=confirm_k,
            sentence_share=sentence_share,
            design=design.name,
            min_text_length=settings.getint(
                "NEARDUPE_MIN_TEXT_LENGTH", DEFAULTS["NEARDUPE_MIN_TEXT_LENGTH"]
            ),
            max_html_chars=settings.getint(
                "NEARDUPE_MAX_HTML_CHARS", DEFAULTS["NEARDUPE_MAX_HTML_CHARS"]
            ),
            text_field=get("NEARDUPE_TEXT_FIELD") or None,
            report=get("NEARDUPE_REPORT") or None,
            workers=(os.cpu_count() or 1) if workers is None else int(workers),
            commit_interval=settings.getfloat(
                "NEARDUPE_COMMIT_INTERVAL", DEFAULTS["NEARDUPE_COMMIT_INTERVAL"]
            ),
            gc_freeze=settings.getbool("NEARDUPE_GC_FREEZE", True),
            analysis_timeout=settings.getfloat(
                "NEARDUPE_ANALYSIS_TIMEOUT", DEFAULTS["NEARDUPE_ANALYSIS_TIMEOUT"]
            ),
            features=features,
            redis_pages=redis_pages,
        )

    @property
    def header(self) -> IndexHeader:
        """The index header these settings require."""
        return IndexHeader.for_settings(
            self.design, self.k, self.features, self.confirm_k, self.sentence_share
        )

    def store_options(self) -> dict[str, Any]:
        """The options ``open_store`` takes for this index (the crawl's and the commands')."""
        if self.is_redis:
            return {
                "name": self.index_name,
                "cluster": self.redis_cluster,
                "pages": self.redis_pages,
            }
        return {"commit_interval": self.commit_interval}

    @property
    def public_index(self) -> str:
        """The index location as logs, reports and commands show it (no credentials)."""
        return public_location(self.index)

    @property
    def is_redis(self) -> bool:
        """Whether the index is a shared Redis rather than the embedded directory."""
        return is_redis_url(self.index)
