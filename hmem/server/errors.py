"""One error body for every failure (the limits on what a request may send, and their
errors, are in :mod:`hmem.server.limits`).

Every non-2xx response is ``{"error": {"type", "message", "field", "details"}}``
(:class:`~hmem.server.schemas.ErrorBody`). hmem's errors map to statuses in
:data:`STATUS`; anything unexpected becomes a generic 500 whose trace goes to the
``hmem.server`` log only, never to the client. No message, sent or logged, shows a
configured secret or a URL's password (:func:`hmem._secrets.redact`). An :class:`~hmem.errors.InvalidInput`
names the request's own field, also where hmem's argument is called differently
(:data:`~hmem.server._requests.HTTP_FIELD_NAMES`); a body that is not JSON is placed
by line and column (:func:`invalid_json`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from hmem._secrets import redact
from hmem.errors import (
    BackendUnavailable,
    BudgetError,
    CapacityError,
    ConfigError,
    ConflictError,
    DuplicateId,
    EmbedderMismatch,
    HmemError,
    InvalidInput,
    NotFound,
    ProviderError,
)
from hmem.server._requests import HTTP_FIELD_NAMES
from hmem.types import renamed

__all__ = ["STATUS", "error_response", "install_error_handlers", "invalid_json"]

log = logging.getLogger("hmem.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: hmem error class → (HTTP status, error type). Most specific first.
STATUS: tuple[tuple[type[HmemError], int, str], ...] = (
    (DuplicateId, 409, "duplicate_id"),
    # The user's vectors were made by another model: the store's state, not the request, is
    # in the way, and the details carry the command that fixes it.
    (EmbedderMismatch, 409, "embedder_mismatch"),
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


def _hmem_error(exc: HmemError, secrets: Iterable[str] = ()) -> JSONResponse:
    if isinstance(exc, InvalidInput):
        exc = renamed(exc, HTTP_FIELD_NAMES)
    for cls, status, type_ in STATUS:
        if isinstance(exc, cls):
            details: dict[str, Any] = {}
            if isinstance(exc, BudgetError):
                details = {"required": exc.required, "budget": exc.budget}
            elif isinstance(exc, ConflictError):
                details = {"expected": exc.expected, "actual": exc.actual}
            elif isinstance(exc, EmbedderMismatch):
                details = {"user_id": exc.user_id, "indexed_with": exc.indexed_with, "configured": exc.configured,
                           "command": exc.command}
            field = exc.field if isinstance(exc, InvalidInput) else None
            headers = {"Retry-After": "1"} if status == 503 else None
            return error_response(status, type_, redact(exc, secrets), field=field, details=details, headers=headers)
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


def invalid_json(exc: json.JSONDecodeError) -> InvalidInput:
    """The error for a request body that is not JSON, placed by line and column (the
    reader's character offset would read like an array index in ``field``).

    >>> str(invalid_json(json.JSONDecodeError("Expecting value", "[1, ]", 4)))
    'body is not valid JSON: Expecting value at line 1, column 5; fix the JSON there'
    """
    return InvalidInput(f"body is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}; "
                        f"fix the JSON there", field="body")


def _json_syntax(exc: RequestValidationError) -> InvalidInput | None:
    """FastAPI's ``json_invalid`` error (``loc=("body", offset)``) as :func:`invalid_json`."""
    for e in exc.errors():
        if e.get("type") == "json_invalid":
            loc, ctx = e.get("loc", ()), e.get("ctx") or {}
            offset = loc[-1] if loc else None
            if isinstance(exc.body, str) and isinstance(offset, int):
                return invalid_json(json.JSONDecodeError(str(ctx.get("error", "invalid JSON")), exc.body, offset))
            return InvalidInput(f"body is not valid JSON: {ctx.get('error', 'invalid JSON')}", field="body")
    return None


def _validation_error(exc: RequestValidationError) -> JSONResponse:
    syntax = _json_syntax(exc)
    if syntax is not None:
        return _hmem_error(syntax)
    errors = [
        {"field": _loc(e.get("loc", ())), "message": str(e.get("msg", "invalid")), "type": str(e.get("type", ""))}
        for e in exc.errors()
    ]
    first = errors[0] if errors else {"field": "body", "message": "invalid request"}
    return error_response(422, "invalid_input", f"{first['field']}: {first['message']}", field=first["field"],
                          details={"errors": errors})


def install_error_handlers(app: FastAPI, secrets: Iterable[str] = ()) -> None:
    """Register the handlers that give every failure the :class:`ErrorBody` shape;
    ``secrets`` (e.g. :meth:`Settings.secret_values`) never appear in a message."""
    secrets = tuple(secrets)

    async def on_hmem(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HmemError)
        if isinstance(exc, BackendUnavailable | ProviderError | ConfigError):
            log.warning("%s %s: %s: %s", request.method, request.url.path, type(exc).__name__, redact(exc, secrets))
        return _hmem_error(exc, secrets)

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
