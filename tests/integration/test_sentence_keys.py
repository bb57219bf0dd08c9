"""Sentence keys (:mod:`hmem.longterm.keys`, :mod:`hmem.backends.sentence_keys`) beyond the
contract. The keys are ``sentence_keys`` jobs of the background engine (:mod:`hmem.jobs`)
on the SQLite file's queue: a crash keeps every waiting key; an index outage is retried
until it answers (nothing lost, never quarantined) and says so; a turn whose keys are
refused is quarantined after the retry policy's attempts while the other turns' keys are
built; the waiting keys of the old ``key_jobs`` table are moved into the queue; a forget
racing a build leaves no key behind; the store folds keys into recall (a turn found by
one buried sentence), and the embedded default uses them end to end.

Real backends (embedded Chroma, SQLite) and the packaged ONNX MiniLM throughout; the
doubles are an index that refuses and an embedder that blocks, on purpose.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from index_doubles import DownIndex

from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client
from hmem.backends.memory.items import MemoryItemStore
from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.backends.sentence_keys import KIND, SentenceKeysBehind
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.jobs import SqliteJobQueue
from hmem.build import KEYS_PREFIX
from hmem.config import Settings
from hmem.errors import BackendUnavailable, ConfigError, InvalidInput
from hmem.jobs import JobEngine, RetryPolicy
from hmem.longterm.keys import InlineSentenceKeys, key_jobs, key_parent
from hmem.longterm.store import LongTermStore
from hmem.memory import Memory
from hmem.providers.onnx import OnnxMiniLMEmbedder
from hmem.types import MemoryItem, Message

EMBEDDER = OnnxMiniLMEmbedder()
#: Retries in milliseconds, and a refused turn quarantined after its second refusal.
FAST = RetryPolicy(attempts=2, first_s=0.01, max_s=0.05)
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


class CountingDownIndex(MemoryVectorIndex):
    """Refuses every upsert as a Chroma that is down does (BackendUnavailable: an outage)
    while ``down`` is set, counting the tries."""

    def __init__(self) -> None:
        super().__init__()
        self.down, self.tries = True, 0

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[Mapping[str, Any]] | None = None) -> None:
        self.tries += 1
        if self.down:
            raise BackendUnavailable("Chroma call failed: ConnectionError: refused")
        super().upsert(user_id, ids, vectors, metadatas)


class RefusingIndex(MemoryVectorIndex):
    """Refuses (ValueError: the data, not an outage) every upsert with a key of ``refused``."""

    def __init__(self, refused: str) -> None:
        super().__init__()
        self.refused: str | None = refused

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[Mapping[str, Any]] | None = None) -> None:
        if any(key_parent(i) == self.refused for i in ids):
            raise ValueError(f"metadata of {self.refused} refused")
        super().upsert(user_id, ids, vectors, metadatas)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SqliteDatabase]:
    handle = SqliteDatabase(tmp_path / "hmem.sqlite3")
    yield handle
    handle.close()


@pytest.fixture
def engine(db: SqliteDatabase) -> Iterator[JobEngine]:
    """The engine on the SQLite file's queue, retrying fast (closed after the test)."""
    handle = JobEngine(SqliteJobQueue(db), policy=FAST, exclusive=True)
    yield handle
    handle.close(timeout=1.0)


def _parents(index: MemoryVectorIndex, user_id: str) -> set[str]:
    """The turns with keys in ``index``."""
    return {key_parent(h.id) for h in index.query(user_id, EMBEDDER.embed_query(["a turn"])[0], 1000)}


def _job_rows(db: SqliteDatabase) -> int:
    with db.read() as conn:
        return int(conn.execute("SELECT COUNT(*) FROM jobs WHERE kind = ?", (KIND,)).fetchone()[0])


def test_a_crash_keeps_every_waiting_key(tmp_path: Path) -> None:
    """A process submits 20 turns and dies at once (``os._exit``: no close, nothing built,
    the pause it waits for never comes). The next process on the same files builds them
    all without being asked, and they are found."""
    script = textwrap.dedent(f"""
        import os
        from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client
        from hmem.backends.sentence_keys import SentenceKeysBehind
        from hmem.backends.sqlite.db import SqliteDatabase
        from hmem.backends.sqlite.jobs import SqliteJobQueue
        from hmem.jobs import JobEngine
        from hmem.providers.onnx import OnnxMiniLMEmbedder
        from hmem.types import MemoryItem
        db = SqliteDatabase({str(tmp_path / "hmem.sqlite3")!r})
        keys = SentenceKeysBehind(ChromaVectorIndex(chroma_persistent_client({str(tmp_path / "chroma")!r}),
                                                    collection_prefix="hmemkeys"),
                                  OnnxMiniLMEmbedder(), JobEngine(SqliteJobQueue(db), exclusive=True), idle_s=3600,
                                  db=db)
        keys.submit("u1", [MemoryItem(id=f"t{{i}}", user_id="u1", kind="turn", speaker="Mel",
                                      text=f"Hello there. Turn {{i}} is about the number {{i}}.") for i in range(20)])
        assert keys.waiting("u1") == 20
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    db = SqliteDatabase(tmp_path / "hmem.sqlite3")
    engine = JobEngine(SqliteJobQueue(db), exclusive=True)
    keys = SentenceKeysBehind(ChromaVectorIndex(chroma_persistent_client(tmp_path / "chroma"),
                                                collection_prefix="hmemkeys"), EMBEDDER, engine, db=db)
    try:
        deadline = time.monotonic() + 60
        while keys.waiting("u1") and time.monotonic() < deadline:  # built without a flush
            time.sleep(0.05)
        assert keys.waiting("u1") == 0 and _job_rows(db) == 0
        hits = keys.search("u1", EMBEDDER.embed_query(["Turn 7 is about the number 7."])[0], 40)
        assert {key_parent(h.id) for h in hits} == {f"t{i}" for i in range(20)}
        assert key_parent(hits[0].id) == "t7"
    finally:
        engine.close()
        db.close()


def test_an_index_outage_is_retried_until_it_answers_and_loses_no_key(
    db: SqliteDatabase, engine: JobEngine, caplog: pytest.LogCaptureFixture
) -> None:
    """BackendUnavailable from the index is an outage: tried again and again, far past the
    policy's attempts, never quarantined; flush says False meanwhile and the log says why."""
    caplog.set_level(logging.WARNING, logger="hmem.jobs")
    index = CountingDownIndex()
    keys = SentenceKeysBehind(index, EMBEDDER, engine, idle_s=0.0)
    keys.submit("u1", [_turn("t1")])
    keys.submit("u2", [_turn("t2"), _turn("t3")])
    deadline = time.monotonic() + 60
    while index.tries < 4 * FAST.attempts and time.monotonic() < deadline:  # the model loads first
        assert keys.flush(0.2) is False
    assert index.tries >= 4 * FAST.attempts
    assert (keys.waiting("u1"), keys.waiting("u2"), keys.waiting("nobody")) == (1, 2, 0)
    report = engine.report()
    assert report["quarantined"] == [] and report["kinds"][KIND]["quarantined"] == 0
    assert "ConnectionError: refused" in (report["kinds"][KIND]["error"] or "")
    assert "still wait after" in caplog.text and "ConnectionError: refused" in caplog.text
    index.down = False
    assert keys.flush(60.0)  # tried again (back-off of at most FAST.max_s here)
    assert (keys.waiting("u1"), keys.waiting("u2")) == (0, 0) and _job_rows(db) == 0
    assert engine.report()["kinds"][KIND]["error"] is None
    assert [key_parent(h.id) for h in keys.search("u1", EMBEDDER.embed_query(["pottery class"])[0], 1)] == ["t1"]


def test_a_refused_turn_is_quarantined_and_the_others_are_built(db: SqliteDatabase, engine: JobEngine) -> None:
    """A turn the index refuses (ValueError: its own data) fails its batch; the batch is
    split, the other turns' keys are built, and the refused turn is quarantined after
    FAST.attempts runs (flush does not wait for it). Requeued once fixed, it is built."""
    index = RefusingIndex("bad")
    keys = SentenceKeysBehind(index, EMBEDDER, engine, idle_s=0.0)
    keys.submit("u1", [_turn("t1"), _turn("bad"), _turn("t3")])
    keys.submit("u2", [_turn("t4")])
    assert keys.flush(60.0)
    assert _parents(index, "u1") == {"t1", "t3"} and index.count("u2") == 4
    assert (keys.waiting("u1"), keys.waiting("u2")) == (0, 0)
    [stuck] = engine.report("u1")["quarantined"]
    assert (stuck["kind"], stuck["key"], stuck["attempts"]) == (KIND, "bad", FAST.attempts)
    assert "ValueError: metadata of bad refused" in stuck["error"]
    assert engine.report("u2")["quarantined"] == [] and _job_rows(db) == 1  # kept, with its error
    index.refused = None
    assert engine.requeue([stuck["id"]]) == 1 and keys.flush(60.0)
    assert _parents(index, "u1") == {"t1", "bad", "t3"} and _job_rows(db) == 0


def test_closing_while_the_index_refuses_keeps_the_keys_for_the_next_process(db: SqliteDatabase) -> None:
    engine = JobEngine(SqliteJobQueue(db), policy=FAST, exclusive=True)
    keys = SentenceKeysBehind(DownIndex(), EMBEDDER, engine, idle_s=0.0)
    keys.submit("u1", [_turn("t1")])
    deadline = time.monotonic() + 60
    while "refused" not in str(engine.report()["kinds"][KIND]["error"]) and time.monotonic() < deadline:
        keys.flush(0.1)
    started = time.monotonic()
    engine.close()  # does not wait for an index that refuses
    assert time.monotonic() - started < 5.0
    assert _job_rows(db) == 1
    index = MemoryVectorIndex()
    again = JobEngine(SqliteJobQueue(db), exclusive=True)
    try:
        assert SentenceKeysBehind(index, EMBEDDER, again).flush(60.0) and index.count("u1") == 4
    finally:
        again.close()


def test_the_old_key_jobs_table_is_moved_into_the_queue(db: SqliteDatabase, engine: JobEngine) -> None:
    """A data folder from before the engine kept waiting keys in a ``key_jobs`` table:
    opening moves them into the queue and drops the table; they are then built."""
    with db.write() as conn:
        conn.execute("CREATE TABLE key_jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, "
                     "item_id TEXT NOT NULL, texts TEXT NOT NULL, metadata TEXT NOT NULL)")
        for user, item in (("u1", _turn("t1")), ("u2", _turn("t2", "We went camping. The kids loved the beach."))):
            [(item_id, texts, meta)] = key_jobs([item])
            conn.execute("INSERT INTO key_jobs (user_id, item_id, texts, metadata) VALUES (?, ?, ?, ?)",
                         (user, item_id, json.dumps(texts), json.dumps(meta)))
    index = MemoryVectorIndex()
    keys = SentenceKeysBehind(index, EMBEDDER, engine, db=db)
    with db.read() as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'key_jobs'").fetchall() == []
    assert keys.flush(60.0)
    assert (index.count("u1"), index.count("u2")) == (4, 2) and _job_rows(db) == 0
    hits = keys.search("u2", EMBEDDER.embed_query(["camping at the beach"])[0], 1)
    assert [key_parent(h.id) for h in hits] == ["t2"]


def test_a_forget_racing_a_build_leaves_no_key(engine: JobEngine) -> None:
    """The build holds the model when forget comes: forget waits for it, then drops the
    keys it wrote."""
    held = HeldEmbedder()
    index = MemoryVectorIndex()
    keys = SentenceKeysBehind(index, held, engine, idle_s=0.0)  # type: ignore[arg-type]
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
        assert index.count("u1") == 0 and keys.waiting("u1") == 0
    finally:
        held.release.set()


def test_bad_construction_is_refused(engine: JobEngine) -> None:
    # Tried: a negative pause, a zero and a non-integer batch size.
    for kwargs in ({"idle_s": -1.0}, {"batch_turns": 0}, {"batch_turns": 2.5}):
        with pytest.raises(ConfigError, match="SentenceKeysBehind needs"):
            SentenceKeysBehind(MemoryVectorIndex(), EMBEDDER, engine, **kwargs)  # type: ignore[arg-type]
    assert engine.report()["kinds"] == {}  # nothing registered


def test_submit_after_close_is_refused_and_writes_nothing(db: SqliteDatabase, engine: JobEngine) -> None:
    keys = SentenceKeysBehind(MemoryVectorIndex(), EMBEDDER, engine)
    engine.close()
    with pytest.raises(InvalidInput, match="closed"):
        keys.submit("u1", [_turn("t1")])
    assert _job_rows(db) == 0


def _store(keys: InlineSentenceKeys | None) -> LongTermStore:
    return LongTermStore(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(), EMBEDDER, keys=keys)


def test_recall_finds_a_turn_by_one_buried_sentence() -> None:
    """The same turns with and without keys: the turn whose one sentence answers, among
    small talk, ranks higher with them, on the dense side and in recall (without keys it
    is last of five in both); its keys go when it is forgotten."""
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
    assert ranks["without"] == (4, 4), ranks
    assert ranks["with"][0] < 2 and ranks["with"][1] < 3, ranks


def test_the_embedded_default_builds_keys_behind_the_add(tmp_path: Path) -> None:
    """Memory.open on the embedded default: adds return before keys exist; flush builds
    them into their own Chroma collections; forget drops them; a reopened folder keeps them."""
    with Memory.open(tmp_path / "data") as mem:
        keys = mem._longterm.keys
        assert isinstance(keys, SentenceKeysBehind)
        mem.add("ann", "s1", [Message("user", POTTERY), Message("assistant", "Pottery is great. Enjoy it!")])
        assert mem.flush(60.0)
        assert keys.waiting("ann") == 0 and keys.index.count("ann") == 6  # 4 sentences of POTTERY, 2 of the reply
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
    # Tried: below 0, above 1, not a number (tuning settings: keywords, named by their key).
    for bad in ("-0.1", "1.5", "half"):
        with pytest.raises(ConfigError, match=r"^question_weight="):
            Settings.from_env({}, question_weight=bad)
    with pytest.raises(ConfigError, match=r"^sentence_keys='sometimes'"):
        Settings.from_env({}, sentence_keys="sometimes")
    assert Settings.from_env({}, question_weight="0").question_weight == 0.0
