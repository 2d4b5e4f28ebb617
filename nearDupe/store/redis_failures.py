"""Which Redis errors are retried and which refuse for good, and the retry loop of every call."""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from redis.exceptions import (
    AuthenticationError,
    AuthenticationWrongNumberOfArgsError,
    AuthorizationError,
    ClusterDownError,
    NoPermissionError,
    OutOfMemoryError,
    RedisClusterException,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from nearDupe.errors import IndexAccessDenied, StoreUnavailable

#: Logged under the store's module name, which logging settings know.
logger = logging.getLogger("nearDupe.store.redis")

T = TypeVar("T")

#: Errors after which a call is retried: Redis is away, restarting, loading or failing over.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    RedisConnectionError,  # includes BusyLoadingError (restarted, still reading its AOF)
    RedisTimeoutError,
    ClusterDownError,
    TryAgainError,
    TimeoutError,
    OSError,
    RedisClusterException,  # no cluster node reachable
)

#: Refusals no retry cures (they subclass ConnectionError or ResponseError in redis-py).
REFUSALS: tuple[type[BaseException], ...] = (
    AuthenticationError,
    AuthorizationError,
    AuthenticationWrongNumberOfArgsError,
    NoPermissionError,
    ssl.SSLCertVerificationError,
)


def refusal(exc: BaseException) -> BaseException | None:
    """The refusal behind an error (redis-py wraps a TLS failure in a ConnectionError), if
    Redis or its certificate refused this client for good; else None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, REFUSALS):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


#: Redis is full (``maxmemory`` reached with the ``noeviction`` policy): it refuses writes
#: until memory is freed. An outage like any other (the pages wait in the crawl's backlog),
#: but one no retry within a call cures: the call gives up at once.
FULL_ERRORS: tuple[type[BaseException], ...] = (OutOfMemoryError,)


def full(name: str, url: str, exc: BaseException, *, say: bool) -> StoreUnavailable:
    """The error of a call that Redis refused for want of memory (``exc``); with ``say``, an
    ERROR telling the operator what to do is logged first (once a crawl)."""
    if say:
        logger.error(
            "Redis index %r at %s is out of memory (maxmemory reached, and the noeviction "
            "policy refuses writes): new pages cannot be recorded. Raise maxmemory (CONFIG SET "
            "maxmemory, and in redis.conf) or free memory in that Redis. Meanwhile pages are "
            "kept unchecked and wait in the backlog (the pending file at close), to be recorded "
            "as soon as Redis takes writes again, or by the next crawl on this index",
            name,
            url,
        )
    return StoreUnavailable(
        f"Redis index {name!r} at {url} is out of memory (maxmemory): {exc}; raise maxmemory "
        "or free memory"
    )


def denied(name: str, url: str, exc: BaseException) -> IndexAccessDenied:
    """The error that stops the crawl when Redis refused this client (``exc``)."""
    return IndexAccessDenied(
        f"Redis index {name!r} at {url} refused this client "
        f"({type(exc).__name__}: {exc}); check the credentials, the user's permissions "
        "and the TLS settings in NEARDUPE_INDEX"
    )


async def retrying(
    what: str,
    call: Callable[[bool], Awaitable[T]],
    *,
    name: str,
    url: str,
    retry_seconds: float,
) -> T:
    """Run call(retried), retrying transient errors for up to ``retry_seconds`` after the
    first one (time spent waiting for another crawler's leases is not a failure).

    Each attempt is bounded by the socket timeouts (at most ``retry_seconds``), so a call
    gives up after about ``retry_seconds`` plus two socket timeouts, even if Redis hangs.
    """
    deadline: float | None = None
    delay, attempts = 0.05, 0
    while True:
        attempts += 1
        try:
            return await call(attempts > 1)
        except REFUSALS as exc:
            raise denied(name, url, exc) from None
        except TRANSIENT_ERRORS as exc:
            if (refused := refusal(exc)) is not None:
                raise denied(name, url, refused) from None
            if deadline is None:
                deadline = time.monotonic() + retry_seconds
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StoreUnavailable(
                    f"Redis index {name!r} at {url} unavailable for {what} "
                    f"after {attempts} attempts in {retry_seconds:g} s: {exc!r}"
                ) from exc
            logger.debug(
                "Redis %s failed (%r); retrying in %.2f s", what, exc, min(delay, remaining)
            )
            await asyncio.sleep(min(delay, remaining))
            delay *= 2
