"""hmem over HTTP: ``create_app(memory, settings)`` and ``hmem serve``. Needs ``hmem[server]``."""

from hmem.server.app import DEFAULT_MAX_BODY_BYTES, ServerOptions, create_app
from hmem.server.auth import KeyRing

__all__ = ["DEFAULT_MAX_BODY_BYTES", "KeyRing", "ServerOptions", "create_app"]
