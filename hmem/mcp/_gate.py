"""The HTTP key gate of ``hmem mcp --transport http``: who may act as which user.

:class:`KeyGate` checks ``Authorization: Bearer KEY`` on every request, before the
SDK reads it, with the same :class:`~hmem.server.auth.KeyRing` rules as ``hmem serve``
(401 without a valid key; ``HMEM_API_KEYS`` entries ``KEY`` or ``KEY:USER``). The
client may name the user in the :data:`USER_HEADER` header, as a REST client names it
in the path: a key bound to another user gets 403, a key bound to no user may act as
anyone. Without the header a bound key acts as its user and an unbound key as the
configured user (403 when none is configured). No tool ever names a user. Errors have
the REST API's shape.

Example::

    >>> from hmem.server.auth import KeyRing
    >>> ring = KeyRing.parse(["k:alice", "admin"])
    >>> resolve_user(ring, "Bearer k", default=None)
    'alice'
    >>> resolve_user(ring, "Bearer admin", default=None, requested="bob")
    'bob'
"""

from __future__ import annotations

from urllib.parse import unquote

from fastapi import HTTPException
from fastapi.security import HTTPAuthorizationCredentials
from starlette.datastructures import Headers

from hmem.errors import InvalidInput
from hmem.mcp._user import STATE_KEY
from hmem.server.auth import KeyRing, authenticate
from hmem.server.errors import ASGIApp, Receive, Scope, Send, error_response
from hmem.types import check_id

__all__ = ["USER_HEADER", "KeyGate", "resolve_user"]

#: The request header naming the user (percent-encoded UTF-8, as a REST path segment).
USER_HEADER = "X-Hmem-User"


def resolve_user(keyring: KeyRing, authorization: str | None, *, default: str | None,
                 requested: str | None = None) -> str:
    """The user a request acts as: ``requested`` (the :data:`USER_HEADER` value) if its
    key may touch it, else the key's own user, else ``default``.

    Raises :class:`HTTPException` 401 (no or unknown key) or 403 (a key bound to another
    user, or no user at all), and :class:`InvalidInput` for an unusable user id.
    """
    scheme, _, token = (authorization or "").partition(" ")
    credentials = HTTPAuthorizationCredentials(scheme=scheme, credentials=token) if scheme else None
    principal = authenticate(keyring, credentials)
    if requested is not None:
        # Key first, then binding, then the id's shape: the order of REST's AuthGate, so a
        # bound key naming "alice " gets 403 on both surfaces.
        named = unquote(requested, errors="strict")
        if not principal.may_access(named):
            raise HTTPException(403, "this API key is bound to another user")
        return check_id(named, USER_HEADER)
    user = principal.user_id if principal.user_id is not None else default
    if user is None:
        raise HTTPException(403, f"MCP needs a user: use a key bound to one (HMEM_API_KEYS entry KEY:USER), "
                                 f"name it in the {USER_HEADER} header, or start `hmem mcp` with --user")
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
        reply: dict[str, str] = {}
        if headers.get("content-length", "0") != "0" or "transfer-encoding" in headers:
            reply["Connection"] = "close"  # an unread body must not be taken for the next request
        try:
            user = resolve_user(self.keyring, headers.get("authorization"), default=self.default_user,
                                requested=headers.get(USER_HEADER))
        except HTTPException as exc:
            kind = "unauthorized" if exc.status_code == 401 else "forbidden"
            await error_response(exc.status_code, kind, str(exc.detail), headers={**reply, **(exc.headers or {})})(
                scope, receive, send)
            return
        except (InvalidInput, UnicodeDecodeError) as exc:
            message = str(exc) if isinstance(exc, InvalidInput) else f"{USER_HEADER} is not percent-encoded UTF-8"
            await error_response(422, "invalid_input", message, field=USER_HEADER, headers=reply)(scope, receive, send)
            return
        scope.setdefault("state", {})[STATE_KEY] = user
        await self.app(scope, receive, send)
