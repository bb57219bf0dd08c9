"""The hmem MCP server, built on the official ``mcp`` SDK (``MCPServer``).

Tools: ``remember``, ``recall``, ``get_context``, ``profile_get``, ``profile_set``,
``forget``. Resources: ``hmem://profile``, ``hmem://summary/recent`` and the template
``hmem://sessions/{session_id}/summary``. Every handler acts for the user of the
request (:func:`hmem.mcp._user.current_user`); none takes a user argument. hmem's
own errors come back as tool errors (``isError: true``) with hmem's message.

Example::

    from hmem import Memory
    from hmem.mcp.server import build_server
    server = build_server(Memory.open("./hmem-data"), user="alice")
    server.run("stdio")
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from hmem._version import __version__
from hmem.errors import HmemError
from hmem.mcp import _tools
from hmem.mcp._user import UserBinding, current_user

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from hmem.memory import Memory
    from hmem.server.auth import KeyRing

__all__ = ["INSTRUCTIONS", "StrictArguments", "build_server", "http_app"]

INSTRUCTIONS = (
    "Long-term memory of the user you talk with. Call `recall` before answering anything that may depend "
    "on what the user said earlier; `remember` durable facts the user states; `profile_set` stable "
    "attributes (name, city, diet …). Everything is scoped to this user; no tool can reach another user."
)

T = TypeVar("T")
Sessions = Annotated[str, Field(description="the conversation (session) id", min_length=1, max_length=256)]
Kinds = Annotated[list[str] | None, Field(description="only these kinds (fact, preference, event, turn …)")]
When = Annotated[str | None, Field(description="ISO 8601 date or datetime, e.g. 2024-05-01")]


def _run(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except HmemError as exc:  # hmem's message already says what to do
        raise ToolError(str(exc)) from exc


class StrictArguments:
    """SDK middleware: a ``tools/call`` with an argument the tool does not take is a
    tool error, not silently dropped (an agent passing ``user_id`` must learn that it
    cannot choose the user)."""

    def __init__(self) -> None:
        self.allowed: dict[str, frozenset[str]] = {}

    def register(self, fn: Callable[..., Any]) -> None:
        self.allowed[fn.__name__] = frozenset(inspect.signature(fn).parameters)

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        params = ctx.params if isinstance(ctx.params, dict) else {}
        arguments, allowed = params.get("arguments"), self.allowed.get(str(params.get("name")))
        if ctx.method == "tools/call" and allowed is not None and isinstance(arguments, dict):
            unknown = sorted(set(arguments) - allowed)
            if unknown:
                why = "; the user is fixed by the server, no tool takes one" if any("user" in u for u in unknown) else ""
                text = f"unknown argument(s) {unknown} for tool {params['name']!r}: it takes {sorted(allowed)}{why}"
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return await call_next(ctx)


def build_server(memory: Memory, *, user: str | None = None) -> MCPServer:
    """An ``MCPServer`` over ``memory``; ``user`` is the user of every stdio request
    (over HTTP, :func:`http_app`'s key gate may bind another per request)."""
    strict = StrictArguments()
    server: MCPServer = MCPServer(
        "hmem", title="hmem memory", version=__version__, instructions=INSTRUCTIONS,
        middleware=[UserBinding(user), strict],
    )
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def register(fn: Callable[..., T]) -> Callable[..., T]:
            strict.register(fn)
            return server.tool(annotations=annotations)(fn)

        return register

    @tool(writes)
    def remember(
        text: Annotated[str, Field(description="the fact, in one or two sentences", min_length=1)],
        kind: Annotated[str, Field(description="fact, preference, event …")] = "fact",
        importance: Annotated[float, Field(ge=0, le=1, description="0 (trivia) to 1 (critical)")] = 0.5,
        session_id: Annotated[str | None, Field(description="the conversation it came from")] = None,
    ) -> dict[str, Any]:
        """Store a fact about the user in long-term memory (near duplicates update the old item)."""
        return _run(lambda: _tools.remember(memory, current_user(), text, kind=kind, importance=importance,
                                                session_id=session_id))

    @tool(reads)
    def recall(
        *,
        query: Annotated[str, Field(description="what to look for", min_length=1)],
        k: Annotated[int, Field(ge=1, le=_tools.MAX_K, description="how many items")] = 10,
        kinds: Kinds = None,
        session_id: Annotated[str | None, Field(description="only items of this conversation")] = None,
        since: When = None,
        until: When = None,
    ) -> dict[str, Any]:
        """Search the user's long-term memory (BM25 + embeddings). Each hit has its rank, its
        dates (created_at, updated_at) and how each retriever ranked it."""
        return _run(lambda: _tools.recall(memory, current_user(), query, k=k, kinds=kinds, session_id=session_id,
                                              since=since, until=until))

    @tool(reads)
    def get_context(
        session_id: Sessions,
        query: Annotated[str | None, Field(
            description="the user's current message: the prompt's current turn (not stored) and what recall "
                        "searches with; default: the session's last user message", min_length=1)] = None,
        model: Annotated[str | None, Field(description="model whose window and tokenizer count")] = None,
        budget: Annotated[int | None, Field(ge=1, description="token budget (default: window - reply reserve)")] = None,
        system_prompt: Annotated[str | None, Field(description="default: the session's stored prompt")] = None,
    ) -> dict[str, Any]:
        """The assembled prompt for a session within the token budget (history, summary,
        profile, recalled items) and a report of what was kept and cut."""
        return _run(lambda: _tools.get_context(memory, current_user(), session_id, query=query, model=model,
                                               budget=budget, system_prompt=system_prompt))

    @tool(reads)
    def profile_get(
        key: Annotated[str | None, Field(description="one key; omit for the whole profile")] = None,
    ) -> dict[str, Any]:
        """The user's current profile (key → value, with when and where each value came from)."""
        return _run(lambda: _tools.profile_get(memory, current_user(), key))

    @tool(writes)
    def profile_set(
        key: Annotated[str, Field(description="e.g. city, diet, name", min_length=1)],
        value: Annotated[str | int | float | bool | list[str], Field(description="the new value")],
        confidence: Annotated[float, Field(ge=0, le=1)] = 1.0,
    ) -> dict[str, Any]:
        """Set one profile key (last write wins; the old value stays in history)."""
        return _run(lambda: _tools.profile_set(memory, current_user(), key, value, confidence=confidence))

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
    def forget(
        ids: Annotated[list[str] | None, Field(description="item ids (from recall)")] = None,
        kinds: Kinds = None,
        session_id: Annotated[str | None, Field(description="items of this conversation")] = None,
        before: When = None,
        all: Annotated[bool, Field(description="every item of the user")] = False,
    ) -> dict[str, Any]:
        """Delete long-term items by id and/or filter (ANDed), or all of them. Returns how many."""
        return _run(lambda: _tools.forget(memory, current_user(), ids, kinds=kinds, session_id=session_id,
                                              before=before, all=all))

    _resources(server, memory)
    return server


def _resources(server: MCPServer, memory: Memory) -> None:
    def read(fn: Callable[[], dict[str, Any]]) -> str:
        try:
            return json.dumps(fn(), ensure_ascii=False)
        except HmemError as exc:
            raise ResourceError(str(exc)) from exc

    @server.resource("hmem://profile", name="profile", mime_type="application/json")
    def profile() -> str:
        """The user's current profile."""
        return read(lambda: _tools.profile_get(memory, current_user()))

    @server.resource("hmem://summary/recent", name="recent_summary", mime_type="application/json")
    def recent_summary() -> str:
        """The rolling summary of the user's most recently updated session."""
        return read(lambda: _tools.recent_summary(memory, current_user()))

    @server.resource("hmem://sessions/{session_id}/summary", name="session_summary", mime_type="application/json")
    def session_summary(session_id: str) -> str:
        """The rolling summary of one session."""
        return read(lambda: _tools.session_summary(memory, current_user(), session_id))


def http_app(
    server: MCPServer, keyring: KeyRing, *, user: str | None = None, host: str = "127.0.0.1", path: str = "/mcp",
    max_body_bytes: int | None = None, body_timeout_s: float | None = None,
) -> ASGIApp:
    """The streamable HTTP app of ``server`` behind the API-key gate (see :mod:`hmem.mcp._gate`),
    then the REST API's request limits (:class:`hmem.server.limits.RequestLimits`, whose defaults
    apply where an argument is None), so what they refuse has hmem's error shape."""
    from hmem.mcp._gate import KeyGate  # FastAPI and the REST key rules load only for HTTP
    from hmem.server.limits import DEFAULT_BODY_TIMEOUT_S, DEFAULT_MAX_BODY_BYTES, RequestLimits

    max_body = DEFAULT_MAX_BODY_BYTES if max_body_bytes is None else max_body_bytes
    app = server.streamable_http_app(streamable_http_path=path, host=host, max_request_body_size=max_body)
    limited = RequestLimits(app, max_body, DEFAULT_BODY_TIMEOUT_S if body_timeout_s is None else body_timeout_s)
    return KeyGate(limited, keyring, user)
