"""``POST /v1/chat/completions``: an OpenAI-compatible chat endpoint with memory.

An application changes only its ``base_url``. For each request the proxy

1. finds the user (the API key's bound user, else the body's ``user``; else 422) and
   the session (``X-Hmem-Session``, default :data:`DEFAULT_SESSION`);
2. replaces ``messages`` with ``Memory.context(...)`` for the request's ``model``,
   with its ``max_tokens`` (or ``max_completion_tokens``) as the reply reserve and the
   new turn (the messages after the last assistant message: the user message and/or
   tool results) as ``pending``, i.e. as if stored;
3. stores that turn once: a retry carries the same ids and is skipped;
4. forwards every other field unchanged to ``{upstream}/chat/completions`` with the
   caller's ``X-Upstream-Key`` or the configured key;
5. returns the answer as it came (streamed chunk by chunk with ``stream=true``) and
   stores the assistant reply, tool calls included, once it is complete and before the
   answer (or its stream's ``[DONE]``) goes out.

Every valid answer is relayed, also one hmem cannot store (no text, refusal or tool
calls; text over the per-message limit; a store that fails): a refusal is stored as the
assistant's text (``metadata.refusal``), and what was not stored is logged and said, in
:data:`REPLY_HEADER` or, in a stream, in an SSE comment before ``[DONE]``. The
upstream timeout is one deadline for the whole upstream call, a stream's last byte
included.

Both writes are appends (``Memory.add(..., extraction="background")``): the turn is
durable before the upstream is called, and what follows an append (archiving and
embedding, profile and fact extraction, compaction) runs on the Memory's background
worker (one user's turns in order) while the upstream answers, not while this request's
recall runs. A turn whose queued work a crash lost stays in its session and is archived
when compaction evicts it; its profile and fact extraction is not re-run.

Upstream failures come back with the upstream's status (a timeout as 504, an unreachable
upstream as 502) in hmem's error shape, with a short summary of the upstream's error,
never its body as it came: an upstream may echo the key it received, so every configured
secret is scrubbed from it (:mod:`hmem.server._upstream_errors`); a stream that breaks
off ends with an ``error`` event, then ``[DONE]``, and stores no reply. ``X-Hmem-Budget`` carries the
context's tokens per tier; ``Server-Timing`` says where the request's time went
(``parse`` the body, ``context``, ``store`` the turn, ``upstream`` until its answer or
its stream's headers, ``reply`` to store the answer); the upstream's ``usage`` passes
through untouched.

Example::

    from hmem.server import create_app
    from hmem.server.proxy import ProxyOptions
    app = create_app(memory, settings, proxy=ProxyOptions(upstream="https://api.openai.com/v1"))
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials

from hmem._secrets import mask_url, mask_urls_in_logs, url_secrets
from hmem.aio import AsyncMemory
from hmem.errors import ConfigError, DuplicateId, HmemError, InvalidInput
from hmem.memory import Memory
from hmem.server._proxy_turns import StreamedReply, budget_header, new_turn, reply_message, system_prompt_of
from hmem.server._upstream_errors import upstream_error
from hmem.server.auth import KeyRing, _bearer, authenticate
from hmem.server.errors import invalid_json
from hmem.tokens.models import resolve_model

__all__ = ["DEFAULT_SESSION", "REPLY_HEADER", "ProxyOptions", "build_proxy_router"]

log = logging.getLogger("hmem.server")

#: The session of a request without ``X-Hmem-Session``.
DEFAULT_SESSION = "default"
SESSION_HEADER = "X-Hmem-Session"
BUDGET_HEADER = "X-Hmem-Budget"
UPSTREAM_KEY_HEADER = "X-Upstream-Key"
#: On a non-streamed answer: ``stored``, or ``not stored: why`` (a stream says the latter
#: in an SSE comment before ``[DONE]``).
REPLY_HEADER = "X-Hmem-Reply"
REPLY_STORED = "stored"
_SPANS = ("parse", "context", "store", "upstream", "reply")  # Server-Timing, in order


@dataclass(frozen=True)
class ProxyOptions:
    """Where the proxy forwards to: ``upstream`` is an OpenAI-compatible base URL
    (``…/v1``); ``api_key`` is used when the caller sends no ``X-Upstream-Key``."""

    upstream: str
    api_key: str | None = None
    timeout_s: float = 120.0
    connect_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if not self.upstream.startswith(("http://", "https://")):
            raise ConfigError(f"proxy upstream must be an http(s) URL like https://api.openai.com/v1, "
                              f"got {mask_url(self.upstream)!r}")
        if self.timeout_s <= 0 or self.connect_timeout_s <= 0:
            raise ConfigError("proxy timeouts must be positive")

    def secret_values(self) -> tuple[str, ...]:
        """The upstream key and the secrets in the upstream URL: never relayed to a caller."""
        return tuple(value for value in (self.api_key, *url_secrets(self.upstream)) if value)


def build_proxy_router(
    memory: Memory, keyring: KeyRing, options: ProxyOptions, *, secrets: Iterable[str] = ()
) -> tuple[APIRouter, _Upstream]:
    """The ``/v1/chat/completions`` route and its upstream client (``aclose()`` it on
    shutdown; the Memory's ``close()`` finishes the queued work of the stored turns).
    ``secrets`` (e.g. :meth:`Settings.secret_values`), the API keys of ``keyring`` and
    the upstream's key and URL secrets are scrubbed from the upstream's errors."""
    amem = AsyncMemory(memory)
    upstream = _Upstream(options, (*secrets, *(key.secret for key in keyring.keys), *options.secret_values()))
    r = APIRouter(tags=["proxy"])

    @r.post("/v1/chat/completions", response_model=None)
    async def chat_completions(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
        x_hmem_session: Annotated[str | None, Header()] = None,
        x_upstream_key: Annotated[str | None, Header()] = None,
    ) -> Response:
        """OpenAI chat completions with hmem's memory (see the module docs)."""
        started = time.perf_counter()
        principal = authenticate(keyring, credentials)
        body = await _json_body(request)
        user = _user_of(principal.user_id, body.get("user"))
        session = x_hmem_session or DEFAULT_SESSION
        messages = body.get("messages")
        turn = new_turn(messages, session)  # type: ignore[arg-type]  # new_turn checks the shape
        reserve = _reply_reserve(body)  # checked before anything is stored
        marks = [time.perf_counter()]
        # The prompt first, with the turn as if stored; then the turn's append, whose queued
        # work (archiving, extraction) would otherwise compete with this recall for the CPU.
        ctx = await amem.context(user, session, model=_model(body), reply_reserve=reserve, pending=turn,
                                 system_prompt=system_prompt_of(messages))  # type: ignore[arg-type]
        marks.append(time.perf_counter())
        await store_once(amem, user, session, turn)
        marks.append(time.perf_counter())
        headers = {BUDGET_HEADER: budget_header(ctx.report.to_dict()), SESSION_HEADER: session}
        forward = {**body, "messages": ctx.messages}
        key = x_upstream_key or options.api_key or (None if keyring.enabled else _bearer_token(credentials))
        reply_id = f"{turn[-1]['id']}-reply"

        async def keep(reply: dict[str, Any] | str) -> str:
            return await _store_reply(amem, user, session, reply)

        def timed(response: Response) -> Response:
            marks.append(time.perf_counter())
            spans = zip(_SPANS, (started, *marks), marks, strict=False)
            response.headers["Server-Timing"] = ", ".join(f"{n};dur={(b - a) * 1000:.1f}" for n, a, b in spans)
            return response

        if forward.get("stream") is True:
            return timed(await upstream.stream(forward, key, headers, keep, reply_id))
        status, answer, raw = await upstream.complete(forward, key)
        marks.append(time.perf_counter())
        if status >= 400:
            return timed(upstream.error(status, answer, key))
        headers[REPLY_HEADER] = await keep(reply_message(answer, reply_id))
        return timed(Response(raw, status_code=status, media_type="application/json", headers=headers))

    return r, upstream


async def store_once(amem: AsyncMemory, user: str, session: str, messages: list[dict[str, Any]]) -> None:
    """Append ``messages`` (their pipeline queued: see the module doc); ids already
    stored (a retry) are skipped one by one."""
    try:
        await amem.add(user, session, messages, extraction="background")
    except DuplicateId:
        for m in messages:
            try:
                await amem.add(user, session, [m], extraction="background")
            except DuplicateId:
                continue


async def _store_reply(amem: AsyncMemory, user: str, session: str, reply: dict[str, Any] | str) -> str:
    """Store the upstream's reply (its message, or why there is none) and return what
    :data:`REPLY_HEADER` says. The answer goes to the client either way: a reply hmem
    cannot hold is logged and said, never an error of the request."""
    if isinstance(reply, str):
        reason = reply
    else:
        try:
            await store_once(amem, user, session, [reply])
            return REPLY_STORED
        except InvalidInput as exc:
            reason = f"hmem cannot store it as a message: {exc}"
        except HmemError as exc:
            reason = f"storing it failed ({type(exc).__name__}); the answer was relayed"
    log.warning("proxy: the reply in session %r of user %r was relayed but not stored: %s", session, user, reason)
    return f"not stored: {_one_line(reason)}"


def _one_line(text: str, limit: int = 300) -> str:
    """``text`` fit for a header or an SSE comment: one line of ASCII, cut to ``limit``."""
    return " ".join(text.split()).encode("ascii", "backslashreplace").decode("ascii")[:limit]


async def _json_body(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body())
    except json.JSONDecodeError as exc:
        raise invalid_json(exc) from None
    except ValueError:  # not UTF-8 (other encodings are refused before: hmem.server.limits)
        raise InvalidInput("body must be UTF-8 JSON (an OpenAI chat completion request)", field="body") from None
    if not isinstance(body, dict):
        raise InvalidInput("body must be a JSON object (an OpenAI chat completion request)", field="body")
    return body


def _user_of(bound: str | None, named: Any) -> str:
    if named is not None and not isinstance(named, str):
        raise InvalidInput("user must be a string (the hmem user id)", field="user")
    if bound is not None:
        if named is not None and named != bound:
            from fastapi import HTTPException

            raise HTTPException(403, "this API key is bound to another user")
        return bound
    if not named:
        raise InvalidInput("name the user: send the request's 'user' field or use an API key bound to one user "
                           "(KEY:USER in HMEM_API_KEYS)", field="user")
    return named


def _model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise InvalidInput("model must be a non-empty string (the upstream's model name)", field="model")
    return model


def _reply_reserve(body: dict[str, Any]) -> int | None:
    """The caller's ``max_completion_tokens`` / ``max_tokens``: the reply reserve of the
    assembled prompt (None: hmem's ``reply_reserve``). It must leave the prompt room in
    the model's window."""
    reserve = body.get("max_completion_tokens", body.get("max_tokens"))
    if reserve is None:
        return None
    if isinstance(reserve, bool) or not isinstance(reserve, int) or reserve < 1:
        raise InvalidInput("max_tokens must be a positive integer", field="max_tokens")
    if resolve_model(_model(body)).context_window - reserve < 1:
        raise InvalidInput(f"max_tokens {reserve} leaves no room for the prompt in {body['model']}'s window",
                           field="max_tokens")
    return reserve


def _bearer_token(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return credentials.credentials if credentials is not None else None


class _Upstream:
    """One pooled ``httpx.AsyncClient`` for every forwarded request."""

    def __init__(self, options: ProxyOptions, secrets: Iterable[str] = ()) -> None:
        parts = urlsplit(options.upstream)  # a query (?api_key=…) stays after the path
        self.url = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions"))
        self.secrets = tuple(secrets)
        self.timeout = httpx.Timeout(options.timeout_s, connect=options.connect_timeout_s)
        # httpx's timeouts bound each read; this bounds the whole call, however steadily
        # the upstream trickles its answer.
        self.deadline_s = options.timeout_s
        self.late = f"the upstream did not complete its answer within {options.timeout_s:g} s (--upstream-timeout)"
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:  # created on the server's event loop, not at import
            mask_urls_in_logs("httpx")  # it logs each request's URL, which may hold a secret
            self._client = httpx.AsyncClient(timeout=self.timeout)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def error(self, status: int, answer: Any, key: str | None) -> JSONResponse:
        """:func:`upstream_error` with the configured secrets and ``key`` (the one sent)."""
        return upstream_error(status, answer, (*self.secrets, *([key] if key else [])))

    def _request(self, body: dict[str, Any], key: str | None) -> httpx.Request:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return self.client.build_request("POST", self.url, json=body, headers=headers)

    async def complete(self, body: dict[str, Any], key: str | None) -> tuple[int, Any, bytes]:
        """The upstream's status, its answer parsed, and the answer as it came (relayed
        unchanged), all within the deadline."""
        try:
            async with asyncio.timeout(self.deadline_s):
                response = await self.client.send(self._request(body, key))
        except (TimeoutError, httpx.TimeoutException):
            return 504, {"error": {"message": self.late}}, b""
        except httpx.TransportError as exc:
            return 502, {"error": {"message": f"the upstream is unreachable: {type(exc).__name__}"}}, b""
        try:
            return response.status_code, response.json(), response.content
        except ValueError:
            return (response.status_code if response.status_code >= 400 else 502,
                    {"error": {"message": "the upstream's answer is not JSON"}}, b"")

    async def stream(self, body: dict[str, Any], key: str | None, headers: dict[str, str],
                     store: Any, reply_id: str) -> Response:
        deadline = asyncio.get_running_loop().time() + self.deadline_s
        raw: bytes | None = None
        try:
            async with asyncio.timeout_at(deadline):
                response = await self.client.send(self._request(body, key), stream=True)
                if response.status_code >= 400:
                    try:
                        raw = await response.aread()
                    finally:
                        await response.aclose()
        except (TimeoutError, httpx.TimeoutException):
            return self.error(504, {"error": {"message": self.late}}, key)
        except httpx.TransportError as exc:
            return self.error(502, {"error": {"message": f"the upstream is unreachable: {type(exc).__name__}"}}, key)
        if raw is not None:
            try:
                answer = json.loads(raw)
            except ValueError:
                answer = {"error": {"message": raw.decode("utf-8", "replace")}}  # cut once scrubbed
            return self.error(response.status_code, answer, key)
        return StreamingResponse(_relay(response, store, reply_id, deadline, self.late),
                                 media_type="text/event-stream", headers=headers)


async def _relay(response: httpx.Response, store: Any, reply_id: str, deadline: float,
                 late: str) -> AsyncIterator[bytes]:
    """Pass events through as they arrive; ``store`` the reply just before ``[DONE]``,
    so the client's next request sees it (one it cannot store is said in an SSE comment,
    which clients skip); a stream that breaks off or passes the ``deadline`` (event loop
    time) ends with an error event, then ``[DONE]``."""
    reply = StreamedReply()
    event: list[str] = []
    problem = "the upstream closed the stream before it finished"
    lines = response.aiter_lines()
    loop = asyncio.get_running_loop()
    try:
        while True:
            if loop.time() >= deadline:  # lines already buffered are read without waiting
                raise TimeoutError
            try:
                # The deadline guards the reads only: it must not fire while a yield is
                # writing to the client, outside this generator's hands.
                async with asyncio.timeout_at(deadline):
                    line = await anext(lines)
            except StopAsyncIteration:
                break
            if line:
                event.append(line)
                continue
            if not event:
                continue
            data = "\n".join(x[5:].lstrip() for x in event if x.startswith("data:"))
            text = "\n".join(event) + "\n\n"
            event = []
            if data == "[DONE]":
                if comment := _said(await store(reply.message(reply_id))):
                    yield comment
                yield text.encode()
                return
            with contextlib.suppress(ValueError):  # a comment or keep-alive: relayed, nothing to join
                reply.feed(json.loads(data))
            yield text.encode()
        if reply.finished and not event:  # an upstream that ends without [DONE]
            if comment := _said(await store(reply.message(reply_id))):
                yield comment
            return
    except TimeoutError:
        problem = late
    except httpx.TimeoutException:
        problem = "the upstream stopped sending before the answer was complete (timeout)"
    except httpx.TransportError as exc:
        problem = f"the upstream stream broke: {type(exc).__name__}"
    finally:
        await response.aclose()
    error: dict[str, Any] = {"error": {"type": "upstream_error", "message": problem, "field": None, "details": {}}}
    yield f"data: {json.dumps(error)}\n\n".encode()
    yield b"data: [DONE]\n\n"  # clients that skip the error still see the stream end


def _said(note: str) -> bytes:
    """What a stream tells of its reply's storing: nothing when it was stored, else an SSE
    comment (``: hmem: reply not stored: why``) that clients skip and people can read."""
    return b"" if note == REPLY_STORED else f": hmem: reply {note}\n\n".encode()
