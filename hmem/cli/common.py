"""Shared plumbing of the ``hmem`` subcommands: options, output, opening a Memory.

Every subcommand takes ``--data DIR`` and ``--json`` (added by :func:`common_parent`).
Output goes through :class:`Output`: with ``--json`` exactly one JSON document is
printed on stdout; otherwise a rich :class:`~rich.console.Console` renders tables
(colours in a terminal, plain text when piped). Errors are raised as
:class:`~hmem.errors.HmemError` and printed by :func:`hmem.cli.main.main` on stderr.

Example::

    >>> from hmem.cli.common import to_jsonable
    >>> from datetime import datetime, UTC
    >>> to_jsonable({"at": datetime(2024, 1, 2, tzinfo=UTC), "t": (1, 2)})
    {'at': '2024-01-02T00:00:00+00:00', 't': [1, 2]}
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hmem.errors import InvalidInput

if TYPE_CHECKING:
    from rich.console import Console

    from hmem.config import Settings
    from hmem.memory import Memory
    from hmem.protocols import LLM

#: Width of text output when stdout is not a terminal (and $COLUMNS is unset).
PIPE_WIDTH = 140

__all__ = [
    "PIPE_WIDTH",
    "Output",
    "common_parent",
    "open_memory",
    "read_json_file",
    "settings_from_args",
    "to_jsonable",
]


def common_parent() -> argparse.ArgumentParser:
    """A parent parser with the options every subcommand shares."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--data",
        metavar="DIR",
        default=None,
        help="data folder of the embedded store (default: $HMEM_DATA_DIR or ./hmem-data)",
    )
    parent.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    return parent


class IntermixedParser(argparse.ArgumentParser):
    """A parser that accepts options between positionals (``add U S --role assistant TEXT``).

    Plain argparse binds an optional positional (``TEXT``) to nothing as soon as it
    meets the first option after ``U S``, then rejects ``TEXT`` as unrecognized.
    """

    _intermixing = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def add_intermixed_parser(subparsers: Any, name: str, **kwargs: Any) -> IntermixedParser:
    """``subparsers.add_parser`` with :class:`IntermixedParser` as the class."""
    previous = subparsers._parser_class
    subparsers._parser_class = IntermixedParser  # argparse offers no public per-parser class choice
    try:
        parser: IntermixedParser = subparsers.add_parser(name, **kwargs)
    finally:
        subparsers._parser_class = previous
    return parser


def settings_from_args(args: argparse.Namespace, **overrides: Any) -> Settings:
    """Settings from ``HMEM_*`` (and ``HMEM_CONFIG``), ``--data`` and ``overrides``."""
    from hmem.config import Settings

    if getattr(args, "data", None):
        overrides.setdefault("data_dir", args.data)
    return Settings.from_env(**overrides)


@contextmanager
def open_memory(
    args: argparse.Namespace, *, settings: Settings | None = None, llm: LLM | None = None, **overrides: Any
) -> Iterator[Memory]:
    """A :class:`Memory` built from ``settings`` (default: :func:`settings_from_args`
    with ``overrides``), sharing ``llm`` when given; closed on exit."""
    from hmem.memory import Memory

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never let a model load wander onto the network
    mem = Memory.from_settings(settings or settings_from_args(args, **overrides), llm=llm)
    try:
        yield mem
    finally:
        mem.close()


# -- output -----------------------------------------------------------------------------


class Output:
    """Where a command's result goes: one JSON document, or rich text.

    ``emit(data, render)`` prints ``data`` as JSON in ``--json`` mode, else calls
    ``render(console)``. The console is made at call time on the current
    ``sys.stdout`` so in-process callers (tests) can capture it.
    """

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            # Piped output is read by people too (and by tests): give it room instead of rich's 80 columns.
            width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else PIPE_WIDTH
            self._console = Console(file=sys.stdout, highlight=False, soft_wrap=False, width=width)
        return self._console

    @property
    def err(self) -> Console:
        from rich.console import Console

        return Console(file=sys.stderr, highlight=False)

    def emit(self, data: Any, render: Callable[[Console], None]) -> None:
        if self.as_json:
            sys.stdout.write(json.dumps(to_jsonable(data), ensure_ascii=False, indent=2) + "\n")
            sys.stdout.flush()
        else:
            render(self.console)


def to_jsonable(value: Any) -> Any:
    """Datetimes to ISO strings, tuples to lists, dataclasses to dicts, recursively."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Path):
        return str(value)
    return value




# -- records as dicts ------------------------------------------------------------------








# -- input ------------------------------------------------------------------------------


def read_text_arg(value: str) -> str:
    """``value``, or all of stdin when it is ``-``."""
    return sys.stdin.read() if value == "-" else value


def read_json_file(path: str, field: str) -> Any:
    """Parse a JSON file (``-`` = stdin); :class:`InvalidInput` naming ``field`` on
    a missing, unreadable or malformed file."""
    if path == "-":
        text = sys.stdin.read()
        where = "stdin"
    else:
        file = Path(path)
        if not file.is_file():
            raise InvalidInput(f"{field}: file {path} does not exist", field=field)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"{field}: cannot read {path} as UTF-8 text ({exc})", field=field) from None
        where = path
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{field}: {where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", field=field
        ) from None


def _int_at_least(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    return _int_at_least(text, 0)
