"""When the recalled tier stops: each hit's chance of holding the answer against its tokens.

A fixed share of the best score (the old relevance cut-off) almost never stops: fused
scores fall slowly, so a one-line question kept 73 of 74 candidates. The calibrated rule
estimates, for each hit, the chance that it holds the answer from what the assembler can
see — its rank, its score against the best one, and whether both retrievers found it — with
a logistic model fitted on our dev sets (``bench/fit_stopping.py``: LoCoMo dev 1-3, the
sample set, the assistant set; checked on LoCoMo dev 4-5 and our assistant and mixed test
splits). The tier takes each hit, best first, whose chance is worth its tokens —
``chance >= tokens / tokens_per_answer`` — and leaves out the others (the chance falls
with rank, so in practice the tier stops; the report names the first one left out). ``tokens_per_answer`` is the price: how many
prompt tokens one answer is worth. The default, 24,000, was chosen on the dev sets: the
dearest of 3,000 / 6,000 / 12,000 / 24,000 whose mean prompt stays within 1,500 tokens on
each dev set (#36's target) under the default memory budget, 1,500 tokens (itself picked
from runs at 1,400–3,000 on LoCoMo dev and the assistant dev set); the test splits were
measured once, after (docs/assembly.md, "Without a budget"; ``bench/bench_context_depth.py --variants``).

Example::

    >>> rule = StopRule()
    >>> rule.chance((0.0, 1.0, 1.0)) > rule.chance((math.log(20), 0.4, 0.0))
    True
    >>> rule.pays(0.2, 60), rule.pays(0.005, 200)
    (True, False)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hmem._checks import is_finite
from hmem.errors import InvalidInput
from hmem.types import Hit

__all__ = ["DEFAULT_STOP", "StopRule", "features"]

#: The features :meth:`StopRule.chance` reads, in order.
FEATURES = ("log rank", "score / best", "both retrievers")


def features(hits: Sequence[Hit]) -> list[tuple[float, float, float]]:
    """Per hit (best first): ``(log rank, score / best score, 1.0 if both retrievers
    found it else 0.0)``. The ratio is 1.0 when the best score is not positive.

    >>> from hmem.types import MemoryItem
    >>> it = MemoryItem(id="m", user_id="u", text="t")
    >>> features([Hit(it, 0.8, lexical_rank=1, dense_rank=2), Hit(it, 0.4, dense_rank=1)])
    [(0.0, 1.0, 1.0), (0.6931471805599453, 0.5, 0.0)]
    """
    if not hits:
        return []
    best = hits[0].score
    out = []
    for rank, hit in enumerate(hits, start=1):
        ratio = min(1.0, max(0.0, hit.score / best)) if best > 0 else 1.0
        both = 1.0 if hit.lexical_rank is not None and hit.dense_rank is not None else 0.0
        out.append((math.log(rank), ratio, both))
    return out


@dataclass(frozen=True, slots=True)
class StopRule:
    """The calibrated stop: ``coefficients`` (bias, then one per :data:`FEATURES`) of the
    logistic chance that a hit holds the answer, and ``tokens_per_answer``, the prompt
    tokens one answer is worth: a hit is taken while ``chance * tokens_per_answer >=
    tokens``.

    Example::

        >>> StopRule(tokens_per_answer=4000).pays(0.02, 60)
        True
    """

    coefficients: tuple[float, float, float, float] = (-4.1235, -0.8742, 3.9328, -0.2834)
    tokens_per_answer: float = 24000.0

    def __post_init__(self) -> None:
        if len(self.coefficients) != len(FEATURES) + 1 or not all(
            isinstance(c, int | float) and not isinstance(c, bool) and is_finite(c) for c in self.coefficients
        ):
            raise InvalidInput(f"coefficients must be {len(FEATURES) + 1} finite numbers (bias, "
                               f"{', '.join(FEATURES)})", field="stop.coefficients")
        price = self.tokens_per_answer
        if isinstance(price, bool) or not isinstance(price, int | float) or not is_finite(price) or price <= 0:
            raise InvalidInput(f"tokens_per_answer must be a positive number, got {price!r}",
                               field="stop.tokens_per_answer")

    def chance(self, x: Sequence[float]) -> float:
        """The estimated chance that a hit with features ``x`` holds the answer."""
        z = self.coefficients[0] + sum(c * v for c, v in zip(self.coefficients[1:], x, strict=True))
        return 1 / (1 + math.exp(-z)) if z > -700 else 0.0

    def pays(self, chance: float, tokens: int) -> bool:
        """Whether a hit of ``chance`` is worth ``tokens`` prompt tokens."""
        return chance * self.tokens_per_answer >= tokens


#: The rule :meth:`hmem.memory.Memory.context` stops by when no budget is passed.
DEFAULT_STOP = StopRule()
