"""The :class:`~hmem.protocols.Embedder` contract suite.

Subclass :class:`EmbedderContract` and override the ``embedder`` fixture (any scope: a
class-scoped fixture, which pytest wants as a classmethod, loads a model once for the
whole suite). Set ``symmetric = False`` for a model that embeds questions differently
from stored texts (e5's ``query: ``/``passage: ``).

Example::

    import pytest
    from hmem.testing.contracts import EmbedderContract

    class TestMyEmbedder(EmbedderContract):
        @pytest.fixture(scope="class")
        @classmethod
        def embedder(cls):
            return MyEmbedder()
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import pytest

from hmem.errors import InvalidInput
from hmem.protocols import Embedder

__all__ = ["TEXTS", "EmbedderContract"]

#: Texts of different languages, scripts and lengths; all distinct.
TEXTS = [
    "I live in Berlin and work at a bank.",
    "My cat Mochi sleeps all day.",
    "我每天早上喝一杯美式咖啡",
    "👩‍👩‍👧 family trip to Lisbon 🏖️ in May",
    "Ich wohne seit 2019 in München.",
    "def add(a, b):\n    return a + b",
    "x",
    "The meeting moved to 3:30 pm on 2024-05-06. " * 40,
]

BAD_INPUTS: dict[str, Any] = {
    "one string, not a list": "I live in Berlin",
    "None": None,
    "an int": 5,
    "None in the list": ["ok", None],
    "int in the list": ["ok", 5],
    "bytes in the list": ["ok", b"bytes"],
    "lone surrogate": ["ok", "bad \udcff"],
    "oversized text": ["ok", "x" * 1_000_001],
}


def _array(vectors: list[list[float]]) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.asarray(vectors, dtype=np.float64)


class EmbedderContract:
    """Behaviour every :class:`~hmem.protocols.Embedder` must show: a stable model name
    and dimension, unit-length finite vectors, ``[]`` for ``[]``, a batch equal to one
    call per text in order, deterministic vectors, distinct texts apart, and bad input
    rejected with :class:`~hmem.errors.InvalidInput` — for ``embed`` and ``embed_query``
    alike; query vectors equal passage vectors exactly when the model is symmetric."""

    #: Does the model embed a question like a stored text? (MiniLM, OpenAI: yes; e5: no.)
    symmetric: ClassVar[bool] = True

    @pytest.fixture
    def embedder(self) -> Embedder:
        raise NotImplementedError("override the `embedder` fixture to return an Embedder")

    def test_satisfies_the_protocol(self, embedder: Embedder) -> None:
        assert isinstance(embedder, Embedder)

    def test_model_name_is_a_stable_non_empty_string(self, embedder: Embedder) -> None:
        name = embedder.model_name
        assert isinstance(name, str) and name.strip()
        embedder.embed(TEXTS[:2])
        assert embedder.model_name == name  # caches key vectors by it

    def test_dimension_is_stable_and_matches_every_vector(self, embedder: Embedder) -> None:
        dimension = embedder.dimension
        assert isinstance(dimension, int) and not isinstance(dimension, bool) and dimension > 0
        vectors = embedder.embed(TEXTS)
        assert [len(v) for v in vectors] == [dimension] * len(TEXTS)
        assert embedder.dimension == dimension

    def test_vectors_are_unit_length_finite_floats(self, embedder: Embedder) -> None:
        vectors = embedder.embed(TEXTS)
        assert isinstance(vectors, list) and all(isinstance(v, list) for v in vectors)
        assert all(type(x) is float and math.isfinite(x) for v in vectors for x in v)
        assert np.allclose(np.linalg.norm(_array(vectors), axis=1), 1.0, atol=1e-3)

    def test_empty_list_gives_empty_list(self, embedder: Embedder) -> None:
        assert embedder.embed([]) == []
        assert embedder.embed(()) == []

    def test_a_batch_equals_one_call_per_text(self, embedder: Embedder) -> None:
        batch = embedder.embed(TEXTS)
        singles = [embedder.embed([text])[0] for text in TEXTS]
        assert np.allclose(_array(batch), _array(singles), atol=1e-4)

    def test_same_text_same_vector_and_order_is_kept(self, embedder: Embedder) -> None:
        a, b, again = embedder.embed([TEXTS[0], TEXTS[1], TEXTS[0]])
        assert np.allclose(a, again, atol=1e-6)
        b2, a2 = embedder.embed([TEXTS[1], TEXTS[0]])
        assert np.allclose(a, a2, atol=1e-4) and np.allclose(b, b2, atol=1e-4)
        assert np.allclose(embedder.embed(TEXTS[:1])[0], a, atol=1e-4)  # and across calls

    def test_different_texts_get_different_vectors(self, embedder: Embedder) -> None:
        vectors = _array(embedder.embed(TEXTS))
        cosines = vectors @ vectors.T
        off_diagonal = cosines[~np.eye(len(TEXTS), dtype=bool)]
        assert float(off_diagonal.max()) < 0.999

    @pytest.mark.parametrize("bad", BAD_INPUTS.values(), ids=list(BAD_INPUTS))
    def test_bad_input_raises_invalid_input(self, embedder: Embedder, bad: Any) -> None:
        before = embedder.embed(TEXTS[:2])
        for method in (embedder.embed, embedder.embed_query):
            with pytest.raises(InvalidInput) as info:
                method(bad)
            assert info.value.field, "the error must name the field"
        assert np.allclose(_array(embedder.embed(TEXTS[:2])), _array(before), atol=1e-6)

    # -- questions: embed_query --------------------------------------------------------

    def test_query_vectors_have_the_dimension_and_unit_length(self, embedder: Embedder) -> None:
        queries = embedder.embed_query(TEXTS)
        assert [len(v) for v in queries] == [embedder.dimension] * len(TEXTS)
        assert all(type(x) is float and math.isfinite(x) for v in queries for x in v)
        assert np.allclose(np.linalg.norm(_array(queries), axis=1), 1.0, atol=1e-3)
        assert embedder.embed_query([]) == []

    def test_query_batch_equals_one_call_per_text(self, embedder: Embedder) -> None:
        batch = embedder.embed_query(TEXTS)
        singles = [embedder.embed_query([text])[0] for text in TEXTS]
        assert np.allclose(_array(batch), _array(singles), atol=1e-4)

    def test_query_and_passage_vectors_equal_only_for_a_symmetric_model(self, embedder: Embedder) -> None:
        declared = getattr(embedder, "symmetric", None)
        assert declared in (None, self.symmetric), "the embedder's `symmetric` contradicts the suite's"
        queries, passages = _array(embedder.embed_query(TEXTS)), _array(embedder.embed(TEXTS))
        if self.symmetric:
            assert np.allclose(queries, passages, atol=1e-4)
            return
        same_text = np.sum(queries * passages, axis=1)
        assert float(same_text.max()) < 0.9999, "an asymmetric model must embed a question differently"
        # ... but a text asked as a question still finds itself among the stored texts.
        assert list(np.argmax(queries @ passages.T, axis=1)) == list(range(len(TEXTS)))
