"""The :class:`~hmem.longterm.keys.SentenceKeyIndex` contract: what a long-term store
relies on from the index of its turns' sentence keys.

Override ``keys`` (a fresh, empty index whose keys ``embedder`` embeds) and, if your
index cannot hold another embedder's vectors, set ``has_foreign_stamp = False``. Every
test calls ``flush()`` before it searches: an index may build keys after ``submit``
returns.
"""

from __future__ import annotations

import pytest

from hmem.longterm.index_text import MAX_SENTENCE_KEYS
from hmem.longterm.keys import SentenceKeyIndex, key_ids, key_parent
from hmem.protocols import IndexStamp
from hmem.types import MemoryItem

__all__ = ["SentenceKeyIndexContract"]

_POTTERY = "Hi Caroline! Work was busy this week. I just signed up for a pottery class yesterday. See you soon!"


def _turn(item_id: str, text: str, *, user: str = "u1", session: str = "s1") -> MemoryItem:
    return MemoryItem(id=item_id, user_id=user, text=text, kind="turn", speaker="Melanie", session_id=session)


class SentenceKeyIndexContract:
    """Subclass as ``TestXxx`` and override the ``keys`` and ``embedder`` fixtures."""

    #: The index keeps the stamp of whatever embedder wrote it (a foreign one can be set).
    has_foreign_stamp = True

    @pytest.fixture
    def keys(self) -> SentenceKeyIndex:
        raise NotImplementedError("override the `keys` fixture")

    @pytest.fixture
    def embedder(self) -> object:
        raise NotImplementedError("override the `embedder` fixture (the one the keys index embeds with)")

    def _query(self, embedder: object, text: str) -> list[float]:
        return embedder.embed_query([text])[0]  # type: ignore[attr-defined, no-any-return]

    def test_a_turn_is_found_by_each_of_its_sentences(self, keys: SentenceKeyIndex, embedder: object) -> None:
        keys.submit("u1", [_turn("t1", _POTTERY), _turn("t2", "We went camping at the beach. The kids loved it.")])
        assert keys.flush(30.0)
        hits = keys.search("u1", self._query(embedder, "I signed up for a pottery class"), 3)
        assert hits and key_parent(hits[0].id) == "t1" and hits[0].id in key_ids("t1")
        assert hits[0].score > 0.6  # the sentence itself, not the turn's average
        camping = keys.search("u1", self._query(embedder, "camping at the beach"), 1)
        assert key_parent(camping[0].id) == "t2"
        assert (keys.waiting("u1"), keys.waiting("u2")) == (0, 0)  # flushed: nothing waits

    def test_one_sentence_turns_and_facts_have_no_keys(self, keys: SentenceKeyIndex, embedder: object) -> None:
        fact = MemoryItem(id="f1", user_id="u1", text="Melanie likes pottery. She paints too.", kind="fact")
        keys.submit("u1", [_turn("t1", "I signed up for a pottery class."), fact])
        assert keys.flush(30.0)
        assert keys.search("u1", self._query(embedder, "pottery"), 5) == []

    def test_a_turn_has_at_most_the_cap_of_keys(self, keys: SentenceKeyIndex, embedder: object) -> None:
        long_turn = " ".join(f"Sentence number {i} is about topic {i}." for i in range(MAX_SENTENCE_KEYS + 4))
        keys.submit("u1", [_turn("t1", long_turn)])
        assert keys.flush(30.0)
        hits = keys.search("u1", self._query(embedder, "sentence about a topic"), 50)
        assert sorted(h.id for h in hits) == sorted(key_ids("t1"))

    def test_forget_drops_every_key_of_the_items_only(self, keys: SentenceKeyIndex, embedder: object) -> None:
        keys.submit("u1", [_turn("t1", _POTTERY), _turn("t2", "We went camping. The kids loved the beach.")])
        assert keys.flush(30.0)
        keys.forget("u1", ["t1", "never-stored"])
        left = keys.search("u1", self._query(embedder, "pottery class"), 50)
        assert left and {key_parent(h.id) for h in left} == {"t2"}

    def test_forget_drops_keys_still_waiting(self, keys: SentenceKeyIndex, embedder: object) -> None:
        keys.submit("u1", [_turn("t1", _POTTERY)])
        keys.forget("u1", ["t1"])  # possibly before it was built
        assert keys.flush(30.0)
        assert keys.search("u1", self._query(embedder, "pottery class"), 5) == []

    def test_delete_user_drops_the_user_and_no_one_else(self, keys: SentenceKeyIndex, embedder: object) -> None:
        keys.submit("u1", [_turn("t1", _POTTERY)])
        keys.submit("u2", [_turn("t9", _POTTERY, user="u2")])
        assert keys.flush(30.0)
        keys.delete_user("u1")
        assert keys.search("u1", self._query(embedder, "pottery class"), 5) == []
        assert [key_parent(h.id) for h in keys.search("u2", self._query(embedder, "pottery class"), 1)] == ["t9"]

    def test_users_never_see_each_others_keys(self, keys: SentenceKeyIndex, embedder: object) -> None:
        keys.submit("u1", [_turn("t1", _POTTERY)])
        assert keys.flush(30.0)
        assert keys.search("u2", self._query(embedder, "pottery class"), 5) == []

    def test_a_rewritten_turn_keeps_no_spare_keys(self, keys: SentenceKeyIndex, embedder: object) -> None:
        keys.submit("u1", [_turn("t1", _POTTERY)])
        keys.submit("u1", [_turn("t1", "We went camping. The kids loved the beach.")])
        assert keys.flush(30.0)
        hits = keys.search("u1", self._query(embedder, "anything at all"), 50)
        assert sorted(h.id for h in hits) == key_ids("t1", 2)

    def test_keys_carry_their_turns_metadata_for_filters(self, keys: SentenceKeyIndex, embedder: object) -> None:
        keys.submit("u1", [_turn("t1", _POTTERY, session="s1"), _turn("t2", _POTTERY, session="s2")])
        assert keys.flush(30.0)
        hits = keys.search("u1", self._query(embedder, "pottery class"), 50, where={"session_id": "s2"})
        assert hits and {key_parent(h.id) for h in hits} == {"t2"}

    def test_another_embedders_keys_are_never_searched_and_are_replaced(
        self, keys: SentenceKeyIndex, embedder: object,
    ) -> None:
        if not self.has_foreign_stamp:
            pytest.skip("this index cannot hold another embedder's stamp")
        index = keys.index  # type: ignore[attr-defined]
        index.set_stamp("u1", IndexStamp("another-model", 384))
        index.upsert("u1", ["old#k0"], [[1.0] + [0.0] * 383], [{"kind": "turn"}])
        assert keys.search("u1", self._query(embedder, "pottery class"), 5) == []
        keys.submit("u1", [_turn("t1", _POTTERY)])
        assert keys.flush(30.0)
        hits = keys.search("u1", self._query(embedder, "pottery class"), 50)
        assert hits and {key_parent(h.id) for h in hits} == {"t1"}
