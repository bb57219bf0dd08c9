"""Profile extraction measured on the evaluation table ``data/profile_eval``.

The scoring is the table's own: this module loads ``check_table.py`` (the reference
scorer, standard library only) and calls its ``score_row`` — there is one
implementation of the rules of ``SCHEMA.md``, not two. What this module adds is the
step from an extractor to predictions (:func:`predict`: the profile one message
produces from an empty profile — only ``set`` updates are current values) and the
per-language sums (:func:`score`).

Example::

    table = load_table()
    preds = predict(OfflineProfileExtractor(), table.rows)
    scores = score(table, preds, "dev")
    scores["all"].precision, scores["all"].recall
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from hmem.errors import ConfigError
from hmem.profile.extract import ProfileExtractor

__all__ = ["GROUPS", "Scores", "Table", "load_table", "predict", "score"]

#: Where the table lives in a checkout of the repository.
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "data" / "profile_eval"
#: The groups every report shows: each language, Chinese with code-switched, everything.
GROUPS = ("en", "zh", "mixed", "zh+mixed", "all")


@dataclass(frozen=True)
class Table:
    """The rows of ``sentences.jsonl``, the schema (types, aliases) and the scorer module."""

    rows: list[dict[str, Any]]
    types: dict[str, str]
    aliases: dict[str, str]
    checker: ModuleType


@dataclass(frozen=True)
class Scores:
    """Micro-averaged pair counts of one group of rows."""

    rows: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    negatives: int = 0
    negatives_firing: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def load_table(directory: Path | str = DEFAULT_DIR) -> Table:
    """Load the table and its reference scorer from ``directory``; :class:`ConfigError`
    when it is not there (the table ships with the repository, not the package)."""
    directory = Path(directory)
    script = directory / "check_table.py"
    if not script.is_file():
        raise ConfigError(f"no profile evaluation table at {directory}: run from a checkout of the hmem repository")
    spec = importlib.util.spec_from_file_location("hmem_profile_check_table", script)
    assert spec is not None and spec.loader is not None
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    types, aliases = checker.load_schema(directory / "SCHEMA.md")
    rows = checker.load_jsonl(directory / "sentences.jsonl")
    return Table(rows, types, aliases, checker)


def prediction(updates: Iterable[Any]) -> dict[str, Any]:
    """The current profile a list of updates builds from nothing: ``set`` values only
    (list keys pooled), deletions and removals dropped."""
    pred: dict[str, Any] = {}
    for u in updates:
        if u.operation != "set" or u.value is None:
            continue
        if isinstance(u.value, tuple):
            pred.setdefault(u.key, [])
            pred[u.key] = list(pred[u.key]) + [v for v in u.value if v not in pred[u.key]]
        else:
            pred[u.key] = u.value
    return pred


def predict(extractor: ProfileExtractor, rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{row id: prediction}`` for every row, each message alone."""
    return {str(row["id"]): prediction(extractor.extract(str(row["text"]))) for row in rows}


def score(table: Table, preds: Mapping[str, Mapping[str, Any]], split: str) -> dict[str, Scores]:
    """Pair counts per group (:data:`GROUPS`) on ``split`` (``dev``, ``test`` or ``all``)."""
    sums: dict[str, dict[str, int]] = {g: dict.fromkeys(("rows", "tp", "fp", "fn", "neg", "fire"), 0) for g in GROUPS}
    for row in table.rows:
        if split != "all" and row["split"] != split:
            continue
        tp, fp, fn = table.checker.score_row(row, dict(preds.get(row["id"], {})), table.types, table.aliases)
        for group in (row["lang"], "zh+mixed" if row["lang"] != "en" else None, "all"):
            if group is None:
                continue
            s = sums[group]
            s["rows"] += 1
            s["tp"] += tp
            s["fp"] += fp
            s["fn"] += fn
            if not row["expect"]:
                s["neg"] += 1
                s["fire"] += fp > 0
    return {g: Scores(s["rows"], s["tp"], s["fp"], s["fn"], s["neg"], s["fire"]) for g, s in sums.items()}
