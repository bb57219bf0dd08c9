"""Which tier caps make the assembled prompt hold the evidence? (justifies TierCaps defaults)

Ingests the sample set (data/) through ``Memory.add``, then asks every question
with evidence inside the conversation's LAST session — so recent history competes
with recalled items for the budget, as in a real assistant — and counts the gold
turns present in the prompt (in the history tier or recalled), for several
budgets and cap settings. Prints recall of the prompt (mean fraction of gold turns).

Run: ``.venv/bin/python bench/bench_caps.py [--budgets 800,1500,3000]``
"""

from __future__ import annotations

import argparse
import os
import tempfile
from dataclasses import replace
from pathlib import Path

from hmem.assembly.assemble import UNCAPPED, TierCaps
from hmem.eval.datasets import load_locomo, load_sample
from hmem.eval.runner import conversation_batches
from hmem.memory import Memory

VARIANTS: dict[str, TierCaps | None] = {
    "default (h .40, r .60)": TierCaps(),
    "previous default (h .50, r .35)": TierCaps(history=0.5, recalled=0.35),
    "history-heavy (h .80, r .15)": TierCaps(history=0.8, recalled=0.15),
    "recall-heavy (h .30, r .60)": TierCaps(history=0.3, recalled=0.6),
    "h .50, r .60": TierCaps(history=0.5, recalled=0.6),
    "uncapped (strict priority)": UNCAPPED,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budgets", default="800,1500,3000")
    parser.add_argument("--locomo", default=None, help="a LoCoMo file instead of the sample set (long sessions)")
    parser.add_argument("--conversations", type=int, default=2, help="LoCoMo conversations to use")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.locomo:
        full = load_locomo(args.locomo)
        keep = {c.id for c in full.conversations[: args.conversations]}
        data = replace(full, conversations=tuple(c for c in full.conversations if c.id in keep),
                       questions=tuple(q for q in full.questions if q.conversation_id in keep))
    else:
        data = load_sample()
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory.open(Path(tmp), buffer_tokens=2000)
        last_session: dict[str, str] = {}
        for conv in data.conversations:
            for session_id, batch in conversation_batches(conv):
                mem.add(conv.id, session_id, batch)
                last_session[conv.id] = session_id
        questions = [q for q in data.questions if q.evidence]
        print(f"{len(questions)} questions with evidence, asked in each conversation's last session\n")
        print(f"{'caps':32} " + " ".join(f"{'budget ' + str(b):>12}" for b in budgets))
        for name, caps in VARIANTS.items():
            cells = []
            for budget in budgets:
                total = 0.0
                for q in questions:
                    ctx = mem.context(q.conversation_id, last_session[q.conversation_id], query=q.question,
                                      budget=budget, k=50, caps=caps)
                    kept = {i.ref for i in ctx.report.items if i.kept}
                    items = mem.items(q.conversation_id, ids=sorted(kept))
                    present = kept | {it.source_message_id for it in items if it.source_message_id}
                    total += len(set(q.evidence) & present) / len(set(q.evidence))
                cells.append(f"{100 * total / len(questions):12.1f}")
            print(f"{name:32} " + " ".join(cells))
        mem.close()


if __name__ == "__main__":
    main()
