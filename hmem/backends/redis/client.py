"""Connecting to Redis: one pooled client, bounded timeouts, safe retries, masked URLs.

:func:`connect_redis` builds a ``redis.Redis`` on a connection pool with a connect
timeout (default 2 s), an operation timeout (default 5 s) and a short retry with
exponential backoff on *connection* errors only (refused/reset: the command did
not run or its outcome is unknown; hmem's Lua writes are idempotent, so a resend
cannot double a write). A timed-out command is not retried, so a hung server
costs at most one ``socket_timeout`` per call instead of several.

:func:`redis_errors` turns every redis-py failure into an hmem error naming the
masked URL and what to do: :class:`~hmem.errors.BackendUnavailable` when the server
cannot be reached or refuses a command, :class:`~hmem.errors.ConfigError` when it
refuses the credentials (a wrong password or ACL is a settings problem: retrying or
falling back to in-process stores would only hide it).

Example::

    >>> mask_url("redis://:s3cret@cache.internal:6379/0")
    'redis://:****@cache.internal:6379/0'
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry

from hmem._secrets import has_unencoded_userinfo, mask_url
from hmem.errors import BackendUnavailable, ConfigError

__all__ = [
    "DEFAULT_PREFIX",
    "as_str",
    "client_label",
    "connect_redis",
    "mask_url",
    "redis_errors",
    "ttl_ms",
    "warn_fallback",
]

log = logging.getLogger("hmem.redis")

#: Every hmem key starts with this (see docs/redis.md for the layout).
DEFAULT_PREFIX = "hmem"


def as_str(value: Any) -> str:
    """A reply as ``str``: clients made by :func:`connect_redis` return ``bytes``."""
    return value.decode() if isinstance(value, bytes) else str(value)


def ttl_ms(ttl_seconds: float | None) -> int:
    """A checked TTL (``None`` = never expire) as the ``PEXPIRE`` milliseconds the
    Lua scripts take, ``0`` meaning "no expiry"; never rounds a short TTL down to 0."""
    return 0 if ttl_seconds is None else max(1, round(ttl_seconds * 1000))


def client_label(client: redis.Redis) -> str:
    """A password-free ``redis://host:port/db`` (or ``unix://path``) for messages."""
    kwargs: dict[str, Any] = client.connection_pool.connection_kwargs
    if kwargs.get("path"):
        return f"unix://{kwargs['path']}?db={kwargs.get('db', 0)}"
    return f"redis://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"


def connect_redis(
    url: str,
    *,
    socket_timeout: float = 5.0,
    socket_connect_timeout: float = 2.0,
    retries: int = 2,
    max_connections: int = 64,
    health_check_interval: int = 30,
    check: bool = True,
) -> redis.Redis:
    """A pooled client for ``url`` (``redis://[:password@]host:port/db``, ``rediss://``,
    ``unix://``). With ``check`` (default) it pings once, so a wrong URL or a
    server that is down fails here, within the timeouts, as
    :class:`~hmem.errors.BackendUnavailable` naming the masked URL.

    Example::

        client = connect_redis("redis://127.0.0.1:6379/0", socket_timeout=1.0)
    """
    if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(
            f"Redis URL must start with redis://, rediss:// or unix://, got {mask_url(url)!r} "
            "(example: redis://127.0.0.1:6379/0)"
        )
    if has_unencoded_userinfo(url):
        raise ConfigError(
            f"the Redis URL {mask_url(url)!r} has a '/', '?' or '#' in its user name or password; "
            "percent-encode it (urllib.parse.quote(password, safe='')), e.g. '#' as %23"
        )
    retry = Retry(
        ExponentialWithJitterBackoff(base=0.02, cap=0.25),
        retries,
        supported_errors=(redis.exceptions.ConnectionError,),
    )
    try:
        pool = redis.ConnectionPool.from_url(
            url,
            socket_timeout=socket_timeout,
            socket_connect_timeout=socket_connect_timeout,
            max_connections=max_connections,
            health_check_interval=health_check_interval,
            retry=retry,
            retry_on_error=[redis.exceptions.ConnectionError],
        )
    except ValueError as exc:
        raise ConfigError(f"invalid Redis URL {mask_url(url)!r}: {exc}") from None
    client = redis.Redis(connection_pool=pool)
    if check:
        with redis_errors(mask_url(url)):
            client.ping()
    return client


@contextmanager
def redis_errors(label: str) -> Iterator[None]:
    """Re-raise redis-py failures as :class:`BackendUnavailable` naming ``label``."""
    try:
        yield
    except redis.exceptions.AuthenticationError as exc:  # before ConnectionError: it is a subclass
        raise ConfigError(
            f"Redis at {label} refused the credentials ({exc}). Check the password (and the user name, for an "
            "ACL user) in the Redis URL of the hmem settings, e.g. redis://:PASSWORD@host:6379/0 "
            "(percent-encode special characters). Nothing was written."
        ) from exc
    except redis.exceptions.NoPermissionError as exc:
        raise ConfigError(
            f"Redis at {label} denied a command to this user ({exc}). Grant the ACL user hmem connects as its "
            "keys and commands (e.g. ACL SETUSER <user> ~hmem:* +@read +@write +@scripting +@connection), "
            "or put another user in the Redis URL."
        ) from exc
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        raise BackendUnavailable(
            f"Redis at {label} is unreachable ({exc.__class__.__name__}: {exc}). Start it or fix the Redis URL "
            "in the hmem settings. A write in flight may or may not have happened; retrying it is safe "
            "(a retried append either lands once or raises DuplicateId because it already did). "
            "To run without Redis, choose the sqlite backend (HMEM_SESSIONS=sqlite …) or enable the in-process "
            "fallback explicitly (HMEM_REDIS_FALLBACK_TO_MEMORY=true; it loses data on restart)."
        ) from exc
    except redis.exceptions.ResponseError as exc:
        raise BackendUnavailable(
            f"Redis at {label} refused a command ({exc}). hmem needs Redis >= 6.2 with Lua scripting enabled."
        ) from exc


def warn_fallback(label: str, reason: BaseException) -> None:
    """Log the WARNING that the in-process fallback is active (data loss on restart)."""
    log.warning(
        "Redis at %s is unavailable (%s); using the IN-PROCESS fallback stores as configured. "
        "Sessions, summaries and profiles written now live only in this process: they are NOT shared "
        "with other instances and will NOT survive a restart.",
        label,
        reason,
    )
