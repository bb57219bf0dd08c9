"""The web inspector at ``/ui``: what hmem remembers about a user, and why a question
got the prompt it got (docs/inspector.md).

Server-rendered pages (Jinja2 templates and one stylesheet shipped in the package, no
JavaScript, nothing fetched from elsewhere) over the same :class:`~hmem.memory.Memory`
calls as ``/v1``, behind the same API keys. :func:`mount_ui` adds it to an app;
:func:`hmem.server.create_app` does so.

It may import :mod:`hmem.server` (auth, error statuses) and the CLI's views (the same
gathering as ``hmem inspect``); nothing imports it but :mod:`hmem.server.app`.
"""

from hmem.server.ui.routes import mount_ui

__all__ = ["mount_ui"]
