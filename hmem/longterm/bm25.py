"""Incremental BM25 (Okapi, as ``rank_bm25.BM25Okapi``) over one corpus, in memory.

No I/O: both lexical backends keep one :class:`Bm25Index` per user (the memory
backend as its store, the SQLite backend as a cache of its tables).

Scoring is exactly rank_bm25's::

    idf(t)   = ln(N - n_t + 0.5) - ln(n_t + 0.5)        (n_t: docs containing t)
               if idf(t) < 0: idf(t) = epsilon * mean(idf(t') for t' in vocabulary)
    score(d) = sum over query tokens q (repeats count again) of
               idf(q) * tf(q,d) * (k1 + 1) / (tf(q,d) + k1 * (1 - b + b * |d| / avgdl))

Costs: ``add``/``remove`` touch only the document's own terms (amortized O(|d|));
a query touches only the postings of its terms (numpy), plus O(slots) for the
candidate mask. The vocabulary mean of idf, which depends on N, is kept exact
without a pass over the vocabulary: ``df_hist[n] = number of terms with df n``
has few distinct keys (hundreds to a few thousand), and the mean is recomputed
from it only when a query needs the epsilon floor after the corpus changed.

Example::

    >>> idx = Bm25Index()
    >>> idx.add("a", term_counts(["red", "apple"]))
    >>> idx.add("b", term_counts(["green", "pear"]))
    >>> idx.add("c", term_counts(["green", "tea"]))
    >>> [doc for doc, _ in idx.top_k(["apple"], 10)]
    ['a']
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from hmem.protocols import TermStats

__all__ = ["Bm25Index", "check_bm25_params", "term_counts", "term_stats"]

_MIN_DEAD_SLOTS_TO_COMPACT = 1024


def term_counts(tokens: Iterable[str]) -> dict[str, int]:
    """Term → frequency, in first-occurrence order."""
    return dict(Counter(tokens))


def check_bm25_params(k1: float, b: float, epsilon: float) -> None:
    """Raise ``ValueError`` unless 0 ≤ k1, 0 ≤ b ≤ 1 and epsilon are finite numbers."""
    for name, value in (("k1", k1), ("b", b), ("epsilon", epsilon)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not -1e300 < value < 1e300:
            raise ValueError(f"BM25 parameter {name} must be a finite number, got {value!r}")
    if k1 < 0:
        raise ValueError(f"BM25 parameter k1 must be >= 0, got {k1}")
    if not 0 <= b <= 1:
        raise ValueError(f"BM25 parameter b must be between 0 and 1, got {b}")


class _Posting:
    """Growable (slot, tf) arrays of one term. Entries of removed docs stay until
    the term is compacted (lazily, when more than half of them are dead)."""

    __slots__ = ("n", "slots", "tfs")

    def __init__(self, capacity: int = 4) -> None:
        self.slots: npt.NDArray[np.int32] = np.empty(capacity, dtype=np.int32)
        self.tfs: npt.NDArray[np.int32] = np.empty(capacity, dtype=np.int32)
        self.n = 0

    @classmethod
    def wrap(cls, slots: npt.NDArray[np.int32], tfs: npt.NDArray[np.int32]) -> _Posting:
        posting = cls.__new__(cls)
        posting.slots, posting.tfs, posting.n = slots, tfs, len(slots)
        return posting

    def append(self, slot: int, tf: int) -> None:
        if self.n == len(self.slots):
            cap = max(4, 2 * len(self.slots))
            self.slots = np.resize(self.slots, cap)
            self.tfs = np.resize(self.tfs, cap)
        self.slots[self.n] = slot
        self.tfs[self.n] = tf
        self.n += 1

    def keep(self, mask: npt.NDArray[np.bool_]) -> None:
        self.slots = self.slots[: self.n][mask]
        self.tfs = self.tfs[: self.n][mask]
        self.n = len(self.slots)


class Bm25Index:
    """BM25Okapi over a changing set of documents (each given as term counts).

    Adding an existing ``doc_id`` replaces the document. Not thread-safe: callers
    hold a lock (both backends do).
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> None:
        check_bm25_params(k1, b, epsilon)
        self.k1, self.b, self.epsilon = float(k1), float(b), float(epsilon)
        self._slot_of: dict[str, int] = {}
        self._slot_ids: list[str | None] = []
        self._slot_terms: list[tuple[str, ...] | None] = []
        self._doc_len: npt.NDArray[np.float64] = np.zeros(16, dtype=np.float64)
        self._alive: npt.NDArray[np.bool_] = np.zeros(16, dtype=np.bool_)
        self._postings: dict[str, _Posting] = {}
        self._df: dict[str, int] = {}
        self._df_hist: Counter[int] = Counter()
        self._total_len = 0
        self._avg_idf: float | None = None  # cache; None = corpus changed since

    @classmethod
    def from_docs(
        cls,
        docs: Iterable[tuple[str, Sequence[str], Sequence[int] | npt.NDArray[np.int32]]],
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
    ) -> Bm25Index:
        """Build an index from (doc_id, distinct terms, their frequencies) in one
        vectorized pass — much faster than ``add`` one by one (it loads a persisted
        corpus). Ids must be unique."""
        idx = cls(k1, b, epsilon)
        all_terms: list[str] = []
        tf_parts: list[Sequence[int] | npt.NDArray[np.int32]] = []
        per_doc: list[int] = []
        for slot, (doc_id, terms, tfs) in enumerate(docs):
            if doc_id in idx._slot_of:
                raise ValueError(f"duplicate doc_id {doc_id!r}")
            if len(terms) != len(tfs):
                raise ValueError(f"doc {doc_id!r}: {len(terms)} terms but {len(tfs)} frequencies")
            idx._slot_of[doc_id] = slot
            idx._slot_ids.append(doc_id)
            idx._slot_terms.append(tuple(terms))
            all_terms.extend(terms)
            tf_parts.append(tfs)
            per_doc.append(len(terms))
        n_docs = len(per_doc)
        all_tfs = (
            np.concatenate([np.asarray(p, dtype=np.int32) for p in tf_parts]) if tf_parts else np.empty(0, np.int32)
        )
        all_slots = np.repeat(np.arange(n_docs, dtype=np.int32), per_doc)
        lengths = np.bincount(all_slots, weights=all_tfs, minlength=n_docs)
        cap = max(16, n_docs)
        idx._doc_len = np.zeros(cap, dtype=np.float64)
        idx._doc_len[:n_docs] = lengths
        idx._alive = np.zeros(cap, dtype=np.bool_)
        idx._alive[:n_docs] = True
        idx._total_len = int(all_tfs.sum())
        # Group the (term, slot, tf) triples by term: a stable sort keeps slots ascending.
        vocab = {t: i for i, t in enumerate(dict.fromkeys(all_terms))}
        tids = np.fromiter(map(vocab.__getitem__, all_terms), dtype=np.int64, count=len(all_terms))
        order = np.argsort(tids, kind="stable")
        sorted_slots, sorted_tfs = all_slots[order], all_tfs[order]
        bounds: list[int] = np.concatenate(([0], np.cumsum(np.bincount(tids, minlength=len(vocab))))).tolist()
        for term, tid in vocab.items():
            lo, hi = bounds[tid], bounds[tid + 1]
            idx._postings[term] = _Posting.wrap(sorted_slots[lo:hi], sorted_tfs[lo:hi])
            idx._df[term] = hi - lo
        idx._df_hist = Counter(idx._df.values())
        return idx

    # -- reading -------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    def doc_ids(self) -> list[str]:
        return list(self._slot_of)

    @property
    def avgdl(self) -> float:
        return self._total_len / len(self._slot_of) if self._slot_of else 0.0

    def df(self, term: str) -> int:
        return self._df.get(term, 0)

    def average_idf(self) -> float:
        """Mean raw idf over the vocabulary (terms of live documents), as rank_bm25."""
        if self._avg_idf is None:
            n_terms = sum(self._df_hist.values())
            if n_terms == 0:
                return 0.0
            dfs = np.array(sorted(self._df_hist), dtype=np.float64)
            counts = np.array([self._df_hist[int(d)] for d in dfs], dtype=np.float64)
            big_n = float(len(self._slot_of))
            total = float(np.sum(counts * (np.log(big_n - dfs + 0.5) - np.log(dfs + 0.5))))
            self._avg_idf = total / n_terms
        return self._avg_idf

    def idf(self, term: str) -> float:
        """The idf rank_bm25 would use for ``term`` (0.0 for an unknown term)."""
        n = self._df.get(term, 0)
        if n == 0:
            return 0.0
        value = math.log(len(self._slot_of) - n + 0.5) - math.log(n + 0.5)
        return self.epsilon * self.average_idf() if value < 0 else value

    # -- writing -------------------------------------------------------------------------

    def add(self, doc_id: str, counts: Mapping[str, int]) -> None:
        """Index (or replace) ``doc_id`` with its term → frequency map."""
        if doc_id in self._slot_of:
            self.remove(doc_id)
        slot = len(self._slot_ids)
        if slot == len(self._doc_len):
            self._doc_len = np.resize(self._doc_len, 2 * slot)
            self._alive = np.resize(self._alive, 2 * slot)
        length = 0
        for term, tf in counts.items():
            posting = self._postings.get(term)
            if posting is None:
                posting = self._postings[term] = _Posting()
            posting.append(slot, tf)
            self._bump_df(term, +1)
            length += tf
        self._slot_of[doc_id] = slot
        self._slot_ids.append(doc_id)
        self._slot_terms.append(tuple(counts))
        self._doc_len[slot] = length
        self._alive[slot] = True
        self._total_len += length
        self._avg_idf = None

    def remove(self, doc_id: str) -> bool:
        """Forget ``doc_id``; False if it was not indexed."""
        slot = self._slot_of.pop(doc_id, None)
        if slot is None:
            return False
        terms = self._slot_terms[slot]
        assert terms is not None
        for term in terms:
            if self._bump_df(term, -1) == 0:
                del self._postings[term]  # every entry is dead: drop it whole
        self._alive[slot] = False
        self._slot_ids[slot] = None
        self._slot_terms[slot] = None
        self._total_len -= int(self._doc_len[slot])
        self._avg_idf = None
        dead = len(self._slot_ids) - len(self._slot_of)
        if dead > max(_MIN_DEAD_SLOTS_TO_COMPACT, len(self._slot_of)):
            self._compact_slots()
        return True

    def _bump_df(self, term: str, delta: int) -> int:
        old = self._df.get(term, 0)
        new = old + delta
        if old:
            self._df_hist[old] -= 1
            if not self._df_hist[old]:
                del self._df_hist[old]
        if new:
            self._df[term] = new
            self._df_hist[new] += 1
        else:
            del self._df[term]
        return new

    def _compact_slots(self) -> None:
        # Amortized O(1) per removal: runs after at least as many removals as live docs.
        n_slots = len(self._slot_ids)
        live = np.flatnonzero(self._alive[:n_slots])
        remap = np.full(n_slots, -1, dtype=np.int32)
        remap[live] = np.arange(len(live), dtype=np.int32)
        for posting in self._postings.values():
            new_slots = remap[posting.slots[: posting.n]]
            keep = new_slots >= 0
            posting.tfs = posting.tfs[: posting.n][keep]
            posting.slots = new_slots[keep]
            posting.n = len(posting.slots)
        self._slot_ids = [self._slot_ids[i] for i in live]
        self._slot_terms = [self._slot_terms[i] for i in live]
        cap = max(16, 2 * len(live))
        doc_len = np.zeros(cap, dtype=np.float64)
        doc_len[: len(live)] = self._doc_len[live]
        self._doc_len = doc_len
        self._alive = np.zeros(cap, dtype=np.bool_)
        self._alive[: len(live)] = True
        self._slot_of = {doc_id: i for i, doc_id in enumerate(self._slot_ids) if doc_id is not None}

    # -- scoring -------------------------------------------------------------------------

    def score_slots(
        self, query_terms: Sequence[str], allowed: Iterable[str] | None = None
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        """Slots of the live documents containing at least one query term (and in
        ``allowed`` when given) and their scores."""
        empty = (np.empty(0, dtype=np.intp), np.empty(0, dtype=np.float64))
        n_docs = len(self._slot_of)
        if n_docs == 0:
            return empty
        qcount = Counter(t for t in query_terms if t in self._df)
        if not qcount:
            return empty
        n_slots = len(self._slot_ids)
        k1, b, avgdl = self.k1, self.b, self._total_len / n_docs
        acc = np.zeros(n_slots, dtype=np.float64)
        hit = np.zeros(n_slots, dtype=np.bool_)
        for term, qtf in qcount.items():
            posting = self._postings[term]
            if posting.n > 2 * self._df[term] + 8:
                posting.keep(self._alive[posting.slots[: posting.n]])
            slots = posting.slots[: posting.n]
            tf = posting.tfs[: posting.n].astype(np.float64)
            dl = self._doc_len[slots]
            acc[slots] += (qtf * self.idf(term)) * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))
            hit[slots] = True
        hit &= self._alive[:n_slots]
        if allowed is not None:
            keep = np.zeros(n_slots, dtype=np.bool_)
            keep[[s for d in allowed if (s := self._slot_of.get(d)) is not None]] = True
            hit &= keep
        cand = np.flatnonzero(hit)
        return cand, acc[cand]

    def top_k(
        self, query_terms: Sequence[str], k: int, allowed: Iterable[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` best (doc_id, score), best first; ties by doc_id. Only documents
        sharing a term with the query are returned (their score may be ≤ 0 in tiny
        corpora, where rank_bm25's idf floor is negative)."""
        if k <= 0:
            return []
        cand, scores = self.score_slots(query_terms, allowed)
        if len(cand) > k:
            part = np.argpartition(-scores, k - 1)[:k]
            threshold = scores[part].min()
            pick = np.flatnonzero(scores >= threshold)  # ties at the cut stay in play
        else:
            pick = np.arange(len(cand))
        ids = self._slot_ids
        ranked = sorted(((float(scores[i]), ids[cand[i]]) for i in pick), key=lambda p: (-p[0], p[1]))
        return [(doc_id, score) for score, doc_id in ranked[:k] if doc_id is not None]



def term_stats(index: Bm25Index | None, tokenized: Sequence[Iterable[str]]) -> TermStats:
    """:class:`~hmem.protocols.TermStats` of texts already tokenized, read from a user's
    ``index`` (``None``: the user has no documents). Shared by the lexical backends.

    >>> index = Bm25Index()
    >>> index.add("a", {"pottery": 1, "class": 1}); index.add("b", {"class": 1})
    >>> term_stats(index, [["pottery", "class", "class"], []])
    TermStats(documents=2, terms=({'pottery': 1, 'class': 2}, {}))
    """
    if index is None:
        return TermStats(0, tuple(dict.fromkeys(terms, 0) for terms in tokenized))
    return TermStats(len(index), tuple({t: index.df(t) for t in dict.fromkeys(terms)} for terms in tokenized))
