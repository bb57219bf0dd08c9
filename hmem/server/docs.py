"""``/docs`` (Swagger UI) served from an installed package, not a CDN.

FastAPI's default pages load their JavaScript and CSS from a CDN, so on an offline
machine (hmem's default) they are blank. The PyPI package ``fastapi-offline`` ships
Swagger UI 5 (which reads FastAPI's OpenAPI 3.1) and a favicon; they are served at
:data:`ASSETS` and the page is FastAPI's own HTML pointed there. There is no ``/redoc``:
its bundle fetches a logo from cdn.redoc.ly whatever it is told (the browser test saw it).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["ASSETS", "install_offline_docs"]

#: Where the documentation assets are served.
ASSETS = "/docs-assets"


def _asset_dir() -> Path:
    import fastapi_offline  # only its static files are used

    return Path(fastapi_offline.__file__).parent / "static"


def install_offline_docs(app: FastAPI, title: str) -> None:
    """Add ``/docs`` and its OAuth2 redirect page to ``app`` (built with ``docs_url=None,
    redoc_url=None``)."""
    app.mount(ASSETS, StaticFiles(directory=_asset_dir()), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"
    redirect_url = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url, title=f"{title} · API docs", oauth2_redirect_url=redirect_url,
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js", swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
        )

    @app.get(redirect_url, include_in_schema=False)
    def swagger_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()
