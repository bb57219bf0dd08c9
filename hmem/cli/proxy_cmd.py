"""``hmem proxy --upstream URL``: the HTTP API plus an OpenAI-compatible
``POST /v1/chat/completions`` that adds memory and forwards to ``URL``
(:mod:`hmem.server.proxy`).

The upstream key comes from the environment variable named by ``--upstream-key-env``
(default ``HMEM_UPSTREAM_API_KEY``), never from the command line, where ``ps`` would
show it; a caller may send its own in ``X-Upstream-Key``. Auth, bind rules and the data
folder are those of ``hmem serve``.

Example::

    HMEM_API_KEYS="alice-key:alice" HMEM_UPSTREAM_API_KEY=sk-... \\
        hmem proxy --upstream https://api.openai.com/v1 --port 8080
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["register"]

log = logging.getLogger("hmem.server")


def register(subparsers: Any) -> None:
    """Add ``hmem proxy`` to the ``hmem`` parser: ``hmem serve`` with ``--upstream`` required."""
    from hmem.cli.serve_cmd import add_server_arguments, run

    p = subparsers.add_parser(
        "proxy",
        help="serve an OpenAI-compatible chat endpoint with memory in front of an upstream LLM",
        description="Serve /v1/chat/completions: store each turn, replace the messages with hmem's context, "
                    "forward to --upstream, store the reply. The rest of the hmem API is served too "
                    "(same as hmem serve --upstream URL).",
    )
    add_server_arguments(p, upstream_required=True)
    p.set_defaults(func=run)
