"""Redis :class:`~hmem.protocols.SessionStore`: sessions shared by every app instance.

Layout (see :mod:`hmem.backends.redis.keys` and docs/redis.md): a LIST of message
JSON per session, a HASH with the version, the update time and one ``m:<id>``
field per message id, and a per-user ZSET of sessions by update time.

Writes are Lua scripts, so each is atomic and one round trip: an append checks
ids, pushes, bumps the version and refreshes the TTL together; a replace is a
compare-and-set on the version. Every write carries a random token stored with
what it wrote, so a write resent after a lost reply (redis-py retries connection
errors) is recognised and not applied twice. Time comes from the Redis server
(``TIME``), so instances with skewed clocks still agree on ordering and TTL.

Example::

    from hmem.backends.redis.client import connect_redis
    store = RedisSessionStore(connect_redis("redis://127.0.0.1:6379/0"))
    store.append("u1", "s1", [Message(role="user", content="hi")])
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import Any

from hmem._time import from_seconds
from hmem.backends.memory.sessions import check_batch, check_last_n, check_ttl, check_version
from hmem.backends.redis.client import (
    DEFAULT_PREFIX,
    NO_WAIT,
    RedisClient,
    ReplicaWait,
    as_str,
    client_label,
    connect_redis,
    redis_errors,
    ttl_ms,
)
from hmem.backends.redis.keys import KeySpace
from hmem.backends.redis.waited import run_script
from hmem.errors import ConflictError, DuplicateId
from hmem.types import Message, SessionInfo, SessionState, check_id

__all__ = ["RedisSessionStore"]

# Shared tail of both writes: push ids/JSON from ARGV[first..] in chunks (Lua's
# unpack() has a stack limit of a few thousand values), stamp, index, expire.
_WRITE_TAIL = """
local function push(first)
  local n = (#ARGV - first + 1) / 2
  for i = 0, n - 1, 500 do
    local bodies, ids = {}, {}
    for j = i, math.min(i + 499, n - 1) do
      bodies[#bodies + 1] = ARGV[first + 1 + 2 * j]
      ids[#ids + 1] = 'm:' .. ARGV[first + 2 * j]
      ids[#ids + 1] = ARGV[3]
    end
    redis.call('RPUSH', KEYS[1], unpack(bodies))
    redis.call('HSET', KEYS[2], unpack(ids))
  end
end
local function stamp(version)
  local t = redis.call('TIME')
  local now = t[1] .. '.' .. string.format('%06d', tonumber(t[2]))
  redis.call('HSET', KEYS[2], 'v', version, 't', now, 'tok', ARGV[3])
  redis.call('ZADD', KEYS[3], now, ARGV[1])
  local ttl = tonumber(ARGV[2])
  if ttl > 0 then
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[2], ttl)
    redis.call('PEXPIRE', KEYS[3], ttl)
  else
    redis.call('PERSIST', KEYS[3])
  end
end
"""

# KEYS: msgs, meta, index. ARGV: session_id, ttl_ms, token, id1, json1, id2, json2 ...
_APPEND = _WRITE_TAIL + """
local mine = 0
for i = 4, #ARGV, 2 do
  local owner = redis.call('HGET', KEYS[2], 'm:' .. ARGV[i])
  if owner then
    if owner ~= ARGV[3] then return {'DUP', ARGV[i]} end
    mine = mine + 1
  end
end
if mine > 0 then  -- this very call already landed (a resend after a lost reply)
  return {'OK', tonumber(redis.call('HGET', KEYS[2], 'v'))}
end
local version = tonumber(redis.call('HGET', KEYS[2], 'v') or '0') + 1
push(4)
stamp(version)
return {'OK', version}
"""

# KEYS: msgs, meta, index. ARGV: session_id, ttl_ms, token, expected, id1, json1 ...
_REPLACE = _WRITE_TAIL + """
local current = tonumber(redis.call('HGET', KEYS[2], 'v') or '0')
if current ~= tonumber(ARGV[4]) then
  if current > 0 and redis.call('HGET', KEYS[2], 'tok') == ARGV[3] then return {'OK', current} end
  return {'CONFLICT', current}
end
redis.call('DEL', KEYS[1], KEYS[2])
push(5)
stamp(current + 1)
return {'OK', current + 1}
"""

# KEYS: msgs, meta, index. ARGV: session_id
_DELETE = """
local existed = redis.call('EXISTS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
return existed
"""

# KEYS: index, meta1, meta2 ... ARGV: session1, session2 ...  Drop index entries whose
# session is gone, re-checked here so a session recreated meanwhile keeps its entry.
_PRUNE = """
for i = 1, #ARGV do
  if redis.call('EXISTS', KEYS[i + 1]) == 0 then redis.call('ZREM', KEYS[1], ARGV[i]) end
end
return 0
"""



class RedisSessionStore:
    """Sessions in Redis under ``prefix`` (default ``"hmem"``).

    ``client`` is shared and owned by the caller (build it with
    :func:`~hmem.backends.redis.client.connect_redis`), unless the store was made
    with :meth:`from_url`. ``ttl_seconds`` (off by default) expires a session that
    has not been written for that long; every write refreshes it. ``wait`` (off by
    default) makes every write wait for that many replicas (:class:`ReplicaWait`).
    """

    def __init__(self, client: RedisClient, *, prefix: str = DEFAULT_PREFIX, ttl_seconds: float | None = None,
                 wait: ReplicaWait = NO_WAIT) -> None:
        self._client = client
        self._wait = wait
        self._keys = KeySpace(prefix)
        self._ttl_ms = ttl_ms(check_ttl(ttl_seconds))
        self._label = client_label(client)
        self._owns_client = False
        self._append = client.register_script(_APPEND)
        self._replace = client.register_script(_REPLACE)
        self._delete = client.register_script(_DELETE)
        self._prune = client.register_script(_PRUNE)

    @classmethod
    def from_url(cls, url: str, *, prefix: str = DEFAULT_PREFIX, ttl_seconds: float | None = None,
                 **connect_kwargs: Any) -> RedisSessionStore:
        """A store with its own client (closed by :meth:`close`)."""
        store = cls(connect_redis(url, **connect_kwargs), prefix=prefix, ttl_seconds=ttl_seconds)
        store._owns_client = True
        return store

    def _session_keys(self, user: str, session: str) -> list[str]:
        k = self._keys
        return [k.session_messages(user, session), k.session_meta(user, session), k.session_index(user)]

    def _write(self, script: Any, user: str, session: str, args: list[str | int]) -> Any:
        return run_script(self._client, script, self._session_keys(user, session), args, wait=self._wait,
                          label=self._label)

    # -- the port ---------------------------------------------------------------------

    def append(self, user_id: str, session_id: str, messages: Iterable[Message]) -> int:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        batch = check_batch(messages)
        if not batch:
            return self.load(user, session, last_n=0).version
        args: list[str | int] = [session, self._ttl_ms, secrets.token_hex(8)]
        for message in batch:
            args += [message.id, message.to_json()]
        with redis_errors(self._label):
            status, value = self._write(self._append, user, session, args)
        if as_str(status) == "DUP":
            raise DuplicateId(
                f"message id {as_str(value)!r} already exists in session {session!r}; nothing was appended",
                field="messages.id",
            )
        return int(value)

    def load(self, user_id: str, session_id: str, last_n: int | None = None) -> SessionState:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        n = check_last_n(last_n)
        msgs_key, meta_key, _ = self._session_keys(user, session)
        with redis_errors(self._label):
            pipe = self._client.pipeline(transaction=True)  # MULTI/EXEC: version and list from one moment
            pipe.hget(meta_key, "v")
            if n != 0:
                pipe.lrange(msgs_key, 0 if n is None else -n, -1)
            replies = pipe.execute()
        if replies[0] is None:
            return SessionState((), 0)
        bodies = replies[1] if n != 0 else []
        return SessionState(tuple(Message._from_storage(b) for b in bodies), int(replies[0]))  # our own rows

    def replace(self, user_id: str, session_id: str, messages: Iterable[Message], expected_version: int) -> int:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        batch = check_batch(messages)
        expected = check_version(expected_version)
        args: list[str | int] = [session, self._ttl_ms, secrets.token_hex(8), expected]
        for message in batch:
            args += [message.id, message.to_json()]
        with redis_errors(self._label):
            status, value = self._write(self._replace, user, session, args)
        if as_str(status) == "CONFLICT":
            raise ConflictError(
                f"session {session!r} is at version {int(value)}, not {expected}: reload it and retry",
                expected=expected,
                actual=int(value),
            )
        return int(value)

    def delete(self, user_id: str, session_id: str) -> bool:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        with redis_errors(self._label):
            return bool(self._write(self._delete, user, session, [session]))

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        user = check_id(user_id, "user_id")
        index = self._keys.session_index(user)
        with redis_errors(self._label):
            members = [as_str(m) for m in self._client.zrevrange(index, 0, -1)]
            if not members:
                return []
            pipe = self._client.pipeline(transaction=False)
            for session in members:
                msgs_key, meta_key, _ = self._session_keys(user, session)
                pipe.hmget(meta_key, ["v", "t"])
                pipe.llen(msgs_key)
            replies = pipe.execute()
            infos: list[SessionInfo] = []
            gone: list[str] = []
            for i, session in enumerate(members):
                version, stamp = replies[2 * i]
                if version is None:  # expired (TTL) or deleted meanwhile: drop the index entry lazily
                    gone.append(session)
                    continue
                updated = from_seconds(float(as_str(stamp)))
                infos.append(SessionInfo(session, int(replies[2 * i + 1]), int(version), updated))
            if gone:
                metas = [self._keys.session_meta(user, session) for session in gone]
                self._prune(keys=[index, *metas], args=gone)
        infos.sort(key=lambda info: (info.updated_at, info.session_id), reverse=True)
        return infos

    def list_users(self) -> list[str]:
        # SCAN, never KEYS: it does not block the server. On a Cluster, redis-py's
        # scan_iter walks every primary; a user's keys share one slot, so no user is
        # seen twice, and the set guards against a replica answering too.
        users: set[str] = set()
        with redis_errors(self._label):
            for key in self._client.scan_iter(match=self._keys.session_index_pattern(), count=1000, _type="zset"):
                user = self._keys.user_of_session_index(as_str(key))
                if user is not None:
                    users.add(user)
        return sorted(users)

    def close(self) -> None:
        """Close the client if this store created it (see :meth:`from_url`)."""
        if self._owns_client:
            self._client.close()
