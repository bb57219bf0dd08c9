"""Redis :class:`~hmem.protocols.ItemStore`: long-term items shared by every app instance.

Layout per user (all under the ``{user}`` hash tag, see docs/redis.md): a HASH of item
JSON by id; two lexicographic ZSETs (``<kind>\\x1f<dedup key>\\x1f<id>`` and
``<source message id>\\x1f<id>``) that answer :meth:`RedisItemStore.find_duplicate` and
source-message filters without reading items; a HASH id → those two members (what a
delete must unindex); and a **change counter** with a bounded **change log**
(``<gen>:<id>`` scored by generation) that :class:`~hmem.backends.redis.lexical.
SharedLexicalIndex` uses to keep an in-process BM25 cache current.

Every write (put, delete, delete_user) is one Lua script per user: the items, their
index entries, the counter and the log change together, so a reader that sees the new
generation also sees the new items. A ``put`` of several users' items runs the scripts
in one ``MULTI``/``EXEC`` on a single Redis node. On a Redis Cluster users live in
different slots (and with a :class:`~hmem.backends.redis.client.ReplicaWait` the ``WAIT``
cannot sit inside ``MULTI``), so such a batch runs as one script per user: atomic per
user, not across users (:class:`~hmem.longterm.store.LongTermStore` always writes one user's batch).

Cost: ``get``, ``find_duplicate`` and the ``kinds`` / ``source_message_ids`` / ``ids``
conditions are answered from the indexes and read only the items they name (the kind
is the first part of the dedup member, so a kinds-only ``find_ids`` reads no item at
all). A filter on session, time range or metadata without such a condition reads and
parses **all** of the user's items and evaluates :meth:`ItemFilter.matches` in Python:
O(n) per call, ~100 ms at 10k items (docs/bench-redis-items.md) — fine for the
per-user sizes hmem targets; the kinds / ids conditions shrink n first.

Example::

    from hmem.backends.redis.client import connect_redis
    store = RedisItemStore(connect_redis("redis://127.0.0.1:6379/0"))
    store.put([MemoryItem(id="i1", user_id="u1", text="I like tea")])
    store.find_duplicate("u1", "fact", "i like tea.").id   # 'i1'
    store.generation("u1")                                  # moves on every change
"""

from __future__ import annotations

import json
import secrets
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from hmem._time import from_micros, to_micros
from hmem.backends.memory.items import check_ids, validate_item
from hmem.backends.redis.client import (
    DEFAULT_PREFIX,
    NO_WAIT,
    RedisClient,
    ReplicaWait,
    as_str,
    client_label,
    is_cluster,
    redis_errors,
)
from hmem.backends.redis.keys import KeySpace
from hmem.backends.redis.waited import run_script
from hmem.errors import ConfigError
from hmem.longterm.dedup import dedup_key
from hmem.protocols import ItemFilter
from hmem.types import MemoryItem, check_id

__all__ = ["CHANGE_LOG_KEEP", "RedisItemStore"]

#: Change-log entries kept per user (pruned in steps to between this and twice this).
#: A cache further behind than the log rebuilds the user instead of replaying changes.
CHANGE_LOG_KEEP = 10_000

_SEP = "\x1f"  # ids, kinds and dedup keys never contain control characters
_CHUNK = 1000

# Shared by the writes. KEYS: items, ix, dedup, src, gen, log.
_COMMON = """
local function unindex(id)
  local old = redis.call('HGET', KEYS[2], id)
  if not old then return false end
  local sep = string.find(old, '\\n', 1, true)
  redis.call('ZREM', KEYS[3], string.sub(old, 1, sep - 1))
  if sep < #old then redis.call('ZREM', KEYS[4], string.sub(old, sep + 1)) end
  return true
end
local function bump(base, keep, ids)
  if redis.call('HEXISTS', KEYS[5], 'g') == 0 then
    redis.call('HSET', KEYS[5], 'g', base, 'b', base)
  end
  local g = redis.call('HINCRBY', KEYS[5], 'g', 1)
  local gs = string.format('%d', g)
  for _, id in ipairs(ids) do redis.call('ZADD', KEYS[6], g, gs .. ':' .. id) end
  local b = tonumber(redis.call('HGET', KEYS[5], 'b') or '0')
  if g - b > 2 * keep then  -- prune in steps: O(1) amortized per change
    b = g - keep
    redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', b)
    redis.call('HSET', KEYS[5], 'b', string.format('%d', b))
  end
  return g
end
"""

# ARGV: base, keep, then per item: id, json, dedup member, source member ('' = none)
_PUT = _COMMON + """
local ids = {}
for i = 3, #ARGV, 4 do
  local id = ARGV[i]
  unindex(id)
  redis.call('HSET', KEYS[1], id, ARGV[i + 1])
  redis.call('HSET', KEYS[2], id, ARGV[i + 2] .. '\\n' .. ARGV[i + 3])
  redis.call('ZADD', KEYS[3], 0, ARGV[i + 2])
  if ARGV[i + 3] ~= '' then redis.call('ZADD', KEYS[4], 0, ARGV[i + 3]) end
  ids[#ids + 1] = id
end
return bump(ARGV[1], tonumber(ARGV[2]), ids)
"""

# ARGV: base, keep, id1, id2 ...  Returns how many existed.
_DELETE = _COMMON + """
local gone = {}
for i = 3, #ARGV do
  if unindex(ARGV[i]) then
    redis.call('HDEL', KEYS[1], ARGV[i])
    redis.call('HDEL', KEYS[2], ARGV[i])
    gone[#gone + 1] = ARGV[i]
  end
end
if #gone > 0 then bump(ARGV[1], tonumber(ARGV[2]), gone) end
return #gone
"""

# ARGV: base.  The counter survives (generations never go back) and the log is emptied
# with b = g, so every cache built before this rebuilds instead of replaying.
_DELETE_USER = """
local n = redis.call('HLEN', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6])
if n > 0 then
  if redis.call('HEXISTS', KEYS[5], 'g') == 0 then redis.call('HSET', KEYS[5], 'g', ARGV[1]) end
  local g = redis.call('HINCRBY', KEYS[5], 'g', 1)
  redis.call('HSET', KEYS[5], 'b', g)
end
return n
"""


def _encode(it: MemoryItem) -> str:
    return json.dumps(
        {"id": it.id, "t": it.text, "k": it.kind, "i": float(it.importance), "c": to_micros(it.created_at),
         "u": to_micros(it.updated_at), "s": it.session_id, "src": it.source_message_id, "sp": it.speaker,
         "m": dict(it.metadata)},
        ensure_ascii=False, separators=(",", ":"),
    )


def _decode(user_id: str, raw: bytes | str) -> MemoryItem:
    d = json.loads(raw)
    return MemoryItem(
        id=d["id"], user_id=user_id, text=d["t"], kind=d["k"], importance=d["i"],
        created_at=from_micros(d["c"]), updated_at=from_micros(d["u"]),
        session_id=d["s"], source_message_id=d["src"], speaker=d["sp"], metadata=d["m"],
    )



def _prefix_range(prefix: str) -> tuple[bytes, bytes]:
    # Members are UTF-8, which never contains the byte 0xff: every member starting
    # with ``prefix`` sorts before ``prefix + 0xff``.
    raw = prefix.encode()
    return b"[" + raw, b"(" + raw + b"\xff"


class RedisItemStore:
    """Items in Redis under ``prefix`` (default ``"hmem"``); ``client`` is shared and
    owned by the caller (:func:`~hmem.backends.redis.client.connect_redis`).

    Besides the :class:`~hmem.protocols.ItemStore` port it offers the change feed a
    shared lexical cache needs: :meth:`generation`, :meth:`snapshot`, :meth:`changes_since`.
    ``wait`` makes every write wait for replicas (:class:`~hmem.backends.redis.client.ReplicaWait`).
    """

    def __init__(self, client: RedisClient, *, prefix: str = DEFAULT_PREFIX,
                 change_log_keep: int = CHANGE_LOG_KEEP, wait: ReplicaWait = NO_WAIT) -> None:
        if isinstance(change_log_keep, bool) or not isinstance(change_log_keep, int) or change_log_keep < 1:
            raise ConfigError(f"change_log_keep must be a positive integer, got {change_log_keep!r}")
        self._client = client
        self._keys = KeySpace(prefix)
        self._keep = change_log_keep
        self._wait = wait
        self._label = client_label(client)
        self._put = client.register_script(_PUT)
        self._delete = client.register_script(_DELETE)
        self._delete_user = client.register_script(_DELETE_USER)

    def _user_keys(self, user: str) -> list[str]:
        k = self._keys
        return [k.items(user), k.item_index(user), k.item_dedup(user), k.item_sources(user),
                k.item_generation(user), k.item_changes(user)]

    @staticmethod
    def _base() -> int:
        # A user's first generation starts at a random number, so a cache built against
        # a Redis that was flushed and refilled since cannot mistake the new counter for
        # its old one (counters restarting at 0 would collide). < 2**40 keeps Lua's
        # doubles exact.
        return secrets.randbelow(2**40) + 1

    def _run(self, script: Any, user: str, args: list[str | int]) -> Any:
        return run_script(self._client, script, self._user_keys(user), args, wait=self._wait, label=self._label)

    # -- the port ---------------------------------------------------------------------

    def put(self, items: Sequence[MemoryItem]) -> None:
        checked = [validate_item(i) for i in items]
        if not checked:
            return
        by_user: dict[str, list[str | int]] = defaultdict(list)
        for it in checked:
            dedup = _SEP.join((it.kind, dedup_key(it.text), it.id))
            source = f"{it.source_message_id}{_SEP}{it.id}" if it.source_message_id else ""
            by_user[it.user_id] += [it.id, _encode(it), dedup, source]
        with redis_errors(self._label):
            # One script per user when a MULTI may not span slots (cluster: users differ in
            # slot) or must not hold the WAIT (inside MULTI it would not block).
            if len(by_user) == 1 or is_cluster(self._client) or self._wait.enabled:
                for user, args in by_user.items():
                    self._run(self._put, user, [self._base(), self._keep, *args])
                return
            pipe = self._client.pipeline(transaction=True)
            for user, args in by_user.items():
                self._put(keys=self._user_keys(user), args=[self._base(), self._keep, *args], client=pipe)
            pipe.execute()

    def get(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryItem]:
        user = check_id(user_id, "user_id")
        return {it.id: it for it in self._fetch(user, list(dict.fromkeys(check_ids(ids))))}

    def _fetch(self, user: str, ids: Sequence[str]) -> list[MemoryItem]:
        return [_decode(user, raw) for _, raw in self._raw(user, ids)]

    def _raw(self, user: str, ids: Sequence[str]) -> list[tuple[str, Any]]:
        """(id, stored JSON) of the ``ids`` that exist."""
        out: list[tuple[str, Any]] = []
        key = self._keys.items(user)
        with redis_errors(self._label):
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                out += [(i, raw) for i, raw in zip(chunk, self._client.hmget(key, chunk), strict=True)
                        if raw is not None]
        return out

    def _all(self, user: str) -> list[MemoryItem]:
        with redis_errors(self._label):
            raws = self._client.hvals(self._keys.items(user))
        return [_decode(user, raw) for raw in raws]

    def _indexed_ids(self, user: str, flt: ItemFilter) -> tuple[set[str] | None, bool]:
        """Candidate ids from the ZSET indexes alone (every id there exists), and whether
        they satisfy the kinds / source ids / ids conditions exactly. ``None`` when no
        index applies. A few source ids beat a whole kind's range, so with source ids
        the kind is left to :meth:`ItemFilter.matches` on the (few) items read."""
        if flt.source_message_ids is not None:
            found = self._ids_by_prefix(self._keys.item_sources(user), flt.source_message_ids)
            exact = flt.kinds is None
        elif flt.kinds is not None:
            found, exact = self._ids_by_prefix(self._keys.item_dedup(user), flt.kinds), True
        else:
            return None, False
        if flt.ids is not None:
            found &= flt.ids
        return found, exact

    def _candidates(self, user: str, flt: ItemFilter) -> list[MemoryItem]:
        # Narrow by the conditions an index answers; the rest is checked in Python.
        indexed, _ = self._indexed_ids(user, flt)
        if indexed is not None:
            return self._fetch(user, sorted(indexed))
        if flt.ids is not None:
            return self._fetch(user, sorted(flt.ids))
        return self._all(user)

    def _ids_by_prefix(self, key: str, values: Iterable[str]) -> set[str]:
        # Members are ``<value>\x1f…\x1f<id>``: one lex range per value, one round trip.
        wanted = sorted(values)
        if not wanted:
            return set()
        with redis_errors(self._label):
            pipe = self._client.pipeline(transaction=False)
            for value in wanted:
                pipe.zrangebylex(key, *_prefix_range(value + _SEP))
            replies = pipe.execute()
        return {as_str(m).rsplit(_SEP, 1)[1] for members in replies for m in members}

    def find(self, user_id: str, flt: ItemFilter | None = None, *, limit: int | None = None) -> list[MemoryItem]:
        user = check_id(user_id, "user_id")
        flt = flt or ItemFilter()
        found = [it for it in self._candidates(user, flt) if flt.matches(it)]
        found.sort(key=lambda it: (it.created_at, it.id))
        return found if limit is None else found[:limit]

    def find_ids(self, user_id: str, flt: ItemFilter | None = None) -> set[str]:
        user = check_id(user_id, "user_id")
        flt = flt or ItemFilter()
        if flt.is_empty:
            with redis_errors(self._label):
                return {as_str(i) for i in self._client.hkeys(self._keys.items(user))}
        if flt.ids is not None and flt == ItemFilter(ids=flt.ids):
            # Ids alone (recall confirming its candidates): which exist, no item parsed.
            return {i for i, _ in self._raw(user, sorted(flt.ids))}
        rest = (flt.session_id, flt.since, flt.until, flt.metadata)
        if all(v is None for v in rest):
            indexed, exact = self._indexed_ids(user, flt)
            if indexed is not None and exact:  # answered without reading a single item
                return indexed
        return {it.id for it in self._candidates(user, flt) if flt.matches(it)}

    def find_duplicate(self, user_id: str, kind: str, text: str) -> MemoryItem | None:
        user = check_id(user_id, "user_id")
        low, high = _prefix_range(_SEP.join((kind, dedup_key(text), "")))
        with redis_errors(self._label):
            members = self._client.zrangebylex(self._keys.item_dedup(user), low, high, start=0, num=8)
        ids = [as_str(m).rsplit(_SEP, 1)[1] for m in members]
        found = self._fetch(user, ids)  # an item deleted meanwhile is simply absent
        return found[0] if found else None

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        user = check_id(user_id, "user_id")
        wanted = list(dict.fromkeys(check_ids(ids)))
        removed = 0
        with redis_errors(self._label):
            # Chunks bound the script's run time; each chunk is atomic on its own.
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                removed += int(self._run(self._delete, user, [self._base(), self._keep, *chunk]))
        return removed

    def delete_user(self, user_id: str) -> int:
        user = check_id(user_id, "user_id")
        with redis_errors(self._label):
            return int(self._run(self._delete_user, user, [self._base()]))

    def count(self, user_id: str) -> int:
        user = check_id(user_id, "user_id")
        with redis_errors(self._label):
            return int(self._client.hlen(self._keys.items(user)))

    def close(self) -> None:
        """Nothing to release: the client belongs to the caller."""

    # -- change feed (for SharedLexicalIndex) ------------------------------------------

    def generation(self, user_id: str) -> int:
        """The user's change counter: different after every put/delete/delete_user that
        changed something (0 for a user who never had items). One ``HGET``."""
        user = check_id(user_id, "user_id")
        with redis_errors(self._label):
            raw = self._client.hget(self._keys.item_generation(user), "g")
        return 0 if raw is None else int(raw)

    def snapshot(self, user_id: str) -> tuple[int, list[MemoryItem]]:
        """The generation and every item of the user, read in one ``MULTI``/``EXEC``
        (so the items are exactly those of that generation)."""
        user = check_id(user_id, "user_id")
        with redis_errors(self._label):
            pipe = self._client.pipeline(transaction=True)
            pipe.hget(self._keys.item_generation(user), "g")
            pipe.hvals(self._keys.items(user))
            raw_gen, raws = pipe.execute()
        return (0 if raw_gen is None else int(raw_gen)), [_decode(user, raw) for raw in raws]

    def changes_since(self, user_id: str, generation: int) -> tuple[int, set[str]] | None:
        """``(current generation, ids changed after generation)``, or None when the
        change log no longer reaches back to ``generation`` (rebuild from a snapshot)."""
        user = check_id(user_id, "user_id")
        with redis_errors(self._label):
            pipe = self._client.pipeline(transaction=True)
            pipe.hmget(self._keys.item_generation(user), ["g", "b"])
            pipe.zrangebyscore(self._keys.item_changes(user), f"({generation}", "+inf")
            (raw_gen, raw_base), members = pipe.execute()
        if raw_gen is None or raw_base is None:
            return None
        current, base = int(raw_gen), int(raw_base)
        if not base <= generation <= current:
            return None
        return current, {as_str(m).split(":", 1)[1] for m in members}
