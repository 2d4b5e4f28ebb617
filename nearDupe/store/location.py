"""Where an index lives: a Redis URL or a directory, and how a location may be shown."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit

from nearDupe.errors import RedisClientMissing

#: Index locations with these schemes are a shared Redis; anything else is a directory.
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def is_redis_url(location: str | None) -> bool:
    """Whether ``location`` names a Redis index rather than an embedded directory."""
    return bool(location) and str(location).startswith(REDIS_SCHEMES)


#: Query parameters of an index URL that hold secrets (redis-py reads ``password``).
_SECRET_PARAMS = frozenset({"password", "pass", "pwd", "secret", "token", "auth"})


def public_location(location: str) -> str:
    """The index location as it may be shown (logs, reports, command output): a URL's
    password, and any query parameter holding a secret, replaced by ``***``."""
    if not is_redis_url(location):
        return location
    parts = urlsplit(location)
    netloc = parts.netloc
    if "@" in netloc:
        credentials, host = netloc.rsplit("@", 1)
        user = credentials.split(":", 1)[0] if ":" in credentials else ""
        netloc = f"{user}:***@{host}" if ":" in credentials or not user else f"{user}@{host}"
    query = urlencode(
        [
            (name, "***" if name.lower() in _SECRET_PARAMS else value)
            for name, value in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="*",
    )
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


@contextmanager
def redis_client_required() -> Iterator[None]:
    """Around the Redis backend's import: the redis client's absence becomes one clear
    :class:`~nearDupe.errors.RedisClientMissing`."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "redis":
            raise
        raise RedisClientMissing(
            "a Redis index needs the redis client: pip install 'nearDupe[redis]'"
        ) from None
