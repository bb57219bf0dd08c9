"""The HTTP key gate of ``hmem mcp --transport http``: who may act as which user.

:class:`KeyGate` checks ``Authorization: Bearer KEY`` on every request, before the
SDK reads it, with the same :class:`~hmem.server.auth.KeyRing` rules as ``hmem serve``
(401 without a valid key; ``HMEM_API_KEYS`` entries ``KEY`` or ``KEY:USER``). The
client may name the user in the :data:`USER_HEADER` header, as a REST client names it
in the path: a key bound to another user gets 403, a key bound to no user may act as
anyone. Without the header a bound key acts as its user and an unbound key as the
configured user (403 when none is configured). No tool ever names a user. Errors have
the REST API's shape.

A connection of the pre-2026 protocol is a session (``Mcp-Session-Id``) that belongs to
the key and user that opened it: the gate hands the SDK that owner (:func:`session_owner`,
as ``scope["user"]``), and the SDK's session manager answers a request of any other key,
or of the same key acting as another user, with the 404 of a session that does not
exist, for GET, POST and DELETE alike.

Example::

    >>> from hmem.server.auth import KeyRing
    >>> ring = KeyRing.parse(["k:alice", "admin"])
    >>> resolve_user(ring, "Bearer k", default=None)
    'alice'
    >>> resolve_user(ring, "Bearer admin", default=None, requested="bob")
    'bob'
"""

from __future__ import annotations

import hashlib
from urllib.parse import unquote

from fastapi import HTTPException
from fastapi.security import HTTPAuthorizationCredentials
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers

from hmem.errors import InvalidInput
from hmem.mcp._user import STATE_KEY
from hmem.server.auth import KeyRing, authenticate
from hmem.server.errors import ASGIApp, Receive, Scope, Send, error_response
from hmem.types import check_id

__all__ = ["USER_HEADER", "KeyGate", "resolve_user", "session_owner"]

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


def session_owner(authorization: str | None, user: str) -> AuthenticatedUser:
    """Who owns the sessions a request opens, in the SDK's terms: the key (by a digest,
    so the secret itself is kept nowhere new) and the user it acts as. The SDK's session
    manager compares it on every request naming a session (its ``client_id`` and
    ``subject``).

    >>> a, b = session_owner("Bearer k1", "alice"), session_owner("Bearer k2", "alice")
    >>> a.access_token.client_id == b.access_token.client_id, a.access_token.subject
    (False, 'alice')
    """
    _, _, token = (authorization or "").partition(" ")
    digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
    return AuthenticatedUser(AccessToken(token=digest, client_id=digest, scopes=[], subject=user))


class KeyGate:
    """ASGI middleware in front of the SDK's streamable HTTP app: authenticate every
    request before the SDK reads it, record the user it may act as, and name the owner
    its session must have (:func:`session_owner`)."""

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
        scope["user"] = session_owner(headers.get("authorization"), user)
        await self.app(scope, receive, send)
