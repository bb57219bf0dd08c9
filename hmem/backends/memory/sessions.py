"""In-process :class:`~hmem.protocols.SessionStore`: the reference implementation.

Thread-safe (one lock), defensive copies in and out, optional TTL on inactivity
checked lazily against an injectable clock. Data lives only as long as the
process: use it for tests and throw-away runs.

The input checks shared by every session backend live here too
(:func:`check_batch`, :func:`check_last_n`, :func:`check_version`), so the SQLite
and Redis stores reject exactly what this one rejects.

Example::

    >>> from hmem.types import Message
    >>> store = MemorySessionStore()
    >>> store.append("u1", "s1", [Message(role="user", content="hi", id="m1")])
    1
    >>> [m.id for m in store.load("u1", "s1").messages]
    ['m1']
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from hmem._time import from_seconds
from hmem.errors import ConflictError, DuplicateId, InvalidInput
from hmem.types import Message, SessionInfo, SessionState, check_id

__all__ = ["MemorySessionStore", "check_batch", "check_last_n", "check_ttl", "check_version", "copy_message"]


def check_batch(messages: object, field_name: str = "messages") -> list[Message]:
    """Validate a batch for append/replace: a sequence of :class:`Message` with
    unique ids. Raises :class:`InvalidInput` (:class:`DuplicateId` for a repeated id)."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        raise InvalidInput(f"{field_name} must be a list of Message values", field=field_name)
    out = list(messages)
    seen: set[str] = set()
    for index, message in enumerate(out):
        if not isinstance(message, Message):
            raise InvalidInput(
                f"{field_name}[{index}] must be a hmem.types.Message, got {type(message).__name__} "
                "(build one with Message.from_openai)",
                field=f"{field_name}[{index}]",
            )
        if message.id in seen:
            raise DuplicateId(
                f"{field_name} contains message id {message.id!r} twice; ids are unique per session",
                field=f"{field_name}[{index}].id",
            )
        seen.add(message.id)
    return out


def check_last_n(last_n: object) -> int | None:
    """``last_n`` must be ``None`` or a non-negative int (not a bool)."""
    if last_n is None:
        return None
    if isinstance(last_n, bool) or not isinstance(last_n, int) or last_n < 0:
        raise InvalidInput(f"last_n must be a non-negative integer or None, got {last_n!r}", field="last_n")
    return last_n


def check_version(version: object) -> int:
    """An ``expected_version`` must be a non-negative int (not a bool)."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise InvalidInput(f"expected_version must be a non-negative integer, got {version!r}", field="expected_version")
    return version


def check_ttl(ttl_seconds: object) -> float | None:
    """A TTL is ``None`` (off) or a positive finite number of seconds."""
    if ttl_seconds is None:
        return None
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int | float) or not 0 < ttl_seconds < float("inf"):
        raise InvalidInput(f"ttl_seconds must be a positive number or None, got {ttl_seconds!r}", field="ttl_seconds")
    return float(ttl_seconds)


def copy_message(message: Message) -> Message:
    """A copy that shares no mutable state (``metadata`` is the only mutable part)."""
    if not message.metadata:
        return message
    dup = copy.copy(message)
    object.__setattr__(dup, "metadata", dict(message.metadata))
    return dup


@dataclass
class _Session:
    messages: list[Message] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    version: int = 0
    updated_at: float = 0.0


class MemorySessionStore:
    """Sessions in a dict guarded by a lock.

    ``ttl_seconds`` (off by default) expires a session that has not been written
    for that long; ``clock`` returns epoch seconds (inject a fake one in tests).
    """

    def __init__(self, ttl_seconds: float | None = None, clock: Callable[[], float] = time.time) -> None:
        self._ttl = check_ttl(ttl_seconds)
        self._clock = clock
        self._lock = threading.Lock()
        self._users: dict[str, dict[str, _Session]] = {}

    # -- helpers (call with the lock held) ------------------------------------------

    def _live(self, key: tuple[str, str], now: float) -> _Session | None:
        sessions = self._users.get(key[0])
        session = sessions.get(key[1]) if sessions else None
        if session is not None and self._ttl is not None and now - session.updated_at >= self._ttl:
            self._drop(key)
            return None
        return session

    def _drop(self, key: tuple[str, str]) -> None:
        sessions = self._users.get(key[0])
        if sessions is not None:
            sessions.pop(key[1], None)
            if not sessions:
                del self._users[key[0]]

    def _create(self, key: tuple[str, str]) -> _Session:
        session = self._users.setdefault(key[0], {})[key[1]] = _Session()
        return session

    # -- the port -------------------------------------------------------------------

    def append(self, user_id: str, session_id: str, messages: Iterable[Message]) -> int:
        key = (check_id(user_id, "user_id"), check_id(session_id, "session_id"))
        batch = [copy_message(m) for m in check_batch(messages)]
        with self._lock:
            now = self._clock()
            session = self._live(key, now)
            if not batch:
                return session.version if session else 0
            if session is not None:
                for index, message in enumerate(batch):
                    if message.id in session.ids:
                        raise DuplicateId(
                            f"message id {message.id!r} already exists in session {session_id!r}; nothing was appended",
                            field=f"messages[{index}].id",
                        )
            else:
                session = self._create(key)
            session.messages.extend(batch)
            session.ids.update(m.id for m in batch)
            session.version += 1
            session.updated_at = now
            return session.version

    def load(self, user_id: str, session_id: str, last_n: int | None = None) -> SessionState:
        key = (check_id(user_id, "user_id"), check_id(session_id, "session_id"))
        n = check_last_n(last_n)
        with self._lock:
            session = self._live(key, self._clock())
            if session is None:
                return SessionState((), 0)
            picked = session.messages if n is None else session.messages[len(session.messages) - n :] if n else []
            return SessionState(tuple(copy_message(m) for m in picked), session.version)

    def replace(self, user_id: str, session_id: str, messages: Iterable[Message], expected_version: int) -> int:
        key = (check_id(user_id, "user_id"), check_id(session_id, "session_id"))
        batch = [copy_message(m) for m in check_batch(messages)]
        expected = check_version(expected_version)
        with self._lock:
            now = self._clock()
            session = self._live(key, now)
            actual = session.version if session else 0
            if actual != expected:
                raise ConflictError(
                    f"session {session_id!r} is at version {actual}, not {expected}: reload it and retry",
                    expected=expected,
                    actual=actual,
                )
            if session is None:
                session = self._create(key)
            session.messages = batch
            session.ids = {m.id for m in batch}
            session.version += 1
            session.updated_at = now
            return session.version

    def delete(self, user_id: str, session_id: str) -> bool:
        key = (check_id(user_id, "user_id"), check_id(session_id, "session_id"))
        with self._lock:
            existed = self._live(key, self._clock()) is not None
            self._drop(key)
            return existed

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        user = check_id(user_id, "user_id")
        with self._lock:
            now = self._clock()
            infos = []
            for sid in list(self._users.get(user, ())):
                session = self._live((user, sid), now)
                if session is not None:
                    updated = from_seconds(session.updated_at)
                    infos.append(SessionInfo(sid, len(session.messages), session.version, updated))
        infos.sort(key=lambda i: (i.updated_at, i.session_id), reverse=True)
        return infos

    def list_users(self) -> list[str]:
        with self._lock:
            now = self._clock()
            return sorted(user for user, sessions in list(self._users.items())
                          if any(self._live((user, sid), now) is not None for sid in list(sessions)))

    def close(self) -> None:
        """Nothing to release; the data stays readable until the object is dropped."""
