"""Who is looking at a ``/ui`` page: the same API keys as ``/v1``, carried by a cookie.

``/ui/login`` takes an API key and sets a cookie holding not the key but an HMAC of it
(:func:`cookie_value`): a leaked cookie does not leak the key, yet every instance of the
app recognises it without shared state, and removing the key from ``HMEM_API_KEYS``
logs its cookie out. A ``Authorization: Bearer`` header works too (scripts, tests).

Deletes are POST forms that carry a token bound to their own path (:meth:`FormTokens.make`):
another site cannot forge one, also when no key is configured (no cookie to protect).

Example::

    >>> ring = KeyRing.parse(["admin-secret", "alice-secret:alice"])
    >>> alice = ring.lookup("alice-secret")
    >>> principal_from(ring, None, cookie_value(alice)).user_id
    'alice'
    >>> principal_from(ring, None, "forged") is None
    True
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from hmem.server.auth import ApiKey, KeyRing, Principal

__all__ = ["COOKIE", "FormTokens", "cookie_value", "principal_from"]

#: The login cookie (HttpOnly, SameSite=Strict, path /ui).
COOKIE = "hmem_ui"
_COOKIE_CONTEXT = b"hmem-ui-login-v1"


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def cookie_value(key: ApiKey) -> str:
    """What the login cookie holds for ``key``: HMAC-SHA256 keyed by the key's secret."""
    return hmac.new(_bytes(key.secret), _COOKIE_CONTEXT, hashlib.sha256).hexdigest()


def principal_from(keyring: KeyRing, bearer: str | None, cookie: str | None) -> Principal | None:
    """The caller, from a bearer token or the login cookie; None when neither is valid.
    With no key configured every caller may see every user (as on ``/v1``)."""
    if not keyring.enabled:
        return Principal(user_id=None, authenticated=False)
    if bearer:
        key = keyring.lookup(bearer)
        return None if key is None else Principal(user_id=key.user_id, authenticated=True)
    if not cookie:
        return None
    found = None
    for key in keyring.keys:  # every key is compared, in constant time
        if hmac.compare_digest(_bytes(cookie_value(key)), _bytes(cookie)):
            found = key
    return None if found is None else Principal(user_id=found.user_id, authenticated=True)


class FormTokens:
    """Tokens for the confirm forms: HMAC of the form's path under a per-app secret."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def make(self, path: str) -> str:
        return hmac.new(self._secret, _bytes(path), hashlib.sha256).hexdigest()

    def check(self, path: str, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(_bytes(self.make(path)), _bytes(token or ""))
