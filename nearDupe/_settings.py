"""NEARDUPE_* setting names, defaults and the frozen config read once from Scrapy settings."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings
from scrapy.utils.project import data_path

from nearDupe.designs import Design, known_designs
from nearDupe.errors import SettingsError
from nearDupe.features import FeatureSettings
from nearDupe.mirrors import MirrorRule
from nearDupe.store import recrawl
from nearDupe.store.base import NO_CONFIRMATION, SENTENCE_SHARE, IndexHeader
from nearDupe.store.location import REDIS_SCHEMES, is_redis_url, public_location

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
    # The item field the pipeline gives each item it keeps its page's main text in.
    "NEARDUPE_TEXT_ITEM_FIELD": None,
    "NEARDUPE_REPORT": None,
    "NEARDUPE_WORKERS": None,  # None: one process per CPU core; 0: a thread, no processes
    "NEARDUPE_COMMIT_INTERVAL": 1.0,
    "NEARDUPE_GC_FREEZE": True,  # long-lived objects out of full garbage collections
    # Seconds a worker process may spend on one page (a typical page takes ~10 ms; 600,000
    # <p> took 5.8 s): past it the page is skipped as too-slow. 0: no limit.
    "NEARDUPE_ANALYSIS_TIMEOUT": 2.0,
    # How text becomes features (FeatureSettings' fields); recorded in the index header.
    "NEARDUPE_FEATURES": {},
    # Start a crawl whose index does not answer (items kept unchecked, recorded once it does)
    # instead of refusing to start it.
    "NEARDUPE_START_WITHOUT_INDEX": False,
    # Skip hosts whose first decided pages are nearly all copies of one other host's pages
    # (nearDupe/mirrors.py): MIRROR_SHARE of their first MIRROR_PAGES pages.
    "NEARDUPE_SKIP_MIRRORS": False,
    "NEARDUPE_MIRROR_SHARE": 0.9,
    "NEARDUPE_MIRROR_PAGES": 20,
    # The share of a mirror's requests still fetched, to find pages of its own.
    "NEARDUPE_MIRROR_AUDIT": 0.1,
    # Follow the links a page dropped as a copy yields to its own host (nearDupe/copylinks.py).
    "NEARDUPE_FOLLOW_COPIES": True,
    # A page seen again under a URL the index holds: "drop" it (as already-stored), or keep
    # it if it "changed" (storing it in place of the URL's version) and drop it if not.
    "NEARDUPE_RECRAWL": recrawl.DROP,
}

_PREFIX = "NEARDUPE_"
#: The largest k the default design (k + 1 blocks) can answer.
MAX_K = 63
#: More worker processes than this is a typo, not a machine.
MAX_WORKERS = 1024
#: A location that starts like a URL: unless it is a Redis URL it is a typo, not a directory.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


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
    gc_freeze: bool
    analysis_timeout: float
    features: FeatureSettings
    redis_pages: int
    start_without_index: bool
    text_item_field: str | None
    skip_mirrors: bool
    mirror_share: float
    mirror_pages: int
    mirror_audit: float
    follow_copies: bool
    recrawl: str

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Config:
        """Read and check every NEARDUPE_* setting; raise NotConfigured when nearDupe is
        disabled and SettingsError naming the first setting whose value is not allowed."""
        read = _Reader(settings)
        if not read.boolean("NEARDUPE_ENABLED"):
            raise NotConfigured("nearDupe is disabled (NEARDUPE_ENABLED=False)")
        design_name = read.text("NEARDUPE_DESIGN")
        design = None
        if design_name is not None:
            try:
                design = Design.named(design_name)
            except ValueError:
                raise read.error("NEARDUPE_DESIGN", f"expected {known_designs()}") from None
        k = read.whole("NEARDUPE_K", 0, design.k if design else MAX_K)
        design = design or Design.default_for(k)
        given = read.mapping("NEARDUPE_FEATURES")
        try:
            features = FeatureSettings.from_dict(given)
        except (ValueError, TypeError) as exc:
            raise read.error("NEARDUPE_FEATURES", str(exc)) from None
        workers = read.whole("NEARDUPE_WORKERS", 0, MAX_WORKERS, optional=True)
        return cls(
            index=read.location("NEARDUPE_INDEX") or data_path("neardupe"),
            index_name=read.text("NEARDUPE_INDEX_NAME", optional=False),
            redis_cluster=read.boolean("NEARDUPE_REDIS_CLUSTER"),
            k=k,
            confirm_k=read.whole("NEARDUPE_CONFIRM_K", 0, NO_CONFIRMATION),
            sentence_share=read.number("NEARDUPE_SENTENCE_SHARE", 0.0, 1.0, open_low=True),
            design=design.name,
            min_text_length=read.whole("NEARDUPE_MIN_TEXT_LENGTH", 0, 10**9),
            max_html_chars=read.whole("NEARDUPE_MAX_HTML_CHARS", 1_000, 10**10),
            text_field=read.text("NEARDUPE_TEXT_FIELD"),
            report=read.text("NEARDUPE_REPORT"),
            workers=(os.cpu_count() or 1) if workers is None else workers,
            commit_interval=read.number("NEARDUPE_COMMIT_INTERVAL", 0.0, 3600.0),
            gc_freeze=read.boolean("NEARDUPE_GC_FREEZE"),
            analysis_timeout=read.number("NEARDUPE_ANALYSIS_TIMEOUT", 0.0, 3600.0),
            features=features,
            redis_pages=read.whole("NEARDUPE_REDIS_PAGES", 0, 10**12),
            start_without_index=read.boolean("NEARDUPE_START_WITHOUT_INDEX"),
            text_item_field=read.text("NEARDUPE_TEXT_ITEM_FIELD"),
            skip_mirrors=read.boolean("NEARDUPE_SKIP_MIRRORS"),
            mirror_share=read.number("NEARDUPE_MIRROR_SHARE", 0.0, 1.0, open_low=True),
            mirror_pages=read.whole("NEARDUPE_MIRROR_PAGES", 1, 10**6),
            mirror_audit=read.number("NEARDUPE_MIRROR_AUDIT", 0.0, 1.0),
            follow_copies=read.boolean("NEARDUPE_FOLLOW_COPIES"),
            recrawl=read.choice("NEARDUPE_RECRAWL", recrawl.MODES),
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
                "must_answer": not self.start_without_index,
            }
        return {"commit_interval": self.commit_interval}

    @property
    def mirror_rule(self) -> MirrorRule:
        """When a host is a mirror (NEARDUPE_MIRROR_SHARE of its first NEARDUPE_MIRROR_PAGES)."""
        return MirrorRule(self.mirror_share, self.mirror_pages)

    @property
    def public_index(self) -> str:
        """The index location as logs, reports and commands show it (no credentials)."""
        return public_location(self.index)

    @property
    def is_redis(self) -> bool:
        """Whether the index is a shared Redis rather than the embedded directory."""
        return is_redis_url(self.index)


def unknown_settings(settings: BaseSettings) -> list[str]:
    """One warning per NEARDUPE_* name nearDupe does not read, naming the closest known one."""
    warnings = []
    for name in sorted(key for key in settings if str(key).startswith(_PREFIX)):
        if name not in DEFAULTS:
            suffixes = {known[len(_PREFIX) :]: known for known in DEFAULTS}
            close = get_close_matches(name[len(_PREFIX) :], suffixes, n=1, cutoff=0.6)
            hint = f"; did you mean {suffixes[close[0]]}?" if close else ""
            warnings.append(f"unknown setting {name} is ignored{hint}")
    return warnings


class _Reader:
    """Typed getters that name the setting, its value and what is allowed when it is wrong."""

    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings

    def _get(self, name: str) -> Any:
        return self.settings.get(name, DEFAULTS[name])

    def error(self, name: str, allowed: str) -> SettingsError:
        """The error for setting ``name``, whose value is not ``allowed``."""
        return SettingsError(f"{name} = {self._get(name)!r}: {allowed}")

    def boolean(self, name: str) -> bool:
        """A boolean (True/False, 1/0, or their strings)."""
        try:
            return self.settings.getbool(name, DEFAULTS[name])
        except ValueError:
            raise self.error(name, "expected True or False") from None

    def whole(self, name: str, low: int, high: int, *, optional: bool = False) -> Any:
        """A whole number within low..high (or None where ``optional``)."""
        value = self._get(name)
        allowed = f"expected a whole number within {low}..{high}"
        if value is None or value == "":
            if optional:
                return None
            raise self.error(name, allowed)
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise self.error(name, allowed)
        try:
            number = int(str(value).strip()) if isinstance(value, str) else int(value)
        except (TypeError, ValueError, OverflowError):
            raise self.error(name, allowed) from None
        if not low <= number <= high:
            raise self.error(name, allowed)
        return number

    def number(self, name: str, low: float, high: float, *, open_low: bool = False) -> float:
        """A number within low..high (above low where ``open_low``)."""
        value = self._get(name)
        bracket = "(" if open_low else "["
        allowed = f"expected a number within {bracket}{low:g}, {high:g}]"
        if isinstance(value, bool):
            raise self.error(name, allowed)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise self.error(name, allowed) from None
        if not (low < number if open_low else low <= number) or not number <= high:
            raise self.error(name, allowed)
        return number

    def text(self, name: str, *, optional: bool = True) -> Any:
        """A non-empty string (or None where ``optional`` and unset)."""
        value = self._get(name)
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if value is None or value == "":
            if optional:
                return None
            raise self.error(name, "expected a non-empty string")
        if not isinstance(value, str):
            raise self.error(name, "expected a string")
        if "\x00" in value:
            raise self.error(name, "expected a string without NUL characters")
        return value

    def location(self, name: str) -> Any:
        """A directory path or a Redis URL (None where unset); another URL is refused, shown
        by its scheme alone so that no credential it holds reaches the log."""
        value = self.text(name)
        if value is not None and _URL.match(value) and not is_redis_url(value):
            scheme = value.split("://", 1)[0]
            redis = ", ".join(REDIS_SCHEMES)
            raise SettingsError(
                f"{name} = '{scheme}://…': expected a directory or a Redis URL ({redis})"
            )
        return value

    def choice(self, name: str, allowed: tuple[str, ...]) -> str:
        """One of the strings ``allowed``."""
        value = self._get(name)
        if value not in allowed:
            raise self.error(name, "expected one of " + ", ".join(map(repr, allowed)))
        return str(value)

    def mapping(self, name: str) -> dict[str, Any]:
        """A dict, or its JSON text."""
        try:
            value = self.settings.getdict(name, DEFAULTS[name])
        except (ValueError, TypeError):
            raise self.error(name, "expected a dict or its JSON text") from None
        return dict(value)
