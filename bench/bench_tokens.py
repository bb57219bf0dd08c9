"""Token counting speed: cold load, count, count_messages, truncate.

Run:  .venv/bin/python bench/bench_tokens.py
Prints medians and p95 (ms). Ratios compare numbers measured in the same run.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from hmem.tokens import get_tokenizer, load_encoding

EN = "Memory systems for assistants keep what was said, condense it, and recall it later when it matters. "
ZH = "我们今天去北京的天安门广场看升旗仪式，然后去吃烤鸭。明天打算去长城，后天回上海。"
TEXT_1K = (EN + ZH) * 4
TEXT_100K = TEXT_1K * 100
CONVO = [{"role": "user" if i % 2 else "assistant", "content": (EN if i % 3 else ZH) * 2} for i in range(50)]


def timeit(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]


def cold_load(expr: str) -> tuple[float, float]:
    code = f"import time; import hmem.tokens as t; s=time.perf_counter(); {expr}; print((time.perf_counter()-s)*1000)"
    samples = sorted(float(subprocess.check_output([sys.executable, "-c", code]).decode()) for _ in range(5))
    return statistics.median(samples), samples[-1]


def naive_truncate(text: str, limit: int) -> str:
    # binary search over whole prefixes, no token-offset hint and no word scan
    enc = load_encoding("o200k_base")
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(enc.encode_ordinary(text[:mid])) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def main() -> None:
    exact, cl, est = get_tokenizer("gpt-4o"), get_tokenizer("gpt-4"), get_tokenizer("gemini-2.5-pro")
    rows: list[tuple[str, float, float]] = []
    rows.append(("cold load o200k_base (first count)", *cold_load("t.count_tokens('x', 'gpt-4o')")))
    rows.append(("cold load cl100k_base (first count)", *cold_load("t.count_tokens('x', 'gpt-4')")))
    rows.append(("cold load estimate (both encodings)", *cold_load("t.count_tokens('x', 'gemini-2.5-pro')")))
    est.count("warm")
    for label, tok in (("o200k", exact), ("cl100k", cl), ("estimate", est)):
        rows.append((f"{label}: count 1 KB text", *timeit(lambda tok=tok: tok.count(TEXT_1K), 200)))
        rows.append((f"{label}: count 100 KB text", *timeit(lambda tok=tok: tok.count(TEXT_100K), 20)))
        rows.append((f"{label}: count_messages 50 msgs", *timeit(lambda tok=tok: tok.count_messages(CONVO), 50)))
        rows.append((f"{label}: truncate 100 KB -> 2000 tok", *timeit(lambda tok=tok: tok.truncate(TEXT_100K, 2000), 20)))
    rows.append(("naive binary-search truncate (o200k)", *timeit(lambda: naive_truncate(TEXT_100K, 2000), 20)))
    width = max(len(r[0]) for r in rows)
    print(f"{'operation':<{width}}  {'median ms':>10}  {'p95 ms':>10}")
    for name, med, p95 in rows:
        print(f"{name:<{width}}  {med:>10.3f}  {p95:>10.3f}")
    ours = next(r[1] for r in rows if r[0].startswith("o200k: truncate"))
    naive = rows[-1][1]
    print(f"\ntruncate speed-up vs naive binary search: {naive / ours:.1f}x")
    for label, text in (("1 KB en+zh", TEXT_1K), ("English", EN * 10), ("Chinese", ZH * 10)):
        o, c, e = exact.count(text), cl.count(text), est.count(text)
        print(f"estimate/o200k on {label}: {e / o:.2f}   estimate/cl100k: {e / c:.2f}")


if __name__ == "__main__":
    main()
