"""The per-user pages of ``/ui``: a user, a session, a message, Ask, and the deletes.

Each handler reads through :class:`~hmem.memory.Memory` (the calls ``/v1`` makes) and
renders a template; nothing is computed in the browser. Parameters arrive as text and
are checked here, so a bad one gives a 4xx page that says what to send.
"""

# No `from __future__ import annotations`: FastAPI must evaluate the Annotated[…, Depends(local)]
# parameter types, which name functions local to the builder.

from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from hmem.errors import BudgetError, EmbedderMismatch, InvalidInput, NotFound
from hmem.memory import Memory
from hmem.server.auth import Principal
from hmem.server.ui._auth import FormTokens
from hmem.server.ui.render import Pages, path_part
from hmem.tokens.models import MODELS, resolve_model
from hmem.types import MemoryItem, Provenance, check_id
from hmem.views import context_to_dict, session_view, with_versions

__all__ = ["MAX_QUESTION_CHARS", "PAGE_SIZE", "build_user_pages", "int_param"]

PAGE_SIZE = 100
#: The Ask form's question: longer is surely a paste gone wrong.
MAX_QUESTION_CHARS = 20_000
#: The budget buttons of the Ask page.
BUDGET_STEPS = (250, 500, 1_000, 2_000, 4_000, 8_000)
_DONE = {"item": "The item was deleted.", "profile": "The profile key was deleted."}


def int_param(value: str | None, name: str, low: int, high: int, default: int | None = 1) -> int:
    """``value`` (query text) as an int in ``[low, high]``; blank gives ``default``.

    >>> int_param("3", "page", 1, 5), int_param(None, "page", 1, 5)
    (3, 1)
    """
    text = (value or "").strip()
    if not text and default is not None:
        return default
    if not text.isdigit() or not low <= int(text) <= high:
        raise InvalidInput(f"{name} must be a whole number from {low} to {high}, got {text[:40]!r}", field=name)
    return int(text)


def date_param(value: str | None, name: str) -> date | None:
    """``value`` as a ``YYYY-MM-DD`` date; blank gives None."""
    text = (value or "").strip()
    if not text:
        return None
    try:
        return date.fromisoformat(text[:40])
    except ValueError:
        raise InvalidInput(f"{name} must be a date like 2024-05-31, got {text[:40]!r}", field=name) from None


def _optional_id(value: str | None, name: str) -> str | None:
    text = (value or "").strip()
    return check_id(text, name) if text else None


def _in_range(item: MemoryItem, since: date | None, until: date | None) -> bool:
    created = item.created_at
    if since is not None and created < datetime.combine(since, time.min, UTC):
        return False
    return until is None or created < datetime.combine(until + timedelta(days=1), time.min, UTC)


def build_user_pages(
    memory: Memory, pages: Pages, tokens: FormTokens, who: Callable[..., Principal]
) -> APIRouter:
    """The pages under ``/users/{user_id}``; each checks that the caller may see that user."""

    def user_of(user_id: str, principal: Annotated[Principal, Depends(who)]) -> str:
        user = check_id(user_id, "user_id")
        if not principal.may_access(user):
            raise HTTPException(403, "this API key is bound to another user: log in with a key for this user")
        return user

    r = APIRouter(prefix="/users/{user_id}")
    User = Annotated[str, Depends(user_of)]

    @r.get("")
    def user_page(request: Request, user: User, *, kind: str | None = None, session: str | None = None,
                  since: str | None = None, until: str | None = None, page: str | None = None,
                  done: str | None = None) -> Response:
        """Profile with each key's history, sessions, and the long-term items (filtered)."""
        session_id = _optional_id(session, "session")
        kind_name = _optional_id(kind, "kind")
        start, end = date_param(since, "since"), date_param(until, "until")
        if start and end and start > end:
            raise InvalidInput("since must not be after until", field="since")
        infos = memory.session_infos(user)
        stats = memory.stats(user)
        profile = [
            {"entry": e.to_dict(), "history": [h.to_dict() for h in
                                                            memory.profile.history(user, e.key)]}
            for e in memory.profile.all(user)
        ]
        everything = memory.items(user)
        sessions = sorted({i.session_id for i in infos} | {it.session_id for it in everything if it.session_id})
        chosen = [it for it in everything
                  if (session_id is None or it.session_id == session_id) and (kind_name is None or it.kind == kind_name)
                  and _in_range(it, start, end)]
        chosen.reverse()  # newest first
        number = int_param(page, "page", 1, 1 + len(chosen) // PAGE_SIZE)
        shown = chosen[(number - 1) * PAGE_SIZE: number * PAGE_SIZE]
        return pages.render(
            request, "user.html", title=f"User {user}", user=user, stats=stats, infos=infos, profile=profile,
            items=with_versions(memory, user, [_item_row(it) for it in shown]), total=len(chosen), page=number,
            pages=1 + (len(chosen) - 1) // PAGE_SIZE if chosen else 1, sessions=sessions,
            kinds=sorted(stats["items_by_kind"]), filters={"kind": kind_name or "", "session": session_id or "",
                                                           "since": start or "", "until": end or ""},
            done=_DONE.get(done or ""),
        )

    @r.get("/sessions/{session_id}")
    def session_page(request: Request, user: User, session_id: str) -> Response:
        """The buffer, the rolling summary with its watermark, what was folded and archived."""
        view = session_view(memory, user, session_id)
        if not view["buffer"] and view["summary"] is None and not view["items"]:
            raise NotFound(f"user {user!r} has no session {session_id!r}")
        archived = [i for i in view["items"] if i["kind"] == "turn"]
        facts = with_versions(memory, user, [i for i in view["items"] if i["kind"] != "turn"])
        return pages.render(request, "session.html", title=f"Session {session_id}", user=user, view=view,
                            archived=archived, facts=facts)

    @r.get("/sessions/{session_id}/messages/{message_id}")
    def message_page(request: Request, user: User, session_id: str, message_id: str) -> Response:
        """One message: in the buffer, or archived; and every item and profile value it produced."""
        session, mid = check_id(session_id, "session_id"), check_id(message_id, "message_id")
        buffered = next((m for m in memory.history(user, session) if m.id == mid), None)
        derived = memory.items(user, source_message_id=mid)
        profile = [h.to_dict() for e in memory.profile.all(user) for h in memory.profile.history(user, e.key)
                   if h.provenance.message_id == mid]
        if buffered is None and not derived and not profile:
            raise NotFound(f"user {user!r} has no message {mid!r} in session {session!r} (buffered or archived)")
        return pages.render(request, "message.html", title=f"Message {mid}", user=user, session=session, mid=mid,
                            buffered=None if buffered is None else buffered.to_openai(include_meta=True),
                            derived=with_versions(memory, user, [_item_row(it) for it in derived]), profile=profile)

    @r.get("/ask")
    def ask_page(request: Request, user: User, *, session: str | None = None, q: str | None = None,
                 model: str | None = None, budget: str | None = None) -> Response:
        """``context()`` for a question: the prompt, a budget bar per tier, every hit and every cut."""
        infos = memory.session_infos(user)
        session_id = _optional_id(session, "session") or (infos[0].session_id if infos else None)
        model_name = (model or "").strip() or memory.options.model
        if model_name not in MODELS and model_name != memory.options.model:
            raise InvalidInput(f"unknown model {model_name[:80]!r}: pick one from the list", field="model")
        window = resolve_model(model_name).context_window
        limit = None if not (budget or "").strip() else int_param(budget, "budget", 1, window)
        question = q or ""
        if len(question) > MAX_QUESTION_CHARS:
            raise InvalidInput(f"the question is longer than {MAX_QUESTION_CHARS} characters", field="q")
        form = {"session": session_id or "", "q": question, "model": model_name, "budget": limit or ""}
        data, error, status = None, None, 200
        if question.strip() and session_id is not None:
            try:
                ctx = memory.context(user, session_id, question, model=model_name, budget=limit)
                data = context_to_dict(ctx, memory, user)
            except (BudgetError, EmbedderMismatch) as exc:  # the form stays, with what to change
                error, status = str(exc), 409
        return pages.render(
            request, "ask.html", status=status, title=f"Ask as {user}", user=user, infos=infos, form=form,
            models=sorted({*MODELS, memory.options.model}), steps=BUDGET_STEPS, data=data, error=error,
            no_session=session_id is None,
        )

    _delete_pages(r, memory, pages, tokens, User)
    return r


def _item_row(item: MemoryItem) -> dict[str, Any]:
    row = item.to_dict()
    # A near-duplicate merged into the item refreshes updated_at (LongTermStore dedup).
    row["merged_at"] = row["updated_at"] if item.updated_at - item.created_at > timedelta(seconds=1) else None
    return row


def _delete_pages(r: APIRouter, memory: Memory, pages: Pages, tokens: FormTokens, User: Any) -> None:
    """Each delete is a confirm page (GET) and a POST carrying that page's token."""

    def confirm(request: Request, user: str, what: str, detail: str | None, back: str) -> Response:
        return pages.render(request, "confirm.html", title="Confirm", user=user, what=what, detail=detail,
                            action=request.url.path, token=tokens.make(request.url.path), back=back)

    def checked(request: Request, token: str) -> None:
        if not tokens.check(request.url.path, token):
            raise HTTPException(403, "this form has expired or did not come from this page: open it again")

    def user_url(user: str) -> str:
        return f"{pages.prefix}/users/{path_part(user)}"

    @r.get("/items/{item_id}/delete")
    def confirm_item(request: Request, user: User, item_id: str) -> Response:
        found = memory.items(user, ids=[check_id(item_id, "item_id")])
        if not found:
            raise NotFound(f"user {user!r} has no item {item_id!r}")
        return confirm(request, user, f"Delete the {found[0].kind} item {item_id}?", found[0].text, user_url(user))

    @r.post("/items/{item_id}/delete")
    def delete_item(request: Request, user: User, item_id: str, token: Annotated[str, Form()] = "") -> Response:
        checked(request, token)
        if not memory.forget(user, [check_id(item_id, "item_id")]):  # as DELETE /v1/users/{u}/items/{id}
            raise NotFound(f"user {user!r} has no item {item_id!r}")
        return RedirectResponse(f"{user_url(user)}?done=item", status_code=303)

    @r.get("/profile/{key}/delete")
    def confirm_key(request: Request, user: User, key: str) -> Response:
        entry = memory.profile.get(user, key)
        if entry is None or not entry.is_current:
            raise NotFound(f"user {user!r} has no profile key {key!r}")
        value = ", ".join(entry.value) if isinstance(entry.value, tuple) else str(entry.value)
        return confirm(request, user, f"Delete the profile key {entry.key}? (its history keeps the deletion)",
                       value, user_url(user))

    @r.post("/profile/{key}/delete")
    def delete_key(request: Request, user: User, key: str, token: Annotated[str, Form()] = "") -> Response:
        checked(request, token)
        if not memory.profile.delete(user, key, provenance=Provenance("api")):  # as DELETE …/profile/{key}
            raise NotFound(f"user {user!r} has no profile key {key!r}")
        return RedirectResponse(f"{user_url(user)}?done=profile", status_code=303)

    @r.get("/forget")
    def confirm_forget(request: Request, user: User) -> Response:
        stats = memory.stats(user)
        detail = (f"{stats['sessions']} sessions, {stats['buffered_messages']} buffered messages, "
                  f"{stats['profile_keys']} profile keys and {stats['items']} long-term items")
        return confirm(request, user, f"Forget user {user}: erase everything hmem holds about them?", detail,
                       user_url(user))

    @r.post("/forget")
    def forget_user(request: Request, user: User, token: Annotated[str, Form()] = "") -> Response:
        checked(request, token)
        memory.forget_user(user)  # as DELETE /v1/users/{u}
        return RedirectResponse(pages.prefix, status_code=303)
