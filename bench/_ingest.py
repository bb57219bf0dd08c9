"""What the tuning benchmarks share (``bench_context_depth.py``, ``bench_multihop.py``):
the dataset, its tune/confirm split, and ingesting it into a Memory once per work folder.

They ask many settings of one store kept in ``--workdir``; ``ingested.json`` there lists
the conversations already added, so a rerun (or a later part) only adds the missing ones.
The split is one rule for every benchmark: LoCoMo dev conversations 1-3 tune, 4-5
confirm; a sample-format set is all one part (dev sets tune, test splits confirm).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

from hmem.eval.datasets import default_locomo_dir, load_locomo, load_sample
from hmem.eval.model import EvalConversation, EvalDataset
from hmem.eval.runner import conversation_batches
from hmem.memory import Memory

#: The sample-format sets by name: dev sets, then our held-out test splits.
SAMPLE_SETS = {
    "sample": Path(__file__).resolve().parents[1] / "data" / "conversations",
    "assistant": Path(__file__).resolve().parents[2] / "shared" / "data" / "assistant" / "conversations",
    "assistant-test": Path(__file__).resolve().parents[1] / "data" / "test" / "assistant",
    "mixed-test": Path(__file__).resolve().parents[1] / "data" / "test" / "conversations",
    "paraphrase-test": Path(__file__).resolve().parents[1] / "data" / "test" / "paraphrase",
    "assistant2-test": Path(__file__).resolve().parents[1] / "data" / "test" / "assistant2",
    "paraphrase-dev": Path(__file__).resolve().parents[1] / "data" / "dev" / "paraphrase",
    "paraphrase2-test": Path(__file__).resolve().parents[1] / "data" / "test" / "paraphrase2",
}
DATASETS = ("locomo", *SAMPLE_SETS)


def load_dataset(name: str) -> EvalDataset:
    """``"locomo"`` (the dev split under ../shared/data/locomo) or a sample-format set of
    :data:`SAMPLE_SETS`: ``"sample"`` (data/), ``"assistant"`` (../shared/data/assistant),
    and the held-out ``"assistant-test"``, ``"mixed-test"``, ``"paraphrase-test"``,
    ``"assistant2-test"`` (written 2026-12-05, after the ``speaker`` stage, blind to the code);
    ``"paraphrase-dev"`` (data/dev/paraphrase) and the held-out ``"paraphrase2-test"``:
    questions that share almost no words with their evidence (written 2026-12-06, blind)."""
    if name == "locomo":
        return load_locomo(default_locomo_dir() / "locomo_dev.json")
    return load_sample(SAMPLE_SETS[name])


def part_ids(dataset: EvalDataset, name: str, part: str) -> list[str]:
    """Conversation ids of ``part`` ("tune", "confirm" or "all") of dataset ``name``."""
    ids = [c.id for c in dataset.conversations]
    if name != "locomo" or part == "all":
        return ids
    return ids[:3] if part == "tune" else ids[3:]


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
