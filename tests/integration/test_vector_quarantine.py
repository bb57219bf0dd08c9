"""One item must not wedge a user's vector index.

Two halves, both with real backends (embedded Chroma, SQLite, the packaged MiniLM, a real
uvicorn):

* metadata is bounded where it enters (``remember``, ``LongTermStore.remember_many``,
  ``POST /items``): key count, key length, total size and scalar values; past a bound is
  ``InvalidInput`` (HTTP 422) and nothing is stored;
* a vector the index refuses (here: what real embedded Chroma refuses, written straight
  into the write-behind path as an older hmem let it in) is set aside with its error: the
  user's other vectors keep moving, recall works, the row shows in ``stats``, ``/readyz``
  and the inspector, deleting the item clears it, and closing does not wait for it.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from index_doubles import DownIndex
from server_fixtures import client, embedder, fast_settings, live_server
from write_behind_helpers import Behind, behind_fixture  # noqa: F401  (fixture)

from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.write_behind import WriteBehindVectorIndex
from hmem.errors import InvalidInput
from hmem.longterm._args import MAX_METADATA_BYTES, MAX_METADATA_KEY_CHARS, MAX_METADATA_KEYS, index_metadata
from hmem.memory import Memory
from hmem.protocols import IndexStamp
from hmem.types import MemoryItem

pytestmark = pytest.mark.integration

#: What the issue sent: embedded Chroma logs such a record, then fails every later
#: compaction of the collection (every read and write of the user).
ISSUE_KEYS = 8000


def _many_keys(n: int) -> dict[str, Any]:
    return {f"k{i}": i for i in range(n)}


def _front(mem: Memory) -> WriteBehindVectorIndex:
    """The write-behind front of the embedded default's vectors."""
    vectors = mem._longterm.vectors
    assert isinstance(vectors, WriteBehindVectorIndex)
    return vectors


def _plant(mem: Memory, item: MemoryItem) -> list[float]:
    """Store ``item`` and its vector as an older hmem did (no bound on its metadata)."""
    mem._longterm.items.put([item])
    [vector] = embedder().embed([item.text])
    _front(mem).upsert(item.user_id, [item.id], [vector], [index_metadata(item)])
    return vector


def _outbox_ids(path: Path) -> list[str]:
    db = SqliteDatabase(path)
    try:
        with db.read() as conn:
            return sorted(r[0] for r in conn.execute("SELECT item_id FROM vector_outbox"))
    finally:
        db.close()


# -- the edge: metadata is bounded ------------------------------------------------------------------


BAD_METADATA: list[tuple[str, Any, str]] = [
    ("the issue's 8,000 keys", _many_keys(ISSUE_KEYS), rf"8,000 keys; the limit is {MAX_METADATA_KEYS}"),
    ("one key too many", _many_keys(MAX_METADATA_KEYS + 1), rf"the limit is {MAX_METADATA_KEYS}"),
    ("a long key", {"k" * (MAX_METADATA_KEY_CHARS + 1): 1}, rf"longer than {MAX_METADATA_KEY_CHARS}"),
    ("too big in all", {"a": "x" * (MAX_METADATA_BYTES // 2), "b": "y" * (MAX_METADATA_BYTES // 2)},
     r"bytes as JSON; the limit is"),
    ("a nested object", {"a": {"b": 1}}, r"nested objects and lists are not stored"),
    ("a list", {"a": [1, 2]}, r"nested objects and lists are not stored"),
    ("a lone surrogate in a key", {"k\ud800": 1}, r"not valid UTF-8"),
]


@pytest.mark.parametrize(("label", "metadata", "says"), BAD_METADATA, ids=[c[0] for c in BAD_METADATA])
def test_metadata_past_a_bound_is_refused_and_nothing_is_stored(mem: Memory, label: str, metadata: Any,
                                                                says: str) -> None:
    with pytest.raises(InvalidInput, match=says) as caught:
        mem.remember("u1", "I like green tea", metadata=metadata)
    assert caught.value.field == "metadata", label
    with pytest.raises(InvalidInput, match=says) as caught:
        mem._longterm.remember_many("u1", ["I like black coffee", {"text": "I like green tea", "metadata": metadata}])
    assert caught.value.field == "entries[1].metadata", label
    assert mem.items("u1") == []


def test_metadata_at_the_bounds_is_stored(mem: Memory) -> None:
    widest = {f"{i:0{MAX_METADATA_KEY_CHARS}d}": True for i in range(MAX_METADATA_KEYS)}
    assert mem.remember("u1", "I like green tea", metadata=widest).item is not None
    assert mem.items("u1")[0].metadata == widest


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Memory]]:
    """The embedded default (Chroma, vectors written behind) behind a real uvicorn."""
    with live_server(fast_settings(tmp_path_factory.mktemp("quarantine"), vectors="chroma")) as pair:
        yield pair


@pytest.mark.parametrize(("label", "metadata", "says"), BAD_METADATA, ids=[c[0] for c in BAD_METADATA])
def test_the_http_api_answers_unbounded_metadata_with_a_422(chroma_server: tuple[str, Memory], label: str,
                                                             metadata: Any, says: str) -> None:
    url, _ = chroma_server
    body = json.dumps({"text": "I like green tea", "metadata": metadata})  # ASCII: a lone surrogate travels escaped
    with client(url) as http:
        r = http.post("/v1/users/carol/items", content=body.encode(), headers={"Content-Type": "application/json"})
        assert r.status_code == 422, r.text
        error = r.json()["error"]
        # A nested value is named down to its key, as pydantic places it.
        assert error["type"] == "invalid_input" and error["field"] in ("metadata", "metadata.a"), label
        assert re.search(says, error["message"]), error["message"]
        assert http.get("/v1/users/carol/items").json()["items"] == []
        assert http.post("/v1/users/carol/items/search", json={"query": "tea"}).status_code == 200


# -- the write-behind path survives a row the index refuses -------------------------------------------


def test_chroma_is_never_handed_a_record_that_would_wedge_the_collection(tmp_path: Path) -> None:
    """Embedded Chroma logs a vector of 8,000 metadata keys, then fails every later read
    and write of the collection; a lone surrogate fails with a bare TypeError. Both are
    ``InvalidInput`` before Chroma sees them, in a live collection and in a rebuild."""
    chroma = ChromaVectorIndex(chroma_persistent_client(tmp_path / "chroma"))
    chroma.upsert("u1", ["a"], [[1.0, 0.0]])
    stage = chroma.staged("u1", IndexStamp("other-model", 2))
    for meta, says in (({f"m:k{i}": i for i in range(ISSUE_KEYS)}, r"8,00\d keys; Chroma takes at most 4,096"),
                       ({"m:k": "a\ud800"}, "not valid UTF-8")):
        with pytest.raises(InvalidInput, match=says):
            chroma.upsert("u1", ["p"], [[0.0, 1.0]], [meta])
        with pytest.raises(InvalidInput, match=says):
            stage.upsert(["p"], [[0.0, 1.0]], [meta], ["fp"])
    chroma.upsert("u1", ["b"], [[1.0, 1.0]])  # the collection still takes writes ...
    assert chroma.count("u1") == 2 and [h.id for h in chroma.query("u1", [1.0, 0.0], k=1)] == ["a"]  # ... and reads


def test_a_row_the_index_refuses_is_set_aside_and_the_rest_move(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                              behind: Behind) -> None:
    """Real embedded Chroma refuses a metadata key starting with ``#`` (its validation);
    the row sits between two good ones in one move."""
    chroma = ChromaVectorIndex(chroma_persistent_client(tmp_path / "chroma"))
    outbox = tmp_path / "hmem.sqlite3"
    db = SqliteDatabase(outbox)
    front = behind(chroma, db, idle_s=3600, flush_timeout_s=1.0)
    front.upsert("u1", ["a"], [[1.0, 0.0, 0.0]], [{"kind": "fact"}])
    front.upsert("u1", ["poison"], [[0.0, 1.0, 0.0]], [{"#refused": 1}])
    front.upsert("u1", ["b"], [[0.0, 0.0, 1.0]], [{"kind": "fact"}])
    front.flush()  # returns: nothing it can move is left
    assert chroma.count("u1") == 2 and front.pending() == 0
    [row] = front.quarantined()
    assert (row.user_id, row.item_id) == ("u1", "poison")
    assert "InvalidInput" in row.error and "Chroma rejected" in row.error
    # Recall in this process still finds it (from the outbox), and the good ones from Chroma.
    assert front.query("u1", [0.0, 1.0, 0.0], k=1)[0].id == "poison"
    assert {h.id for h in front.query("u1", [1.0, 1.0, 1.0], k=3)} == {"a", "b", "poison"}
    front.upsert("u1", ["c"], [[1.0, 1.0, 0.0]])  # later writes of the user keep moving
    front.flush()
    assert chroma.count("u1") == 3
    with caplog.at_level(logging.WARNING, logger="hmem.backends.write_behind"):
        behind.close(front)  # does not wait for the refused row ...
    assert not [r for r in caplog.records if "closing with vectors not yet" in r.getMessage()]
    assert _outbox_ids(outbox) == ["poison"]  # ... which is kept for the next process
    db.close()

    db = SqliteDatabase(outbox)
    again = behind(chroma, db, idle_s=0, flush_timeout_s=1.0)
    again.flush()  # tried once more, set aside again
    assert [r.item_id for r in again.quarantined("u1")] == ["poison"] and again.quarantined("u2") == []
    again.delete("u1", ["poison"])  # deleting the item clears it
    assert again.quarantined() == [] and _outbox_ids(outbox) == []
    assert [h.id for h in again.query("u1", [0.0, 1.0, 0.0], k=5)] != ["poison"]
    assert chroma.count("u1") == 3
    behind.close(again)
    db.close()


def test_an_item_chroma_would_wedge_on_is_set_aside_with_recall_stats_readyz_and_inspector_working(
        chroma_server: tuple[str, Memory]) -> None:
    """The issue's case on the embedded default: an item with 8,000 metadata keys that an
    older hmem stored, its vector the user's first, in the outbox. Chroma itself is never
    handed it (it would log it and fail every later read and write of the collection)."""
    url, mem = chroma_server
    user = "alice"
    poison = MemoryItem(id="poison-1", user_id=user, text="I keep a list of every bird I have seen",
                        metadata=_many_keys(ISSUE_KEYS))
    vector = _plant(mem, poison)
    with client(url) as http:
        for text in ("I adopted a grey cat called Miso", "My sister lives in Lisbon"):
            assert http.post(f"/v1/users/{user}/items", json={"text": text}).status_code == 201
        _front(mem).flush()  # returns: the good vectors moved, the refused one does not hold it up
        hits = http.post(f"/v1/users/{user}/items/search", json={"query": "which pet do I have", "k": 3})
        assert hits.status_code == 200 and hits.json()["hits"][0]["item"]["text"].startswith("I adopted a grey cat")
        listed = http.get(f"/v1/users/{user}/items").json()["items"]
        assert poison.id in {i["id"] for i in listed} and len(listed) == 3

        stats = mem.stats(user)
        [refused] = stats["vectors_quarantined"]
        assert refused["id"] == poison.id and f"{ISSUE_KEYS + 2:,} keys" in refused["error"]
        assert stats["vectors_waiting"] == 0

        ready = http.get("/readyz")
        assert ready.status_code == 200, ready.text  # serving: one refused item is not an outage
        detail = ready.json()["backends"]["vectors"]["detail"]
        assert "1 vector" in detail and "set aside" in detail and user not in detail  # no user data unauthenticated

        page = http.get(f"/ui/users/{user}")
        assert page.status_code == 200
        section = re.search(r'<section id="vectors-quarantined">(.*?)</section>', page.text, re.S)
        assert section, page.text[:2000]
        assert poison.id in section.group(1) and f"{ISSUE_KEYS + 2:,} keys" in section.group(1)
        assert f"/ui/users/{user}/items/{poison.id}/delete" in section.group(1)

        assert http.delete(f"/v1/users/{user}/items/{poison.id}").status_code == 200
        assert mem.stats(user)["vectors_quarantined"] == []
        assert http.get("/readyz").json()["backends"]["vectors"]["detail"] is None
        page = http.get(f"/ui/users/{user}")
        assert 'id="vectors-quarantined"' not in page.text
    chroma = _front(mem).inner
    assert chroma.count(user) == 2  # the collection is healthy
    assert len(chroma.query(user, vector, k=5)) == 2


def test_closing_does_not_wait_for_a_refused_row(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A Memory on the embedded default closes at once with a refused row in its outbox
    (it used to wait the whole flush timeout, each shutdown) and keeps the row."""
    mem = Memory.from_settings(fast_settings(tmp_path, vectors="chroma"), embedder=embedder())
    poison = MemoryItem(id="poison-1", user_id="bob", text="a long list", metadata=_many_keys(ISSUE_KEYS))
    _plant(mem, poison)
    mem.remember("bob", "I play the cello")
    _front(mem).flush()
    with caplog.at_level(logging.WARNING, logger="hmem.backends.write_behind"):
        mem.close()
    assert not [r for r in caplog.records if "closing with vectors not yet" in r.getMessage()]
    assert _outbox_ids(tmp_path / "hmem.sqlite3") == [poison.id]


def test_closing_does_not_wait_for_a_down_index(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                behind: Behind) -> None:
    """Waiting out the flush timeout at close saves nothing when the index refuses: the
    rows are in the outbox either way. Once a move was refused, the engine and the front
    close at once (neither waits its 120 s), and the next process moves the rows."""
    path = tmp_path / "hmem.sqlite3"
    db = SqliteDatabase(path)
    inner = DownIndex()
    front = behind(inner, db, idle_s=0, flush_timeout_s=120)
    front.upsert("u1", ["a"], [[1.0, 0.0]])
    front.upsert("u2", ["b"], [[0.0, 1.0]])
    engine = behind.engine(front)
    deadline = time.monotonic() + 10
    while not engine.report()["kinds"]["vectors"]["error"]:  # a move was tried and refused
        assert time.monotonic() < deadline, "no move was tried"
        time.sleep(0.01)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="hmem.backends.write_behind"):
        behind.close(front, timeout=120)
    assert time.monotonic() - started < 5
    assert not [r for r in caplog.records if "closing with vectors not yet" in r.getMessage()]  # no flush tried
    assert engine.report()["quarantined"] == []  # an outage: never set aside
    assert _outbox_ids(path) == ["a", "b"]
    db.close()

    inner.down = False  # the next process moves them
    db = SqliteDatabase(path)
    again = behind(inner, db, idle_s=0, flush_timeout_s=10)
    assert again.pending() == 2
    again.flush()
    assert inner.count("u1") == 1 and inner.count("u2") == 1 and again.pending() == 0
    behind.close(again)
    assert _outbox_ids(path) == []
    db.close()
