"""API keys: ``Authorization: Bearer <key>``, optionally bound to one user id.

Keys come from ``Settings.api_keys`` (``HMEM_API_KEYS``, comma-separated). An entry
``KEY`` may touch every user; an entry ``KEY:USER_ID`` only ``USER_ID`` (the first
``:`` splits, so keys cannot contain ``:`` but user ids may). With no key configured
the API is open, and :func:`check_bind` lets it listen on loopback only.

:class:`AuthGate` checks the key (401) and its user binding (403) for every ``/v1``
request before anything reads the body, so a stranger's malformed or huge body is
never parsed; the :func:`user_guard` dependency checks again per route and declares
the bearer scheme in the OpenAPI schema.

Example::

    >>> ring = KeyRing.parse(["admin-secret", "alice-secret:alice"])
    >>> ring.lookup("alice-secret").user_id
    'alice'
    >>> ring.lookup("nope") is None
    True
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.datastructures import Headers

from hmem.errors import ConfigError
from hmem.server.errors import ASGIApp, Receive, Scope, Send, error_response

__all__ = ["ApiKey", "AuthGate", "KeyRing", "Principal", "check_bind", "is_loopback", "path_user", "user_guard"]

#: Every route under this prefix needs a key (when keys are configured).
API_PREFIX = "/v1"
_USERS = API_PREFIX + "/users/"


@dataclass(frozen=True, slots=True)
class ApiKey:
    secret: str
    user_id: str | None = None  # None: may touch every user

    def __repr__(self) -> str:  # never print a secret in logs or tracebacks
        return f"ApiKey(secret='****', user_id={self.user_id!r})"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: ``user_id`` is the only user it may touch (None = any user)."""

    user_id: str | None
    authenticated: bool

    def may_access(self, user_id: str) -> bool:
        return self.user_id is None or self.user_id == user_id


@dataclass(frozen=True, slots=True)
class KeyRing:
    keys: tuple[ApiKey, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> KeyRing:
        """``["KEY", "KEY:USER_ID", …]`` → a key ring; raises :class:`ConfigError` on blanks."""
        keys: list[ApiKey] = []
        for raw in entries:
            entry = raw.strip()
            if not entry:
                continue
            secret, sep, user = entry.partition(":")
            secret, user = secret.strip(), user.strip()
            if not secret or (sep and not user):
                raise ConfigError(
                    "HMEM_API_KEYS entries are KEY or KEY:USER_ID (comma-separated); found an empty key or user id"
                )
            keys.append(ApiKey(secret, user or None))
        if len({k.secret for k in keys}) != len(keys):
            raise ConfigError("HMEM_API_KEYS lists the same key twice; give each client its own key")
        return cls(tuple(keys))

    @property
    def enabled(self) -> bool:
        return bool(self.keys)

    def lookup(self, token: str) -> ApiKey | None:
        """The key matching ``token`` (compared in constant time against every key)."""
        found = None
        supplied = token.encode("utf-8", "surrogatepass")
        for key in self.keys:
            if hmac.compare_digest(key.secret.encode("utf-8"), supplied):
                found = key
        return found


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, keyring: KeyRing, *, allow_unauthenticated: bool = False) -> str | None:
    """Refuse an open API on a non-loopback address; return the start-up warning, if any."""
    if keyring.enabled:
        return None
    if is_loopback(host):
        return (f"no API key configured (HMEM_API_KEYS): the API is unauthenticated and listens on loopback "
                f"{host} only")
    if not allow_unauthenticated:
        raise ConfigError(
            f"refusing to serve without API keys on {host}: anyone who can reach it could read every user's "
            "memory. Set HMEM_API_KEYS (KEY or KEY:USER_ID, comma-separated), bind to 127.0.0.1, or pass "
            "--allow-unauthenticated if a proxy in front authenticates"
        )
    return (f"no API key configured (HMEM_API_KEYS) and --allow-unauthenticated given: the API on {host} "
            "is open to anyone who can reach it")


_bearer = HTTPBearer(auto_error=False, description="an API key from HMEM_API_KEYS")

Guard = Callable[..., Awaitable[Principal]]


def user_guard(keyring: KeyRing) -> Guard:
    """A FastAPI dependency: authenticate, then check the path's ``user_id`` is allowed.

    401 without a valid key (when keys are configured); 403 when the key is bound to
    another user. It reads the path parameter itself, so routes declare it once.
    """

    async def guard(
        request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
    ) -> Principal:
        principal = authenticate(keyring, credentials)
        user_id = request.path_params.get("user_id")
        if isinstance(user_id, str) and not principal.may_access(user_id):
            raise HTTPException(403, "this API key is bound to another user")
        return principal

    return guard


def path_user(path: str) -> str | None:
    """The ``{user_id}`` of a ``/v1/users/{user_id}/…`` path (percent-decoded, as the
    router matches it), else None.

    >>> path_user("/v1/users/alice/sessions"), path_user("/healthz")
    ('alice', None)
    """
    if not path.startswith(_USERS):
        return None
    return path[len(_USERS):].split("/", 1)[0] or None


class AuthGate:
    """ASGI middleware: 401/403 for a ``/v1`` request before its body is read.

    FastAPI parses a JSON body before it runs a route's dependencies, so without this
    gate a stranger's malformed body would get a 422 (and a big one would be read)."""

    def __init__(self, app: ASGIApp, keyring: KeyRing) -> None:
        self.app = app
        self.keyring = keyring

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        guarded = path == API_PREFIX or path.startswith(API_PREFIX + "/")
        if scope["type"] != "http" or not self.keyring.enabled or not guarded:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        scheme, _, token = (headers.get("authorization") or "").partition(" ")
        credentials = HTTPAuthorizationCredentials(scheme=scheme, credentials=token) if scheme else None
        try:
            principal = authenticate(self.keyring, credentials)
            user_id = path_user(path)
            if user_id is not None and not principal.may_access(user_id):
                raise HTTPException(403, "this API key is bound to another user")
        except HTTPException as exc:
            reply = dict(exc.headers or {})
            if headers.get("content-length", "0") != "0" or "transfer-encoding" in headers:
                reply["Connection"] = "close"  # the unread body must not be taken for the next request
            kind = "unauthorized" if exc.status_code == 401 else "forbidden"
            await error_response(exc.status_code, kind, str(exc.detail), headers=reply)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def authenticate(keyring: KeyRing, credentials: HTTPAuthorizationCredentials | None) -> Principal:
    if not keyring.enabled:
        return Principal(user_id=None, authenticated=False)
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise HTTPException(401, "missing API key: send 'Authorization: Bearer <key>'", headers=challenge)
    key = keyring.lookup(credentials.credentials)
    if key is None:
        raise HTTPException(401, "invalid API key", headers=challenge)
    return Principal(user_id=key.user_id, authenticated=True)
