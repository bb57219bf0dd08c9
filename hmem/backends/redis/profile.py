"""Redis :class:`~hmem.protocols.ProfileStore`: per-user facts with history.

Keys (docs/redis.md): ``<prefix>:{<user>}:p:cur`` is a HASH normalized key → JSON
of the key's newest version (a deletion has ``"v": null``), and
``<prefix>:{<user>}:p:h:<key>`` a LIST of every version of that key as JSON,
oldest first (its last element equals the ``cur`` field).

A write reads the current version, asks :mod:`hmem.profile.versioning` for the plan
(``write_time`` clamping, re-confirmation, the key cap) and commits it with
``WATCH``/``MULTI``/``EXEC`` on the user's ``cur`` hash; if another writer touched the
user's profile meanwhile, it re-reads and re-plans. So the behaviour is exactly that of
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
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

import redis

from hmem._time import from_micros, to_micros
from hmem.backends.redis.client import (
    DEFAULT_PREFIX,
    NO_WAIT,
    RedisClient,
    ReplicaWait,
    as_str,
    client_label,
    on_node,
    redis_errors,
)
from hmem.backends.redis.keys import KeySpace
from hmem.backends.redis.waited import exec_and_wait
from hmem.errors import BackendUnavailable
from hmem.profile.model import (
    DEFAULT_MAX_KEYS,
    check_provenance,
    decode_value,
    encode_value,
    normalize_key,
    sort_for_prompt,
)
from hmem.profile.versioning import Plan, check_max_keys, check_update, plan_delete, plan_set
from hmem.types import ProfileEntry, ProfileValue, Provenance, check_id, utcnow

__all__ = ["RedisProfileStore"]

T = TypeVar("T")

_MAX_ATTEMPTS = 50  # optimistic retries under contention on one user's profile


def _to_us(dt: datetime | None) -> int | None:
    return None if dt is None else to_micros(dt)


def _from_us(us: int | None) -> datetime | None:
    return None if us is None else from_micros(us)


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


class RedisProfileStore:
    """Profile facts in Redis under ``prefix``; ``max_keys`` caps live keys per user
    (checked inside the transaction); ``clock`` supplies "now" (clock skew between
    instances is clamped by :func:`hmem.profile.model.write_time`); ``wait`` makes
    ``set``/``delete``/``delete_user`` wait for replicas (:class:`~hmem.backends.redis.client.ReplicaWait`)."""

    def __init__(
        self,
        client: RedisClient,
        *,
        prefix: str = DEFAULT_PREFIX,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], datetime] = utcnow,
        wait: ReplicaWait = NO_WAIT,
    ) -> None:
        self.max_keys = check_max_keys(max_keys)
        self._client = client
        self._wait = wait
        self._keys = KeySpace(prefix)
        self._clock = clock
        self._label = client_label(client)

    def _transact(
        self, user_id: str, key: str, decide: Callable[[ProfileEntry | None, redis.client.Pipeline], Plan | None]
    ) -> Plan | None:
        """Read the key's current version under WATCH of the user's ``cur`` hash, let
        ``decide(current, pipe)`` plan the write (reads only), and persist the plan in
        MULTI/EXEC; retried from the read when another writer won."""
        cur_key = self._keys.profile_current(user_id)
        with redis_errors(self._label):
            for _ in range(_MAX_ATTEMPTS):
                done, plan = self._on_owner(cur_key, lambda owner: self._attempt(owner, user_id, key, decide))
                if done:
                    return plan
        raise BackendUnavailable(
            f"profile of user {user_id!r} is under heavy concurrent writes; gave up after {_MAX_ATTEMPTS} attempts"
        )

    def _attempt(
        self, owner: RedisClient, user_id: str, key: str,
        decide: Callable[[ProfileEntry | None, redis.client.Pipeline], Plan | None],
    ) -> tuple[bool, Plan | None]:
        """One optimistic round of :meth:`_transact`: (False, None) when another writer won."""
        cur_key, hist_key = self._keys.profile_current(user_id), self._keys.profile_history(user_id, key)
        with owner.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(cur_key)  # type: ignore[no-untyped-call]
                raw = pipe.hget(cur_key, key)
                plan = decide(None if raw is None else _decode(user_id, key, raw), pipe)  # type: ignore[arg-type]
                if plan is None:
                    return True, None
                commands: list[tuple[str | int, ...]] = []
                if plan.rewrite is not None:
                    commands.append(("LSET", hist_key, -1, _encode(plan.rewrite)))
                if plan.append is not None:
                    commands.append(("RPUSH", hist_key, _encode(plan.append)))
                commands.append(("HSET", cur_key, key, _encode(plan.result)))
                return self._commit(pipe, commands), plan
            except redis.exceptions.WatchError:
                return False, None

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
        update = check_update(user_id, key, value, provenance=provenance, confidence=confidence, at=at)
        cur_key = self._keys.profile_current(update.user_id)

        def decide(current: ProfileEntry | None, pipe: redis.client.Pipeline) -> Plan:
            def live_keys() -> int:
                return sum(1 for raw in pipe.hvals(cur_key) if json.loads(raw)["v"] is not None)

            return plan_set(current, update, now=self._clock(), max_keys=self.max_keys, live_keys=live_keys)

        plan = self._transact(update.user_id, update.key, decide)
        assert plan is not None
        return plan.result

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
        plan = self._transact(user_id, norm, lambda current, _pipe: plan_delete(current, prov, now=self._clock()))
        return plan is not None

    def all(self, user_id: str) -> list[ProfileEntry]:
        """Current entries, most recently set or confirmed first (ties by key)."""
        check_id(user_id, "user_id")
        with redis_errors(self._label):
            raw = self._client.hgetall(self._keys.profile_current(user_id))
        return sort_for_prompt(_decode(user_id, as_str(k), v) for k, v in raw.items())

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
                erased = self._on_owner(cur_key, lambda owner: self._erase(owner, user_id))
                if erased is not None:
                    return erased
        raise BackendUnavailable(f"profile of user {user_id!r} kept changing during delete_user; try again")

    def _erase(self, owner: RedisClient, user_id: str) -> int | None:
        """One optimistic round of :meth:`delete_user`: None when another writer won."""
        cur_key = self._keys.profile_current(user_id)
        with owner.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(cur_key)  # type: ignore[no-untyped-call]
                keys = [as_str(k) for k in pipe.hkeys(cur_key)]
                command = ("DEL", cur_key, *[self._keys.profile_history(user_id, k) for k in keys])
                return len(keys) if self._commit(pipe, [command]) else None
            except redis.exceptions.WatchError:
                return None

    def _on_owner(self, cur_key: str, attempt: Callable[[RedisClient], T]) -> T:
        """``attempt(owner)``: on the master's own client when writes wait for replicas
        (``WAIT`` must follow ``EXEC`` on the watched connection), else on the client."""
        return on_node(self._client, cur_key, attempt) if self._wait.enabled else attempt(self._client)

    def _commit(self, pipe: redis.client.Pipeline, commands: Sequence[tuple[str | int, ...]]) -> bool:
        """``MULTI`` ``commands`` ``EXEC`` on ``pipe`` (which holds the caller's ``WATCH``),
        followed by ``WAIT`` when writes wait for replicas: False when the ``WATCH`` fired
        (with ``WAIT``; without it, ``WatchError`` is raised as usual)."""
        if self._wait.enabled:
            connection = getattr(pipe, "connection", None)  # the watched connection
            assert connection is not None
            return exec_and_wait(connection, commands, wait=self._wait, label=self._label)
        pipe.multi()
        for command in commands:
            pipe.execute_command(*command)  # type: ignore[no-untyped-call]
        pipe.execute()
        return True

    def close(self) -> None:
        """The client belongs to the caller; nothing to release."""
