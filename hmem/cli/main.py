"""Parser assembly and dispatch for ``hmem``.

Add a command group by writing ``hmem/cli/<name>.py`` with
``register(subparsers) -> None`` and listing it in :data:`COMMAND_MODULES`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from hmem.errors import HmemError

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

#: Modules that contribute subcommands, in help order.
COMMAND_MODULES: list[str] = [
    "hmem.cli.demo_cmd",
    "hmem.cli.window_cmd",
    "hmem.cli.memory_cmd",
    "hmem.cli.profile_cmd",
    "hmem.cli.transfer_cmd",
    "hmem.cli.reindex_cmd",
    "hmem.cli.chat_cmd",
    "hmem.cli.serve_cmd",
    "hmem.cli.mcp_cmd",
    "hmem.cli.eval_cmd",
    "hmem.cli.proxy_cmd",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hmem",
        description="Hierarchical long-term memory for LLM assistants (offline by default).",
    )
    parser.add_argument("--version", action="version", version=f"hmem {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def _version() -> str:
    from hmem._version import __version__

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hmem`` script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
        return code
    except HmemError as exc:
        print(f"hmem: error: {_shown(exc, args)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _shown(exc: HmemError, args: argparse.Namespace) -> str:
    """The error's message without a configured secret or a URL's password (a provider's
    error may quote what its endpoint answered)."""
    from hmem._secrets import redact
    from hmem.config import secrets_in_env

    upstream_key = getattr(args, "upstream_key_env", None)  # hmem serve / proxy
    return redact(exc, secrets_in_env(names=[upstream_key] if upstream_key else []))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
