"""Redis job queue: the :class:`~hmem.protocols.JobQueue` shared by every app instance.

Every operation is one Lua script, so it is atomic for all clients of the server:
:meth:`RedisJobQueue.take` chooses and leases in one step, and no two workers, in any
process, lease one job. ``seq`` comes from ``INCR``; ``Job.id`` is ``str(seq)``.

Layout (one queue per prefix; ``B`` = ``<prefix>:{:jobs}``, ``<kind>`` and ``<user>``
percent-encoded as in :mod:`~hmem.backends.redis.keys`):

=========================  ======  ==============================================================
key                        type    what
=========================  ======  ==============================================================
``B:seq``                  STRING  the last ``seq`` handed out
``B:j:<id>``               HASH    one job: ``k`` kind, ``u`` user, ``ek``/``eu`` their encoded
                                   forms, ``key``, ``p`` payload JSON, ``a`` attempts, ``e`` error,
                                   ``c`` created, ``d`` due, ``l`` lease end, ``q`` quarantined
``B:ku:<kind>:<user>``     ZSET    the user's not-quarantined jobs of the kind, scored by seq
``B:kk:<kind>:<user>``     ZSET    the same jobs as ``<key>\\x1f<id>`` (``key`` of None: empty), all
                                   scores 0: ``put(coalesce=True)`` finds a key's jobs by lex range
``B:h:<kind>``             ZSET    encoded users with a not-quarantined job of the kind, scored by
                                   the seq of their first one (the kind's "heads")
``B:d:<kind>``             ZSET    the kind's not-quarantined jobs, scored by due time
``B:l:<kind>``             ZSET    the kind's jobs that hold a lease, scored by its end
``B:q:<kind>``             ZSET    the kind's quarantined jobs, scored by seq
``B:u:<user>``             ZSET    every job of the user, scored by seq (drop, per-user counts)
``B:kinds``                SET     encoded kinds that have jobs
=========================  ======  ==============================================================

How ``take`` chooses (the rule of :func:`hmem.backends._jobs.job_order_ok`): a user with
a job of the kind running (a lease ending after ``now`` in ``B:l:<kind>``) is out; the
others in the order of their first job (the heads), and of each its jobs in ``seq``
order up to the first not yet due, until ``limit``. It costs O(running jobs + users
walked + jobs chosen), however long one user's backlog is.

Redis Cluster: ``take`` reads every user's jobs of a kind, so the whole queue shares
one hash tag, ``{:jobs}`` (no user's tag: a user id's ``:`` is always encoded), and so
one slot; its scripts name the keys they touch from that tag. Times are epoch seconds
of the callers' clocks (as ``now`` and ``retry_at`` are).

Example::

    from hmem.backends.redis.client import connect_redis
    queue = RedisJobQueue(connect_redis("redis://127.0.0.1:6379/0"))
    queue.put([JobSpec("keys", "u1", {"item": "i1"}, key="i1")], coalesce=True)
    for job in queue.take("keys", 8, lease_s=120):
        ...  # do the work, then
        queue.done([job.id])  # or queue.fail([job.id], str(exc), retry_at=time.time() + 30)
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

from hmem.backends._jobs import check_fail, check_put, check_take
from hmem.backends.redis.client import (
    DEFAULT_PREFIX,
    NO_WAIT,
    RedisClient,
    ReplicaWait,
    as_str,
    client_label,
    redis_errors,
)
from hmem.backends.redis.keys import KeySpace, decode_part, encode_part
from hmem.backends.redis.waited import run_script
from hmem.types import Job, JobCounts, JobSpec, check_id

__all__ = ["RedisJobQueue"]

# Every script gets KEYS[1] = B:seq and derives the rest from B (one slot: the {:jobs} tag).
_COMMON = """
local B = string.sub(KEYS[1], 1, -5)
local function jkey(id) return B .. ':j:' .. id end
local function kukey(ek, eu) return B .. ':ku:' .. ek .. ':' .. eu end
local function kkkey(ek, eu) return B .. ':kk:' .. ek .. ':' .. eu end
local SEP = '\031'  -- ids and keys hold no control characters
local function running_users(lz, now)  -- users with a job of the kind leased past now
  local users = {}
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', lz, '(' .. now, '+inf')) do
    local eu = redis.call('HGET', jkey(id), 'eu')
    if eu then users[eu] = true end
  end
  return users
end
local function refresh_head(ek, eu)
  local first = redis.call('ZRANGE', kukey(ek, eu), 0, 0, 'WITHSCORES')
  if #first == 0 then redis.call('ZREM', B .. ':h:' .. ek, eu)
  else redis.call('ZADD', B .. ':h:' .. ek, first[2], eu) end
end
local function forget_kind(ek)
  if redis.call('EXISTS', B .. ':d:' .. ek, B .. ':q:' .. ek) == 0 then redis.call('SREM', B .. ':kinds', ek) end
end
local function remove(id)
  local h = jkey(id)
  local f = redis.call('HMGET', h, 'ek', 'eu', 'q', 'key')
  if not f[1] then return 0 end
  local ek, eu = f[1], f[2]
  redis.call('DEL', h)
  redis.call('ZREM', B .. ':l:' .. ek, id)
  redis.call('ZREM', B .. ':u:' .. eu, id)
  if f[3] then
    redis.call('ZREM', B .. ':q:' .. ek, id)
  else
    redis.call('ZREM', B .. ':d:' .. ek, id)
    redis.call('ZREM', kukey(ek, eu), id)
    redis.call('ZREM', kkkey(ek, eu), (f[4] or '') .. SEP .. id)
    refresh_head(ek, eu)
  end
  forget_kind(ek)
  return 1
end
"""

# ARGV: now, coalesce ('1'/'0'), then per job: kind, ek, user, eu, key ('' = none), payload.
_PUT = _COMMON + """
local now, coalesce, stored = ARGV[1], ARGV[2] == '1', 0
local nowf = tonumber(now)
for i = 3, #ARGV, 6 do
  local kind, ek, user, eu, key, payload = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local skip = false
  if coalesce then  -- a waiting job of the same (kind, user, key): not running, not quarantined
    for _, m in ipairs(redis.call('ZRANGEBYLEX', kkkey(ek, eu), '[' .. key .. SEP, '(' .. key .. ' ')) do
      local lease = redis.call('HGET', jkey(string.sub(m, #key + 2)), 'l')
      if not (lease and tonumber(lease) > nowf) then skip = true; break end
    end
  end
  if not skip then
    local seq = redis.call('INCR', KEYS[1])
    local id = string.format('%d', seq)
    local h = jkey(id)
    redis.call('HSET', h, 'k', kind, 'ek', ek, 'u', user, 'eu', eu, 'p', payload, 'a', 0, 'c', now, 'd', now)
    if key ~= '' then redis.call('HSET', h, 'key', key) end
    redis.call('ZADD', kukey(ek, eu), seq, id)
    redis.call('ZADD', kkkey(ek, eu), 0, key .. SEP .. id)
    redis.call('ZADD', B .. ':h:' .. ek, 'NX', seq, eu)  -- an existing head is older
    redis.call('ZADD', B .. ':d:' .. ek, now, id)
    redis.call('ZADD', B .. ':u:' .. eu, seq, id)
    redis.call('SADD', B .. ':kinds', ek)
    stored = stored + 1
  end
end
return stored
"""

# ARGV: ek, now, lease end, limit.  Returns {id, {field, value, ...}} per leased job, oldest first.
_TAKE = _COMMON + """
local ek, now, lease, limit = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local lz, hz = B .. ':l:' .. ek, B .. ':h:' .. ek
local blocked = running_users(lz, ARGV[2])
local chosen, start = {}, 0
while #chosen < limit do
  local heads = redis.call('ZRANGE', hz, start, start + 99)
  for _, eu in ipairs(heads) do
    if not blocked[eu] then  -- nothing of the user runs: its jobs in order, up to one in back-off
      for _, id in ipairs(redis.call('ZRANGE', kukey(ek, eu), 0, limit - #chosen - 1)) do
        if tonumber(redis.call('HGET', jkey(id), 'd')) > now then break end
        chosen[#chosen + 1] = id
      end
      if #chosen >= limit then break end
    end
  end
  if #heads < 100 then break end
  start = start + 100
end
local out = {}
for _, id in ipairs(chosen) do
  redis.call('HSET', jkey(id), 'l', lease)
  redis.call('ZADD', lz, lease, id)
  out[#out + 1] = {id, redis.call('HGETALL', jkey(id))}
end
return out
"""

# ARGV: ids.  Returns how many existed.
_DONE = _COMMON + """
local n = 0
for i = 1, #ARGV do n = n + remove(ARGV[i]) end
return n
"""

# ARGV: error, retry_at ('' = quarantine), ids.
_FAIL = _COMMON + """
local err, retry = ARGV[1], ARGV[2]
for i = 3, #ARGV do
  local id = ARGV[i]
  local h = jkey(id)
  local f = redis.call('HMGET', h, 'ek', 'eu', 'q', 'key')
  if f[1] then
    local ek, eu = f[1], f[2]
    redis.call('HINCRBY', h, 'a', 1)
    redis.call('HSET', h, 'e', err)
    redis.call('HDEL', h, 'l')
    redis.call('ZREM', B .. ':l:' .. ek, id)
    if retry == '' then
      if not f[3] then
        redis.call('HSET', h, 'q', '1')
        redis.call('ZREM', B .. ':d:' .. ek, id)
        redis.call('ZREM', kukey(ek, eu), id)
        redis.call('ZREM', kkkey(ek, eu), (f[4] or '') .. SEP .. id)
        refresh_head(ek, eu)
        redis.call('ZADD', B .. ':q:' .. ek, id, id)
      end
    else
      redis.call('HSET', h, 'd', retry)
      if not f[3] then redis.call('ZADD', B .. ':d:' .. ek, retry, id) end
    end
  end
end
return 0
"""

# ARGV: now, ids.  Returns how many were quarantined.
_REQUEUE = _COMMON + """
local n = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local h = jkey(id)
  local f = redis.call('HMGET', h, 'ek', 'eu', 'q', 'key')
  if f[1] and f[3] then
    local ek, eu = f[1], f[2]
    redis.call('HDEL', h, 'q', 'e')
    redis.call('HSET', h, 'a', 0, 'd', ARGV[1])
    redis.call('ZREM', B .. ':q:' .. ek, id)
    redis.call('ZADD', kukey(ek, eu), id, id)
    redis.call('ZADD', kkkey(ek, eu), 0, (f[4] or '') .. SEP .. id)
    refresh_head(ek, eu)
    redis.call('ZADD', B .. ':d:' .. ek, ARGV[1], id)
    n = n + 1
  end
end
return n
"""

_RECOVER = _COMMON + """
local n = 0
for _, ek in ipairs(redis.call('SMEMBERS', B .. ':kinds')) do
  local lz = B .. ':l:' .. ek
  for _, id in ipairs(redis.call('ZRANGE', lz, 0, -1)) do
    redis.call('HDEL', jkey(id), 'l')
    n = n + 1
  end
  redis.call('DEL', lz)
end
return n
"""

# ARGV: eu, has kind ('1'/'0'), kind, has keys ('1'/'0'), keys.  Returns how many were deleted.
_DROP = _COMMON + """
local eu, haskind, kind, haskeys = ARGV[1], ARGV[2] == '1', ARGV[3], ARGV[4] == '1'
local wanted = {}
for i = 5, #ARGV do wanted[ARGV[i]] = true end
local n = 0
for _, id in ipairs(redis.call('ZRANGE', B .. ':u:' .. eu, 0, -1)) do
  local f = redis.call('HMGET', jkey(id), 'k', 'key')
  if (not haskind or f[1] == kind) and (not haskeys or (f[2] and wanted[f[2]])) then n = n + remove(id) end
end
return n
"""

# ARGV: now, one user ('1'/'0'), eu.  Returns {ek, waiting, running, quarantined, ...}.
_COUNTS = _COMMON + """
local now, eu = ARGV[1], ARGV[3]
local out = {}
if ARGV[2] == '0' then
  for _, ek in ipairs(redis.call('SMEMBERS', B .. ':kinds')) do
    local all = redis.call('ZCARD', B .. ':d:' .. ek)
    local running = redis.call('ZCOUNT', B .. ':l:' .. ek, '(' .. now, '+inf')
    local quarantined = redis.call('ZCARD', B .. ':q:' .. ek)
    if all + quarantined > 0 then
      for _, v in ipairs({ek, all - running, running, quarantined}) do out[#out + 1] = v end
    end
  end
  return out
end
local nowf, by = tonumber(now), {}
for _, id in ipairs(redis.call('ZRANGE', B .. ':u:' .. eu, 0, -1)) do
  local f = redis.call('HMGET', jkey(id), 'ek', 'q', 'l')
  if f[1] then
    local c = by[f[1]]
    if not c then c = {0, 0, 0}; by[f[1]] = c end
    if f[2] then c[3] = c[3] + 1
    elseif f[3] and tonumber(f[3]) > nowf then c[2] = c[2] + 1
    else c[1] = c[1] + 1 end
  end
end
for ek, c in pairs(by) do
  for _, v in ipairs({ek, c[1], c[2], c[3]}) do out[#out + 1] = v end
end
return out
"""

# ARGV: one user ('1'/'0'), eu, limit (0 = all).  Returns {id, {field, value, ...}} oldest first.
_QUARANTINED = _COMMON + """
local eu, limit = ARGV[2], tonumber(ARGV[3])
local ids = {}
if ARGV[1] == '0' then
  local stop = limit > 0 and limit - 1 or -1
  local found = {}
  for _, ek in ipairs(redis.call('SMEMBERS', B .. ':kinds')) do
    for _, id in ipairs(redis.call('ZRANGE', B .. ':q:' .. ek, 0, stop)) do found[#found + 1] = tonumber(id) end
  end
  table.sort(found)
  for i = 1, #found do
    if limit > 0 and i > limit then break end
    ids[i] = string.format('%d', found[i])
  end
else
  for _, id in ipairs(redis.call('ZRANGE', B .. ':u:' .. eu, 0, -1)) do
    if limit > 0 and #ids >= limit then break end
    if redis.call('HEXISTS', jkey(id), 'q') == 1 then ids[#ids + 1] = id end
  end
end
local out = {}
for _, id in ipairs(ids) do out[#out + 1] = {id, redis.call('HGETALL', jkey(id))} end
return out
"""

# ARGV: ek, now.  Returns the earliest due time of a job of the kind that is not running, or nil.
_NEXT_DUE = _COMMON + """
local ek, now = ARGV[1], tonumber(ARGV[2])
local hz, lz = B .. ':h:' .. ek, B .. ':l:' .. ek
local blocked = running_users(lz, ARGV[2])
local best = false
for _, eu in ipairs(redis.call('ZRANGE', hz, 0, -1)) do
  if not blocked[eu] then
    local id = redis.call('ZRANGE', kukey(ek, eu), 0, 0)[1]
    local due = tonumber(redis.call('HGET', jkey(id), 'd'))
    if not best or due < best then best = due end
  end
end
if best then return tostring(best) end
return false
"""


def _ids(ids: Iterable[str]) -> list[str]:
    """The ids this queue could have issued (``str(seq)``), once each; any other id
    names no job and is ignored, like an unknown one."""
    return list(dict.fromkeys(i for i in ids if isinstance(i, str) and i.isdecimal() and str(int(i)) == i))


def _one_user(user_id: str | None) -> list[str]:
    """The scripts' "one user?" flag and its encoded id."""
    return ["0", ""] if user_id is None else ["1", encode_part(user_id)]


def _job(id_: Any, raw: Sequence[Any]) -> Job:
    fields = {as_str(raw[i]): as_str(raw[i + 1]) for i in range(0, len(raw), 2)}
    job_id = as_str(id_)
    return Job(id=job_id, seq=int(job_id), kind=fields["k"], user_id=fields["u"], payload=json.loads(fields["p"]),
               key=fields.get("key"), attempts=int(fields["a"]), error=fields.get("e"),
               created_at=float(fields["c"]))


class RedisJobQueue:
    """Background jobs in Redis under ``prefix`` (default ``"hmem"``); ``client`` is shared
    and owned by the caller (:func:`~hmem.backends.redis.client.connect_redis`). ``wait``
    makes every change wait for replicas (:class:`~hmem.backends.redis.client.ReplicaWait`).

    Example::

        queue = RedisJobQueue(connect_redis("redis://127.0.0.1:6379/0"), prefix="myapp")
        queue.put([JobSpec("keys", "u1", {"item": "i1"}), JobSpec("keys", "u1", {"item": "i2"})])
        [first] = queue.take("keys", 10, lease_s=60)  # u1's second job waits for the first
        queue.done([first.id])
    """

    def __init__(self, client: RedisClient, *, prefix: str = DEFAULT_PREFIX, wait: ReplicaWait = NO_WAIT) -> None:
        self._client = client
        self._wait = wait
        self._label = client_label(client)
        self._keys = [f"{KeySpace(prefix).prefix}:{{:jobs}}:seq"]
        self._put = client.register_script(_PUT)
        self._take = client.register_script(_TAKE)
        self._done = client.register_script(_DONE)
        self._fail = client.register_script(_FAIL)
        self._requeue = client.register_script(_REQUEUE)
        self._recover = client.register_script(_RECOVER)
        self._drop = client.register_script(_DROP)
        self._counts = client.register_script(_COUNTS)
        self._quarantined = client.register_script(_QUARANTINED)
        self._next_due = client.register_script(_NEXT_DUE)

    def _write(self, script: Any, args: list[Any]) -> Any:
        with redis_errors(self._label):
            return run_script(self._client, script, self._keys, args, wait=self._wait, label=self._label)

    def _read(self, script: Any, args: list[Any]) -> Any:
        with redis_errors(self._label):
            return script(keys=self._keys, args=args)

    def put(self, specs: Sequence[JobSpec], *, coalesce: bool = False) -> int:
        """Store the jobs in order; the number stored (see :meth:`hmem.protocols.JobQueue.put`)."""
        specs = check_put(specs)
        if not specs:
            return 0
        args: list[Any] = [repr(time.time()), "1" if coalesce else "0"]
        for spec in specs:
            args += [spec.kind, encode_part(spec.kind), spec.user_id, encode_part(spec.user_id), spec.key or "",
                     json.dumps(dict(spec.payload), ensure_ascii=False)]
        return int(self._write(self._put, args))

    def take(self, kind: str, limit: int, *, lease_s: float, now: float | None = None) -> list[Job]:
        """Lease up to ``limit`` due jobs of ``kind`` (see the module docstring)."""
        check_take(kind, limit, lease_s)
        at = time.time() if now is None else float(now)
        reply = self._write(self._take, [encode_part(kind), repr(at), repr(at + lease_s), limit])
        return [_job(id_, raw) for id_, raw in reply]

    def done(self, ids: Sequence[str]) -> None:
        """Remove finished jobs; an unknown id is ignored."""
        if wanted := _ids(ids):
            self._write(self._done, wanted)

    def fail(self, ids: Sequence[str], error: str, *, retry_at: float | None, now: float | None = None) -> None:
        """``attempts`` + 1, ``error`` kept, lease ended; due at ``retry_at``, or
        quarantined when it is None. An unknown id is ignored."""
        kept = check_fail(error, retry_at)
        if wanted := _ids(ids):
            self._write(self._fail, [kept, "" if retry_at is None else repr(float(retry_at)), *wanted])

    def requeue(self, ids: Sequence[str]) -> int:
        """Make quarantined jobs due now, attempts and error cleared; how many."""
        wanted = _ids(ids)
        return int(self._write(self._requeue, [repr(time.time()), *wanted])) if wanted else 0

    def recover(self) -> int:
        """End every lease (also ones already run out); how many."""
        return int(self._write(self._recover, []))

    def drop(self, user_id: str, *, kind: str | None = None, keys: Sequence[str] | None = None) -> int:
        """Delete the user's jobs (of ``kind``; whose key is one of ``keys``) in any state; how many."""
        check_id(user_id, "user_id")
        args = [encode_part(user_id), "0" if kind is None else "1", kind or "", "0" if keys is None else "1"]
        return int(self._write(self._drop, [*args, *(keys or ())]))

    def counts(self, *, user_id: str | None = None) -> dict[str, JobCounts]:
        """Waiting, running and quarantined jobs per kind (only kinds with jobs)."""
        flat = self._read(self._counts, [repr(time.time()), *_one_user(user_id)])
        return {decode_part(as_str(flat[i])): JobCounts(int(flat[i + 1]), int(flat[i + 2]), int(flat[i + 3]))
                for i in range(0, len(flat), 4)}

    def quarantined(self, *, user_id: str | None = None, limit: int = 100) -> list[Job]:
        """Quarantined jobs, oldest first, with their errors (at most ``limit``)."""
        reply = self._read(self._quarantined, [*_one_user(user_id), max(limit, 0)])
        return [_job(id_, raw) for id_, raw in reply][:limit]

    def next_due(self, kind: str) -> float | None:
        """When a :meth:`take` of ``kind`` could next return a job (see
        :func:`~hmem.backends._jobs.first_due`)."""
        due = self._read(self._next_due, [encode_part(kind), repr(time.time())])
        return None if due is None else float(as_str(due))

    def close(self) -> None:
        """The client belongs to the caller; nothing to release."""
