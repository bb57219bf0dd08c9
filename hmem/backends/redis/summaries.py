"""Redis :class:`~hmem.protocols.SummaryStore`: one HASH per session summary.

Key ``<prefix>:{<user>}:sum:<session>`` (docs/redis.md) with fields ``text``,
``cu`` (the watermark; absent when None), ``fc``, ``m``, ``t`` (ISO-8601 with its
offset, as the SQLite store keeps it) and ``tk``. ``put`` and ``put_if`` are Lua
scripts, so the compare-and-set on the watermark is atomic across instances.
Behaviour matches :class:`hmem.backends.memory.summaries.MemorySummaryStore`.

Example::

    store = RedisSummaryStore(connect_redis("redis://127.0.0.1:6379/0"))
    store.put(SessionSummary("u1", "s1", "User lives in Berlin.", "m7", 7, "extractive"))
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

from hmem.backends.memory.sessions import check_ttl
from hmem.backends.memory.summaries import check_expected_watermark, check_summary
from hmem.backends.redis.client import (
    DEFAULT_PREFIX,
    NO_WAIT,
    RedisClient,
    ReplicaWait,
    as_str,
    client_label,
    redis_errors,
    ttl_ms,
)
from hmem.backends.redis.keys import KeySpace
from hmem.backends.redis.waited import delete_and_wait, run_script
from hmem.types import SessionSummary, SummaryMethod, check_id

__all__ = ["RedisSummaryStore"]

# KEYS: summary hash. ARGV: mode ('put' | 'if-none' | 'if'), expected, ttl_ms, then field/value pairs.
# 'if-none' succeeds when the stored watermark is None: no summary, or one that folded nothing.
_PUT = """
if ARGV[1] ~= 'put' then
  local current = redis.call('HGET', KEYS[1], 'cu')
  if ARGV[1] == 'if-none' then
    if current then return 0 end
  elseif current ~= ARGV[2] then
    return 0
  end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
local ttl = tonumber(ARGV[3])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
"""



class RedisSummaryStore:
    """Session summaries in Redis under ``prefix``; ``ttl_seconds`` (off by default)
    expires a summary not written for that long (match the session TTL); ``wait`` makes a
    ``put`` (and a ``delete``) wait for replicas (:class:`~hmem.backends.redis.client.ReplicaWait`)."""

    def __init__(self, client: RedisClient, *, prefix: str = DEFAULT_PREFIX, ttl_seconds: float | None = None,
                 wait: ReplicaWait = NO_WAIT) -> None:
        self._client = client
        self._wait = wait
        self._keys = KeySpace(prefix)
        self._ttl_ms = ttl_ms(check_ttl(ttl_seconds))
        self._label = client_label(client)
        self._put = client.register_script(_PUT)

    def get(self, user_id: str, session_id: str) -> SessionSummary | None:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        with redis_errors(self._label):
            raw = self._client.hgetall(self._keys.summary(user, session))
        if not raw:
            return None
        fields = {as_str(k): as_str(v) for k, v in raw.items()}
        return SessionSummary(
            user_id=user,
            session_id=session,
            text=fields["text"],
            covers_until=fields.get("cu"),
            folded_count=int(fields["fc"]),
            method=cast(SummaryMethod, fields["m"]),
            updated_at=datetime.fromisoformat(fields["t"]),
            tokens=int(fields["tk"]),
        )

    def _write(self, summary: SessionSummary, mode: str, expected: str | None) -> bool:
        fields: list[str | int] = ["text", summary.text, "fc", summary.folded_count, "m", summary.method,
                                   "t", summary.updated_at.isoformat(), "tk", summary.tokens]
        if summary.covers_until is not None:
            fields += ["cu", summary.covers_until]
        key = self._keys.summary(summary.user_id, summary.session_id)
        with redis_errors(self._label):
            return bool(run_script(self._client, self._put, [key], [mode, expected or "", self._ttl_ms, *fields],
                                   wait=self._wait, label=self._label))

    def put(self, summary: SessionSummary) -> None:
        self._write(check_summary(summary), "put", None)

    def put_if(self, summary: SessionSummary, expected_covers_until: str | None) -> bool:
        """Store ``summary`` only if the stored watermark equals ``expected_covers_until``
        (None: no summary stored yet). True if written."""
        checked = check_summary(summary)
        expected = check_expected_watermark(expected_covers_until)
        return self._write(checked, "if-none" if expected is None else "if", expected)

    def delete(self, user_id: str, session_id: str) -> bool:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        with redis_errors(self._label):
            return bool(delete_and_wait(self._client, [self._keys.summary(user, session)], wait=self._wait,
                                        label=self._label))

    def close(self) -> None:
        """The client belongs to the caller; nothing to release."""
