"""Window policy latency: hmem.session.window vs the naive recount-per-trial baseline.

The baseline is the previous implementation, kept here verbatim in spirit: a binary
search over eviction counts that re-tokenizes the whole kept list for every trial cut
(O(n log n) message countings). The current one counts each message once and costs
every cut by suffix sums (O(n)). Both run in the same process on the same buffers, and
every result is checked equal before timing.

Buffers: alternating English/Chinese user/assistant turns (~40-70 tokens each) with a
tool-call group every 10 turns, counted with gpt-4o-mini's tokenizer (o200k_base).

    .venv/bin/python bench/bench_window.py [--sizes 50 200 1000] [--repeat 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial

from hmem.protocols import Tokenizer
from hmem.session.window import WindowResult, _coerce, _cutoff, _plan, hybrid_window, token_window
from hmem.tokens import get_tokenizer
from hmem.types import Message, ToolCall

# -- the naive baseline (the implementation before the prefix-sum rewrite) ------------------


def _naive_fewest(plan: object, start: int, fits: Callable[[list[Message]], bool]) -> int:
    total = len(plan.evictable)  # type: ignore[attr-defined]

    def kept(count: int) -> list[Message]:
        return plan.result(count).kept  # type: ignore[attr-defined, no-any-return]

    if fits(kept(start)):
        return start
    low, high = start + 1, total
    while low < high:
        middle = (low + high) // 2
        if fits(kept(middle)):
            high = middle
        else:
            low = middle + 1
    return high


def naive_token_window(messages: Sequence[Message], tokenizer: Tokenizer, budget: int) -> WindowResult:
    plan, forced = _plan(_coerce(messages), _cutoff(None, None))
    count = _naive_fewest(plan, forced, lambda kept: tokenizer.count_messages(kept) <= budget)
    return plan.result(count)


def naive_hybrid_window(
    messages: Sequence[Message], tokenizer: Tokenizer, budget: int, *, threshold: float = 0.7, target: float = 0.5,
    min_messages: int = 10,
) -> WindowResult:
    plan, forced = _plan(_coerce(messages), _cutoff(None, None))
    current = plan.result(forced).kept
    tokens = tokenizer.count_messages(current)
    if len(current) >= min_messages and tokens > threshold * budget:
        count = _naive_fewest(plan, forced, lambda kept: tokenizer.count_messages(kept) <= target * budget)
    elif tokens > budget:
        count = _naive_fewest(plan, forced, lambda kept: tokenizer.count_messages(kept) <= budget)
    else:
        count = forced
    return plan.result(count)


# -- workload ------------------------------------------------------------------------------

EN = "Could you remind me what we decided about the quarterly report and the budget for the Berlin trip?"
ZH = "我们上次讨论的季度报告和柏林出差的预算是怎么决定的？请再提醒我一下细节。"


def buffer(n: int) -> list[Message]:
    out: list[Message] = []
    i = 0
    while len(out) < n:
        text = EN if i % 2 == 0 else ZH
        if i % 10 == 9 and len(out) + 3 <= n - 1:
            out.append(Message(role="assistant", content=None,
                               tool_calls=(ToolCall(id=f"c{i}", name="search", arguments='{"q": "budget 预算"}'),)))
            out.append(Message(role="tool", content=f'{{"result": "{ZH}"}}', tool_call_id=f"c{i}"))
        out.append(Message(role="user" if len(out) % 2 == 0 else "assistant", content=f"{i}: {text}"))
        i += 1
    out.append(Message(role="user", content="And what about the hotel?"))
    return out[:n] if out[-1].role == "user" else out


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    samples.sort()
    p95 = samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]
    return statistics.median(samples) * 1000, p95 * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    tok = get_tokenizer("gpt-4o-mini")
    tok.count("warm up")  # load the BPE file outside the timings
    print(f"{'policy':<22} {'msgs':>5} {'naive p50':>10} {'naive p95':>10} {'new p50':>9} {'new p95':>9} {'speed-up':>9}")
    for size in args.sizes:
        msgs = buffer(size)
        total = tok.count_messages(msgs)
        half, loose, tight = total // 2, total * 2, int(total / 0.8)
        cases: list[tuple[str, Callable[[], WindowResult], Callable[[], WindowResult]]] = [
            ("token (evicts half)", partial(naive_token_window, msgs, tok, half), partial(token_window, msgs, tok, half)),
            ("hybrid (below trigger)", partial(naive_hybrid_window, msgs, tok, loose),
             partial(hybrid_window, msgs, tok, loose)),
            ("hybrid (triggered)", partial(naive_hybrid_window, msgs, tok, tight),
             partial(hybrid_window, msgs, tok, tight)),
        ]
        for name, naive, new in cases:
            a, b = naive(), new()
            assert (a.kept, a.evicted) == (b.kept, b.evicted), f"{name}: results differ"
            naive_p50, naive_p95 = timed(naive, args.repeat)
            new_p50, new_p95 = timed(new, args.repeat)
            print(f"{name:<22} {size:>5} {naive_p50:>10.2f} {naive_p95:>10.2f} {new_p50:>9.2f} {new_p95:>9.2f}"
                  f" {naive_p50 / new_p50:>8.1f}x")


if __name__ == "__main__":
    main()
