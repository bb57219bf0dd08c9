"""What an HTTP client may send to hmem's servers (the REST API and proxy, MCP over
HTTP), and the error, in hmem's shape, for what goes past it:

* a header block over :data:`MAX_HEADER_BYTES`: 431 ``headers_too_large``;
* a body over ``max_body_bytes``: 413 ``payload_too_large``;
* a body not all sent within ``body_timeout_s``: 408 ``request_timeout``;
* a JSON body in another encoding than UTF-8 (UTF-16, UTF-32): 422 ``invalid_input``.

:class:`RequestLimits` (ASGI middleware) enforces them once the request's head is
parsed. What the parser itself may buffer is bounded by :func:`uvicorn_options`, given
to every uvicorn hmem starts (``hmem serve``/``proxy``, ``hmem mcp --transport http``,
:func:`~hmem.server.live.serve_in_thread`): uvicorn's default parser, httptools, holds
a header block of any size in memory; h11 stops at its buffer cap with a plain 400 and
closes the connection.

Example::

    import uvicorn
    app = RequestLimits(app, max_body_bytes=4 * 1024 * 1024, body_timeout_s=30.0)
    uvicorn.run(app, **uvicorn_options())
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.responses import JSONResponse

from hmem.errors import ConfigError
from hmem.server.errors import ASGIApp, Message, Receive, Scope, Send, error_response

__all__ = ["DEFAULT_BODY_TIMEOUT_S", "DEFAULT_MAX_BODY_BYTES", "MAX_HEADER_BYTES", "RequestLimits", "uvicorn_options"]

#: The largest header block (names and values) a request may have. Browsers and
#: proxies stay far below it; hmem's own headers are a few hundred bytes.
MAX_HEADER_BYTES = 32 * 1024
#: Default request body limit: a batch of messages near hmem's per-message cap
#: (1M characters) still fits; anything larger is almost surely a client bug.
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
#: How long a client may take to send its whole body, from the end of its headers.
DEFAULT_BODY_TIMEOUT_S = 30.0
# h11 checks its cap only while a head is incomplete, so a head that arrives in pieces is
# refused there with a plain 400. Twice the limit lets every head up to the limit (and a
# little over) reach RequestLimits, which says what is wrong in hmem's shape.
_PARSER_BUFFER_BYTES = 2 * MAX_HEADER_BYTES
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def uvicorn_options() -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.Config`` that bound what one request's head can
    make the server hold (see the module doc)."""
    return {"http": "h11", "h11_max_incomplete_event_size": _PARSER_BUFFER_BYTES}


class RequestLimits:
    """ASGI middleware: a request's header block, body size, body time and JSON
    encoding, each refused in hmem's error shape (see the module doc).

    A declared ``Content-Length`` over the limit is refused before reading; a chunked
    body is buffered only up to the limit (memory per request stays bounded) and within
    ``body_timeout_s``, then replayed to the app. A refused request's connection is
    closed: its unread body must not be taken for the next request.
    """

    def __init__(self, app: ASGIApp, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S, max_header_bytes: int = MAX_HEADER_BYTES) -> None:
        if max_body_bytes < 1 or body_timeout_s <= 0 or max_header_bytes < 1:
            raise ConfigError("request limits must be positive")
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s
        self.max_header_bytes = max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers") or [])
        header_bytes = sum(len(name) + len(value) for name, value in headers)
        if header_bytes > self.max_header_bytes:
            await _refusal(431, "headers_too_large", f"the request's headers are {header_bytes} bytes; the limit is "
                           f"{self.max_header_bytes}: send fewer or shorter headers",
                           {"max_bytes": self.max_header_bytes})(scope, receive, send)
            return
        fields = dict(headers)
        if _declared_length(fields.get(b"content-length")) > self.max_body_bytes:
            await self._too_large(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        deadline = asyncio.get_running_loop().time() + self.body_timeout_s
        while more:
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                await _refusal(408, "request_timeout", f"the request body did not arrive within "
                               f"{self.body_timeout_s:g} s: send it at once, or raise --body-timeout",
                               {"timeout_s": self.body_timeout_s})(scope, receive, send)
                return
            if message["type"] != "http.request":  # client went away
                await self.app(scope, _replay([], message, receive), send)
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_body_bytes:
                await self._too_large(scope, receive, send)
                return
            chunks.append(body)
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        problem = _not_utf8_json(body, fields.get(b"content-type", b""))
        if problem is not None:
            response = error_response(422, "invalid_input", problem, field="body")
            await response(scope, receive, send)
            return
        await self.app(scope, _replay([body], None, receive), send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _refusal(413, "payload_too_large", f"request body is larger than {self.max_body_bytes} bytes; "
                       f"split the batch or raise --max-body-bytes",
                       {"max_bytes": self.max_body_bytes})(scope, receive, send)


def _refusal(status: int, type_: str, message: str, details: dict[str, Any]) -> JSONResponse:
    """An error that closes the connection: the request's unread body must not be taken
    for the next request."""
    return error_response(status, type_, message, details=details, headers={"Connection": "close"})


def _declared_length(value: bytes | None) -> int:
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0  # the server rejects a malformed length itself


def _not_utf8_json(body: bytes, content_type: bytes) -> str | None:
    """Why ``body`` is not UTF-8 JSON as far as its encoding goes, or None. Python's JSON
    reader takes UTF-16 and UTF-32 too (RFC 8259 allows only UTF-8 between systems);
    forms are not JSON and are left alone. Bad UTF-8 is left to the JSON reader, which
    names it.

    >>> _not_utf8_json('{"a": 1}'.encode("utf-16-le"), b"application/json")
    "the body is UTF-16 JSON; hmem's API takes UTF-8 JSON only: encode the body as UTF-8"
    >>> _not_utf8_json('{"a": 1}'.encode("utf-8-sig"), b"application/json") is None
    True
    """
    if not body or content_type.split(b";")[0].strip().lower().decode("latin-1") in _FORMS:
        return None
    encoding = json.detect_encoding(body)
    if encoding in ("utf-8", "utf-8-sig"):
        return None
    name = "-".join(encoding.split("-")[:2]).upper()
    return f"the body is {name} JSON; hmem's API takes UTF-8 JSON only: encode the body as UTF-8"


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
