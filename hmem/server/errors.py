"""One error body for every failure, and the request-body size limit.

Every non-2xx response is ``{"error": {"type", "message", "field", "details"}}``
(:class:`~hmem.server.schemas.ErrorBody`). hmem's errors map to statuses in
:data:`STATUS`; anything unexpected becomes a generic 500 whose trace goes to the
``hmem.server`` log only, never to the client. An :class:`~hmem.errors.InvalidInput`
names the request's own field, also where hmem's argument is called differently
(:data:`~hmem.server._requests.HTTP_FIELD_NAMES`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from hmem.errors import (
    BackendUnavailable,
    BudgetError,
    CapacityError,
    ConfigError,
    ConflictError,
    DuplicateId,
    HmemError,
    InvalidInput,
    NotFound,
    ProviderError,
)
from hmem.server._requests import HTTP_FIELD_NAMES
from hmem.types import renamed

__all__ = ["STATUS", "BodySizeLimit", "error_response", "install_error_handlers"]

log = logging.getLogger("hmem.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: hmem error class → (HTTP status, error type). Most specific first.
STATUS: tuple[tuple[type[HmemError], int, str], ...] = (
    (DuplicateId, 409, "duplicate_id"),
    (InvalidInput, 422, "invalid_input"),
    (NotFound, 404, "not_found"),
    (BudgetError, 409, "budget_exceeded"),
    (ConflictError, 409, "conflict"),
    (CapacityError, 409, "capacity_exceeded"),
    (BackendUnavailable, 503, "backend_unavailable"),
    (ProviderError, 502, "provider_error"),
)

_HTTP_TYPES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
               413: "payload_too_large", 415: "unsupported_media_type"}


def error_response(
    status: int, type_: str, message: str, *, field: str | None = None, details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = {"error": {"type": type_, "message": message, "field": field, "details": details or {}}}
    return JSONResponse(body, status_code=status, headers=headers)


def _hmem_error(exc: HmemError) -> JSONResponse:
    if isinstance(exc, InvalidInput):
        exc = renamed(exc, HTTP_FIELD_NAMES)
    for cls, status, type_ in STATUS:
        if isinstance(exc, cls):
            details: dict[str, Any] = {}
            if isinstance(exc, BudgetError):
                details = {"required": exc.required, "budget": exc.budget}
            elif isinstance(exc, ConflictError):
                details = {"expected": exc.expected, "actual": exc.actual}
            field = exc.field if isinstance(exc, InvalidInput) else None
            headers = {"Retry-After": "1"} if status == 503 else None
            return error_response(status, type_, str(exc), field=field, details=details, headers=headers)
    # ConfigError and any future HmemError: a server-side problem, not the client's.
    log.error("unmapped hmem error %s: %s", type(exc).__name__, exc, exc_info=exc)
    return _internal()


def _internal() -> JSONResponse:
    return error_response(500, "internal_error", "internal server error; the details are in the server log")


#: Names pydantic puts in ``loc`` for the member of a union it tried (``("before",
#: "datetime")``): the client never sent them. No field of the API is called so.
_UNION_MEMBERS = frozenset({"str", "int", "float", "bool", "datetime", "date", "none", "list", "dict"})


def _is_union_member(part: int | str) -> bool:
    return isinstance(part, str) and (part in _UNION_MEMBERS or "[" in part or "-" in part)


def _loc(loc: Sequence[int | str]) -> str:
    """``("body", "messages", 0, "role")`` → ``"messages[0].role"``; query/path/header keep
    their name; union members pydantic tried (``("body", "before", "datetime")``) are dropped.

    >>> _loc(("body", "before", "datetime")), _loc(("body", "value", "list[str]")), _loc(("query", "last_n"))
    ('before', 'value', 'last_n')
    """
    parts = list(loc[1:] if len(loc) > 1 and loc[0] in ("body", "query", "path", "header") else loc)
    out = ""
    for part in parts:
        if _is_union_member(part):
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


def _validation_error(exc: RequestValidationError) -> JSONResponse:
    errors = [
        {"field": _loc(e.get("loc", ())), "message": str(e.get("msg", "invalid")), "type": str(e.get("type", ""))}
        for e in exc.errors()
    ]
    first = errors[0] if errors else {"field": "body", "message": "invalid request"}
    return error_response(422, "invalid_input", f"{first['field']}: {first['message']}", field=first["field"],
                          details={"errors": errors})


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers that give every failure the :class:`ErrorBody` shape."""

    async def on_hmem(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HmemError)
        if isinstance(exc, BackendUnavailable | ProviderError | ConfigError):
            log.warning("%s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return _hmem_error(exc)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return _validation_error(exc)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 400:  # FastAPI: the body is not decodable (bad UTF-8, bad encoding)
            return error_response(422, "invalid_input", f"body: {exc.detail}; send UTF-8 JSON", field="body")
        type_ = _HTTP_TYPES.get(exc.status_code, "http_error")
        return error_response(exc.status_code, type_, str(exc.detail), headers=dict(exc.headers or {}))

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
        return _internal()

    app.add_exception_handler(HmemError, on_hmem)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)


class BodySizeLimit:
    """ASGI middleware: reject request bodies over ``max_bytes`` with 413.

    A declared ``Content-Length`` over the limit is refused before reading; a chunked
    body is buffered only up to the limit (so memory per request stays bounded), then
    replayed to the app.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_bytes
            except ValueError:
                too_big = False  # the server rejects a malformed length itself
            if too_big:
                await self._reject(scope, receive, send)
                return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # client went away
                await self.app(scope, _replay([], message, receive), send)
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await self._reject(scope, receive, send)
                return
            chunks.append(body)
            more = bool(message.get("more_body", False))
        await self.app(scope, _replay(chunks, None, receive), send)

    async def _reject(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            413, "payload_too_large",
            f"request body is larger than {self.max_bytes} bytes; split the batch or raise --max-body-bytes",
            details={"max_bytes": self.max_bytes},
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


def _replay(chunks: list[bytes], pending: Message | None, receive: Receive) -> Receive:
    """A ``receive`` that yields the buffered body once, then defers to the real one."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            if pending is not None:
                return pending
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        return await receive()

    return replayed
