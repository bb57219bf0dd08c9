"""What one app process costs before it serves anything, per embedder: ``Memory.open`` on a
fresh embedded store, ``warm_up()``, one add and one recall; wall time to ready and peak
RSS. Each embedder runs in its own child process (RSS is per process).

    .venv/bin/python bench/bench_footprint.py                       # auto (e5), onnx and sentence-transformers
    .venv/bin/python bench/bench_footprint.py --providers onnx e5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def child(provider: str) -> None:
    from hmem.memory import Memory

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        with Memory.open(tmp, embed_provider=provider) as mem:
            mem.warm_up()
            ready = time.perf_counter() - t0
            mem.add("u1", "s1", [{"role": "user", "content": "My sister Anna lives in Lisbon and bakes bread."}])
            top = mem.recall("u1", "where does my sister live?")[0].item.text
            print(json.dumps({"provider": provider, "ready_s": ready, "model": mem.stats("u1")["embedder"]["model"],
                              "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                              "found": "Lisbon" in top}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--providers", nargs="+", default=["auto", "onnx", "sentence-transformers"])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.child:
        child(args.child)
        return 0
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    print("| HMEM_EMBED_PROVIDER | model | open + warm_up s | peak RSS MB (after one add and one recall) | recall found it |")
    print("|---|---|---|---|---|")
    for provider in args.providers:
        out = subprocess.run([sys.executable, __file__, "--child", provider], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {provider} | `{r['model']}` | {r['ready_s']:.1f} | {r['rss_mb']:.0f} | {r['found']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
