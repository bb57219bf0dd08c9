"""Redis :class:`~hmem.protocols.ProfileStore`: per-user facts with history.

Keys (docs/redis.md): ``<prefix>:{<user>}:p:cur`` is a HASH normalized key → JSON
of the key's newest version (a deletion has ``"v": null``), and
``<prefix>:{<user>}:p:h:<key>`` a LIST of every version of that key as JSON,
oldest first (its last element equals the ``cur`` field).

A write reads the current version, applies the shared rules of
:mod:`hmem.profile.model` (normalization, ``write_time`` clamping, re-confirmation,
the key cap) in Python and commits with ``WATCH``/``MULTI``/``EXEC`` on the
user's ``cur`` hash; if another writer touched the user's profile meanwhile, it
re-reads and re-applies. So the behaviour is exactly that of
:class:`hmem.backends.memory.profile.MemoryProfileStore`, atomic across instances.
A write whose reply was lost is not blindly resent (redis-py never retries a
``WATCH``ed transaction); a caller's retry finds its value current and only
refreshes ``confirmed_at``, so no duplicate history row appears.

Example::

    store = RedisProfileStore(connect_redis("redis://127.0.0.1:6379/0"))
    store.set("u1", "Home Town", "Berlin")
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import redis

from hmem.backends.redis.client import DEFAULT_PREFIX, client_label, redis_errors
from hmem.backends.redis.keys import KeySpace
from hmem.errors import BackendUnavailable, CapacityError, InvalidInput
from hmem.profile.model import (
    DEFAULT_MAX_KEYS,
    check_confidence,
    check_provenance,
    coerce_value,
    confirm,
    decode_value,
    encode_value,
    normalize_key,
    same_value,
    write_time,
)
from hmem.types import ProfileEntry, ProfileValue, Provenance, check_id, utcnow

__all__ = ["RedisProfileStore"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
_MAX_ATTEMPTS = 50  # optimistic retries under contention on one user's profile


def _to_us(dt: datetime | None) -> int | None:
    return None if dt is None else (dt - _EPOCH) // _US


def _from_us(us: int | None) -> datetime | None:
    return None if us is None else _EPOCH + us * _US


def _encode(entry: ProfileEntry) -> str:
    return json.dumps(
        {
            "v": None if entry.value is None else encode_value(entry.value),
            "from": _to_us(entry.valid_from),
            "to": _to_us(entry.valid_to),
            "cat": _to_us(entry.confirmed_at),
            "conf": entry.confidence,
            "src": entry.provenance.source,
            "sid": entry.provenance.session_id,
            "mid": entry.provenance.message_id,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _decode(user_id: str, key: str, raw: str | bytes) -> ProfileEntry:
    data = json.loads(raw)
    valid_from = _from_us(data["from"])
    assert valid_from is not None
    return ProfileEntry(
        user_id=user_id,
        key=key,
        value=None if data["v"] is None else decode_value(data["v"]),
        valid_from=valid_from,
        valid_to=_from_us(data["to"]),
        provenance=Provenance(source=data["src"], session_id=data["sid"], message_id=data["mid"]),
        confidence=float(data["conf"]),
        confirmed_at=_from_us(data["cat"]),
    )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisProfileStore:
    """Profile facts in Redis under ``prefix``; ``max_keys`` caps live keys per user
    (checked inside the transaction); ``clock`` supplies "now" (clock skew between
    instances is clamped by :func:`hmem.profile.model.write_time`)."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        if isinstance(max_keys, bool) or not isinstance(max_keys, int) or max_keys < 1:
            raise InvalidInput(f"max_keys must be a positive int, got {max_keys!r}", field="max_keys")
        self.max_keys = max_keys
        self._client = client
        self._keys = KeySpace(prefix)
        self._clock = clock
        self._label = client_label(client)

    def _transact(self, user_id: str, key: str, plan: Callable[[ProfileEntry | None, redis.client.Pipeline], Any]) -> Any:
        """Run ``plan(current, pipe)`` under WATCH of the user's ``cur`` hash; ``plan``
        queues its writes after ``pipe.multi()``; retried when another writer won."""
        cur_key = self._keys.profile_current(user_id)
        with redis_errors(self._label):
            for _ in range(_MAX_ATTEMPTS):
                with self._client.pipeline(transaction=True) as pipe:
                    try:
                        pipe.watch(cur_key)  # type: ignore[no-untyped-call]
                        raw = pipe.hget(cur_key, key)
                        current = None if raw is None else _decode(user_id, key, raw)
                        result = plan(current, pipe)
                        if pipe.command_stack:
                            pipe.execute()
                        return result
                    except redis.exceptions.WatchError:
                        continue
        raise BackendUnavailable(
            f"profile of user {user_id!r} is under heavy concurrent writes; gave up after {_MAX_ATTEMPTS} attempts"
        )

    def set(
        self,
        user_id: str,
        key: str,
        value: ProfileValue,
        *,
        provenance: Provenance | None = None,
        confidence: float = 1.0,
        at: datetime | None = None,
    ) -> ProfileEntry:
        """Make ``value`` the current value of ``key`` (rules as
        :meth:`hmem.backends.memory.profile.MemoryProfileStore.set`)."""
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        val = coerce_value(value)
        conf = check_confidence(confidence)
        prov = check_provenance(provenance)
        cur_key, hist_key = self._keys.profile_current(user_id), self._keys.profile_history(user_id, norm)

        def plan(current: ProfileEntry | None, pipe: redis.client.Pipeline) -> ProfileEntry:
            when = write_time(at, self._clock(), current.valid_from if current else None)
            if current is not None and same_value(current.value, val):
                entry = confirm(current, when, conf)
                pipe.multi()
                pipe.hset(cur_key, norm, _encode(entry))
                pipe.lset(hist_key, -1, _encode(entry))
                return entry
            if current is None or current.value is None:
                live = sum(1 for raw in pipe.hvals(cur_key) if json.loads(raw)["v"] is not None)
                if live >= self.max_keys:
                    raise CapacityError(
                        f"user {user_id!r} already has {live} profile keys, the cap (max_keys={self.max_keys});"
                        f" delete a key first or configure a larger max_keys. Key {norm!r} was not stored."
                    )
            entry = ProfileEntry(user_id, norm, val, when, None, prov, conf)
            pipe.multi()
            if current is not None:
                pipe.lset(hist_key, -1, _encode(replace(current, valid_to=when)))
            pipe.rpush(hist_key, _encode(entry))
            pipe.hset(cur_key, norm, _encode(entry))
            return entry

        result: ProfileEntry = self._transact(user_id, norm, plan)
        return result

    def get(self, user_id: str, key: str) -> ProfileEntry | None:
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        with redis_errors(self._label):
            raw = self._client.hget(self._keys.profile_current(user_id), norm)
        entry = None if raw is None else _decode(user_id, norm, raw)
        return entry if entry is not None and entry.value is not None else None

    def delete(self, user_id: str, key: str, *, provenance: Provenance | None = None) -> bool:
        """Remove the current value; history gets a ``value=None`` version. True if
        the key had a value."""
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        prov = check_provenance(provenance)
        cur_key, hist_key = self._keys.profile_current(user_id), self._keys.profile_history(user_id, norm)

        def plan(current: ProfileEntry | None, pipe: redis.client.Pipeline) -> bool:
            if current is None or current.value is None:
                return False
            when = write_time(None, self._clock(), current.valid_from)
            tombstone = ProfileEntry(user_id, norm, None, when, None, prov, 1.0)
            pipe.multi()
            pipe.lset(hist_key, -1, _encode(replace(current, valid_to=when)))
            pipe.rpush(hist_key, _encode(tombstone))
            pipe.hset(cur_key, norm, _encode(tombstone))
            return True

        result: bool = self._transact(user_id, norm, plan)
        return result

    def all(self, user_id: str) -> list[ProfileEntry]:
        """Current entries, most recently set or confirmed first (ties by key)."""
        check_id(user_id, "user_id")
        with redis_errors(self._label):
            raw = self._client.hgetall(self._keys.profile_current(user_id))
        entries = [_decode(user_id, _text(k), v) for k, v in raw.items()]
        live = [e for e in entries if e.value is not None]
        live.sort(key=lambda e: e.key)
        live.sort(key=lambda e: e.last_confirmed, reverse=True)
        return live

    def history(self, user_id: str, key: str) -> list[ProfileEntry]:
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        with redis_errors(self._label):
            raws = self._client.lrange(self._keys.profile_history(user_id, norm), 0, -1)
        return [_decode(user_id, norm, raw) for raw in raws]

    def delete_user(self, user_id: str) -> int:
        """Erase every key and its history (no tombstones); return how many keys
        (live or deleted) had any history."""
        check_id(user_id, "user_id")
        cur_key = self._keys.profile_current(user_id)
        with redis_errors(self._label):
            for _ in range(_MAX_ATTEMPTS):
                with self._client.pipeline(transaction=True) as pipe:
                    try:
                        pipe.watch(cur_key)  # type: ignore[no-untyped-call]
                        keys = [_text(k) for k in pipe.hkeys(cur_key)]
                        pipe.multi()
                        pipe.delete(cur_key, *[self._keys.profile_history(user_id, k) for k in keys])
                        pipe.execute()
                        return len(keys)
                    except redis.exceptions.WatchError:
                        continue
        raise BackendUnavailable(f"profile of user {user_id!r} kept changing during delete_user; try again")

    def close(self) -> None:
        """The client belongs to the caller; nothing to release."""
