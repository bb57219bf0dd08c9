"""The HTTP key gate of ``hmem mcp --transport http``: who may act as which user.

:class:`KeyGate` checks ``Authorization: Bearer KEY`` on every request, before the
SDK reads it, with the same :class:`~hmem.server.auth.KeyRing` rules as ``hmem serve``
(401 without a valid key; ``HMEM_API_KEYS`` entries ``KEY`` or ``KEY:USER``): a key
bound to a user acts as that user; a key bound to no user acts as the configured user,
or gets 403 when none is configured. Errors have the REST API's shape.

Example::

    >>> from hmem.server.auth import KeyRing
    >>> resolve_user(KeyRing.parse(["k:alice"]), "Bearer k", default=None)
    'alice'
"""

from __future__ import annotations

from fastapi import HTTPException
from fastapi.security import HTTPAuthorizationCredentials
from starlette.datastructures import Headers

from hmem.mcp._user import STATE_KEY
from hmem.server.auth import KeyRing, authenticate
from hmem.server.errors import ASGIApp, Receive, Scope, Send, error_response

__all__ = ["KeyGate", "resolve_user"]


def resolve_user(keyring: KeyRing, authorization: str | None, *, default: str | None) -> str:
    """The user an ``Authorization`` header may act as; :class:`HTTPException` 401/403 otherwise."""
    scheme, _, token = (authorization or "").partition(" ")
    credentials = HTTPAuthorizationCredentials(scheme=scheme, credentials=token) if scheme else None
    principal = authenticate(keyring, credentials)
    user = principal.user_id if principal.user_id is not None else default
    if user is None:
        raise HTTPException(403, "MCP needs a user: use a key bound to one (HMEM_API_KEYS entry KEY:USER) "
                                 "or start `hmem mcp` with --user")
    return user


class KeyGate:
    """ASGI middleware in front of the SDK's streamable HTTP app: authenticate every
    request before the SDK reads it, and record the user it may act as."""

    def __init__(self, app: ASGIApp, keyring: KeyRing, default_user: str | None) -> None:
        self.app = app
        self.keyring = keyring
        self.default_user = default_user

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            user = resolve_user(self.keyring, headers.get("authorization"), default=self.default_user)
        except HTTPException as exc:
            kind = "unauthorized" if exc.status_code == 401 else "forbidden"
            reply = dict(exc.headers or {})
            if headers.get("content-length", "0") != "0" or "transfer-encoding" in headers:
                reply["Connection"] = "close"  # the unread body must not be taken for the next request
            await error_response(exc.status_code, kind, str(exc.detail), headers=reply)(scope, receive, send)
            return
        scope.setdefault("state", {})[STATE_KEY] = user
        await self.app(scope, receive, send)
