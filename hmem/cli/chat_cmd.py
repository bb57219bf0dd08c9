"""``hmem chat``: an interactive loop over one session.

Each line read from stdin is a user turn: it is added to memory, the context is
assembled, and — when an OpenAI-compatible model is configured (``HMEM_LLM_MODEL``,
``HMEM_LLM_BASE_URL``, ``HMEM_LLM_API_KEY``) — sent to the model, whose reply is
printed and added to memory too. Without a model, the assembled context is shown
instead. Commands: ``/context`` shows the context for the next call, ``/quit``
(or end of input) leaves.

The configured model also extracts: adding a user turn makes one profile and one fact
extraction call before the reply (the provider retries only transient failures; any
other failure leaves the turn to the offline rules). docs/cli.md gives the cost.

Example::

    printf 'I live in Lyon\\n/context\\n/quit\\n' | hmem chat u1 s1
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from hmem.cli.common import Output, common_parent, non_negative_int, open_memory, settings_from_args
from hmem.cli.views import render_context, text
from hmem.errors import HmemError
from hmem.types import check_id
from hmem.views import context_to_dict

if TYPE_CHECKING:
    from rich.console import Console

    from hmem.memory import Memory
    from hmem.protocols import LLM

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("chat", parents=[common_parent()], help="interactive chat with memory (stdin lines)")
    p.add_argument("user")
    p.add_argument("session")
    p.add_argument("--model", default=None,
                   help="chat model (default: HMEM_LLM_MODEL for the call, HMEM_MODEL for the token budget)")
    p.add_argument("--system", default=None, help="system prompt (default: the one stored for the session)")
    p.add_argument("--budget", type=non_negative_int, default=None, help="prompt budget in tokens")
    p.set_defaults(func=run)


def _lines(console: Console | None) -> Iterator[str]:
    interactive = sys.stdin.isatty() and console is not None
    while True:
        if interactive:
            assert console is not None
            try:
                line = console.input("[bold cyan]you>[/] ")
            except EOFError:
                return
        else:
            raw = sys.stdin.readline()
            if not raw:
                return
            line = raw.rstrip("\n")
        yield line


def run(args: argparse.Namespace) -> int:
    from hmem.build import build_llm

    user, session = check_id(args.user, "user_id"), check_id(args.session, "session_id")
    settings = settings_from_args(args)
    out = Output(args.json)
    llm = build_llm(settings)
    context_model = args.model or settings.model
    llm_model = args.model or settings.llm_model
    turns: list[dict[str, Any]] = []
    failed = False
    with open_memory(args, settings=settings, llm=llm) as mem:
        console = None if args.json else out.console
        if console is not None:
            mode = f"model {llm_model}" if llm else "no model configured: showing the assembled context"
            console.print(text(f"hmem chat {user}/{session} ({mode}); /context, /quit", "dim"))
        for line in _lines(console):
            command = line.strip()
            if not command:
                continue
            if command in ("/quit", "/exit", "/q"):
                break
            try:
                turn = _turn(mem, llm, args, command, context_model=context_model, llm_model=llm_model)
            except HmemError as exc:  # one failed turn (LLM down, budget) must not end the conversation
                failed = True
                print(f"hmem: error: {exc}", file=sys.stderr)
                turns.append({"input": command, "error": str(exc)})
                continue
            turns.append(turn)
            if console is not None:
                _render_turn(console, turn)
    if args.json:
        out.emit({"user_id": user, "session_id": session, "llm": llm_model if llm else None, "turns": turns},
                 lambda _c: None)
    return 1 if failed else 0


def _turn(
    mem: Memory, llm: LLM | None, args: argparse.Namespace, line: str, *, context_model: str, llm_model: str | None,
) -> dict[str, Any]:
    from hmem.types import Message

    user, session = args.user, args.session

    def assemble() -> dict[str, Any]:
        ctx = mem.context(user, session, model=context_model, budget=args.budget, system_prompt=args.system)
        return context_to_dict(ctx, mem, user)

    if line == "/context":
        return {"input": line, "context": assemble()}
    mem.add(user, session, [{"role": "user", "content": line}])
    view = assemble()
    turn: dict[str, Any] = {"input": line, "context": view, "reply": None}
    if llm is not None:
        reply = llm.complete([Message.from_openai(m) for m in view["messages"]], model=llm_model)
        mem.add(user, session, [{"role": "assistant", "content": reply.text}])
        turn["reply"] = reply.text
        turn["usage"] = {"prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens}
    return turn


def _render_turn(console: Console, turn: dict[str, Any]) -> None:
    if turn.get("reply") is not None:
        console.print(text("assistant> ", "bold green") + text(turn["reply"]))
        report = turn["context"]["report"]
        console.print(text(f"(prompt {report['total']}/{report['budget']} tokens; "
                           f"{sum(1 for r in turn['context']['recalled'] if r['kept'])} recalled items)", "dim"))
    else:
        render_context(console, turn["context"])
