"""The long-term tier: facts and archived turns, recalled by hybrid search.

Owns: item values and recall results (:mod:`~hmem.longterm.types`), the texts each item
is indexed under (:mod:`~hmem.longterm.index_text`, with the dates a turn refers to
resolved by :mod:`~hmem.longterm.dates`), BM25 math and tokenisation
(:mod:`~hmem.longterm.bm25`, :mod:`~hmem.longterm.text`), fusion of the lexical and dense
ranks (:mod:`~hmem.longterm.fusion`), write-time dedup keys (:mod:`~hmem.longterm.dedup`),
fact extraction (:mod:`~hmem.longterm.facts`) and the :class:`~hmem.longterm.store.LongTermStore`
that orchestrates an item store, a vector index, a lexical index and an embedder.
May import: :mod:`hmem.types`, :mod:`hmem.errors`, :mod:`hmem.protocols`, :mod:`hmem.tokens`,
:mod:`hmem.session`, :mod:`hmem.profile`. Never a backend: they come in as ports.
"""
