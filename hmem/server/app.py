"""The FastAPI app factory: ``create_app(memory, settings)``.

No module-level app and no globals: the memory, the key ring and the limits live in
the closures of the routes, so two apps (tests, several tenants) never share state.
The caller owns ``memory`` and closes it after the server stops.

Example::

    import uvicorn
    from hmem import Memory, Settings
    from hmem.server import create_app
    from hmem.server.limits import uvicorn_options

    settings = Settings.from_env()
    memory = Memory.from_settings(settings)
    uvicorn.run(create_app(memory, settings), host="127.0.0.1", port=8080, **uvicorn_options())
    memory.close()
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from fastapi import FastAPI

from hmem.config import Settings
from hmem.errors import ConfigError
from hmem.memory import Memory
from hmem.server.auth import AuthGate, KeyRing, user_guard
from hmem.server.docs import install_offline_docs
from hmem.server.errors import install_error_handlers
from hmem.server.health import build_health_router
from hmem.server.limits import DEFAULT_BODY_TIMEOUT_S, DEFAULT_MAX_BODY_BYTES, RequestLimits
from hmem.server.proxy import ProxyOptions, build_proxy_router
from hmem.server.routes import build_router
from hmem.server.ui import mount_ui

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServerOptions", "create_app"]

log = logging.getLogger("hmem.server")


@dataclass(frozen=True)
class ServerOptions:
    """HTTP-only knobs (the rest comes from :class:`~hmem.config.Settings`)."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    readiness_timeout_s: float = 2.0
    #: How long a client may take to send a request's body (408 after it).
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1024:
            raise ConfigError("max_body_bytes must be at least 1024")
        if self.body_timeout_s <= 0:
            raise ConfigError("body_timeout_s must be positive")
        if self.readiness_timeout_s <= 0:
            raise ConfigError("readiness_timeout_s must be positive")


DESCRIPTION = """\
Hierarchical long-term memory for LLM assistants over HTTP.

Every user-scoped route lives under `/v1/users/{user_id}`. Send `Authorization: Bearer <key>`
when the server has API keys (`HMEM_API_KEYS`); a key bound to one user (`KEY:USER_ID`)
gets 403 for every other user. Errors always have the shape
`{"error": {"type", "message", "field", "details"}}`.
"""


def create_app(
    memory: Memory, settings: Settings, options: ServerOptions | None = None, *, proxy: ProxyOptions | None = None
) -> FastAPI:
    """A FastAPI app serving ``memory``; auth from ``settings.api_keys``; the body
    limit from ``options``, else ``settings.max_body_bytes`` (``HMEM_MAX_BODY_BYTES``).
    With ``proxy``, also the OpenAI-compatible ``POST /v1/chat/completions``
    (:mod:`hmem.server.proxy`)."""
    opts = options or ServerOptions(max_body_bytes=settings.max_body_bytes)
    keyring = KeyRing.parse(settings.api_keys)
    from hmem._version import __version__

    # No trailing-slash redirects: Starlette builds their Location from the client's Host
    # header (an open redirect); a path with a stray "/" is simply 404.
    app = FastAPI(title="hmem", version=__version__, description=DESCRIPTION, redirect_slashes=False,
                  docs_url=None, redoc_url=None)  # the docs pages come from installed assets, not a CDN
    secrets = settings.secret_values()  # scrubbed from every error message and upstream error
    install_error_handlers(app, secrets)
    app.add_middleware(RequestLimits, max_body_bytes=opts.max_body_bytes, body_timeout_s=opts.body_timeout_s)
    app.add_middleware(AuthGate, keyring=keyring)  # added last = runs first: no body is read before auth
    app.include_router(build_health_router(memory, opts.readiness_timeout_s))
    app.include_router(build_router(memory, user_guard(keyring)))
    install_offline_docs(app, "hmem")
    mount_ui(app, memory, keyring)  # after the error handlers: it adds HTML pages for /ui paths
    if proxy is not None:
        proxy_router, upstream = build_proxy_router(memory, keyring, proxy, secrets=secrets)
        app.include_router(proxy_router)
        app.router.on_shutdown.append(upstream.aclose)
    bound = sum(1 for k in keyring.keys if k.user_id is not None)
    if keyring.enabled:
        log.info("hmem API: %d API key(s), %d bound to one user", len(keyring.keys), bound)
    else:
        log.warning("hmem API: no API key configured (HMEM_API_KEYS); every request is allowed")
    return app
