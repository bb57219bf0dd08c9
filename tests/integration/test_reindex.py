"""Vectors of two embedders never mix (issue #12): stamps checked on first use, a clear
ConfigError naming ``hmem reindex``, and a reindex that is resumable after a real
interruption — all on Chroma embedded + SQLite, each "process" a fresh set of objects
over the same files.

The embedders here are deterministic hash embedders (fast, exact: a text asked as a
question finds its own stored copy at cosine 1); a different salt is a different model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.items import SqliteItemStore
from hmem.backends.sqlite.lexical import SqliteLexicalIndex
from hmem.errors import ConfigError
from hmem.longterm._args import index_metadata
from hmem.longterm.store import LongTermStore
from hmem.protocols import IndexStamp
from hmem.types import MemoryItem

FACTS = [f"fact number {i}: I keep {i} plants on balcony {i % 7}" for i in range(40)]


class HashEmbedder:
    """Unit vectors from sha256(salt, text): same text, same vector; another salt, another model."""

    symmetric = True

    def __init__(self, name: str, dimension: int = 8) -> None:
        self.model_name, self.dimension = name, dimension
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded += list(texts)
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(f"{self.model_name}|{text}".encode()).digest()[:8], "big")
            v = np.random.default_rng(seed).normal(size=self.dimension)
            out.append((v / np.linalg.norm(v)).tolist())
        return out

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


class FailsAfter(HashEmbedder):
    """The collaborator that interrupts a reindex: its ``calls``-th batch raises."""

    def __init__(self, name: str, calls: int) -> None:
        super().__init__(name)
        self.calls_left = calls

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.calls_left == 0:
            raise RuntimeError("power cut")
        self.calls_left -= 1
        return super().embed(texts)


def open_store(root: Path, embedder: HashEmbedder) -> LongTermStore:
    """A "process": its own SQLite connection, Chroma client and caches over ``root``."""
    db = SqliteDatabase(root / "hmem.db")
    return LongTermStore(SqliteItemStore(db), ChromaVectorIndex(chroma_persistent_client(root / "chroma")),
                         SqliteLexicalIndex(db), embedder)


def state(store: LongTermStore, user: str) -> tuple[object, ...]:
    return (store.items.count(user), store.vectors.count(user), store.lexical.count(user),
            store.vectors.stamp(user))


def test_a_store_with_another_embedder_refuses_with_a_clear_error(tmp_path: Path) -> None:
    old = open_store(tmp_path, HashEmbedder("fake:old"))
    old.remember_many("u1", FACTS[:3])
    assert old.vectors.stamp("u1") == IndexStamp("fake:old", 8)
    before = state(old, "u1")
    for new in (HashEmbedder("fake:new"), HashEmbedder("fake:wide", dimension=16)):
        store = open_store(tmp_path, new)
        # Tried: recall, remember, archive_turns, single-retriever dense search.
        for call in (lambda s=store: s.recall("u1", FACTS[0]), lambda s=store: s.remember("u1", "I moved to Oslo"),
                     lambda s=store: s.archive_turns("u1", "s1", [{"role": "user", "content": "hello"}]),
                     lambda s=store: s.dense_search("u1", FACTS[0], 3)):
            with pytest.raises(ConfigError) as info:
                call()
            message = str(info.value)
            assert "fake:old (dim 8)" in message and f"{new.model_name} (dim {new.dimension})" in message
            assert "hmem reindex" in message
        assert state(store, "u1") == before and new.embedded == []  # nothing written, nothing embedded
    assert old.recall("u1", FACTS[1], k=1)[0].item.text == FACTS[1]


def test_a_new_user_is_stamped_on_first_write_not_on_a_read(tmp_path: Path) -> None:
    store = open_store(tmp_path, HashEmbedder("fake:a"))
    assert store.recall("nobody", "anything") == [] and store.vectors.stamp("nobody") is None
    store.remember("u1", "I like tea")
    assert store.vectors.stamp("u1") == IndexStamp("fake:a", 8)
    store.forget("u1", all=True)  # forgetting everything drops the stamp: any embedder may start over
    assert store.vectors.stamp("u1") is None
    other = open_store(tmp_path, HashEmbedder("fake:b"))
    other.remember("u1", "I like coffee")
    assert other.vectors.stamp("u1") == IndexStamp("fake:b", 8)


def _legacy(root: Path, user: str, embedder: HashEmbedder) -> None:
    """Items and unstamped vectors as hmem wrote them before stamps existed."""
    db = SqliteDatabase(root / "hmem.db")
    items = [MemoryItem(id=f"{user}-{i}", user_id=user, text=t) for i, t in enumerate(FACTS[:5])]
    SqliteItemStore(db).put(items)
    index = ChromaVectorIndex(chroma_persistent_client(root / "chroma"))
    index.upsert(user, [it.id for it in items], embedder.embed([it.text for it in items]),
                 [index_metadata(it) for it in items])
    assert index.stamp(user) == IndexStamp(None, 8)


def test_unstamped_vectors_are_stamped_only_when_they_are_this_embedders(tmp_path: Path) -> None:
    _legacy(tmp_path, "mine", HashEmbedder("fake:a"))
    _legacy(tmp_path, "theirs", HashEmbedder("fake:b"))  # same dimension, another model
    store = open_store(tmp_path, HashEmbedder("fake:a"))
    assert store.recall("mine", FACTS[2], k=1)[0].item.text == FACTS[2]
    assert store.vectors.stamp("mine") == IndexStamp("fake:a", 8)
    with pytest.raises(ConfigError, match=r"an unrecorded embedder \(dim 8\).*hmem reindex"):
        store.recall("theirs", FACTS[2])
    assert store.vectors.stamp("theirs") == IndexStamp(None, 8)  # left as it was
    wide = open_store(tmp_path, HashEmbedder("fake:wide", dimension=16))
    _legacy(tmp_path, "other", HashEmbedder("fake:a"))
    with pytest.raises(ConfigError, match="dim 16"):
        wide.remember("other", "new fact")


def test_reindex_interrupted_then_resumed_never_mixes(tmp_path: Path) -> None:
    old = open_store(tmp_path, HashEmbedder("fake:old"))
    old.remember_many("u1", FACTS)
    old.remember_many("u2", FACTS[:4])
    hits_before = [h.item.id for h in old.recall("u1", FACTS[5], k=5)]

    # Process 1: the new embedder's reindex dies after two batches of 10.
    crashing = open_store(tmp_path, FailsAfter("fake:new", calls=2))
    with pytest.raises(RuntimeError, match="power cut"):
        crashing.reindex("u1", batch_size=10)
    # The live index is whole and still the old one: old readers see what they saw...
    assert state(old, "u1") == (40, 40, 40, IndexStamp("fake:old", 8))
    assert [h.item.id for h in old.recall("u1", FACTS[5], k=5)] == hits_before
    # ...and new readers are refused, not served a mix.
    with pytest.raises(ConfigError):
        open_store(tmp_path, HashEmbedder("fake:new")).recall("u1", FACTS[5])

    # Between the runs one finished item changes and one disappears.
    done = sorted(crashing.vectors.staged("u1", IndexStamp("fake:new", 8)).fingerprints())
    assert len(done) == 20
    changed, gone = crashing.items.get("u1", done[:2]).values()
    crashing.items.put([replace(changed, text="now I keep cacti")])
    crashing.items.delete("u1", [gone.id])

    # Process 2: the same command again resumes.
    new = HashEmbedder("fake:new")
    resumed = open_store(tmp_path, new)
    seen: list[int] = []
    assert resumed.reindex("u1", batch_size=10, progress=seen.append) == 39
    done_first = 20 - 2  # the first run's 20, less the changed and the deleted one
    assert seen[0] == done_first and sum(seen) == 39
    assert len(new.embedded) == 39 - done_first  # only what the first run had not done (or was changed)
    assert "now I keep cacti" in new.embedded and gone.text not in new.embedded
    assert state(resumed, "u1") == (39, 39, 39, IndexStamp("fake:new", 8))
    top = resumed.recall("u1", "now I keep cacti", k=1)[0]
    assert top.item.text == "now I keep cacti" and top.dense_score == pytest.approx(1.0, abs=1e-5)
    # Item ids are random, so the changed and the deleted item are any two facts: probe one that is neither.
    probe = next(text for text in FACTS if text not in (changed.text, gone.text))
    assert resumed.recall("u1", probe, k=1)[0].dense_score == pytest.approx(1.0, abs=1e-5)
    # The process that still runs the old embedder is refused now, never mixed.
    with pytest.raises(ConfigError):
        old.recall("u1", FACTS[5])
    # Other users are untouched until their turn.
    assert state(resumed, "u2") == (4, 4, 4, IndexStamp("fake:old", 8))


def test_a_commit_cut_between_its_renames_is_finished_on_next_use(tmp_path: Path) -> None:
    old = open_store(tmp_path, HashEmbedder("fake:old"))
    old.remember_many("u1", FACTS[:6])
    index = ChromaVectorIndex(chroma_persistent_client(tmp_path / "chroma"))
    stage = index.staged("u1", IndexStamp("fake:new", 8))
    items = old.items.find("u1")
    stage.upsert([it.id for it in items], HashEmbedder("fake:new").embed([it.text for it in items]),
                 [index_metadata(it) for it in items], ["fp"] * len(items))
    # Steps 1-2 of the commit by hand, then "the power goes": live renamed away, staging not yet in.
    client = chroma_persistent_client(tmp_path / "chroma")
    from hmem.backends.chroma import collection_name

    live = collection_name("hmem", "u1")
    staging = client.get_collection(stage.name)
    staging.modify(metadata={**{k: v for k, v in staging.metadata.items() if not k.startswith("hnsw:")},
                             "hmem_commit": 1})
    client.get_collection(live).modify(name=f"{live}-old")
    fresh = open_store(tmp_path, HashEmbedder("fake:new"))
    assert fresh.vectors.stamp("u1") == IndexStamp("fake:new", 8)  # the next look finished the commit
    assert fresh.recall("u1", FACTS[3], k=1)[0].dense_score == pytest.approx(1.0, abs=1e-5)
    assert sorted(c.name for c in client.list_collections()) == [live]


def test_reindex_of_a_user_with_nothing_creates_nothing(tmp_path: Path) -> None:
    store = open_store(tmp_path, HashEmbedder("fake:a"))
    assert store.reindex("ghost") == 0
    assert store.vectors.stamp("ghost") is None and store.vectors.users() == []


def test_a_shared_collection_is_repaired_in_place_but_not_moved_to_another_model(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "hmem.db")

    def shared(embedder: HashEmbedder) -> LongTermStore:
        index = ChromaVectorIndex(chroma_persistent_client(tmp_path / "chroma"), scoping="where")
        return LongTermStore(SqliteItemStore(db), index, SqliteLexicalIndex(db), embedder)

    store = shared(HashEmbedder("fake:a"))
    store.remember_many("u1", FACTS[:5])
    lost = store.items.find("u1")[:2]
    store.vectors.delete("u1", [it.id for it in lost])  # a crash lost two vectors
    assert store.reindex("u1") == 5
    assert state(store, "u1") == (5, 5, 5, IndexStamp("fake:a", 8))
    assert store.recall("u1", lost[0].text, k=1)[0].dense_score == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ConfigError, match="scoping='collection'"):
        shared(HashEmbedder("fake:b")).reindex("u1")
    assert state(store, "u1") == (5, 5, 5, IndexStamp("fake:a", 8))


def test_a_collection_deleted_under_a_writer_comes_back_stamped_or_refuses(tmp_path: Path) -> None:
    a = open_store(tmp_path, HashEmbedder("fake:a"))
    a.remember("u1", "I like tea")
    open_store(tmp_path, HashEmbedder("fake:a")).forget("u1", all=True)  # another process erases the user
    a.remember("u1", "I like coffee")  # a's handle went stale: the collection comes back stamped
    assert a.vectors.stamp("u1") == IndexStamp("fake:a", 8) and a.vectors.count("u1") == 1
    b = open_store(tmp_path, HashEmbedder("fake:b"))
    b.forget("u1", all=True)
    b.remember("u1", "I like cocoa")  # a new model takes the user over
    with pytest.raises(ConfigError, match="restart it"):
        a.remember("u1", "I like mate")  # a, still caching fake:a, is refused instead of mixing
    assert b.vectors.stamp("u1") == IndexStamp("fake:b", 8) and b.vectors.count("u1") == 1


def test_memory_add_with_another_embedder_stores_nothing(tmp_path: Path) -> None:
    """Tried: ``Memory.add`` on a store whose vectors come from another embedder. The
    ConfigError comes before the append, so the session is unchanged (no turn stored
    that the archive would then miss)."""
    from hmem import Memory

    turn = [{"role": "user", "content": "I keep three plants on the balcony"}]
    with Memory.open(tmp_path, embedder=HashEmbedder("fake:old"), compaction="off") as first:
        first.add("u1", "s1", turn)
    with Memory.open(tmp_path, embedder=HashEmbedder("fake:new"), compaction="off") as second:
        before = second.history("u1", "s1")
        with pytest.raises(ConfigError, match="hmem reindex"):
            second.add("u1", "s1", [{"role": "user", "content": "and a lemon tree"}])
        assert second.history("u1", "s1") == before
        assert [m.content for m in before] == [turn[0]["content"]]
