"""Pseudo-relevance feedback for recall (pure): expansion terms and the merge of rounds.

A multi-hop question names one end of a chain ("Where did Caroline move from?"); the
turn that answers it often shares no word with the question but shares a *name* with the
turns the first round finds ("... since I moved from my home country" → "... my grandma
in my home country, Sweden"). A second round searches again with the question plus
the words that make the first round's top hits specific, and adds what it finds below
the evidence of the first round.

* :func:`expansion_terms` picks those words, offline and cheaply: words (or, in Chinese,
  character pairs) of the top hits that the question lacks, weighted by how many top hits
  hold them and by how rare they are among the first round's candidates (a contrast
  against the question's own topic: words every candidate shares say nothing new).
  Names and numbers written inside a sentence ("Sweden", "2022") count
  :data:`ENTITY_BOOST` times. Terms are the lexical index's own
  (:func:`hmem.longterm.text.tokenize`: stems, CJK pairs), returned as surface words for
  the next query.
* :func:`merge_round` adds a round's evidence, times a weight, to the fused scores so
  far: full for the hits it was expanded from, min-max normalised BM25 scores (or
  reciprocal ranks, under RRF) for the others it found.
* :func:`rounds_of` records, for each hit shown, the first round that held it among its
  best ``rerank_depth`` (:attr:`hmem.types.Hit.round`).

Example::

    >>> top = ["Thanks, Melanie! This necklace is a gift from my grandma in my home country, Sweden."]
    >>> pool = ["My home is full of books, Melanie.", "I love my home country food.", "Home is where the heart is."]
    >>> expansion_terms("Where did Caroline move from 4 years ago?", top, pool, 2)
    ['sweden', 'thanks']
    >>> merge_round({"a": 0.9, "b": 0.5}, [("c", 7.0), ("b", 2.0)], 0.5)
    {'a': 0.9, 'b': 0.5, 'c': 0.5}
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence

from hmem.longterm.text import CHINESE_STOPWORDS, tokenize

__all__ = ["ENTITY_BOOST", "SCAN_CHARS", "expansion_terms", "merge_round", "rounds_of"]

#: Weight factor of a name or number written inside a sentence (an entity, most likely).
ENTITY_BOOST = 1.5
#: Only this many leading characters of a hit are read: a pasted document among the top
#: hits must not make every recall slow, and a turn's point is near its start.
SCAN_CHARS = 2000
#: Words shorter than this (and not numbers) are too ambiguous to search for again.
_MIN_WORD_CHARS = 3

_CJK_CHAR = re.compile(r"[\u3007\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af\U00020000-\U0003134f]")
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_SENTENCE_END = frozenset(".!?:;\"“”()\n")
#: A character pair holding one of these (在, 是, 的 …) most likely spans two words.
_CJK_FUNCTION_CHARS = frozenset(w for w in CHINESE_STOPWORDS if len(w) == 1)


def _is_cjk(term: str) -> bool:
    return _CJK_CHAR.match(term) is not None


def _entities(text: str) -> set[str]:
    """Lower-cased words written capitalised inside a sentence, and words with digits."""
    out: set[str] = set()
    starts_sentence = True
    pos = 0
    for match in _WORD.finditer(text):
        gap = text[pos : match.start()]
        pos = match.end()
        if any(ch in _SENTENCE_END for ch in gap):
            starts_sentence = True
        word = match.group(0)
        if word[-2:].lower() in ("'s", "\u2019s"):
            word = word[:-2]
        if any(ch.isdigit() for ch in word) or (word[:1].isupper() and not starts_sentence):
            out.add(word.lower())
        starts_sentence = False
    return out


def _pairs(text: str) -> list[tuple[str, str]]:
    """(surface word, index term) of ``text``, in order; the two tokenizations align."""
    clipped = text[:SCAN_CHARS]
    return list(zip(tokenize(clipped, stem=False), tokenize(clipped), strict=True))


def _usable(surface: str, term: str) -> bool:
    if _is_cjk(term):
        # One character is too ambiguous; a pair is a word or most of one, unless it
        # holds a function character (在柏林 → 在柏 spans two words).
        return len(term) >= 2 and not _CJK_FUNCTION_CHARS.intersection(term)
    return len(surface) >= _MIN_WORD_CHARS or any(ch.isdigit() for ch in surface)


def _document_frequencies(surface: Mapping[str, str], texts: Sequence[str]) -> dict[str, int]:
    """For each term, in how many ``texts`` its surface word occurs.

    Matched on lower-cased words (a character pair: as a substring), not on
    :func:`tokenize`'s stems: about 3 times cheaper (~10 µs for a 25-word turn); a word
    met in another inflection only makes the df a little low.
    """
    words_of = {term: word for term, word in surface.items() if not _is_cjk(term)}
    pairs_of = {term: word for term, word in surface.items() if _is_cjk(term)}
    df = dict.fromkeys(surface, 0)
    for text in texts:
        lower = text[:SCAN_CHARS].lower()
        words = set(_WORD.findall(lower))
        words.update(w[:-2] for w in list(words) if w.endswith(("'s", "\u2019s")))
        for term, word in words_of.items():
            if word in words:
                df[term] += 1
        for term, pair in pairs_of.items():
            if pair in lower:
                df[term] += 1
    return df


def expansion_terms(query: str, feedback: Sequence[str], background: Iterable[str], n: int) -> list[str]:
    """Up to ``n`` words of the ``feedback`` texts (the first round's top hits) that are
    not in ``query``, best first, for the next round's query.

    A term's weight is (number of feedback texts holding it) × its BM25 idf among
    ``background`` (the first round's candidates; the feedback texts count as part of it),
    floored at 0, × :data:`ENTITY_BOOST` for a name or number. Every feedback text counts
    the same, whatever its rank: the bridge of a two-hop question ("Maria's sister is
    Elena") is rarely the best first-round hit. Terms of weight 0 (held by over half of
    the texts) are dropped; ties keep the order of first appearance.

    >>> expansion_terms("我妹妹住在哪里?", ["我妹妹住在柏林, 她是医生"], ["她很忙", "我妹妹在家", "下雨了"], 2)
    ['柏林', '医生']
    >>> expansion_terms("tea", ["tea"], [], 5)
    []
    """
    if n <= 0 or not feedback:
        return []
    asked = set(tokenize(query[:SCAN_CHARS]))
    docs = [_pairs(text) for text in feedback]
    entity_words = set().union(*(_entities(text[:SCAN_CHARS]) for text in feedback))
    surface: dict[str, str] = {}
    held_by: dict[str, int] = {}
    for pairs in docs:
        for word, term in pairs:
            if term not in surface and term not in asked and _usable(word, term):
                surface[term] = word  # the first spelling met is the one searched for
                held_by[term] = 0
        for term in {t for _, t in pairs} & surface.keys():
            held_by[term] += 1
    if not surface:
        return []
    texts = [*feedback, *background]
    seen = len(texts)
    df = _document_frequencies(surface, texts)
    order = {term: i for i, term in enumerate(surface)}

    def weight(term: str) -> float:
        boost = ENTITY_BOOST if surface[term] in entity_words else 1.0
        # BM25's idf, floored at 0: a word in over half of the candidates is the
        # question's own topic, not a lead.
        return held_by[term] * max(math.log((seen - df[term] + 0.5) / (df[term] + 0.5)), 0.0) * boost

    ranked = sorted(surface, key=lambda t: (-weight(t), order[t]))
    return [surface[t] for t in ranked[:n] if weight(t) > 0]


def merge_round(
    fused: Mapping[str, float], found: Sequence[tuple[str, float]], weight: float, *,
    leads: Sequence[str] = (), rrf_k: int | None = None,
) -> dict[str, float]:
    """``fused`` plus ``weight`` × a feedback round's evidence for its ``leads`` (the hits
    its query was expanded from) and for the other ids it ``found`` ((id, BM25 score),
    best first); an id new to ``fused`` starts from 0.

    The leads hold every expansion word, so they would top the round's own ranking and,
    normalised with the rest, squash everything it found; instead they head it with full
    evidence and the others are normalised among themselves. Evidence is the min-max
    normalised score, as in the first round's weighted fusion (a BM25 score below 0, rank_bm25's
    idf floor in a tiny corpus, counts as 0), or with ``rrf_k`` the reciprocal rank
    ``1 / (rrf_k + rank)`` in the ranking leads-then-found, as in its RRF.

    >>> merge_round({"a": 1.0, "b": 0.5}, [("c", 3.0), ("d", 1.0)], 0.4, leads=["a"])
    {'a': 1.4, 'b': 0.5, 'c': 0.4, 'd': 0.0}
    >>> merge_round({"a": 0.03}, [("b", 3.0)], 1.0, leads=["a"], rrf_k=60)
    {'a': 0.04639344262295082, 'b': 0.016129032258064516}
    """
    out = dict(fused)
    lead_set = set(leads)
    rest = [(doc_id, score) for doc_id, score in found if doc_id not in lead_set]
    if rrf_k is not None:
        for rank, doc_id in enumerate([*leads, *(d for d, _ in rest)], start=1):
            out[doc_id] = out.get(doc_id, 0.0) + weight / (rrf_k + rank)
        return out
    for doc_id in leads:
        out[doc_id] = out.get(doc_id, 0.0) + weight
    if not rest:
        return out
    scores = [max(score, 0.0) for _, score in rest]
    lo, hi = min(scores), max(scores)
    span = hi - lo
    for (doc_id, _), score in zip(rest, scores, strict=True):
        norm = (score - lo) / span if span > 1e-12 else 1.0
        out[doc_id] = out.get(doc_id, 0.0) + weight * norm
    return out


def rounds_of(shown: Sequence[str], heads: Sequence[tuple[int, Collection[str]]], last: int) -> dict[str, int]:
    """For each id of ``shown``, the first round that found it: whose head (``heads``:
    round number and the ids of its best ``rerank_depth``, first round first) held it;
    ``last`` (the last round kept) for an id no round's head held, lifted there by a later
    step (session support, rare words …). The head, not the number of hits asked for,
    decides, so a deeper recall labels its first hits the same.

    >>> rounds_of(["c", "a", "b"], [(1, {"a", "b", "x"}), (2, {"c", "a", "b"})], 2)
    {'c': 2, 'a': 1, 'b': 1}
    """
    return {d: next((r for r, held in heads if d in held), last) for d in shown}
