"""Sentence keys (:mod:`hmem.longterm.keys`, :mod:`hmem.backends.sentence_keys`) beyond the
contract: a crash keeps every waiting key, a refusing index loses none and says so, a
forget racing a build leaves no key behind, the store folds keys into recall (a turn
found by one buried sentence), and the embedded default uses them end to end.

Real backends (embedded Chroma, SQLite) and the packaged ONNX MiniLM throughout; the
doubles are an index that refuses and an embedder that blocks, on purpose.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from index_doubles import DownIndex

from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client
from hmem.backends.memory.items import MemoryItemStore
from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.backends.sentence_keys import SentenceKeysBehind
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.build import KEYS_PREFIX
from hmem.config import Settings
from hmem.errors import BackendUnavailable, ConfigError
from hmem.longterm.keys import InlineSentenceKeys, key_parent
from hmem.longterm.store import LongTermStore
from hmem.memory import Memory
from hmem.providers.onnx import OnnxMiniLMEmbedder
from hmem.types import MemoryItem, Message

EMBEDDER = OnnxMiniLMEmbedder()
POTTERY = "Hi Caroline! Work was busy this week. I just signed up for a pottery class yesterday. See you soon!"


def _turn(item_id: str, text: str = POTTERY) -> MemoryItem:
    return MemoryItem(id=item_id, user_id="u1", text=text, kind="turn", speaker="Melanie", session_id="s1")


class HeldEmbedder:
    """The real model, held inside its call until ``release`` is set."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.model_name, self.dimension = EMBEDDER.model_name, EMBEDDER.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.entered.set()
        assert self.release.wait(10)
        return EMBEDDER.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return EMBEDDER.embed_query(texts)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SqliteDatabase]:
    handle = SqliteDatabase(tmp_path / "hmem.sqlite3")
    yield handle
    handle.close()


def test_a_crash_keeps_every_waiting_key(tmp_path: Path) -> None:
    """A process submits 20 turns and dies at once (``os._exit``: no close, nothing built,
    the pause it waits for never comes). The next process on the same files builds them
    all without being asked, and they are found."""
    script = textwrap.dedent(f"""
        import os
        from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client
        from hmem.backends.sentence_keys import SentenceKeysBehind
        from hmem.backends.sqlite.db import SqliteDatabase
        from hmem.providers.onnx import OnnxMiniLMEmbedder
        from hmem.types import MemoryItem
        keys = SentenceKeysBehind(ChromaVectorIndex(chroma_persistent_client({str(tmp_path / "chroma")!r}),
                                                    collection_prefix="hmemkeys"),
                                  OnnxMiniLMEmbedder(), SqliteDatabase({str(tmp_path / "hmem.sqlite3")!r}),
                                  idle_s=3600)
        keys.submit("u1", [MemoryItem(id=f"t{{i}}", user_id="u1", kind="turn", speaker="Mel",
                                      text=f"Hello there. Turn {{i}} is about the number {{i}}.") for i in range(20)])
        assert keys.pending() == 20
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    db = SqliteDatabase(tmp_path / "hmem.sqlite3")
    keys = SentenceKeysBehind(ChromaVectorIndex(chroma_persistent_client(tmp_path / "chroma"),
                                                collection_prefix="hmemkeys"), EMBEDDER, db)
    try:
        assert keys.flush(60.0)
        assert keys.pending() == 0
        hits = keys.search("u1", EMBEDDER.embed_query(["Turn 7 is about the number 7."])[0], 40)
        assert {key_parent(h.id) for h in hits} == {f"t{i}" for i in range(20)}
        assert key_parent(hits[0].id) == "t7"
    finally:
        keys.close()
        db.close()


def test_a_refusing_index_loses_no_key_and_says_so(db: SqliteDatabase, caplog: pytest.LogCaptureFixture) -> None:
    index = DownIndex()
    keys = SentenceKeysBehind(index, EMBEDDER, db, idle_s=0.0)
    try:
        keys.submit("u1", [_turn("t1")])
        keys.submit("u2", [_turn("t2"), _turn("t3")])
        for _ in range(100):  # until the first try (the model loads first) was refused
            assert keys.flush(0.2) is False
            if "refused" in caplog.text:
                break
        assert keys.pending() == 3
        assert (keys.waiting("u1"), keys.waiting("u2"), keys.waiting("nobody")) == (1, 2, 0)
        assert "still wait for their sentence keys" in caplog.text and "ConnectionError: refused" in caplog.text
        index.down = False
        assert keys.flush(60.0)  # tried again (back-off of at most a few seconds here)
        assert (keys.waiting("u1"), keys.waiting("u2")) == (0, 0)
        assert [key_parent(h.id) for h in keys.search("u1", EMBEDDER.embed_query(["pottery class"])[0], 1)] == ["t1"]
    finally:
        keys.close()


def test_closing_while_the_index_refuses_keeps_the_keys_for_the_next_process(db: SqliteDatabase) -> None:
    down = DownIndex()
    keys = SentenceKeysBehind(down, EMBEDDER, db, idle_s=0.0)
    keys.submit("u1", [_turn("t1")])
    while "refused" not in str(keys._error):
        keys.flush(0.1)
    keys.close()  # does not wait for an index that refuses
    with db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM key_jobs").fetchone()[0] == 1
    index = MemoryVectorIndex()
    again = SentenceKeysBehind(index, EMBEDDER, db)
    try:
        assert again.flush(60.0) and index.count("u1") == 4
    finally:
        again.close()


def test_a_forget_racing_a_build_leaves_no_key(db: SqliteDatabase) -> None:
    """The build holds the model when forget comes: forget waits for it, then drops the
    keys it wrote."""
    held = HeldEmbedder()
    index = MemoryVectorIndex()
    keys = SentenceKeysBehind(index, held, db, idle_s=0.0)  # type: ignore[arg-type]
    try:
        keys.submit("u1", [_turn("t1")])
        assert held.entered.wait(10)
        forgot = threading.Thread(target=keys.forget, args=("u1", ["t1"]))
        forgot.start()
        forgot.join(0.3)
        assert forgot.is_alive()  # waits for the batch in flight
        held.release.set()
        forgot.join(10)
        assert keys.flush(10.0)
        assert index.count("u1") == 0
    finally:
        held.release.set()
        keys.close()


def test_bad_construction_is_refused(db: SqliteDatabase) -> None:
    # Tried: a negative pause, a zero and a non-integer batch size.
    for kwargs in ({"idle_s": -1.0}, {"batch_turns": 0}, {"batch_turns": 2.5}):
        with pytest.raises(ConfigError, match="SentenceKeysBehind needs"):
            SentenceKeysBehind(MemoryVectorIndex(), EMBEDDER, db, **kwargs)  # type: ignore[arg-type]


def test_submit_after_close_is_refused_and_writes_nothing(db: SqliteDatabase) -> None:
    keys = SentenceKeysBehind(MemoryVectorIndex(), EMBEDDER, db)
    keys.close()
    with pytest.raises(BackendUnavailable, match="closed"):
        keys.submit("u1", [_turn("t1")])
    with db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM key_jobs").fetchone()[0] == 0


def _store(keys: InlineSentenceKeys | None) -> LongTermStore:
    return LongTermStore(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(), EMBEDDER, keys=keys)


def test_recall_finds_a_turn_by_one_buried_sentence() -> None:
    """The same turns with and without keys: the turn whose one sentence answers, among
    small talk, is ranked first with them (and not without), on the dense side and in
    recall; its keys go when it is forgotten."""
    chatter = [
        "I went to the art museum on Saturday. The paintings were beautiful. I want to try drawing someday.",
        "My sister knits scarves for everyone. She is so crafty. I could never do that.",
        "We redecorated the living room. New curtains and a rug. It feels cozy now.",
        "Work has been hectic, honestly. Meetings all day. I need a vacation soon.",
    ]
    buried = ("Haha, you always make me laugh! Things are good here, the kids are fine and work is calm. "
              "Oh, I signed up for a pottery class yesterday. Anyway, how was your trip to Boston? Did it rain?")
    question = "What new hobby class did Melanie join?"
    ranks: dict[str, tuple[int, int]] = {}
    for name, keys in (("without", None), ("with", InlineSentenceKeys(MemoryVectorIndex(), EMBEDDER))):
        store = _store(keys)
        store.archive_turns("u1", "s1", [Message("user", text, id=f"m{i}", name="Melanie")
                                         for i, text in enumerate([*chatter, buried])])
        dense = [store.items.get("u1", [h.id])[h.id].text for h in store.dense_search("u1", question, 5)]
        recalled = [h.item.text for h in store.recall("u1", question, 5)]
        ranks[name] = (dense.index(buried), recalled.index(buried))
        if keys is not None:
            assert keys.index.count("u1") == 4 * 3 + 5  # three sentences each, five in the buried turn
            store.forget("u1", all=True)
            assert keys.index.count("u1") == 0
    assert ranks["with"][1] == 0 and ranks["without"][1] > 0, ranks
    assert ranks["with"][0] < ranks["without"][0], ranks


def test_the_embedded_default_builds_keys_behind_the_add(tmp_path: Path) -> None:
    """Memory.open on the embedded default: adds return before keys exist; flush builds
    them into their own Chroma collections; forget drops them; a reopened folder keeps them."""
    with Memory.open(tmp_path / "data") as mem:
        keys = mem._longterm.keys
        assert isinstance(keys, SentenceKeysBehind)
        mem.add("ann", "s1", [Message("user", POTTERY), Message("assistant", "Pottery is great. Enjoy it!")])
        assert mem.flush(60.0)
        assert keys.pending() == 0 and keys.index.count("ann") == 6  # 4 sentences of POTTERY, 2 of the reply
        assert mem.stats("ann")["sentence_keys_waiting"] == 0
        hits = mem.recall("ann", "Did Ann sign up for a class?", 3)
        assert hits and "pottery class" in hits[0].item.text
    with Memory.open(tmp_path / "data") as mem:
        keys = mem._longterm.keys
        assert keys is not None and keys.index.count("ann") == 6
        mem.forget("ann", all=True)
        assert keys.index.count("ann") == 0
    names = [c.name for c in chroma_persistent_client(tmp_path / "data" / "chroma").list_collections()]
    assert any(n.startswith(f"{KEYS_PREFIX}-") for n in names) or names == []


def test_settings_turn_keys_off_and_check_the_question_weight(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "off", sentence_keys=False) as mem:
        assert mem._longterm.keys is None
        mem.add("ann", "s1", [Message("user", POTTERY)])
        assert mem.recall("ann", "pottery class", 1)
        assert mem.stats("ann")["sentence_keys_waiting"] == 0
    # Tried: below 0, above 1, not a number.
    for bad in ("-0.1", "1.5", "half"):
        with pytest.raises(ConfigError, match="HMEM_QUESTION_WEIGHT"):
            Settings.from_env({"HMEM_QUESTION_WEIGHT": bad})
    with pytest.raises(ConfigError, match="HMEM_SENTENCE_KEYS"):
        Settings.from_env({"HMEM_SENTENCE_KEYS": "sometimes"})
    assert Settings.from_env({"HMEM_QUESTION_WEIGHT": "0"}).question_weight == 0.0
