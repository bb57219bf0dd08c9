"""Excerpts: a long recalled turn rendered as the passage the question is about.

A 600-word assistant reply recalled for one sentence costs ~800 prompt tokens to carry
one fact. :func:`excerpt` keeps the sentence recall found nearest the question (its
sentence key, :attr:`~hmem.types.Hit.passage`) and those that share the most question
terms (BM25's own terms: stems, CJK bigrams), with their neighbours while they fit
``max_tokens``, in the turn's order; a gap between kept sentences is marked with
:data:`GAP` (so is text cut before or after). A turn with neither keeps its opening
sentences. The
assembler's report keeps the whole turn's id and token count
(:attr:`~hmem.types.ReportItem.whole_tokens`), so the full text is one lookup away.

Example::

    >>> from hmem.tokens import get_tokenizer
    >>> reply = ("Great question! Pesto is forgiving. For your version, leave out the basil "
    ...          "since you said it tastes soapy to you. Toast the pine nuts first. Enjoy!")
    >>> excerpt(reply, "which herb should I leave out of the pesto?", 20, get_tokenizer())
    '… For your version, leave out the basil since you said it tastes soapy to you. …'
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hmem.errors import InvalidInput
from hmem.longterm.index_text import key_positions, sentences
from hmem.longterm.text import SAME_WORDING, tokenize
from hmem.protocols import Tokenizer

__all__ = ["GAP", "SeenTexts", "excerpt", "near_duplicate"]

#: Marks text left out of an excerpt.
GAP = "…"


def _weights(terms: Sequence[str]) -> dict[str, float]:
    # A single CJK character matches almost any Chinese sentence; words and bigrams do not.
    return {t: (0.2 if len(t) == 1 and not t.isascii() else 1.0) for t in terms}


def excerpt(text: str, query: str, max_tokens: int, counter: Tokenizer, anchor: int | None = None) -> str:
    """``text`` itself when it fits ``max_tokens``, else its passage about ``query``:
    the sentence of key number ``anchor`` (when given), then the best-matching
    sentences, each with its neighbours, in the text's order, within ``max_tokens`` (the
    first sentence alone when even it does not fit: it is cut)."""
    if counter.count(text) <= max_tokens:
        return text
    parts = sentences(text)
    if len(parts) < 2:
        return counter.truncate(text, max(1, max_tokens - 1)) + " " + GAP
    wanted = _weights(tokenize(query))
    scores = [sum(wanted.get(t, 0.0) for t in set(tokenize(s))) for s in parts]
    costs = [counter.count(s) + 1 for s in parts]
    order = sorted(range(len(parts)), key=lambda i: (-scores[i], i)) if any(scores) else list(range(len(parts)))
    positions = key_positions(parts)
    if anchor is not None and 0 <= anchor < len(positions):
        first = positions[anchor]
        scores[first] = max(scores[first], 1.0)  # a seed, even with no word in common
        order = [first, *(i for i in order if i != first)]
    kept: set[int] = set()
    used = 0
    for seed in order:
        if scores[seed] <= 0 and kept:
            break
        for i in (seed, seed + 1, seed - 1):  # the sentence, then what follows it, then what led to it
            if 0 <= i < len(parts) and i not in kept and used + costs[i] <= max_tokens:
                kept.add(i)
                used += costs[i]
        if used >= max_tokens:
            break
    if not kept:
        return counter.truncate(parts[0], max(1, max_tokens - 1)) + " " + GAP
    out: list[str] = []
    previous = -1
    for i in sorted(kept):
        if i != previous + 1:
            out.append(GAP)
        out.append(parts[i])
        previous = i
    if previous != len(parts) - 1:
        out.append(GAP)
    return " ".join(out)


class SeenTexts:
    """The term sets of the texts taken so far, asked whether a new one nearly repeats
    one of them (Jaccard of terms at least ``threshold``): the same memory said twice.

    A question costs the few texts that share a term with its *prefix*, not every text
    taken: two sets with Jaccard ≥ t share at least ⌈t·|x|⌉ terms, so under one fixed
    order of terms their first |x| − ⌈t·|x|⌉ + 1 terms meet (prefix filtering, Chaudhuri
    et al. 2006). The answer is the same as comparing with every text.

    >>> seen = SeenTexts()
    >>> a = frozenset({"user", "allerg", "peanut"})
    >>> seen.repeats(a)
    False
    >>> seen.add(frozenset({"user", "allerg", "peanut", "sever"})); seen.repeats(a)
    False
    >>> seen.add(a); seen.repeats(a)
    True
    """

    def __init__(self, threshold: float = SAME_WORDING) -> None:
        if not 0 < threshold <= 1:
            raise InvalidInput(f"threshold must be a Jaccard in (0, 1], got {threshold!r}", field="threshold")
        self._threshold = threshold
        self._sets: list[frozenset[str]] = []
        self._by_term: dict[str, list[int]] = {}

    def _prefix(self, words: frozenset[str]) -> list[str]:
        shared = math.ceil(self._threshold * len(words) - 1e-9)  # the overlap a repeat must have
        return sorted(words)[: len(words) - shared + 1]

    def repeats(self, words: frozenset[str]) -> bool:
        """Whether ``words`` overlaps a text added before by at least the threshold."""
        if not words:
            return False
        size, t = len(words), self._threshold
        near = {i for term in self._prefix(words) for i in self._by_term.get(term, ())}
        return any(min(size, len(other)) >= t * max(size, len(other))
                   and len(words & other) / len(words | other) >= t
                   for other in (self._sets[i] for i in sorted(near)))

    def add(self, words: frozenset[str]) -> None:
        """Take ``words`` (an empty set repeats nothing and is not kept)."""
        if not words:
            return
        index = len(self._sets)
        self._sets.append(words)
        for term in self._prefix(words):
            self._by_term.setdefault(term, []).append(index)


def near_duplicate(words: frozenset[str], seen: Sequence[frozenset[str]], threshold: float = SAME_WORDING) -> bool:
    """Whether ``words`` (a text's terms) overlaps one of ``seen`` by at least
    ``threshold`` (Jaccard): :meth:`SeenTexts.repeats` for a list at hand.

    >>> a = frozenset({"user", "allerg", "peanut"})
    >>> near_duplicate(a, [frozenset({"user", "allerg", "peanut", "sever"})]), near_duplicate(a, [])
    (False, False)
    >>> near_duplicate(a, [a])
    True
    """
    index = SeenTexts(threshold)
    for other in seen:
        index.add(other)
    return index.repeats(words)
