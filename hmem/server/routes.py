"""The ``/v1`` routes: each handler translates HTTP ⇄ :class:`~hmem.memory.Memory`.

Handlers are plain ``def`` functions, so FastAPI runs them in its worker thread pool
and a blocking store call (SQLite, Redis, the embedding model) never blocks the
event loop. They hold no domain logic: validate shape (pydantic), call the facade,
map the result; hmem's errors become HTTP statuses in :mod:`hmem.server.errors`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path as FsPath
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Response, status

from hmem.errors import NotFound
from hmem.memory import Memory
from hmem.server import schemas as s
from hmem.server.auth import Guard
from hmem.types import MAX_ID_CHARS, Provenance

__all__ = ["build_router"]

UserId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS, examples=["alice"])]
SessionId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS, examples=["chat-2025-06-01"])]
ItemId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS)]
ProfileKey = Annotated[str, Path(min_length=1, max_length=64, examples=["city"])]

_ERR: dict[int | str, dict[str, Any]] = {
    code: {"model": s.ErrorBody, "description": text}
    for code, text in (
        (401, "missing or invalid API key"),
        (403, "the API key is bound to another user"),
        (413, "request body too large"),
        (422, "invalid input (the field is named)"),
        (503, "a backend (Redis, Chroma …) is unreachable; retry"),
    )
}
_404: dict[int | str, dict[str, Any]] = {404: {"model": s.ErrorBody, "description": "no such record"}}
_409: dict[int | str, dict[str, Any]] = {409: {"model": s.ErrorBody, "description": "conflict (duplicate id, budget)"}}


def build_router(memory: Memory, guard: Guard) -> APIRouter:
    """All user-scoped routes, each behind ``guard`` (auth + user binding)."""
    r = APIRouter(prefix="/v1/users/{user_id}", dependencies=[Depends(guard)], responses=_ERR)
    _session_routes(r, memory)
    _item_routes(r, memory)
    _profile_routes(r, memory)
    _user_routes(r, memory)
    return r


def _session_routes(r: APIRouter, memory: Memory) -> None:
    @r.post("/sessions/{session_id}/messages", status_code=status.HTTP_201_CREATED, tags=["sessions"],
            response_model=s.AppendResponse, responses=_409)
    def append_messages(user_id: UserId, session_id: SessionId, body: s.AppendRequest) -> s.AppendResponse:
        """Append messages to a session (atomic), then extract profile/facts and compact.

        A retried batch with the same message ids answers 409 ``duplicate_id``: it already landed."""
        return s.AppendResponse.of(memory.add(user_id, session_id, body.to_domain()))

    @r.get("/sessions/{session_id}/messages", tags=["sessions"], response_model=s.HistoryResponse)
    def get_history(
        user_id: UserId, session_id: SessionId,
        last_n: Annotated[int | None, Query(ge=1, le=100_000, description="only the newest N")] = None,
    ) -> s.HistoryResponse:
        """The session's buffered messages, oldest first (older turns live in the summary and archive)."""
        return s.HistoryResponse(messages=[s.MessageOut.of(m) for m in memory.history(user_id, session_id, last_n)])

    @r.post("/sessions/{session_id}/context", tags=["sessions"], response_model=s.ContextResponse, responses=_409)
    def get_context(user_id: UserId, session_id: SessionId, body: s.ContextRequest) -> s.ContextResponse:
        """The prompt for the next model call, within the token budget, with a report of what was cut.

        409 ``budget_exceeded`` (with ``required``/``budget``) when system prompt + current turn cannot fit."""
        ctx = memory.context(
            user_id, session_id, body.query, model=body.model, budget=body.budget, system_prompt=body.system_prompt,
            k=body.k, truncate_current_turn=body.truncate_current_turn,
        )
        return s.ContextResponse(messages=ctx.messages, tokens=ctx.tokens, report=ctx.report.to_dict())

    @r.put("/sessions/{session_id}/system-prompt", status_code=status.HTTP_204_NO_CONTENT, tags=["sessions"],
           response_class=Response, responses=_409)
    def set_system_prompt(user_id: UserId, session_id: SessionId, body: s.SystemPromptRequest) -> Response:
        """Store the session's system prompt (used when a context request gives none); null removes it."""
        memory.set_system_prompt(user_id, session_id, body.prompt)
        return Response(status_code=status.HTTP_204_NO_CONTENT)

    @r.get("/sessions", tags=["sessions"], response_model=s.SessionList)
    def list_sessions(user_id: UserId) -> s.SessionList:
        """The user's sessions, most recently updated first."""
        return s.SessionList(sessions=[s.SessionOut.of(i) for i in memory.session_infos(user_id)])

    @r.delete("/sessions/{session_id}", tags=["sessions"], response_model=s.DeletedResponse, responses=_404)
    def delete_session(user_id: UserId, session_id: SessionId) -> s.DeletedResponse:
        """Delete a session's buffer and summary (archived turns stay in long-term memory)."""
        if not memory.clear_session(user_id, session_id):
            raise NotFound(f"user {user_id!r} has no session {session_id!r}")
        return s.DeletedResponse(deleted=1)


def _item_routes(r: APIRouter, memory: Memory) -> None:
    @r.post("/items", status_code=status.HTTP_201_CREATED, tags=["items"], response_model=s.RememberResponse)
    def remember(user_id: UserId, body: s.RememberRequest) -> s.RememberResponse:
        """Store a fact in long-term memory (deduplicated: ``skipped`` / ``updated`` say so)."""
        return s.RememberResponse.of(memory.remember(
            user_id, body.text, body.kind, body.importance, body.metadata, session_id=body.session_id,
            created_at=body.created_at))

    @r.get("/items", tags=["items"], response_model=s.ItemList)
    def list_items(
        user_id: UserId,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> s.ItemList:
        """The user's long-term items (facts and archived turns), paged."""
        items = memory.items(user_id)[offset : offset + limit]
        return s.ItemList(items=[s.ItemOut.of(i) for i in items])

    @r.post("/items/search", tags=["items"], response_model=s.RecallResponse)
    def recall(user_id: UserId, body: s.RecallRequest) -> s.RecallResponse:
        """Hybrid (BM25 + embeddings) recall; each hit explains its ranks and scores."""
        hits = memory.recall(user_id, body.query, body.k, body.options())
        return s.RecallResponse(hits=[s.HitOut.of(h) for h in hits])

    @r.post("/items/delete", tags=["items"], response_model=s.DeletedResponse)
    def forget(user_id: UserId, body: s.ForgetRequest) -> s.DeletedResponse:
        """Delete items by ids and/or filters (ANDed), or all of them with ``all: true``."""
        return s.DeletedResponse(deleted=memory.forget(
            user_id, body.ids, kinds=body.kinds, session_id=body.session_id, before=body.before, all=body.all))

    @r.delete("/items/{item_id}", tags=["items"], response_model=s.DeletedResponse, responses=_404)
    def forget_one(user_id: UserId, item_id: ItemId) -> s.DeletedResponse:
        """Delete one long-term item."""
        if not memory.forget(user_id, [item_id]):
            raise NotFound(f"user {user_id!r} has no item {item_id!r}")
        return s.DeletedResponse(deleted=1)


def _profile_routes(r: APIRouter, memory: Memory) -> None:
    profile = memory.profile

    @r.get("/profile", tags=["profile"], response_model=s.ProfileList)
    def get_profile(user_id: UserId) -> s.ProfileList:
        """Current profile entries, most recently set first."""
        return s.ProfileList(entries=[s.ProfileEntryOut.of(e) for e in profile.all(user_id)])

    @r.get("/profile/{key}", tags=["profile"], response_model=s.ProfileEntryOut, responses=_404)
    def get_profile_key(user_id: UserId, key: ProfileKey) -> s.ProfileEntryOut:
        """The current value of one key (keys are case-folded, spaces become ``_``)."""
        entry = profile.get(user_id, key)
        if entry is None or not entry.is_current:
            raise NotFound(f"user {user_id!r} has no profile key {key!r}")
        return s.ProfileEntryOut.of(entry)

    @r.put("/profile/{key}", tags=["profile"], response_model=s.ProfileEntryOut, responses=_409)
    def set_profile_key(user_id: UserId, key: ProfileKey, body: s.ProfileSetRequest) -> s.ProfileEntryOut:
        """Set a key (last write wins; the previous value stays in history)."""
        entry = profile.set(user_id, key, body.domain_value(), provenance=Provenance("api"),
                            confidence=body.confidence)
        return s.ProfileEntryOut.of(entry)

    @r.delete("/profile/{key}", tags=["profile"], response_model=s.DeletedResponse, responses=_404)
    def delete_profile_key(user_id: UserId, key: ProfileKey) -> s.DeletedResponse:
        """Remove a key's value (history records the deletion)."""
        if not profile.delete(user_id, key, provenance=Provenance("api")):
            raise NotFound(f"user {user_id!r} has no profile key {key!r}")
        return s.DeletedResponse(deleted=1)

    @r.get("/profile/{key}/history", tags=["profile"], response_model=s.ProfileList, responses=_404)
    def profile_history(user_id: UserId, key: ProfileKey) -> s.ProfileList:
        """Every version of a key, oldest first (``value: null`` marks a deletion)."""
        entries = profile.history(user_id, key)
        if not entries:
            raise NotFound(f"user {user_id!r} never had profile key {key!r}")
        return s.ProfileList(entries=[s.ProfileEntryOut.of(e) for e in entries])


_EXPORT_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "JSONL (one record per line) or JSON (`{\"records\": [...]}`); see docs/transfer format",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}},
                    "application/json": {"schema": {"type": "object"}}},
    }
}


def _user_routes(r: APIRouter, memory: Memory) -> None:
    @r.get("/export", tags=["users"], response_class=Response, responses=_EXPORT_DOC)
    def export_user(
        user_id: UserId, format: Annotated[Literal["jsonl", "json"], Query()] = "jsonl"
    ) -> Response:
        """Everything hmem holds about the user (sessions, summaries, profile history, items), lossless."""
        with tempfile.TemporaryDirectory(prefix="hmem-export-") as tmp:
            path = FsPath(tmp) / "export.jsonl"
            memory.export_user(user_id, path)
            text = path.read_text(encoding="utf-8")
        headers = {"Content-Disposition": f'attachment; filename="hmem-export.{format}"'}
        if format == "json":
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
            body = json.dumps({"records": records}, ensure_ascii=False)
            return Response(body, media_type="application/json", headers=headers)
        return Response(text, media_type="application/x-ndjson", headers=headers)

    @r.delete("", tags=["users"], response_model=s.UserForgotten)
    def forget_user(user_id: UserId) -> s.UserForgotten:
        """Erase everything of the user (sessions, summaries, profile, items); returns counts."""
        return s.UserForgotten(**memory.forget_user(user_id))
