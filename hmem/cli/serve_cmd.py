"""``hmem serve``: run the HTTP API (:mod:`hmem.server`) with uvicorn.

Settings come from ``HMEM_*`` / ``HMEM_CONFIG`` as for every command; ``--data``
overrides the data folder. Without API keys (``HMEM_API_KEYS``) the server only
binds to loopback, unless ``--allow-unauthenticated`` is given, and says so in the
log at start-up.

With ``--upstream URL`` it also serves the OpenAI-compatible memory proxy
``POST /v1/chat/completions`` (:mod:`hmem.server.proxy`; ``hmem proxy`` is the same
command with ``--upstream`` required). The upstream key comes from the environment
variable named by ``--upstream-key-env`` (default ``HMEM_UPSTREAM_API_KEY``), never
from the command line, where ``ps`` would show it.

Example::

    HMEM_API_KEYS="s3cret,alice-key:alice" hmem serve --host 0.0.0.0 --port 8080 --data ./hmem-data
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from typing import Any

__all__ = ["add_server_arguments", "configure_logging", "port_number", "register", "run", "serve_until_signalled"]

log = logging.getLogger("hmem.server")


def port_number(text: str) -> int:
    """An argparse type: a TCP port 0..65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0..65535, got {value}")
    return value


def _size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bytes, got {text!r}") from None
    if value < 1024:
        raise argparse.ArgumentTypeError("must be at least 1024 bytes")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def register(subparsers: Any) -> None:
    """Add ``hmem serve`` to the ``hmem`` parser."""
    p = subparsers.add_parser(
        "serve",
        help="run the HTTP API (FastAPI + uvicorn)",
        description="Serve hmem over HTTP under /v1 (OpenAPI at /docs and /openapi.json); with --upstream, "
                    "also the OpenAI-compatible memory proxy /v1/chat/completions.",
    )
    add_server_arguments(p, upstream_required=False)


def add_server_arguments(p: argparse.ArgumentParser, *, upstream_required: bool) -> None:
    """The options of ``hmem serve`` (and of ``hmem proxy``, where ``--upstream`` is required)."""
    from hmem.server.app import DEFAULT_MAX_BODY_BYTES
    from hmem.server.limits import DEFAULT_BODY_TIMEOUT_S

    p.add_argument("--upstream", required=upstream_required, default=None, metavar="URL",
                   help="OpenAI-compatible base URL to forward /v1/chat/completions to, e.g. https://api.openai.com/v1"
                        + ("" if upstream_required else " (default: no proxy route)"))
    p.add_argument("--upstream-key-env", default="HMEM_UPSTREAM_API_KEY", metavar="NAME",
                   help="environment variable holding the upstream API key (default: HMEM_UPSTREAM_API_KEY)")
    p.add_argument("--upstream-timeout", type=_seconds, default=120.0, metavar="SECONDS",
                   help="deadline for each whole upstream call, a streamed answer included; past it the "
                        "request gets 504, or a started stream an error event (default: 120)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=8080, help="port to bind (default: 8080)")
    p.add_argument("--data", metavar="DIR", default=None,
                   help="data folder of the embedded stores (default: $HMEM_DATA_DIR or ./hmem-data)")
    p.add_argument("--allow-unauthenticated", action="store_true",
                   help="serve without API keys on a non-loopback address (only behind an authenticating proxy)")
    p.add_argument("--max-body-bytes", type=_size, default=None,
                   help=f"largest accepted request body; bigger gets 413 (default: $HMEM_MAX_BODY_BYTES or {DEFAULT_MAX_BODY_BYTES})")
    p.add_argument("--body-timeout", type=_seconds, default=DEFAULT_BODY_TIMEOUT_S, metavar="SECONDS",
                   help=f"how long a client may take to send a request body; slower gets 408 "
                        f"(default: {DEFAULT_BODY_TIMEOUT_S:g})")
    p.add_argument("--forwarded-allow-ips", default=None, metavar="IPS",
                   help="comma-separated proxy addresses whose X-Forwarded-For/-Proto are trusted "
                        "(default: none; '*' trusts every peer)")
    p.add_argument("--warm-up", action="store_true", default=None,
                   help="load and run the embedding model before serving, so the first request does not pay "
                        "for it (default: $HMEM_WARM_UP or off)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the bind address against the auth settings, build the memory, serve until stopped."""
    import uvicorn

    from hmem.config import Settings, mask_url
    from hmem.memory import Memory
    from hmem.server.app import ServerOptions, create_app
    from hmem.server.auth import KeyRing, check_bind
    from hmem.server.limits import uvicorn_options
    from hmem.server.proxy import ProxyOptions

    configure_logging(args.log_level)
    upstream = None
    if args.upstream:
        upstream = ProxyOptions(upstream=args.upstream, api_key=os.environ.get(args.upstream_key_env) or None,
                                timeout_s=args.upstream_timeout)
        if upstream.api_key is None:
            log.warning("no upstream key in $%s: callers must send X-Upstream-Key (or the upstream needs none)",
                        args.upstream_key_env)
    overrides: dict[str, Any] = {"data_dir": args.data} if args.data else {}
    if getattr(args, "warm_up", None):
        overrides["warm_up"] = True
    settings = Settings.from_env(**overrides)
    keyring = KeyRing.parse(settings.api_keys)
    warning = check_bind(args.host, keyring, allow_unauthenticated=args.allow_unauthenticated)
    if warning:
        log.warning(warning)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never let a model load wander onto the network
    memory = Memory.from_settings(settings)
    try:
        limit = args.max_body_bytes if args.max_body_bytes is not None else settings.max_body_bytes
        options = ServerOptions(max_body_bytes=limit, body_timeout_s=args.body_timeout)
        app = create_app(memory, settings, options, proxy=upstream)
        # Store selectors may be URLs with a password or an api_key/token parameter: mask them.
        log.info(
            "hmem serving http://%s:%d (data %s; sessions %s, profile %s, items %s, vectors %s)",
            args.host, args.port, settings.data_dir, mask_url(settings.sessions), mask_url(settings.profile),
            mask_url(settings.items), mask_url(settings.vectors),
        )
        if upstream is not None:
            log.info("memory proxy: /v1/chat/completions -> %s", mask_url(upstream.upstream))
        proxy: dict[str, Any] = {"proxy_headers": False}
        if args.forwarded_allow_ips:
            proxy = {"proxy_headers": True, "forwarded_allow_ips": args.forwarded_allow_ips}
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level, server_header=False,
                                timeout_graceful_shutdown=30, log_config=None, **proxy, **uvicorn_options())
        serve_until_signalled(uvicorn.Server(config))
    finally:
        memory.close()  # flushes background compaction and closes stores, also after SIGTERM
        log.info("hmem server stopped")
    return 0


class _Stopped(Exception):
    pass


def serve_until_signalled(server: Any) -> None:
    """Run uvicorn; its graceful shutdown re-raises SIGINT/SIGTERM afterwards, which
    we turn into a normal return so the caller still closes the memory."""

    def stop(signum: int, frame: object) -> None:
        raise _Stopped

    previous = signal.signal(signal.SIGTERM, stop) if threading.current_thread() is threading.main_thread() else None
    try:
        server.run()
    except (KeyboardInterrupt, _Stopped):
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def configure_logging(level: str) -> None:
    """Log at ``level`` to stderr unless the embedding program configured logging."""
    root = logging.getLogger()
    if not root.handlers:  # respect a logging setup made by an embedding program
        logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("hmem").setLevel(level.upper())
