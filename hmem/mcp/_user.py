"""Whose memory an MCP request touches: fixed by configuration, or by the HTTP key.

No tool takes a user argument. Over stdio the user is the one configured (``--user``
or ``HMEM_MCP_USER``). Over HTTP :class:`hmem.mcp._gate.KeyGate` decides per request
and leaves the user in the request's ASGI state under :data:`STATE_KEY`;
:class:`UserBinding` (SDK middleware) publishes it to the handlers of that very
request through :func:`current_user`. Needs neither FastAPI nor the HTTP stack.

Example::

    >>> UserBinding("alice").default_user
    'alice'
"""

from __future__ import annotations

import contextvars
from typing import Any

from hmem.errors import InvalidInput
from hmem.types import check_id

__all__ = ["STATE_KEY", "UserBinding", "current_user"]

#: Where :class:`KeyGate` leaves the request's user in the ASGI scope's ``state``.
STATE_KEY = "hmem_mcp_user"

_USER: contextvars.ContextVar[str | None] = contextvars.ContextVar("hmem_mcp_user", default=None)


def current_user() -> str:
    """The user of the request being handled; every tool and resource reads it here."""
    user = _USER.get()
    if user is None:  # only reachable if a handler runs outside UserBinding
        raise InvalidInput("no user is bound to this MCP connection; start it with --user or a KEY:USER key")
    return user


class UserBinding:
    """SDK middleware (``MCPServer(middleware=[…])``): bind :func:`current_user` for
    one request, from the HTTP request's state or else the configured user."""

    def __init__(self, default_user: str | None) -> None:
        self.default_user = None if default_user is None else check_id(default_user, "user")

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        user = self.default_user
        request = getattr(ctx, "request", None)
        scope = getattr(request, "scope", None)
        if isinstance(scope, dict) and scope.get("type") == "http":
            # Over HTTP only the gate's verdict counts: a request it did not see gets no user.
            user = scope.get("state", {}).get(STATE_KEY)
        token = _USER.set(user)
        try:
            return await call_next(ctx)
        finally:
            _USER.reset(token)
