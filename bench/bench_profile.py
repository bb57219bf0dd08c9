"""Offline profile extraction on the evaluation table (data/profile_eval): precision and
recall per language, scored by the table's own reference scorer (check_table.py).

Run:  .venv/bin/python bench/bench_profile.py                 # dev and test tables
      .venv/bin/python bench/bench_profile.py --split dev --misses   # + every dev row that differs

Tune on dev only. ``--misses`` refuses the test split: its sentences are for reporting.
"""

from __future__ import annotations

import argparse
import json
import time

from hmem.eval.profile_table import GROUPS, load_table, predict, score
from hmem.profile.extract import OfflineProfileExtractor


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=("dev", "test", "both"), default="both")
    ap.add_argument("--misses", action="store_true", help="list the dev rows whose prediction differs")
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
