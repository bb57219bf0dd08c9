"""Offline profile extraction on the evaluation table (data/profile_eval): precision and
recall per language, scored by the table's own reference scorer (check_table.py).

Run:  .venv/bin/python bench/bench_profile.py                 # dev and test tables
      .venv/bin/python bench/bench_profile.py --split dev --misses   # + every dev row that differs
      .venv/bin/python bench/bench_profile.py --updates       # + the rows about moves and job changes

Tune on dev only. ``--misses`` refuses the test split: its sentences are for reporting.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from typing import Any

from hmem.eval.profile_table import GROUPS, Table, load_table, predict, score
from hmem.profile.extract import OfflineProfileExtractor

#: The rows about a move or a job change: chosen by the words of the message (or a history the
#: row expects for the key), never by what the rules get right, so the selection is the same
#: before and after a change to the rules.
UPDATES = {
    "moves": (re.compile(r"\b(?:mov(?:e|ed|ing)|relocat\w*|settl(?:e|ed|ing)|emigrat\w*|immigrat\w*|now based|"
                         r"based in)\b|搬|迁|定居|安家|落户", re.IGNORECASE), {"location"}),
    "job changes": (re.compile(r"\b(?:switch(?:ed)? jobs?|chang(?:e|ed) jobs?|new (?:job|role|position)|"
                               r"start(?:ed|ing)? (?:at|a new|my new)|joined|(?:now|currently) work(?:ing)? (?:at|for)|"
                               r"got (?:a|the) job|hired|job offer|promot\w*|quit|left my job)\b|跳槽|入职|换工作|换了工作|"
                               r"新工作|新公司|转行|升职|辞职|离职|offer", re.IGNORECASE), {"occupation", "employer"}),
}


def update_rows(table: Table, kind: str) -> Table:
    """The rows of ``table`` about ``kind`` (a key of :data:`UPDATES`)."""
    words, keys = UPDATES[kind]
    rows = [r for r in table.rows if words.search(r["text"]) or keys & set(r.get("history") or {})]
    return Table(rows, table.types, table.aliases, table.checker)


def _updates_report(table: Table, preds: dict[str, Any], splits: tuple[str, ...]) -> None:
    print("\nrows about moves and job changes (all languages), per split")
    print(f"  {'rows':18}{'split':>6}{'rows':>6}{'TP':>6}{'FP':>6}{'FN':>6}{'precision':>11}{'recall':>8}   negatives firing")
    for kind in UPDATES:
        sub = update_rows(table, kind)
        for split in splits:
            s = score(sub, preds, split)["all"]
            print(f"  {kind:18}{split:>6}{s.rows:>6}{s.tp:>6}{s.fp:>6}{s.fn:>6}{s.precision:>11.3f}{s.recall:>8.3f}"
                  f"   {s.negatives_firing}/{s.negatives}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=("dev", "test", "both"), default="both")
    ap.add_argument("--misses", action="store_true", help="list the dev rows whose prediction differs")
    ap.add_argument("--updates", action="store_true", help="also score the rows about moves and job changes")
    args = ap.parse_args()
    if args.misses and args.split != "dev":
        ap.error("--misses shows sentences: only with --split dev (the test split is for reporting)")
    table = load_table()
    extractor = OfflineProfileExtractor()
    extractor.extract("warm up 我叫王伟")  # jieba's dictionary loads once (~1 s); not part of the timing
    start = time.perf_counter()
    preds = predict(extractor, table.rows)
    per_row_ms = (time.perf_counter() - start) * 1000 / len(table.rows)
    splits = ("dev", "test") if args.split == "both" else (args.split,)
    for split in splits:
        scores = score(table, preds, split)
        print(f"\nsplit={split}: (key, value) pairs, micro-averaged")
        print(f"  {'group':10}{'rows':>6}{'TP':>6}{'FP':>6}{'FN':>6}{'precision':>11}{'recall':>8}   negatives firing")
        for group in GROUPS:
            s = scores[group]
            print(f"  {group:10}{s.rows:>6}{s.tp:>6}{s.fp:>6}{s.fn:>6}{s.precision:>11.3f}{s.recall:>8.3f}"
                  f"   {s.negatives_firing}/{s.negatives}")
    if args.updates:
        _updates_report(table, preds, splits)
    print(f"\n{len(table.rows)} rows, {per_row_ms:.2f} ms per message (OfflineProfileExtractor, one core)")
    if args.misses:
        for row in table.rows:
            if row["split"] != "dev":
                continue
            _, fp, fn = table.checker.score_row(row, preds[row["id"]], table.types, table.aliases)
            if fp or fn:
                print(f"\n{row['id']} [{row['guard'] or '-'}] fp={fp} fn={fn}: {row['text']}")
                print(f"   expect {json.dumps(row['expect'], ensure_ascii=False)}")
                print(f"   got    {json.dumps(preds[row['id']], ensure_ascii=False)}")


if __name__ == "__main__":
    main()
