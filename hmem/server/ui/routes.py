"""``/ui``: mounting the inspector, its login, its error pages and the users page.

:func:`mount_ui` adds the pages (:mod:`hmem.server.ui._pages`), the static files and
HTML error pages for ``/ui`` paths (every other path keeps the JSON error shape). Pages
are plain ``def`` handlers, run in the worker pool like the ``/v1`` routes, and call
the same :class:`~hmem.memory.Memory` methods.
"""

# No `from __future__ import annotations`: FastAPI must evaluate the Annotated[…, Depends(local)]
# parameter types, which name functions local to the builder.

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, Form, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from hmem.errors import HmemError, InvalidInput
from hmem.memory import Memory
from hmem.server.auth import KeyRing, Principal
from hmem.server.errors import STATUS
from hmem.server.ui._auth import COOKIE, FormTokens, cookie_value, principal_from
from hmem.server.ui._pages import PAGE_SIZE, build_user_pages, int_param
from hmem.server.ui.render import Pages
from hmem.types import MAX_ID_CHARS, check_id

__all__ = ["PREFIX", "mount_ui"]

log = logging.getLogger("hmem.server")

PREFIX = "/ui"
STATIC_DIR = Path(__file__).parent / "static"


class LoginRequired(Exception):
    """No valid key: the page answers with a redirect to the login form."""


def mount_ui(app: FastAPI, memory: Memory, keyring: KeyRing) -> None:
    """Serve the inspector at ``/ui`` of ``app`` (same keys as ``/v1``)."""
    pages = Pages(PREFIX)
    tokens = FormTokens()

    def who(request: Request) -> Principal:
        scheme, _, token = (request.headers.get("authorization") or "").partition(" ")
        principal = principal_from(keyring, token if scheme.lower() == "bearer" else None, request.cookies.get(COOKIE))
        if principal is None:
            raise LoginRequired
        request.state.ui_principal = principal
        return principal

    router = APIRouter(prefix=PREFIX, include_in_schema=False)
    _login_routes(router, pages, keyring)
    _users_page(router, pages, memory, who)
    router.include_router(build_user_pages(memory, pages, tokens, who))
    app.include_router(router)
    app.mount(f"{PREFIX}/static", StaticFiles(directory=STATIC_DIR), name="ui-static")
    _install_html_errors(app, pages)


def _login_routes(r: APIRouter, pages: Pages, keyring: KeyRing) -> None:
    def safe_next(target: str | None) -> str:
        # Only a path of this inspector: never an open redirect to another site.
        return target if target and target.startswith(PREFIX) and not target.startswith("//") else PREFIX

    @r.get("/login")
    def login_form(request: Request, next: str | None = None) -> Response:
        return pages.render(request, "login.html", title="Log in", next=safe_next(next), error=None,
                            open_ui=not keyring.enabled)

    @r.post("/login")
    def login(request: Request, key: Annotated[str, Form()] = "", next: Annotated[str, Form()] = PREFIX) -> Response:
        found = keyring.lookup(key.strip()) if key.strip() and keyring.enabled else None
        if found is None:
            message = ("no API key is configured: the inspector is open, no login needed" if not keyring.enabled
                       else "unknown API key: use one listed in HMEM_API_KEYS (KEY or KEY:USER_ID)")
            return pages.render(request, "login.html", status=401 if keyring.enabled else 400, title="Log in",
                                next=safe_next(next), error=message, open_ui=not keyring.enabled)
        response = RedirectResponse(safe_next(next), status_code=303)
        response.set_cookie(COOKIE, cookie_value(found), httponly=True, samesite="strict", path=PREFIX,
                            secure=request.url.scheme == "https")
        return response

    @r.post("/logout")
    def logout() -> Response:
        response = RedirectResponse(f"{PREFIX}/login", status_code=303)
        response.delete_cookie(COOKIE, path=PREFIX, httponly=True, samesite="strict")
        return response


def _users_page(r: APIRouter, pages: Pages, memory: Memory, who: Callable[..., Principal]) -> None:
    @r.get("")
    def users(request: Request, principal: Annotated[Principal, Depends(who)], q: str | None = None,
              page: str | None = None) -> Response:
        """Users with their counts per tier and last activity; ``q`` filters by id."""
        text = (q or "").strip()
        if len(text) > MAX_ID_CHARS:
            raise InvalidInput(f"the search is longer than {MAX_ID_CHARS} characters (a user id is at most that)",
                               field="q")
        known = memory.users()
        if principal.user_id is not None:  # a key bound to one user sees that user only
            known = [u for u in known if u == principal.user_id] or [principal.user_id]
        shown = [u for u in known if text.casefold() in u.casefold()]
        number = int_param(page, "page", 1, 1 + len(shown) // PAGE_SIZE)
        rows: list[dict[str, Any]] = []
        for user in shown[(number - 1) * PAGE_SIZE: number * PAGE_SIZE]:
            infos = memory.session_infos(user)
            rows.append({"user": user, "stats": memory.stats(user), "last": infos[0].updated_at if infos else None})
        exact = None  # a typed id that has no session (profile or items only) still opens
        if text and text not in known and principal.user_id is None:
            try:
                exact = check_id(text, "user_id")
            except InvalidInput:
                exact = None
        return pages.render(request, "users.html", title="Users", rows=rows, q=text, total=len(shown),
                            page=number, pages=1 + (len(shown) - 1) // PAGE_SIZE if shown else 1, exact=exact)


def _status_of(exc: HmemError) -> int:
    for cls, status, _ in STATUS:
        if isinstance(exc, cls):
            return status
    return 500  # ConfigError and the like: the server's problem, said without details


Handler = Callable[[Request, Exception], Awaitable[Response]]


def _install_html_errors(app: FastAPI, pages: Pages) -> None:
    """HTML error pages (never a trace) for ``/ui`` paths; other paths keep their handlers."""

    def page(request: Request, status: int, message: str) -> Response:
        return pages.render(request, "error.html", status=status, title=f"Error {status}", status_code=status,
                            message=message)

    def wrap(cls: type[Exception], to_page: Callable[[Request, Any], Response]) -> None:
        original: Handler | None = app.exception_handlers.get(cls)  # type: ignore[assignment]

        async def handler(request: Request, exc: Exception) -> Response:
            path = request.url.path
            if (path == PREFIX or path.startswith(PREFIX + "/")) or original is None:
                return to_page(request, exc)
            return await original(request, exc)

        app.add_exception_handler(cls, handler)

    def on_hmem(request: Request, exc: HmemError) -> Response:
        status = _status_of(exc)
        if status >= 500:
            log.error("%s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return page(request, status, str(exc) if status < 500 else "internal error; the details are in the server log")

    def on_validation(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ())[1:]) or "request"
        return page(request, 422, f"{where}: {first.get('msg', 'invalid')}")

    def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        return page(request, exc.status_code, str(exc.detail))

    def on_unexpected(request: Request, exc: Exception) -> Response:
        log.error("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
        return page(request, 500, "internal error; the details are in the server log")

    wrap(HmemError, on_hmem)
    wrap(RequestValidationError, on_validation)
    wrap(StarletteHTTPException, on_http)
    wrap(Exception, on_unexpected)

    async def on_login(request: Request, exc: Exception) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"{PREFIX}/login?next={quote(target, safe='')}", status_code=303)

    app.add_exception_handler(LoginRequired, on_login)
