"""``hmem reindex``: re-embed long-term items with the configured embedder.

Needed after changing ``HMEM_EMBED_PROVIDER`` (or ``HMEM_EMBED_MODEL``), and to move a store
made under the earlier default (all-MiniLM-L6-v2) to today's (multilingual-e5-small):
under ``HMEM_EMBED_PROVIDER=auto`` such a store keeps its model, and says a reindex is
pending, until this moves it as a whole. Vectors of two
embedders never mix, so a store asked to use another model than the one a user's
vectors were made with refuses with a :class:`~hmem.errors.EmbedderMismatch` naming this
command (the embedder and ``--data`` spelled out; HTTP 409 ``embedder_mismatch``). Each user's vectors are rebuilt from the stored text beside the live ones and
swapped in at once (``LongTermStore.reindex``); an interrupted run (Ctrl-C, a kill)
continues where it stopped when run again. The turns' sentence keys are rebuilt behind
(docs/longterm.md, "Sentence keys"): the command waits for them with a second progress
bar, and leaves what a refusing model or index keeps waiting to the next run of hmem.
Stop app instances that still embed with the old model first: they would keep writing
vectors the rebuild does not see.

Examples::

    hmem reindex                                        # every user, to the default model
    HMEM_EMBED_PROVIDER=e5 hmem reindex                 # every user with vectors
    hmem reindex --user u1 --batch 64
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from hmem.cli.common import Output, common_parent, positive_int, settings_from_args
from hmem.cli.views import table, text

if TYPE_CHECKING:
    from rich.console import Console

    from hmem.longterm.store import LongTermStore

__all__ = ["register", "run_reindex"]

#: Waiting for the rebuilt turns' sentence keys stops after this long without progress.
KEYS_STALL_S = 60.0
#: How often the wait checks what is left.
KEYS_POLL_S = 0.5


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "reindex", parents=[common_parent()],
        help="re-embed long-term items with the configured embedder (resumable)",
        description="Re-embed every long-term item of every user that has vectors (or of --user) from the stored "
                    "text, with the embedder the settings select; the index switches over at the end of each user, "
                    "and a run that was interrupted resumes where it stopped.",
    )
    p.add_argument("--user", default=None, help="only this user (default: every user with vectors)")
    p.add_argument("--batch", type=positive_int, default=256, help="texts embedded per batch (default 256)")
    p.set_defaults(func=run_reindex)


def run_reindex(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from hmem.build import build_parts
    from hmem.memory import Memory
    from hmem.types import check_id

    user = None if args.user is None else check_id(args.user, "user")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never let a model load wander onto the network
    settings = settings_from_args(args)
    auto = settings.embed_provider == "auto"
    if auto:  # a store kept on an earlier default moves to today's
        settings = dataclasses.replace(settings, embed_provider="e5")
    parts = build_parts(settings)
    with Memory(parts):  # closes every backend on the way out
        lt = parts.longterm
        if auto and user is not None:
            _refuse_partial_move(lt, user)
        users = [user] if user is not None else lt.vectors.users()
        totals = {u: lt.count(u) for u in users}
        done: dict[str, int] = {}
        with tqdm(total=sum(totals.values()), desc="reindex", unit="item", file=sys.stderr, dynamic_ncols=True,
                  mininterval=0.5) as bar:
            try:
                for u in users:
                    done[u] = lt.reindex(u, batch_size=args.batch, progress=bar.update)
            except KeyboardInterrupt:
                bar.close()
                print("hmem: reindex interrupted; run it again to resume where it stopped", file=sys.stderr)
                raise
        waiting = _wait_for_keys(lt, users)
        data = {
            "embedder": lt.embedder.model_name,
            "fallback": getattr(lt.embedder, "fallback", None),
            "users": done,
            "items": sum(done.values()),
            "sentence_keys_waiting": waiting,
        }
    Output(args.json).emit(data, lambda console: _render(console, data))
    return 0


def _refuse_partial_move(lt: LongTermStore, user: str) -> None:
    """Under ``HMEM_EMBED_PROVIDER=auto`` a store follows the model most of its vectors are
    in: moving one user of a store kept on an earlier default would leave that user in a
    model the store does not open with. Refuse (nothing is changed) and say what works."""
    from hmem.build import EARLIER_DEFAULTS
    from hmem.errors import ConfigError

    for other in lt.vectors.users():
        stamp = lt.vectors.stamp(other)
        if other != user and stamp is not None and stamp.embedder in EARLIER_DEFAULTS:
            raise ConfigError(
                f"--user {user!r}: this store's vectors are in {stamp.embedder} (the default before "
                f"{lt.embedder.model_name}), and with HMEM_EMBED_PROVIDER=auto a store moves as a whole. Run "
                "`hmem reindex` without --user to move every user, or set HMEM_EMBED_PROVIDER=e5 to move users one "
                "at a time (the others refuse with embedder_mismatch until their reindex)")


def _wait_for_keys(lt: LongTermStore, users: list[str]) -> int:
    """Wait, with a progress bar, until the rebuilt turns' sentence keys are built (they are
    built behind the reindex); give up after :data:`KEYS_STALL_S` without progress (a
    refusing model or index: the next process builds them). Returns how many still wait."""
    from tqdm import tqdm

    left = sum(lt.keys_waiting(u) for u in users)
    if not left:
        return 0
    last_change, last = time.monotonic(), left
    with tqdm(total=left, desc="sentence keys", unit="turn", file=sys.stderr, dynamic_ncols=True,
              mininterval=0.5) as bar:
        try:
            while left and time.monotonic() - last_change < KEYS_STALL_S:
                lt.flush_keys(timeout=KEYS_POLL_S)
                left = sum(lt.keys_waiting(u) for u in users)
                bar.update(last - left)
                if left != last:
                    last, last_change = left, time.monotonic()
        except KeyboardInterrupt:
            bar.close()
            print(f"hmem: {left} turn(s) still wait for their sentence keys; they are built when hmem next "
                  "runs on this store", file=sys.stderr)
            raise
    if left:
        print(f"hmem: no sentence keys built for {KEYS_STALL_S:g} s; {left} turn(s) still wait (see the log for "
              "the cause); they are built when hmem next runs on this store", file=sys.stderr)
    return left


def _render(console: Console, data: dict[str, Any]) -> None:
    if data["fallback"]:
        console.print(text(f"fallback: {data['fallback']}", "bold yellow"))
    rows = table(f"Re-embedded {data['items']} item(s) of {len(data['users'])} user(s) with {data['embedder']}",
                 ["user", ("items", "right")])
    for user, n in data["users"].items():
        rows.add_row(text(user), text(n))
    console.print(rows)
    if data["sentence_keys_waiting"]:
        console.print(text(f"{data['sentence_keys_waiting']} turn(s) still wait for their sentence keys: they "
                           "are built the next time hmem runs on this store", "yellow"))
