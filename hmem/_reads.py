"""Reads over a user's stores that :class:`~hmem.memory.Memory` answers with: what a
session shows the prompt, long-term items by id or filter, a single retriever's
ranking, counts per tier. Pure functions of a :class:`~hmem._options.UserStores`.

Example::

    >>> from hmem.types import Hit, MemoryItem
    >>> def hit(i, src): return Hit(MemoryItem(i, "u", "t", "turn", source_message_id=src), 1.0)
    >>> [h.item.id for h in distinct_sources([hit("a", "m1"), hit("b", "m1"), hit("c", "m2")], exclude={"m2"})]
    ['a']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from hmem._options import SYSTEM_PROMPT_ID, UserStores, messages_to_append
from hmem.assembly.assemble import budget_for
from hmem.backends.write_behind import WriteBehindVectorIndex
from hmem.errors import EmbedderMismatch, InvalidInput
from hmem.longterm.types import MAX_K
from hmem.protocols import ItemFilter
from hmem.session.compaction import split_covered
from hmem.tokens.models import resolve_model
from hmem.types import Hit, MemoryItem, Message, SessionSummary, check_id, renamed

__all__ = ["MAX_CONTEXT_RECALL", "MAX_K", "MIN_RECALLED_TOKENS", "check_context_k", "context_depth", "distinct_sources", "embedder_info", "find_items", "recall_depth",
           "session_view", "user_stats", "vector_moves"]


def session_view(
    stores: UserStores, user: str, session: str, pending: Iterable[Message | Mapping[str, Any]] | None = None,
) -> tuple[list[Message], SessionSummary | None, str | None]:
    """``(buffer, summary, stored system prompt)`` as a prompt sees the session: the
    buffer without what the summary already covers and without the stored prompt, then
    the ``pending`` messages (checked like ``add()``'s; those whose id is stored already
    are not repeated) as if they had been appended."""
    extra = [] if pending is None else messages_to_append(pending, "pending", reserved_field="pending")
    state = stores.sessions.load(user, session)
    # An expired or deleted session takes its summary with it (not every summary
    # store expires entries by itself).
    summary = stores.summaries.get(user, session) if state.version else None
    _, buffer = split_covered(list(state.messages), summary)  # between summary write and trim, skip duplicates
    stored_prompt = next((m.content for m in buffer if m.id == SYSTEM_PROMPT_ID), None)
    stored = {m.id for m in state.messages}
    shown = [m for m in buffer if m.id != SYSTEM_PROMPT_ID] + [m for m in extra if m.id not in stored]
    return shown, summary, stored_prompt


def prompt_limit(model: str, reply_reserve: int, budget: int | None) -> int:
    """The prompt's token budget: ``budget``, or ``model``'s context window minus
    ``reply_reserve``; a bad value raises :class:`InvalidInput` naming ``budget``."""
    try:
        return budget_for(resolve_model(model).context_window, reply_reserve, budget)
    except InvalidInput as exc:  # budget_for calls the caller's ``budget`` "explicit"
        raise renamed(exc, {"explicit": "budget"}) from None


def context_query(buffer: Sequence[Message], query: object) -> str | None:
    """What ``context()`` recalls with: ``query``, or the buffer's last user message."""
    if query is None:
        return next((m.content for m in reversed(buffer) if m.role == "user" and m.content), None)
    if not isinstance(query, str):
        raise InvalidInput("query must be a string or None", field="query")
    return query


def check_context_k(k: object) -> int:
    """``k`` of :meth:`Memory.context`: 0 (recall nothing) up to the recall limit."""
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_K:
        raise InvalidInput(f"k must be an integer from 0 (recall nothing) to {MAX_K}, or None; got {k!r}", field="k")
    return k


#: Fewest tokens a recalled item takes in a prompt (a short turn with its date line):
#: how deep the budget alone could reach.
MIN_RECALLED_TOKENS = 16
#: Deepest budget-driven recall of :meth:`Memory.context`: past this many hits the
#: relevance cut-off has always stopped the tier in measurements (docs/assembly.md),
#: and each further candidate costs latency.
MAX_CONTEXT_RECALL = 200


def context_depth(budget: int, k: object, default_k: int | None, shown: int) -> tuple[int | None, int]:
    """``(bound, fetch)`` of :meth:`Memory.context`'s recall: ``bound`` is the caller's
    ``k`` (checked; ``default_k`` when None), ``fetch`` how many hits to ask recall for
    when ``shown`` turns are already in the prompt. With a bound: enough for ``bound``
    distinct ones (:func:`recall_depth`). Without: as many as ``budget`` could hold, up
    to :data:`MAX_CONTEXT_RECALL` (the assembler then stops at the tier's share or the
    relevance cut-off, whichever comes first) — not doubled, because a deep recall's
    cost grows with its candidate pool and the budget already over-counts.

    >>> context_depth(500, None, None, 0), context_depth(4000, None, None, 4), context_depth(4000, 10, None, 4)
    ((None, 32), (None, 204), (10, 24))
    """
    bound = default_k if k is None else check_context_k(k)
    if bound is not None:
        return bound, recall_depth(bound, shown)
    return None, min(MAX_K, min(MAX_CONTEXT_RECALL, -(-budget // MIN_RECALLED_TOKENS)) + shown)


def recall_depth(want: int, shown: int) -> int:
    """How many hits to fetch for ``want`` distinct ones when ``shown`` turns are already
    in the prompt: hits of those turns and second hits of one source message (its
    archived turn and a fact extracted from it) would waste slots. Capped at the
    recall limit, so every ``want`` the API accepts works.

    >>> recall_depth(10, 4), recall_depth(1000, 0)
    (24, 1000)
    """
    return min(2 * want + shown, MAX_K)


def distinct_sources(hits: Sequence[Hit], *, exclude: AbstractSet[str] = frozenset()) -> list[Hit]:
    """Keep the best hit per source message and drop hits of messages in ``exclude``
    (already in the prompt). Items without a source message are always kept."""
    seen: set[str] = set()
    out: list[Hit] = []
    for hit in hits:
        source = hit.item.source_message_id
        if source is not None:
            if source in exclude or source in seen:
                continue
            seen.add(source)
        out.append(hit)
    return out


def find_items(
    stores: UserStores,
    user_id: str,
    *,
    ids: Sequence[str] | None = None,
    session_id: str | None = None,
    source_message_id: str | None = None,
    kinds: Iterable[str] | str | None = None,
) -> list[MemoryItem]:
    """The user's items matching every filter given, oldest first; with ``ids``, those
    items in that order (unknown ids skipped)."""
    user = check_id(user_id, "user_id")
    flt = ItemFilter(
        kinds=None if kinds is None else frozenset([kinds] if isinstance(kinds, str) else kinds),
        session_id=None if session_id is None else check_id(session_id, "session_id"),
        source_message_ids=None if source_message_id is None else frozenset({source_message_id}),
    )
    items = stores.longterm.items
    if ids is None:
        return items.find(user, flt)
    wanted = list(dict.fromkeys(check_id(i, "ids") for i in ids))
    found = items.get(user, wanted) if wanted else {}
    return [found[i] for i in wanted if i in found and flt.matches(found[i])]


def embedder_info(stores: UserStores, user_id: str) -> dict[str, Any]:
    """The embedder in use (``fallback``: why it stands in for the configured one, or
    None), what the user's vectors were made with (None: no vectors yet) and, when that
    is another model, ``reindex``: the command that re-embeds them (else None); ``pending``:
    for a store kept on the default before e5, the reindex that moves it (else None)."""
    lt = stores.longterm
    try:
        lt.check_vectors(user_id)  # the check recall makes: what it would refuse, with the command
        fix = None
    except EmbedderMismatch as exc:
        fix = exc.command
    stamp = lt.vectors.stamp(user_id)
    return {
        "model": lt.embedder.model_name,
        "fallback": getattr(lt.embedder, "fallback", None),
        "vectors": None if stamp is None else {
            "embedder": stamp.embedder, "dimension": stamp.dimension, "matches": fix is None,
        },
        "reindex": fix,
        # a store kept on an earlier default model (HMEM_EMBED_PROVIDER=auto): the move it waits for
        "pending": getattr(lt.embedder, "pending", None),
    }


def vector_moves(stores: UserStores, user_id: str) -> dict[str, Any]:
    """With vectors written behind: ``vectors_waiting``, how many of the user's vectors
    wait to be moved into the index, and ``vectors_quarantined``, those it refused
    (``id`` of the item, ``error``: the refusal); 0 and [] otherwise."""
    vectors = stores.longterm.vectors
    if not isinstance(vectors, WriteBehindVectorIndex):
        return {"vectors_waiting": 0, "vectors_quarantined": []}
    return {"vectors_waiting": vectors.pending(user_id),
            "vectors_quarantined": [{"id": q.item_id, "error": q.error} for q in vectors.quarantined(user_id)]}


def user_stats(stores: UserStores, user_id: str) -> dict[str, Any]:
    """Counts per tier for one user, the embedder (:func:`embedder_info`) and the
    vectors not (yet) in the index (:func:`vector_moves`)."""
    user = check_id(user_id, "user_id")
    sessions = stores.sessions.list_sessions(user)
    summaries = [stores.summaries.get(user, s.session_id) for s in sessions]
    items = stores.longterm.items.find(user)
    kinds: dict[str, int] = {}
    for item in items:
        kinds[item.kind] = kinds.get(item.kind, 0) + 1
    return {
        "user_id": user,
        "sessions": len(sessions),
        "buffered_messages": sum(s.message_count for s in sessions),
        "summaries": sum(1 for s in summaries if s is not None),
        "summarized_messages": sum(s.folded_count for s in summaries if s is not None),
        "profile_keys": len(stores.profile.all(user)),
        "items": len(items),
        "items_by_kind": dict(sorted(kinds.items())),
        "sentence_keys_waiting": stores.longterm.keys_waiting(user),
        **vector_moves(stores, user),
        "query_planner": "off" if stores.longterm.planner is None else repr(stores.longterm.planner),
        "embedder": embedder_info(stores, user),
    }
