"""Ingest a dataset's conversations into a Memory once per work folder (bench helper).

Benchmarks that ask many settings of one store (``bench_context_depth.py``,
``bench_multihop.py``) keep it in ``--workdir``; ``ingested.json`` there lists the
conversations already added, so a rerun (or a later part) only adds the missing ones.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

from hmem.eval.model import EvalConversation
from hmem.eval.runner import conversation_batches
from hmem.memory import Memory


def ingest_once(mem: Memory, workdir: Path, conversations: Iterable[EvalConversation]) -> None:
    """Add every conversation not yet listed in ``workdir/ingested.json`` through
    ``Memory.add`` (one add per session), with a progress bar; record each when done."""
    marker = workdir / "ingested.json"
    done = set(json.loads(marker.read_text())) if marker.exists() else set()
    todo = [c for c in conversations if c.id not in done]
    if not todo:
        return
    from tqdm import tqdm

    with tqdm(total=sum(c.turn_count for c in todo), desc="ingest", unit="turn", file=sys.stderr) as bar:
        for conv in todo:
            for session_id, messages in conversation_batches(conv):
                mem.add(conv.id, session_id, messages)
                bar.update(len(messages))
            mem.flush()
            done.add(conv.id)
            marker.write_text(json.dumps(sorted(done)))
