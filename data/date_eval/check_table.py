#!/usr/bin/env python3
"""Check the relative-date evaluation table and score a resolver on it.

Standard library only (the default resolver is imported from this checkout's ``hmem``).
Run from the repository root or anywhere:

    python3 data/date_eval/check_table.py                       # validate, score hmem on the dev split
    python3 data/date_eval/check_table.py --split dev --misses  # + list the dev rows it gets wrong
    python3 data/date_eval/check_table.py --split test          # the held-out split (report once, at the end)
    python3 data/date_eval/check_table.py --oracle              # the table against itself (must be 1.0/1.0)
    python3 data/date_eval/check_table.py --score PRED.jsonl    # someone else's predictions

PRED.jsonl: one object per line, ``{"id": "en-001", "spans": [{"start": "2023-05-07",
"end": "2023-05-07"}, ...]}``. Rows missing from PRED count as "predicted nothing".

Scoring (README.md next to this file): per row, the *set* of predicted (start, end)
pairs against the set of expected ones; TP = both, FP = predicted only, FN = expected
only; precision = TP / (TP + FP) and recall = TP / (TP + FN), summed over the rows of a
group. The granularity and the character span are not scored: the dates are.
Exit status 0 when the table is valid (and, with --oracle, scores 1.0/1.0), 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
TABLE = HERE / "dates.jsonl"
REPO = HERE.parents[1]

LANGS = ("en", "zh", "mixed")
ID_PREFIX = {"en": "en", "zh": "zh", "mixed": "mx"}
GROUPS = (*LANGS, "all")
SPLITS = ("dev", "test")
FIELDS = {"id", "lang", "anchor", "text", "expected", "split"}

Pair = tuple[str, str]


def split_of(row_id: str) -> str:
    """The split rule: first byte of sha1(id, UTF-8) even -> dev, odd -> test."""
    return "dev" if hashlib.sha1(row_id.encode("utf-8")).digest()[0] % 2 == 0 else "test"


def load_jsonl(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{n}: not JSON: {exc}") from exc
    return rows


def _is_iso_day(value: object) -> bool:
    if not isinstance(value, str) or len(value) != 10:
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _check_spans(where: str, spans: object, errors: list[str]) -> None:
    if not isinstance(spans, list):
        errors.append(f"{where}: must be a list of {{start, end}}")
        return
    for i, span in enumerate(spans):
        if not isinstance(span, dict) or set(span) != {"start", "end"}:
            errors.append(f"{where}[{i}]: must be exactly {{'start', 'end'}}, got {span!r}")
        elif not (_is_iso_day(span["start"]) and _is_iso_day(span["end"])):
            errors.append(f"{where}[{i}]: start and end must be YYYY-MM-DD days, got {span!r}")
        elif span["start"] > span["end"]:
            errors.append(f"{where}[{i}]: start {span['start']} is after end {span['end']}")


def validate(rows: list[dict]) -> list[str]:
    """Every problem with the table, as messages that name the row; [] when it is valid."""
    errors: list[str] = []
    seen_ids: set[str] = set()
    seen_texts: set[str] = set()
    for n, row in enumerate(rows, 1):
        where = f"row {n} ({row.get('id', '?')})"
        if set(row) != FIELDS:
            errors.append(f"{where}: fields must be {sorted(FIELDS)}, got {sorted(row)}")
            continue
        rid, lang = row["id"], row["lang"]
        if lang not in LANGS:
            errors.append(f"{where}: lang must be one of {LANGS}")
        elif not (isinstance(rid, str) and rid.startswith(ID_PREFIX[lang] + "-")):
            errors.append(f"{where}: id must start with {ID_PREFIX[lang]}-")
        if rid in seen_ids:
            errors.append(f"{where}: duplicate id")
        seen_ids.add(rid)
        if not isinstance(row["text"], str) or not row["text"].strip():
            errors.append(f"{where}: text must be a non-empty string")
        elif row["text"] in seen_texts:
            errors.append(f"{where}: duplicate text")
        seen_texts.add(row["text"])
        if not _is_iso_day(row["anchor"]):
            errors.append(f"{where}: anchor must be a YYYY-MM-DD day")
        _check_spans(f"{where}.expected", row["expected"], errors)
        if isinstance(rid, str) and row["split"] != split_of(rid):
            errors.append(f"{where}: split must be {split_of(rid)!r} (sha1 rule), got {row['split']!r}")
    for split in SPLITS:
        part = [r for r in rows if r.get("split") == split]
        for lang in LANGS:
            if not any(r.get("lang") == lang for r in part):
                errors.append(f"split {split} has no {lang} row")
        if not any(r.get("expected") == [] for r in part):
            errors.append(f"split {split} has no row without a date")
    return errors


def pairs(spans: Iterable[dict]) -> set[Pair]:
    return {(s["start"], s["end"]) for s in spans}


@dataclass
class Scores:
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


def score_row(row: dict, predicted: set[Pair]) -> tuple[int, int, int]:
    """(TP, FP, FN) of one row."""
    expected = pairs(row["expected"])
    return len(expected & predicted), len(predicted - expected), len(expected - predicted)


def score(rows: list[dict], preds: dict[str, set[Pair]], split: str) -> dict[str, Scores]:
    """Scores per language and for everything, over the rows of ``split`` ("all": both)."""
    out = {g: Scores() for g in GROUPS}
    for row in rows:
        if split != "all" and row["split"] != split:
            continue
        tp, fp, fn = score_row(row, preds.get(row["id"], set()))
        for group in (row["lang"], "all"):
            s = out[group]
            s.rows += 1
            s.tp, s.fp, s.fn = s.tp + tp, s.fp + fp, s.fn + fn
            if not row["expected"]:
                s.negatives += 1
                s.negatives_firing += int(fp > 0)
    return out


def oracle_predictions(rows: list[dict]) -> dict[str, set[Pair]]:
    return {row["id"]: pairs(row["expected"]) for row in rows}


def hmem_predictions(rows: list[dict]) -> dict[str, set[Pair]]:
    """What ``hmem.longterm.dates.resolve_dates`` finds in each row (this checkout)."""
    sys.path.insert(0, str(REPO))
    from hmem.longterm.dates import resolve_dates

    resolve: Callable[..., tuple] = resolve_dates
    return {
        row["id"]: {(s.start.isoformat(), s.end.isoformat()) for s in resolve(row["text"], date.fromisoformat(row["anchor"]))}
        for row in rows
    }


def file_predictions(path: Path) -> dict[str, set[Pair]]:
    out: dict[str, set[Pair]] = {}
    for n, obj in enumerate(load_jsonl(path), 1):
        errors: list[str] = []
        _check_spans(f"{path}:{n}.spans", obj.get("spans"), errors)
        if errors or not isinstance(obj.get("id"), str):
            raise SystemExit("\n".join(errors) or f"{path}:{n}: needs a string id")
        out[obj["id"]] = pairs(obj["spans"])
    return out


def report(scores: dict[str, Scores], split: str) -> list[str]:
    lines = [f"split={split}  group   rows   TP  FP  FN  precision  recall  no-date rows firing"]
    for group in GROUPS:
        s = scores[group]
        lines.append(
            f"{'':{len(split) + 7}}{group:<7}{s.rows:>5}{s.tp:>5}{s.fp:>4}{s.fn:>4}{s.precision:>11.3f}{s.recall:>8.3f}"
            f"  {s.negatives_firing}/{s.negatives}"
        )
    return lines


def misses(rows: list[dict], preds: dict[str, set[Pair]], split: str) -> list[str]:
    out = []
    for row in rows:
        if split != "all" and row["split"] != split:
            continue
        got, want = preds.get(row["id"], set()), pairs(row["expected"])
        if got != want:
            out.append(f"{row['id']} [{row['anchor']}] {row['text']}\n    want {sorted(want)}\n    got  {sorted(got)}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", type=Path, default=TABLE)
    ap.add_argument("--score", type=Path, help="predictions JSONL to score (default: hmem's resolver)")
    ap.add_argument("--split", choices=(*SPLITS, "all"), default="dev")
    ap.add_argument("--oracle", action="store_true", help="score the table against itself")
    ap.add_argument("--misses", action="store_true", help="list the rows of the split that are not exactly right")
    args = ap.parse_args(argv)
    rows = load_jsonl(args.table)
    errors = validate(rows)
    if errors:
        print("\n".join(errors))
        return 1
    counts = {(lang, split): sum(1 for r in rows if (r["lang"], r["split"]) == (lang, split)) for lang in LANGS for split in SPLITS}
    print(f"{args.table.name}: {len(rows)} rows, {sum(1 for r in rows if not r['expected'])} without a date; "
          + ", ".join(f"{lang} {counts[lang, 'dev']}/{counts[lang, 'test']}" for lang in LANGS) + " (dev/test)")
    if args.oracle:
        preds = oracle_predictions(rows)
    elif args.score:
        preds = file_predictions(args.score)
    else:
        preds = hmem_predictions(rows)
    scores = score(rows, preds, args.split)
    print("\n".join(report(scores, args.split)))
    if args.misses:
        print("\n".join(misses(rows, preds, args.split)))
    if args.oracle:
        return 0 if (scores["all"].precision, scores["all"].recall) == (1.0, 1.0) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
