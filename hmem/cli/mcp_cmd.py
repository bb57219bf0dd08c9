"""``hmem mcp``: serve one user's memory to MCP clients (Claude Desktop, IDEs, agents).

Over stdio (the default) the client starts ``hmem mcp --user U`` itself and every
call acts for ``U`` (``--user`` or ``HMEM_MCP_USER``). Over streamable HTTP
(``--transport http``, endpoint ``/mcp``) each request's key decides: ``HMEM_API_KEYS``
entries ``KEY:USER`` act as ``USER``, a key bound to no user acts as the user named in
the ``X-Hmem-User`` header, else as ``--user`` (403 without one). Without keys the
HTTP server binds to loopback only, as ``hmem serve``.
Settings come from ``HMEM_*`` as for every command; ``--data`` overrides the folder.

Example::

    hmem mcp --user alice --data ./hmem-data
    HMEM_API_KEYS="k1:alice,k2:bob" hmem mcp --transport http --port 8765
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

__all__ = ["register", "run"]

log = logging.getLogger("hmem.mcp")


def register(subparsers: Any) -> None:
    """Add ``hmem mcp`` to the ``hmem`` parser."""
    from hmem.cli.serve_cmd import port_number

    p = subparsers.add_parser(
        "mcp", help="serve a user's memory over MCP (stdio or streamable HTTP)",
        description="Serve hmem's tools (remember, recall, get_context, profile_get, profile_set, forget) "
                    "and resources (profile, recent summary) to MCP clients.",
    )
    p.add_argument("--data", metavar="DIR", default=None,
                   help="data folder of the embedded stores (default: $HMEM_DATA_DIR or ./hmem-data)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                   help="stdio (the client starts this command) or streamable HTTP at /mcp (default: stdio)")
    p.add_argument("--user", default=None,
                   help="the user every call acts for (default: $HMEM_MCP_USER); over HTTP a KEY:USER key wins")
    p.add_argument("--host", default="127.0.0.1", help="HTTP address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=8765, help="HTTP port (default: 8765)")
    p.add_argument("--allow-unauthenticated", action="store_true",
                   help="serve HTTP without API keys on a non-loopback address (only behind an authenticating proxy)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check user and keys before opening anything, then serve until stopped."""
    from hmem.cli.common import open_memory, settings_from_args
    from hmem.errors import ConfigError
    from hmem.types import check_id

    user = args.user or os.environ.get("HMEM_MCP_USER") or None
    user = None if user is None else check_id(user, "user")
    settings = settings_from_args(args)
    # stdout is the protocol channel over stdio: every log line goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.transport == "stdio":
        if user is None:
            raise ConfigError("hmem mcp over stdio serves one user: pass --user USER or set HMEM_MCP_USER")
    else:
        from hmem.server.auth import KeyRing, check_bind

        keyring = KeyRing.parse(settings.api_keys)
        if user is None and not keyring.enabled:
            raise ConfigError("hmem mcp over HTTP needs a user: pass --user USER, or set HMEM_API_KEYS with "
                              "user-bound keys (KEY:USER)")
        warning = check_bind(args.host, keyring, allow_unauthenticated=args.allow_unauthenticated)
        if warning:
            log.warning(warning)
    try:
        from hmem.mcp.server import build_server, http_app
    except ImportError as exc:
        raise ConfigError(f"hmem mcp needs the MCP SDK (mcp>=2): pip install 'hmem[mcp]' ({exc})") from None

    with open_memory(args, settings=settings) as memory:
        server = build_server(memory, user=user)
        if args.transport == "stdio":
            server.run("stdio")
            return 0
        import uvicorn

        from hmem.cli.serve_cmd import serve_until_signalled
        from hmem.server.limits import uvicorn_options

        app = http_app(server, keyring, user=user, host=args.host, max_body_bytes=settings.max_body_bytes)
        log.info("hmem MCP serving http://%s:%d/mcp (data %s)", args.host, args.port, settings.data_dir)
        config = uvicorn.Config(app, host=args.host, port=args.port, log_config=None, server_header=False,
                                timeout_graceful_shutdown=5, **uvicorn_options())
        # uvicorn re-raises SIGTERM after its graceful shutdown; this returns instead, so the
        # memory is still closed (background work flushed, stores released).
        serve_until_signalled(uvicorn.Server(config))
    return 0
