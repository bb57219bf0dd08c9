"""The ``hmem`` command line: a thin shell over the public API.

Each subcommand group lives in its own module with a ``register(subparsers)``
function that adds its parser(s) and sets ``func`` (``args -> exit code``).
"""

from __future__ import annotations

from hmem.cli.main import main

__all__ = ["main"]
