"""``hmem profile get|set|rm|history``: a user's key → value facts.

VALUE is JSON-parsed when it is a number, a boolean, a list or a quoted string
(``42``, ``true``, ``'["tea","jazz"]'``, ``'"42"'`` for the string 42); anything
else is taken as the plain string.

Examples::

    hmem profile set u1 city Paris
    hmem profile set u1 likes '["jazz", "tea"]'
    hmem profile get u1            # every current key
    hmem profile get u1 city
    hmem profile history u1 city
    hmem profile rm u1 city
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from hmem.cli.common import Output, common_parent, open_memory
from hmem.cli.views import table, text
from hmem.errors import NotFound

if TYPE_CHECKING:
    from rich.console import Console

    from hmem.types import ProfileValue

__all__ = ["parse_value", "register"]


def register(subparsers: Any) -> None:
    parent = common_parent()
    p = subparsers.add_parser("profile", help="read and change a user's profile (key → value, with history)")
    sub = p.add_subparsers(dest="profile_command", metavar="ACTION", required=True)

    g = sub.add_parser("get", parents=[parent], help="current value of KEY, or every current key")
    g.add_argument("user")
    g.add_argument("key", nargs="?", default=None)
    g.set_defaults(func=run_get)

    s = sub.add_parser("set", parents=[parent], help="set KEY to VALUE (JSON number/bool/list, else a string)")
    s.add_argument("user")
    s.add_argument("key")
    s.add_argument("value")
    s.add_argument("--confidence", type=float, default=1.0)
    s.set_defaults(func=run_set)

    r = sub.add_parser("rm", parents=[parent], help="delete KEY (history keeps the deletion)")
    r.add_argument("user")
    r.add_argument("key")
    r.set_defaults(func=run_rm)

    h = sub.add_parser("history", parents=[parent], help="every version of KEY, oldest first")
    h.add_argument("user")
    h.add_argument("key")
    h.set_defaults(func=run_history)


def parse_value(raw: str) -> ProfileValue:
    """``"42"`` → 42, ``"true"`` → True, ``'["a","b"]'`` → ("a", "b"), ``'"x"'`` → "x",
    anything else (including ``null`` and objects) → the raw string.

    >>> parse_value("3.5"), parse_value("Paris"), parse_value('["a", "b"]')
    (3.5, 'Paris', ('a', 'b'))
    """
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        # The store validates the items (strings only) and names the field if one is not.
        return tuple(value)
    return raw


def _render_entries(console: Console, title: str, entries: list[dict[str, Any]]) -> None:
    rows = table(title, ["key", "value", "valid from", "valid to", "confidence", "source"])
    for e in entries:
        value = e["value"]
        shown = "(deleted)" if value is None else ", ".join(value) if isinstance(value, list) else str(value)
        src = e["provenance"]
        rows.add_row(
            text(e["key"]), text(shown, "" if value is not None else "red"), text(e["valid_from"][:19]),
            text((e["valid_to"] or "current")[:19]), text(f"{e['confidence']:.2f}"),
            text(src["source"] + (f" {src['session_id']}/{src['message_id']}" if src["message_id"] else "")),
        )
    console.print(rows)


def run_get(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        if args.key is None:
            entries = mem.profile.all(args.user)
        else:
            entry = mem.profile.get(args.user, args.key)
            if entry is None:
                raise NotFound(f"user {args.user!r} has no profile key {args.key!r} (see: hmem profile get {args.user})")
            entries = [entry]
    rows = [e.to_dict() for e in entries]
    data: dict[str, Any] = {"user_id": args.user, "profile": rows}
    if args.key is not None:
        data = {"user_id": args.user, **rows[0]}
    Output(args.json).emit(data, lambda c: _render_entries(c, f"Profile of {args.user} ({len(rows)} keys)", rows))
    return 0


def run_set(args: argparse.Namespace) -> int:
    from hmem.types import Provenance

    value = parse_value(args.value)
    with open_memory(args) as mem:
        entry = mem.profile.set(args.user, args.key, value, provenance=Provenance("api"), confidence=args.confidence)
    row = entry.to_dict()
    Output(args.json).emit({"user_id": args.user, **row}, lambda c: _render_entries(c, "Set", [row]))
    return 0


def run_rm(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        existed = mem.profile.delete(args.user, args.key)
    if not existed:
        raise NotFound(f"user {args.user!r} has no profile key {args.key!r}; nothing deleted")
    data = {"user_id": args.user, "key": args.key, "deleted": True}
    Output(args.json).emit(data, lambda c: c.print(text(f"deleted {args.key!r} of {args.user}", "bold")))
    return 0


def run_history(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        history = mem.profile.history(args.user, args.key)
    if not history:
        raise NotFound(f"user {args.user!r} never had profile key {args.key!r}")
    rows = [e.to_dict() for e in history]
    data = {"user_id": args.user, "key": history[0].key, "history": rows}
    Output(args.json).emit(data, lambda c: _render_entries(c, f"History of {args.key!r} ({len(rows)} versions)", rows))
    return 0
