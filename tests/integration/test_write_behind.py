"""The write-behind vector front (:mod:`hmem.backends.write_behind`) beyond the contract:
a crash keeps every acknowledged vector, a delete racing a move leaves no orphan, an index
that is down loses nothing and says so, bad input changes nothing, and the embedded
default uses it end to end (an add found by the very next recall, nothing pending after
close).

Real backends throughout (embedded Chroma, SQLite, the packaged MiniLM); the two doubles
are indexes that block or refuse on purpose, to hold a move where the test needs it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from index_doubles import DownIndex
from write_behind_helpers import FAST, Behind, behind_fixture  # noqa: F401  (fixture)

from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.write_behind import WriteBehindVectorIndex
from hmem.config import Settings
from hmem.errors import BackendUnavailable, ConfigError, InvalidInput
from hmem.longterm.options import RecallOptions
from hmem.memory import Memory
from hmem.protocols import IndexStamp
from hmem.providers.embed import SentenceTransformerEmbedder
from hmem.types import Message

MINI = IndexStamp("mini", 3)


def _vec(i: int, dim: int = 3) -> list[float]:
    rng = np.random.default_rng(i)
    return [float(x) for x in rng.normal(size=dim)]


class BlockingIndex(MemoryVectorIndex):
    """Holds every upsert until ``release`` is set (``entered`` tells one has started)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[Mapping[str, Any]] | None = None) -> None:
        self.entered.set()
        assert self.release.wait(10)
        super().upsert(user_id, ids, vectors, metadatas)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SqliteDatabase]:
    handle = SqliteDatabase(tmp_path / "hmem.sqlite3")
    yield handle
    handle.close()


def test_a_crash_keeps_every_acknowledged_vector(tmp_path: Path, behind: Behind) -> None:
    """A process upserts 50 vectors into the front over embedded Chroma and dies at once
    (``os._exit``, no close, nothing moved: the pause it waits for never comes). The next
    front on the same files finds all 50 before moving them, then moves them all."""
    script = textwrap.dedent(f"""
        import os
        from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client
        from hmem.backends.sqlite.db import SqliteDatabase
        from hmem.backends.sqlite.jobs import SqliteJobQueue
        from hmem.backends.write_behind import WriteBehindVectorIndex
        from hmem.jobs import JobEngine, RetryPolicy
        db = SqliteDatabase({str(tmp_path / "hmem.sqlite3")!r})
        engine = JobEngine(SqliteJobQueue(db), exclusive=True, policy=RetryPolicy(first_s={FAST.first_s!r},
                                                                                  max_s={FAST.max_s!r}))
        front = WriteBehindVectorIndex(ChromaVectorIndex(chroma_persistent_client({str(tmp_path / "chroma")!r})),
                                       db, engine, idle_s=3600, max_pending=10_000)
        front.set_stamp("u1", __import__("hmem.protocols").protocols.IndexStamp("mini", 3))
        for i in range(50):
            front.upsert("u1", [f"v{{i}}"], [[1.0, float(i), 0.5]], [{{"n": i}}])
        assert front.pending("u1") == 50
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    chroma = ChromaVectorIndex(chroma_persistent_client(tmp_path / "chroma"))
    assert chroma.count("u1") == 0  # nothing reached Chroma before the crash
    db = SqliteDatabase(tmp_path / "hmem.sqlite3")
    front = behind(chroma, db, idle_s=3600)
    try:
        assert front.pending("u1") == 50
        hits = front.query("u1", [1.0, 7.0, 0.5], k=3, where={"n": {"$gte": 7}})
        assert hits[0].id == "v7"  # found (with its metadata) before the move
        front.flush()
        assert front.pending() == 0 and chroma.count("u1") == 50
        assert front.query("u1", [1.0, 7.0, 0.5], k=1)[0].id == "v7"
    finally:
        behind.close(front)
        db.close()


def test_a_delete_during_a_move_leaves_no_orphan(db: SqliteDatabase, behind: Behind) -> None:
    inner = BlockingIndex()
    front = behind(inner, db, idle_s=0)
    try:
        front.upsert("u1", ["a", "b"], [_vec(1), _vec(2)])
        assert inner.entered.wait(10)  # the move of a and b is in flight, held
        deleted = threading.Event()

        def delete() -> None:
            front.delete("u1", ["a"])
            deleted.set()

        worker = threading.Thread(target=delete)
        worker.start()
        assert not deleted.wait(0.3)  # the delete waits for the move in flight ...
        inner.release.set()
        worker.join(10)
        assert deleted.is_set()  # ... then deletes what it moved
        front.flush()
        assert inner.count("u1") == 1 and [h.id for h in inner.query("u1", _vec(1), 5)] == ["b"]
        assert front.pending() == 0
    finally:
        inner.release.set()
        behind.close(front)


def test_reads_of_the_index_wait_while_a_move_writes_it(db: SqliteDatabase, behind: Behind) -> None:
    """Embedded Chroma once failed a query that ran while the writer thread's upsert was
    creating the collection's files: the index is never read while it is written."""
    inner = BlockingIndex()
    inner.release.set()
    inner.upsert("u2", ["x"], [_vec(9)])  # u2's vector is in the index itself
    inner.release.clear()
    inner.entered.clear()
    front = behind(inner, db, idle_s=0)
    try:
        front.upsert("u1", ["a"], [_vec(1)])
        assert inner.entered.wait(10)  # the move of u1's row is writing the index, held
        answers: list[list[str]] = []
        reader = threading.Thread(target=lambda: answers.append([h.id for h in front.query("u2", _vec(9), 1)]))
        reader.start()
        reader.join(0.3)
        assert reader.is_alive() and not answers  # the read of u2 waits for the write ...
        inner.release.set()
        reader.join(10)
        assert answers == [["x"]]  # ... then runs
    finally:
        inner.release.set()
        behind.close(front)


def test_a_delete_of_a_pending_vector_drops_it_from_the_outbox(db: SqliteDatabase, behind: Behind) -> None:
    inner = MemoryVectorIndex()
    front = behind(inner, db, idle_s=3600)
    front.upsert("u1", ["a", "b"], [_vec(1), _vec(2)])
    front.delete("u1", ["a"])
    assert [h.id for h in front.query("u1", _vec(1), 5)] == ["b"]
    behind.close(front)
    # A later process finds only b in the outbox.
    again = behind(inner, db, idle_s=3600)
    assert again.pending("u1") == 0 and inner.count("u1") == 1  # close moved b
    assert [h.id for h in inner.query("u1", _vec(1), 5)] == ["b"]
    behind.close(again)


def test_an_index_that_is_down_loses_nothing_and_says_so(db: SqliteDatabase, behind: Behind) -> None:
    inner = DownIndex()
    front = behind(inner, db, idle_s=0, flush_timeout_s=0.3)
    front.upsert("u1", ["a"], [_vec(1)], [{"kind": "fact"}])  # acknowledged: it is in the outbox
    assert [h.id for h in front.query("u1", _vec(1), 3, where={"kind": {"$eq": "fact"}})] == ["a"]
    with pytest.raises(BackendUnavailable, match=r"1 vectors of user 'u1' still wait.*refused.*kept in the outbox"):
        front.flush("u1")
    with pytest.raises(BackendUnavailable, match="still wait"):
        front.count("u1")  # count moves the user's rows first
    assert behind.engine(front).report()["quarantined"] == []  # an outage: retried, never set aside
    assert front.quarantined() == [] and front.pending("u1") == 1
    inner.down = False
    front.flush("u1", timeout=10)  # once the index answers, they move (after the back-off)
    assert inner.count("u1") == 1 and front.pending() == 0
    behind.close(front)


def _refused(engine: Any) -> None:
    """Wait until a move of the ``vectors`` jobs has been refused (the engine reports it)."""
    deadline = time.monotonic() + 10
    while not engine.report()["kinds"]["vectors"]["error"]:
        assert time.monotonic() < deadline, "no move was tried"
        time.sleep(0.01)


def test_closing_while_the_index_is_down_keeps_the_rows_for_the_next_process(db: SqliteDatabase,
                                                                             behind: Behind) -> None:
    """Once the index has refused a move, closing the engine and the front returns at once
    (no wait of the flush timeout, no thread left retrying); the rows stay in the outbox and
    the next process moves them."""
    before = set(threading.enumerate())
    inner = DownIndex()
    front = behind(inner, db, idle_s=0, flush_timeout_s=120)
    front.upsert("u1", ["a"], [_vec(1)])
    engine = behind.engine(front)
    _refused(engine)
    movers = [t for t in threading.enumerate() if t not in before and t.name.startswith("hmem-jobs-vectors")]
    assert movers  # the engine's thread moves the rows (and retries them)
    started = time.monotonic()
    behind.close(front, timeout=120)
    assert time.monotonic() - started < 5  # neither waited for the index
    assert not [t for t in movers if t.is_alive()]  # no writer left retrying
    with pytest.raises(BackendUnavailable, match="closed"):
        front.pending("u1")
    inner.down = False
    again = behind(inner, db, idle_s=0)
    assert again.pending("u1") == 1
    again.flush()
    assert inner.count("u1") == 1 and again.pending() == 0
    behind.close(again)


def test_bad_input_changes_nothing(db: SqliteDatabase, behind: Behind) -> None:
    """Tried: a dimension other than the stamp's; another dimension than the pending rows';
    a bad user id; duplicate ids; a NaN; a reserved metadata key; any call after close;
    bad constructor arguments."""
    inner = MemoryVectorIndex()
    front = behind(inner, db, idle_s=3600)
    front.set_stamp("u1", MINI)
    front.upsert("u1", ["a"], [_vec(1)])
    bad: list[tuple[str, Any]] = [
        ("stamp dimension", lambda: front.upsert("u1", ["b"], [[1.0, 0.0]])),
        ("user id", lambda: front.upsert("", ["b"], [_vec(2)])),
        ("duplicate ids", lambda: front.upsert("u1", ["b", "b"], [_vec(2), _vec(3)])),
        ("NaN", lambda: front.upsert("u1", ["b"], [[float("nan"), 1.0, 0.0]])),
        ("reserved key", lambda: front.upsert("u1", ["b"], [_vec(2)], [{"$x": 1}])),
    ]
    for label, call in bad:
        with pytest.raises(InvalidInput):
            call()
        assert front.pending("u1") == 1, label
    front.upsert("u2", ["x"], [[1.0, 0.0]])  # no stamp: the pending rows set the dimension
    with pytest.raises(InvalidInput, match="dimension 3 but this user's vectors have 2"):
        front.upsert("u2", ["y"], [_vec(4, 3)])
    assert front.pending("u2") == 1
    behind.close(front)
    assert inner.count("u1") == 1 and inner.count("u2") == 1
    with pytest.raises(BackendUnavailable, match="closed"):
        front.upsert("u1", ["c"], [_vec(5)])
    for kwargs in ({"idle_s": -1}, {"max_pending": 0}, {"flush_timeout_s": 0}):
        with pytest.raises(ConfigError):
            behind(inner, db, **kwargs)


class RecordingIndex(MemoryVectorIndex):
    """Records how many rows each upsert brings."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[Mapping[str, Any]] | None = None) -> None:
        self.sizes.append(len(ids))
        super().upsert(user_id, ids, vectors, metadatas)


def test_rows_move_in_batches_once_writes_pause(db: SqliteDatabase, behind: Behind) -> None:
    inner = RecordingIndex()
    front = behind(inner, db, idle_s=1.0, max_pending=1000)
    for i in range(20):
        front.upsert("u1", [f"v{i}"], [_vec(i)])
    assert inner.count("u1") == 0  # still writing: nothing moved yet
    deadline = time.monotonic() + 10
    while front.pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert front.pending() == 0 and inner.count("u1") == 20
    assert inner.sizes == [20]  # the 20 jobs taken at once: one upsert into the index
    behind.close(front)


def test_settings_choose_the_front(tmp_path: Path) -> None:
    """auto: write-behind for embedded Chroma only; direct: never; behind: in front of any index."""
    from hmem.build import build_parts

    def index_of(**values: Any) -> Any:
        parts = build_parts(Settings.from_env({}, data_dir=str(tmp_path / "d"), **values),
                            embedder=SentenceTransformerEmbedder())
        try:
            return parts.longterm.vectors
        finally:
            for close in parts.on_close:
                close()

    assert isinstance(index_of(), WriteBehindVectorIndex)
    assert isinstance(index_of().inner, ChromaVectorIndex)
    assert isinstance(index_of(vector_writes="direct"), ChromaVectorIndex)
    assert isinstance(index_of(vectors="memory"), MemoryVectorIndex)
    assert isinstance(index_of(vectors="memory", vector_writes="behind"), WriteBehindVectorIndex)
    with pytest.raises(ConfigError, match=r"^vector_writes='later'"):
        Settings.from_env({}, vector_writes="later")
    # Behind keeps its outbox and its jobs in the data folder's SQLite file: with items
    # elsewhere (their jobs in Redis or in memory) auto writes directly, and behind is refused.
    assert isinstance(index_of(items="memory"), ChromaVectorIndex)
    with pytest.raises(ConfigError, match=r"^vector_writes=behind keeps its outbox"):
        Settings.from_env({}, vector_writes="behind", items="memory")


@pytest.mark.slow
def test_the_embedded_default_finds_an_add_at_once_and_leaves_nothing_pending(
        tmp_path: Path, embedder: SentenceTransformerEmbedder) -> None:
    mem = Memory.open(tmp_path / "data", embedder=embedder)
    turns = ["I adopted a grey cat called Miso last spring.", "We bake sourdough bread every Sunday morning.",
             "My sister lives in Lisbon and teaches maths."]
    for n, text in enumerate(turns):
        mem.add("u1", "s1", [Message(role="user", content=text, id=f"m{n}")])
    # Asked at once, by embedding alone (no shared word), before a pause lets anything move.
    found = mem.recall("u1", "which pet did I get", 1, RecallOptions(fusion="dense"))
    assert found[0].item.text == turns[0]
    assert mem.readiness()["vectors"].backend == "ChromaVectorIndex"
    items = mem.stats("u1")["items"]
    mem.close()
    db = SqliteDatabase(tmp_path / "data" / "hmem.sqlite3")
    with db.read() as conn:
        assert conn.execute("SELECT count(*) FROM vector_outbox").fetchone()[0] == 0
    db.close()
    chroma = ChromaVectorIndex(chroma_persistent_client(tmp_path / "data" / "chroma"))
    assert chroma.count("u1") == items >= 3
