"""``hmem window``: replay a sample conversation through a window policy.

The buffer grows one turn at a time; after each turn the policy decides what stays
(the same pure functions the Memory's compaction uses). Shows, turn by turn, the
buffer size and what was evicted, then the final kept list, with token counts
from the model's own tokenizer.

Example::

    hmem window --conversation zh_01 --policy token --budget 500
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from hmem.cli.common import Output, common_parent, non_negative_int, settings_from_args
from hmem.cli.views import table, text
from hmem.views import short

if TYPE_CHECKING:
    from rich.console import Console

    from hmem.types import Message

__all__ = ["register", "replay_window"]

DEFAULT_TOKEN_BUDGET = 600
DEFAULT_MESSAGE_BUDGET = 20


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "window",
        parents=[common_parent()],
        help="replay a sample conversation through a window policy (what is kept / evicted)",
        description=(
            "Replays one sample conversation from data/ turn by turn through a window policy and shows what "
            "the short-term buffer keeps and evicts, with token counts."
        ),
    )
    p.add_argument("--conversation", "-c", default=None, help="sample conversation id or prefix (default: the first)")
    p.add_argument("--session", action="append", default=None, help="only these sessions (repeatable, e.g. S1)")
    p.add_argument("--policy", choices=("hybrid", "token", "message"), default="hybrid")
    p.add_argument(
        "--budget",
        type=non_negative_int,
        default=None,
        help=f"tokens for token/hybrid (default {DEFAULT_TOKEN_BUDGET}); messages for 'message' "
        f"(default {DEFAULT_MESSAGE_BUDGET})",
    )
    p.add_argument("--model", default=None, help="model whose tokenizer counts (default: HMEM_MODEL or gpt-4o-mini)")
    p.add_argument("--samples", default=None, help="folder or file of sample conversations (default: data/)")
    p.set_defaults(func=run)


def replay_window(
    messages: list[Message], policy: str, budget: int, model: str, *, threshold: float = 0.7, target: float = 0.5,
    min_messages: int = 10,
) -> dict[str, Any]:
    """Feed ``messages`` one by one through the policy; return steps and totals."""
    from hmem.session.window import hybrid_window, message_window, token_window
    from hmem.tokens import get_tokenizer

    tokenizer = get_tokenizer(model)
    cost = {m.id: tokenizer.count_message(m) for m in messages}
    buffer: list[Message] = []
    steps: list[dict[str, Any]] = []
    evicted: list[dict[str, Any]] = []
    for step, message in enumerate(messages, start=1):
        buffer.append(message)
        if policy == "message":
            result = message_window(buffer, budget)
        elif policy == "token":
            result = token_window(buffer, tokenizer, budget)
        else:
            result = hybrid_window(
                buffer, tokenizer, budget, threshold=threshold, target=target, min_messages=min_messages
            )
        buffer = list(result.kept)
        gone = [{"id": m.id, "role": m.role, "tokens": cost[m.id], "step": step} for m in result.evicted]
        evicted.extend(gone)
        steps.append({
            "step": step,
            "id": message.id,
            "role": message.role,
            "tokens": cost[message.id],
            "text": message.text or " ".join(f"→ {c.name}({c.arguments})" for c in message.tool_calls),
            "buffer_messages": len(buffer),
            "buffer_tokens": tokenizer.count_messages(buffer),
            "evicted": [g["id"] for g in gone],
            "evicted_tokens": sum(g["tokens"] for g in gone),
        })
    kept = [{"id": m.id, "role": m.role, "tokens": cost[m.id]} for m in buffer]
    return {
        "policy": policy,
        "budget": budget,
        "budget_unit": "messages" if policy == "message" else "tokens",
        "model": model,
        "tokenizer": tokenizer.name,
        "steps": steps,
        "kept": kept,
        "evicted": evicted,
        "totals": {
            "messages": len(messages),
            "kept": len(kept),
            "evicted": len(evicted),
            "tokens": sum(cost.values()),
            "kept_tokens": sum(k["tokens"] for k in kept),
            "evicted_tokens": sum(e["tokens"] for e in evicted),
            "final_buffer_tokens": tokenizer.count_messages(buffer),
        },
    }


def run(args: argparse.Namespace) -> int:
    from hmem.cli.samples import conversation_messages, load_conversations

    settings = settings_from_args(args)
    conversation = load_conversations(args.samples, [args.conversation] if args.conversation else None)[0]
    model = args.model or settings.model
    budget = args.budget
    if budget is None:
        budget = DEFAULT_MESSAGE_BUDGET if args.policy == "message" else DEFAULT_TOKEN_BUDGET
    data = replay_window(
        conversation_messages(conversation, args.session), args.policy, budget, model,
        threshold=settings.summary_threshold, target=settings.summary_target,
        min_messages=settings.summary_min_messages,
    )
    data = {"conversation": conversation.id, "language": conversation.language, **data}
    Output(args.json).emit(data, lambda console: _render(console, data))
    return 0


def _render(console: Console, data: dict[str, Any]) -> None:
    unit = data["budget_unit"]
    steps = table(
        f"{data['conversation']} ({data['language']}) through the {data['policy']} window, "
        f"budget {data['budget']} {unit}, tokenizer {data['tokenizer']}",
        [("#", "right"), "turn", "role", ("tokens", "right"), ("buffer", "right"), ("buf tokens", "right"),
         "evicted this turn", "text"],
    )
    for s in data["steps"]:
        ids = s["evicted"]
        gone = "" if not ids else (ids[0] if len(ids) == 1 else f"{ids[0]} … {ids[-1]}")
        steps.add_row(
            text(s["step"]), text(s["id"]), text(s["role"]), text(s["tokens"]), text(s["buffer_messages"]),
            text(s["buffer_tokens"]), text(f"{len(ids)}: {gone} ({s['evicted_tokens']} tok)" if ids else "", "red"),
            text(short(s["text"], 50), "dim"),
        )
    console.print(steps)
    kept = table("Kept in the buffer at the end", ["turn", "role", ("tokens", "right")])
    for k in data["kept"]:
        kept.add_row(text(k["id"]), text(k["role"]), text(k["tokens"]))
    console.print(kept)
    t = data["totals"]
    console.print(text(
        f"{t['messages']} messages ({t['tokens']} tokens): kept {t['kept']} ({t['kept_tokens']} tokens; buffer "
        f"prompt {t['final_buffer_tokens']}), evicted {t['evicted']} ({t['evicted_tokens']} tokens)"
        + (" — the hybrid policy hands each evicted block to the summarizer" if data["policy"] == "hybrid" else ""),
        "bold",
    ))
