"""API keys: ``Authorization: Bearer <key>``, optionally bound to one user id.

Keys come from ``Settings.api_keys`` (``HMEM_API_KEYS``, comma-separated). An entry
``KEY`` may touch every user; an entry ``KEY:USER_ID`` only ``USER_ID`` (the first
``:`` splits, so keys cannot contain ``:`` but user ids may). With no key configured
the API is open, and :func:`check_bind` lets it listen on loopback only.

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

from hmem.errors import ConfigError

__all__ = ["ApiKey", "KeyRing", "Principal", "check_bind", "is_loopback", "user_guard"]


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
