"""Exceptions raised by nearDupe."""

from __future__ import annotations

from scrapy.exceptions import DropItem


class NearDupeError(Exception):
    """Base class of nearDupe's own errors."""


class IndexFileError(NearDupeError):
    """An index file or directory cannot be used: corrupt, unreadable, locked or mismatched."""


class IndexSettingsMismatch(IndexFileError):
    """The index was built with other settings (algorithm, design, features) than requested."""


class IndexLocked(IndexFileError):
    """Another process holds the embedded index open."""


class IndexAccessDenied(NearDupeError):
    """The index refused this client for good: wrong credentials, missing permissions or a
    TLS certificate that does not verify. A setting to fix, not an outage to wait out."""


class RedisClientMissing(NearDupeError):
    """A Redis index was asked for where the redis client is not installed."""


class StoreUnavailable(NearDupeError):
    """The shared store (Redis) cannot be reached right now."""


class StoreBusy(StoreUnavailable):
    """Other crawlers held the buckets a check needs for too long: the store answers, this
    one check gave up."""


class NearDuplicate(DropItem):
    """The item's page is a near-duplicate of a page already kept; Scrapy counts it per class."""

    def __init__(
        self, message: str, log_level: str | None = None, duplicate_of: str | None = None
    ) -> None:
        super().__init__(message, log_level=log_level)
        #: The URL of the stored page the item's page copies.
        self.duplicate_of = duplicate_of


class SettingsError(NearDupeError, ValueError):
    """A NEARDUPE_* setting has a value nearDupe cannot use."""


class CrawlRefused(NearDupeError):
    """nearDupe refused to start the crawl for a reason it has logged: a setting or an index
    to fix. Scrapy's ``crawl`` command exits non-zero."""
