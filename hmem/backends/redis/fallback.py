"""Open the three Redis stores at once, with an explicit, loud in-process fallback.

For the composition root: :func:`open_redis_stores` connects (bounded by the
timeouts), and when Redis is unreachable it raises
:class:`~hmem.errors.BackendUnavailable` — unless the caller passed
``allow_fallback=True``, in which case it logs a WARNING that data will not
survive a restart and returns the in-memory stores instead.

Example::

    stores = open_redis_stores("redis://127.0.0.1:6379/0", session_ttl_seconds=7 * 86400)
    stores.sessions.append("u1", "s1", [...])
    stores.close()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hmem.backends.memory.profile import MemoryProfileStore
from hmem.backends.memory.sessions import MemorySessionStore
from hmem.backends.memory.summaries import MemorySummaryStore
from hmem.backends.redis.client import (
    DEFAULT_PREFIX,
    NO_WAIT,
    RedisClient,
    ReplicaWait,
    connect_redis,
    mask_url,
    warn_fallback,
)
from hmem.backends.redis.profile import RedisProfileStore
from hmem.backends.redis.sessions import RedisSessionStore
from hmem.backends.redis.summaries import RedisSummaryStore
from hmem.errors import BackendUnavailable
from hmem.profile.model import DEFAULT_MAX_KEYS
from hmem.protocols import ProfileStore, SessionStore, SummaryStore

__all__ = ["RedisStores", "open_redis_stores"]


@dataclass
class RedisStores:
    """The session, summary and profile stores of one Redis (or of the fallback).

    ``backend`` says which you got: ``"redis"`` or ``"memory-fallback"``.
    """

    sessions: SessionStore
    summaries: SummaryStore
    profile: ProfileStore
    backend: Literal["redis", "memory-fallback"]
    client: RedisClient | None = field(default=None, repr=False)

    def close(self) -> None:
        for store in (self.sessions, self.summaries, self.profile):
            store.close()
        if self.client is not None:
            self.client.close()


def open_redis_stores(
    url: str,
    *,
    prefix: str = DEFAULT_PREFIX,
    session_ttl_seconds: float | None = None,
    max_profile_keys: int = DEFAULT_MAX_KEYS,
    socket_timeout: float = 5.0,
    socket_connect_timeout: float = 2.0,
    allow_fallback: bool = False,
    wait: ReplicaWait = NO_WAIT,
) -> RedisStores:
    """Connect and build the three Redis stores (one shared connection pool).

    With ``allow_fallback`` an unreachable Redis gives in-process stores and a
    WARNING instead of :class:`~hmem.errors.BackendUnavailable`. ``wait`` makes every
    write wait for replicas (``HMEM_REDIS_WAIT_REPLICAS``).
    """
    try:
        client = connect_redis(url, socket_timeout=socket_timeout, socket_connect_timeout=socket_connect_timeout)
    except BackendUnavailable as exc:
        if not allow_fallback:
            raise
        warn_fallback(mask_url(url), exc)
        return RedisStores(
            sessions=MemorySessionStore(ttl_seconds=session_ttl_seconds),
            summaries=MemorySummaryStore(),
            profile=MemoryProfileStore(max_keys=max_profile_keys),
            backend="memory-fallback",
        )
    return RedisStores(
        sessions=RedisSessionStore(client, prefix=prefix, ttl_seconds=session_ttl_seconds, wait=wait),
        summaries=RedisSummaryStore(client, prefix=prefix, ttl_seconds=session_ttl_seconds, wait=wait),
        profile=RedisProfileStore(client, prefix=prefix, max_keys=max_profile_keys, wait=wait),
        backend="redis",
        client=client,
    )
