"""Connecting to Redis: one pooled client, bounded timeouts, safe retries, masked URLs.

:func:`connect_redis` builds a ``redis.Redis`` on a connection pool with a connect
timeout (default 2 s), an operation timeout (default 5 s) and a short retry with
exponential backoff on *connection* errors only (refused/reset: the command did
not run or its outcome is unknown; hmem's Lua writes are idempotent, so a resend
cannot double a write). A timed-out command is not retried, so a hung server
costs at most one ``socket_timeout`` per call instead of several.

Redis Cluster: ``redis+cluster://host:port`` (or ``rediss+cluster://``) always gives a
``redis.cluster.RedisCluster``; a plain ``redis://`` / ``rediss://`` URL that points at a
cluster node is recognised on connect (one ``INFO cluster`` after the ping) and gets one
too. Every key of a user carries the ``{user}`` hash tag (:mod:`~hmem.backends.redis.keys`),
so each script and ``MULTI`` hmem sends stays in one slot (docs/redis.md, "Redis Cluster").

Replicas: with a :class:`ReplicaWait` of ``replicas > 0`` (``HMEM_REDIS_WAIT_REPLICAS``) a
store's write is followed by ``WAIT replicas timeout_ms`` on the very connection (and so the
very master) that took it (:mod:`hmem.backends.redis.waited`); fewer confirmations
than asked raise :class:`~hmem.errors.BackendUnavailable`. Replication is asynchronous
otherwise: a master that dies right after acknowledging a write can lose it in a failover.

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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import RedisCluster
from redis.connection import parse_url
from redis.retry import Retry

from hmem._secrets import has_unencoded_userinfo, mask_url
from hmem.errors import BackendUnavailable, ConfigError

__all__ = [
    "CLUSTER_SCHEMES",
    "DEFAULT_PREFIX",
    "NO_WAIT",
    "RedisClient",
    "ReplicaWait",
    "as_str",
    "client_label",
    "connect_redis",
    "is_cluster",
    "mask_url",
    "on_node",
    "redis_errors",
    "ttl_ms",
    "warn_fallback",
]

log = logging.getLogger("hmem.redis")

#: Every hmem key starts with this (see docs/redis.md for the layout).
DEFAULT_PREFIX = "hmem"

#: URL schemes that ask for a Redis Cluster client explicitly (no detection round trip).
CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")

#: What :func:`connect_redis` returns and every Redis store accepts.
RedisClient: TypeAlias = redis.Redis | RedisCluster


def as_str(value: Any) -> str:
    """A reply as ``str``: clients made by :func:`connect_redis` return ``bytes``."""
    return value.decode() if isinstance(value, bytes) else str(value)


def ttl_ms(ttl_seconds: float | None) -> int:
    """A checked TTL (``None`` = never expire) as the ``PEXPIRE`` milliseconds the
    Lua scripts take, ``0`` meaning "no expiry"; never rounds a short TTL down to 0."""
    return 0 if ttl_seconds is None else max(1, round(ttl_seconds * 1000))


def is_cluster(client: RedisClient) -> bool:
    """True for a Redis Cluster client: callers must then keep each transaction in one slot."""
    return isinstance(client, RedisCluster)


def client_label(client: RedisClient) -> str:
    """A password-free ``redis://host:port/db``, ``unix://path`` or
    ``redis+cluster://host:port`` (a node the client started from) for messages."""
    if isinstance(client, RedisCluster):
        node = client.get_default_node()  # type: ignore[no-untyped-call]
        return f"redis+cluster://{node.host}:{node.port}" if node is not None else "redis+cluster://"
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
) -> RedisClient:
    """A pooled client for ``url`` (``redis://[:password@]host:port/db``, ``rediss://``,
    ``unix://``; ``redis+cluster://host:port`` or ``rediss+cluster://`` for a Redis
    Cluster). With ``check`` (default) it pings once, so a wrong URL or a server that
    is down fails here, within the timeouts, as :class:`~hmem.errors.BackendUnavailable`
    naming the masked URL; and a ``redis://`` URL of a cluster node is detected
    (``INFO cluster``) and answered with a ``RedisCluster`` client. ``check=False``
    skips both: name a cluster by its ``+cluster`` scheme then.

    Example::

        client = connect_redis("redis://127.0.0.1:6379/0", socket_timeout=1.0)
        cluster = connect_redis("redis+cluster://10.0.0.5:7000")  # any node; the rest are discovered
    """
    if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://", *CLUSTER_SCHEMES)):
        raise ConfigError(
            f"Redis URL must start with redis://, rediss://, unix://, redis+cluster:// or rediss+cluster://, "
            f"got {mask_url(url)!r} (example: redis://127.0.0.1:6379/0)"
        )
    if has_unencoded_userinfo(url):
        raise ConfigError(
            f"the Redis URL {mask_url(url)!r} has a '/', '?' or '#' in its user name or password; "
            "percent-encode it (urllib.parse.quote(password, safe='')), e.g. '#' as %23"
        )
    options: dict[str, Any] = {
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": socket_connect_timeout,
        "max_connections": max_connections,
        "health_check_interval": health_check_interval,
    }
    retry = Retry(
        ExponentialWithJitterBackoff(base=0.02, cap=0.25),
        retries,
        supported_errors=(redis.exceptions.ConnectionError,),
    )
    if url.startswith(CLUSTER_SCHEMES):
        return _connect_cluster(url.replace("+cluster", "", 1), retry, options)
    try:
        pool = redis.ConnectionPool.from_url(
            url, retry=retry, retry_on_error=[redis.exceptions.ConnectionError], **options
        )
    except ValueError as exc:
        raise ConfigError(f"invalid Redis URL {mask_url(url)!r}: {exc}") from None
    client = redis.Redis(connection_pool=pool)
    if check:
        with redis_errors(mask_url(url)):
            try:
                client.ping()
            except redis.exceptions.ResponseError as exc:
                if "cluster mode" not in str(exc):
                    raise
                client.close()  # the node refused SELECT: a cluster node and a database other than 0
                raise ConfigError(
                    f"{mask_url(url)} is a Redis Cluster node, and a cluster has only database 0: "
                    "drop the database from the URL (example: redis+cluster://10.0.0.5:7000)"
                ) from None
            clustered = _cluster_enabled(client)
        if clustered:
            client.close()
            if url.startswith("unix://"):
                raise ConfigError(
                    f"{mask_url(url)} is a Redis Cluster node; cluster clients connect over TCP: "
                    "use redis+cluster://host:port"
                )
            return _connect_cluster(url, retry, options)
    return client


def _cluster_enabled(client: redis.Redis) -> bool:
    # A server (or ACL user) that refuses INFO is treated as a single node; a cluster
    # behind such a setup must be named redis+cluster:// explicitly.
    try:
        info = client.info("cluster")
    except (redis.exceptions.NoPermissionError, redis.exceptions.ResponseError):
        return False
    return str(info.get("cluster_enabled", 0)) == "1"


def _connect_cluster(url: str, retry: Retry, options: dict[str, Any]) -> RedisCluster:
    label = mask_url(url.replace("://", "+cluster://", 1))
    try:
        db = int(parse_url(url).get("db", 0))  # type: ignore[no-untyped-call]
    except ValueError as exc:
        raise ConfigError(f"invalid Redis Cluster URL {label!r}: {exc}") from None
    if db != 0:
        raise ConfigError(
            f"Redis Cluster URL {label!r} names database {db}; a cluster has only database 0 "
            "(example: redis+cluster://10.0.0.5:7000)"
        )
    # The client learns the slot map from the node now, so an unreachable cluster fails
    # here. The retry bounds how often a command is re-routed after a connection error
    # or a cluster-down reply (the slot map is refreshed in between).
    with redis_errors(label):
        return RedisCluster.from_url(url, retry=retry, **options)


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
            "To run without Redis, choose the sqlite backend (unset HMEM_REDIS_URL) or enable the in-process "
            "fallback explicitly (HMEM_REDIS_FALLBACK_TO_MEMORY=true; it loses data on restart)."
        ) from exc
    except (redis.exceptions.RedisClusterException, redis.exceptions.ClusterError) as exc:
        raise BackendUnavailable(
            f"Redis Cluster at {label} cannot serve the request ({exc.__class__.__name__}: {exc}). Check that "
            "the node in the URL is up and that every slot is served (redis-cli --cluster check HOST:PORT)."
        ) from exc
    except redis.exceptions.ResponseError as exc:
        if isinstance(exc, redis.exceptions.AskError) or "CROSSSLOT" in str(exc):  # AskError: MOVED too
            raise BackendUnavailable(
                f"Redis at {label} is a Redis Cluster node and answered {exc}; connect with a cluster client: "
                "use the URL form redis+cluster://host:port in the hmem settings."
            ) from exc
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


# -- waiting for replicas ----------------------------------------------------------------

T = TypeVar("T")

#: Attempts of a write pinned to one node (:func:`on_node`): the first, then re-routes
#: after a refreshed slot map. A failover takes seconds; callers see BackendUnavailable
#: meanwhile and retry, so this only covers a slot map that is one change behind.
_NODE_ATTEMPTS = 3

# What says "this node no longer serves the slot, or is gone": refresh the map, go again.
_REROUTE = (redis.exceptions.ConnectionError, redis.exceptions.MovedError, redis.exceptions.ClusterDownError,
            redis.exceptions.TryAgainError)


@dataclass(frozen=True)
class ReplicaWait:
    """``WAIT replicas timeout_ms`` after each write (``replicas=0``: off, the default).

    ``timeout_ms`` bounds how long a write waits for the replicas; it must stay below the
    client's socket timeout, or the socket would give up first (checked by
    :class:`~hmem.config.Settings`).

    Example::

        >>> ReplicaWait(1, 500).enabled, NO_WAIT.enabled
        (True, False)
    """

    replicas: int = 0
    timeout_ms: int = 1000

    def __post_init__(self) -> None:
        for name, floor in (("replicas", 0), ("timeout_ms", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < floor:
                raise ConfigError(
                    f"ReplicaWait.{name} must be an integer >= {floor}, got {value!r} "
                    "(HMEM_REDIS_WAIT_REPLICAS / redis_wait_timeout_ms)"
                )

    @property
    def enabled(self) -> bool:
        return self.replicas > 0

    def check(self, acked: Any, label: str) -> None:
        """Raise :class:`BackendUnavailable` when fewer than ``replicas`` confirmed."""
        if int(acked) < self.replicas:
            raise BackendUnavailable(
                f"Redis at {label} took the write, but only {int(acked)} of {self.replicas} replica(s) confirmed it "
                f"within {self.timeout_ms} ms (WAIT): it could be lost if that master fails now. Retrying is safe "
                "(a retried append lands once or raises DuplicateId). Check that the master has "
                f"{self.replicas} replica(s) online (INFO replication), or lower HMEM_REDIS_WAIT_REPLICAS / raise "
                "redis_wait_timeout_ms (in the HMEM_CONFIG file)."
            )


#: No waiting: a write is acknowledged when the master has applied it.
NO_WAIT = ReplicaWait()


def on_node(client: RedisClient, key: str, work: Callable[[redis.Redis], T]) -> T:
    """``work(node)`` with ``node`` the plain client of the master serving ``key``'s slot
    (``client`` itself when it is not a cluster). On a cluster a connection error, ``MOVED``
    or ``CLUSTERDOWN`` refreshes the slot map and tries again (``_NODE_ATTEMPTS`` in all):
    ``work`` must be safe to repeat (hmem's writes carry idempotency tokens)."""
    if not isinstance(client, RedisCluster):
        return work(client)
    for attempt in range(_NODE_ATTEMPTS):
        node = client.get_redis_connection(client.get_node_from_key(key))  # type: ignore[no-untyped-call]
        try:
            return work(node)
        except _REROUTE as exc:
            if attempt == _NODE_ATTEMPTS - 1:
                if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.ClusterError):
                    raise
                # A MOVED that outlived the refreshes: the slot map is still changing. Said as a
                # cluster problem, not as "use a cluster client" (redis_errors' reading of MOVED).
                raise redis.exceptions.ClusterError(f"{type(exc).__name__}: {exc}") from exc
            time.sleep(0.05 * (attempt + 1))  # a promotion in progress: give the map a moment
            client.nodes_manager.initialize()  # type: ignore[no-untyped-call]
    raise AssertionError("unreachable")  # pragma: no cover
