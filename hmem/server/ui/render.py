"""HTML rendering for ``/ui``: Jinja2 templates shipped in the package, autoescaped.

Every value a page shows goes through Jinja2's autoescape (``<script>`` stored in a
message prints as text); ids put into links go through :func:`path_part`. Responses
carry a strict Content-Security-Policy: the pages load nothing but ``/ui/static``.

Example::

    >>> path_part("a/b c")
    'a%2Fb%20c'
    >>> when("2024-05-06T07:08:09.123+00:00")
    '2024-05-06 07:08'
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse

from hmem.views import short

__all__ = ["SECURITY_HEADERS", "Pages", "path_part", "when"]

#: Sent with every page: nothing inline, nothing from elsewhere, no framing.
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                                "frame-ancestors 'none'; base-uri 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def path_part(value: object) -> str:
    """``value`` percent-encoded for one path segment (``/`` included)."""
    return quote(str(value), safe="")


def when(value: datetime | str | None) -> str:
    """A timestamp as ``YYYY-MM-DD HH:MM`` (UTC as stored); '' for None."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    try:
        return datetime.fromisoformat(value).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return value


def _query(base: str, **params: object) -> str:
    """``base?k=v…`` with the parameters that are not None or ''."""
    kept = {k: str(v) for k, v in params.items() if v is not None and v != ""}
    return f"{base}?{urlencode(kept)}" if kept else base


class Pages:
    """The template environment (built once per app, not at import)."""

    def __init__(self, prefix: str = "/ui") -> None:
        from jinja2 import Environment, PackageLoader, StrictUndefined

        self.prefix = prefix
        self.env = Environment(
            loader=PackageLoader("hmem.server.ui", "templates"), autoescape=True, undefined=StrictUndefined,
            trim_blocks=True, lstrip_blocks=True,
        )
        self.env.filters.update(pq=path_part, when=when, short=short)
        self.env.globals.update(ui=prefix, query=_query)

    def render(self, request: Request, template: str, *, status: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("principal", getattr(request.state, "ui_principal", None))
        context.setdefault("title", "hmem")
        context.setdefault("request_path", request.url.path)  # the pager's links keep the other parameters
        context.setdefault("pager_params", {k: v for k, v in request.query_params.items() if k not in ("page", "done")})
        html = self.env.get_template(template).render(**context)
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)
