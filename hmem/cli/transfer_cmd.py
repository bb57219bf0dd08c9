"""``hmem export | import``: one user's memory as a JSONL file (lossless round trip).

Examples::

    hmem export u1 u1.jsonl
    hmem import u1.jsonl --as u2 --data ./other-store
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hmem.cli.common import Output, common_parent, open_memory
from hmem.cli.views import text
from hmem.types import check_id

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parent = common_parent()
    p = subparsers.add_parser("export", parents=[parent], help="write everything of a user to a JSONL file")
    p.add_argument("user")
    p.add_argument("file")
    p.set_defaults(func=run_export)

    p = subparsers.add_parser("import", parents=[parent], help="load a JSONL export (into a user with no data)")
    p.add_argument("file")
    p.add_argument("--as", dest="as_user", default=None, metavar="USER", help="import under another user id")
    p.set_defaults(func=run_import)


def run_export(args: argparse.Namespace) -> int:
    user = check_id(args.user, "user_id")
    with open_memory(args) as mem:
        stats = mem.stats(user)
        records = mem.export_user(user, args.file)
    data = {"user_id": user, "file": str(Path(args.file)), "records": records, "stats": stats}
    Output(args.json).emit(
        data, lambda c: c.print(text(f"exported {user}: {records} records to {args.file} ({stats['items']} items, "
                                     f"{stats['sessions']} sessions, {stats['profile_keys']} profile keys)", "bold"))
    )
    return 0


def run_import(args: argparse.Namespace) -> int:
    if args.as_user is not None:
        check_id(args.as_user, "user_id")
    with open_memory(args) as mem:
        user = mem.import_user(args.file, user_id=args.as_user)
        mem.flush()  # the report counts what is in the index, not what is still on its way
        stats = mem.stats(user)
    data = {"user_id": user, "file": str(Path(args.file)), "stats": stats}
    Output(args.json).emit(
        data, lambda c: c.print(text(f"imported {args.file} as {user}: {stats['items']} items, {stats['sessions']} "
                                     f"sessions, {stats['profile_keys']} profile keys", "bold"))
    )
    return 0
