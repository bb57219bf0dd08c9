"""Run an ASGI app on a real uvicorn server in a background thread (tests, benchmarks,
embedding hmem's API in another program's process).

Example::

    with serve_in_thread(create_app(memory, settings)) as base_url:
        httpx.get(f"{base_url}/healthz")
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["serve_in_thread"]


@contextmanager
def serve_in_thread(app: Any, host: str = "127.0.0.1", port: int = 0, *, log_level: str = "warning",
                    start_timeout_s: float = 20.0) -> Iterator[str]:
    """Serve ``app`` on ``host:port`` (0 = a free port) until the block ends; yields the base URL.
    uvicorn runs with hmem's limits on a request's head (:func:`hmem.server.limits.uvicorn_options`)."""
    import uvicorn

    from hmem.server.limits import uvicorn_options

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level=log_level, lifespan="on", server_header=False, log_config=None,
                            timeout_graceful_shutdown=5, **uvicorn_options())
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="hmem-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError(f"uvicorn did not start on {host}:{bound_port}")
        time.sleep(0.01)
    try:
        url_host = f"[{host}]" if ":" in host else host
        yield f"http://{url_host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
