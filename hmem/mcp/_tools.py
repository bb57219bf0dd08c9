"""What each MCP tool and resource does, as plain functions of ``(memory, user, …)``.

They call the public :class:`~hmem.memory.Memory` API only and return JSON-ready
dicts; bad input raises :class:`~hmem.errors.InvalidInput` from hmem itself, which
:mod:`hmem.mcp.server` turns into a tool error. Nothing here imports ``mcp``, so the
shapes are testable without the SDK.

Example::

    >>> profile_value(["tea", "cake"])
    ('tea', 'cake')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hmem.errors import InvalidInput
from hmem.longterm.options import RecallOptions
from hmem.types import Provenance

if TYPE_CHECKING:
    from hmem.memory import Memory
    from hmem.types import ProfileValue

__all__ = [
    "forget",
    "get_context",
    "profile_get",
    "profile_set",
    "profile_value",
    "recall",
    "recent_summary",
    "remember",
    "session_summary",
]

#: Upper bound of ``recall``'s ``k``: an agent asking for more floods its own context.
MAX_K = 100


def remember(
    memory: Memory, user: str, text: str, *, kind: str = "fact", importance: float = 0.5,
    session_id: str | None = None,
) -> dict[str, Any]:
    """Store a fact; say whether it was ``stored``, ``updated`` (near duplicate) or ``skipped``."""
    result = memory.remember(user, text, kind, importance, session_id=session_id)
    return {"status": result.status, "item": result.item.to_dict(), "similarity": result.similarity}


def recall(
    memory: Memory, user: str, query: str, *, k: int = 10, kinds: Sequence[str] | None = None,
    session_id: str | None = None, since: str | None = None, until: str | None = None,
) -> dict[str, Any]:
    """The ``k`` best items, each with its 1-based ``rank``, dates and retriever ranks."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be an integer from 1 to {MAX_K}, got {k!r}", field="k")
    hits = memory.recall(user, query, k, RecallOptions(kinds=kinds, session_id=session_id, since=since, until=until))
    return {"query": query, "hits": [{"rank": n, **h.to_dict()} for n, h in enumerate(hits, 1)]}


def get_context(
    memory: Memory, user: str, session_id: str, *, query: str | None = None, model: str | None = None,
    budget: int | None = None, system_prompt: str | None = None,
) -> dict[str, Any]:
    """The assembled prompt of a session within the token budget, with its report.

    ``query`` is the user's current message: the prompt's current turn (assembled as if
    appended, not stored) and what recall searches with. A query the session already
    ends with is that turn and is not repeated. Without it, the session's last user
    message is both."""
    pending = None
    if query is not None:
        last = memory.history(user, session_id, last_n=1)
        if not (last and last[-1].role == "user" and last[-1].content == query):
            pending = [{"role": "user", "content": query}]
    ctx = memory.context(user, session_id, query, model=model, budget=budget, system_prompt=system_prompt,
                         pending=pending)
    return {"messages": ctx.messages, "tokens": ctx.tokens, "report": ctx.report.to_dict()}


def profile_get(memory: Memory, user: str, key: str | None = None) -> dict[str, Any]:
    """The whole current profile, or one key (``entry: null`` when it is not set)."""
    if key is None:
        return {"entries": [e.to_dict() for e in memory.profile.all(user)]}
    entry = memory.profile.get(user, key)
    current = entry is not None and entry.is_current
    return {"key": key, "entry": entry.to_dict() if entry is not None and current else None}


def profile_value(value: object) -> ProfileValue:
    """A profile value from JSON: a string, number, boolean or list of strings."""
    if isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InvalidInput(
        f"value must be a string, number, boolean or list of strings, got {type(value).__name__}", field="value"
    )


def profile_set(memory: Memory, user: str, key: str, value: object, *, confidence: float = 1.0) -> dict[str, Any]:
    """Set a key (last write wins; the previous value stays in history)."""
    entry = memory.profile.set(user, key, profile_value(value), provenance=Provenance("api"), confidence=confidence)
    return {"entry": entry.to_dict()}


def forget(
    memory: Memory, user: str, ids: Sequence[str] | None = None, *, kinds: Sequence[str] | None = None,
    session_id: str | None = None, before: str | None = None, all: bool = False,
) -> dict[str, Any]:
    """Delete items by ids and/or filters (ANDed), or every item with ``all``."""
    if not all and ids is None and kinds is None and session_id is None and before is None:
        raise InvalidInput("say what to forget: ids, kinds, session_id, before, or all=true", field="ids")
    return {"deleted": memory.forget(user, ids, kinds=kinds, session_id=session_id, before=before, all=all)}


def session_summary(memory: Memory, user: str, session_id: str) -> dict[str, Any]:
    """One session's rolling summary (``summary: null`` before the first compaction)."""
    found = memory.summary(user, session_id)
    if found is None:
        return {"session_id": session_id, "summary": None}
    return {"session_id": session_id, "summary": found.text, "folded_count": found.folded_count,
            "method": found.method, "updated_at": found.updated_at.isoformat()}


def recent_summary(memory: Memory, user: str) -> dict[str, Any]:
    """The rolling summary of the user's most recently updated session."""
    sessions = memory.session_infos(user)
    if not sessions:
        return {"session_id": None, "summary": None}
    return session_summary(memory, user, sessions[0].session_id)
