"""The Memory facade on Redis, as a user deploys it: ``HMEM_REDIS_URL`` selects the
session, summary and profile stores; several app instances share them.

Shown here, with the real Redis on 127.0.0.1:6379 (each test under its own key
prefix, deleted afterwards) or a ``redis-server`` the test starts itself, and the
real embedding model:

1. the keys land under the prefix with the ``{user}`` hash tag (one Cluster slot),
   and a second app instance with its own data dir sees the same history, system
   prompt, summary and profile;
2. two processes adding to one session through ``Memory.add`` while both compact
   lose and duplicate nothing: every message is in the buffer or archived by
   compaction exactly once, and the summary folded each exactly once;
3. an unreachable Redis (refused, silent, dropping connections) fails the build
   within the configured timeout + 1 s with a masked URL; the explicit fallback
   builds, warns that data will not survive a restart, and works;
4. a Redis killed mid-run makes add/context/history fail fast; after a restart on
   the same port the same Memory object works again and every acknowledged add is
   there, each batch whole.
"""

from __future__ import annotations

import logging
import multiprocessing
import socket
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.crc import key_slot
from redis_helpers import REDIS_URL, delete_prefix, new_prefix
from redis_server import RedisServer, free_port
from settings_helpers import settings_file

from hmem.config import Settings
from hmem.errors import BackendUnavailable
from hmem.memory import SYSTEM_PROMPT_ID, Memory
from hmem.providers.embed import SentenceTransformerEmbedder
from hmem.session.compaction import split_covered
from hmem.types import Message

pytestmark = pytest.mark.integration

USER, SESSION = "ingrid-42", "trip-planning"

TOPICS = [
    "the ferry timetable to the islands", "a bakery near the old harbour", "renting bikes for a day",
    "the museum of azulejo tiles", "a tram ride up the hill", "packing for rainy evenings",
    "a fado concert on Friday", "the cheapest airport transfer", "a day trip to the coast",
    "where to buy a local SIM card",
]


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()  # the packaged MiniLM, loaded once for the module


@pytest.fixture
def prefix() -> Iterator[str]:
    """A fresh key prefix on the shared Redis; every key under it is deleted afterwards."""
    name = new_prefix()
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    delete_prefix(client, name)
    client.close()


def redis_env(url: str, prefix: str, data_dir: Path, env: Mapping[str, str] | None = None,
              **tuning: object) -> dict[str, str]:
    """The environment of one app instance: the HMEM_* variables (``env`` adds more), and
    its tuning settings (small buffer: compaction happens early; ``tuning`` adds more) in
    ``data_dir``/hmem.toml, which HMEM_CONFIG names."""
    tuning = {"buffer_tokens": 300, "summary_min_messages": 4, **tuning}
    return {
        "HMEM_REDIS_URL": url,
        "HMEM_REDIS_PREFIX": prefix,
        "HMEM_DATA_DIR": str(data_dir),
        "HMEM_VECTORS": "memory",
        "HMEM_CONFIG": str(settings_file(data_dir / "hmem.toml", **tuning)),
        **(env or {}),
    }


def turn(tag: str, i: int) -> list[dict[str, str]]:
    topic = TOPICS[i % len(TOPICS)]
    return [
        {"role": "user", "content": f"Note {tag}/{i}: tell me about {topic}.", "id": f"{tag}-{i}-q"},
        {"role": "assistant", "content": f"Here is what I know about {topic} ({tag}/{i}).", "id": f"{tag}-{i}-a"},
    ]


def ledger(mem: Memory, user: str, session: str) -> tuple[list[str], list[str], set[str], int]:
    """``(visible, archived, covered, folded)``: ids still shown as history (not pinned,
    not already covered by the summary), ids the compaction archived, ids in the buffer
    the summary already covers, and how many messages the summary says it folded."""
    buffer = mem.history(user, session)
    summary = mem.summary(user, session)
    covered, rest = split_covered(buffer, summary)
    visible = [m.id for m in rest if m.id != SYSTEM_PROMPT_ID]
    archived = [it.source_message_id or "" for it in mem.items(user) if it.kind == "turn"]
    return visible, archived, {m.id for m in covered}, summary.folded_count if summary else 0


# -- 1. two app instances share every Redis tier ----------------------------------------------


@pytest.mark.slow
def test_second_app_instance_sees_history_summary_and_profile(
    tmp_path: Path, prefix: str, embedder: SentenceTransformerEmbedder
) -> None:
    env = redis_env(REDIS_URL, prefix, tmp_path / "app-a")
    settings = Settings.from_env(env)
    assert (settings.sessions, settings.summaries, settings.profile) == (REDIS_URL,) * 3
    with Memory.from_settings(settings, embedder=embedder) as app_a:
        app_a.set_system_prompt(USER, SESSION, "You are a concise travel assistant.")
        app_a.add(USER, SESSION, [
            {"role": "user", "content": "My name is Ingrid. I live in Lisbon.", "id": "intro-q"},
            {"role": "assistant", "content": "Nice to meet you, Ingrid!", "id": "intro-a"},
        ])
        for i in range(30):
            if app_a.summary(USER, SESSION) is not None:
                break
            app_a.add(USER, SESSION, turn("a", i))
        summary = app_a.summary(USER, SESSION)
        assert summary is not None and summary.folded_count > 0, "compaction never ran"
        app_a.profile.set(USER, "diet", "vegetarian")
        history_a = app_a.history(USER, SESSION)
        assert "intro-q" not in {m.id for m in history_a}, "the first turn should have been compacted away"

        # What is in Redis: every key of the user under <prefix>:{<user>}:, in one Cluster slot;
        # the background jobs' queue (shared by every user: a take reads all of a kind) in one
        # slot of its own.
        raw = redis.Redis.from_url(REDIS_URL, decode_responses=True)
        everything = {str(k) for k in raw.scan_iter(match=f"{prefix}:*", count=1000)}
        queue = {k for k in everything if k.startswith(f"{prefix}:{{:jobs}}:")}
        assert len({key_slot(k.encode()) for k in queue}) <= 1
        keys = everything - queue
        tag = f"{prefix}:{{{USER}}}:"
        assert {f"{tag}s:{SESSION}:msgs", f"{tag}s:{SESSION}:meta", f"{tag}sessions", f"{tag}sum:{SESSION}",
                f"{tag}p:cur"} <= keys
        assert all(k.startswith(tag) for k in keys), sorted(keys)
        assert len({key_slot(k.encode()) for k in keys}) == 1
        assert raw.llen(f"{tag}s:{SESSION}:msgs") == len(history_a)
        assert set(raw.hkeys(f"{tag}p:cur")) == {"name", "location", "diet"}
        assert raw.hget(f"{tag}sum:{SESSION}", "cu") == summary.covers_until
        raw.close()

        # Another app instance: same Redis settings, its own data dir (as on another host).
        env_b = {**env, "HMEM_DATA_DIR": str(tmp_path / "app-b")}
        with Memory.from_settings(Settings.from_env(env_b), embedder=embedder) as app_b:
            assert app_b.history(USER, SESSION) == history_a
            assert app_b.summary(USER, SESSION) == summary
            assert {e.key: e.value for e in app_b.profile.all(USER)} == {
                "name": "Ingrid", "location": "Lisbon", "diet": "vegetarian"}
            assert [i.session_id for i in app_b.session_infos(USER)] == [SESSION]
            ctx = app_b.context(USER, SESSION, query="Where could I eat tonight?")
            assert ctx.messages[0]["role"] == "system"
            assert str(ctx.messages[0]["content"]).startswith("You are a concise travel assistant.")
            prompt = "\n".join(str(m.get("content")) for m in ctx.messages)
            assert summary.text in prompt and "vegetarian" in prompt and "Lisbon" in prompt
            assert ctx.report.tier("summary").kept == 1 and ctx.report.tier("profile").kept == 3

            # ... and writes go both ways.
            app_b.add(USER, SESSION, turn("b", 0))
        assert [m.id for m in app_a.history(USER, SESSION)][-2:] == ["b-0-q", "b-0-a"]


# -- 2. two processes, concurrent adds with compaction on ----------------------------------------


def _app_instance(env: Mapping[str, str], writer: int, adds: int, start: Any, results: Any) -> None:
    """One app instance in its own process: load the model, wait for the other, then add."""
    model = SentenceTransformerEmbedder()
    model.embed(["warm up"])  # load before the start line, so both really add at the same time
    mem = Memory.from_settings(Settings.from_env(dict(env)), embedder=model)
    compactions = races = 0
    try:
        start.wait(timeout=120)
        for i in range(adds):
            result = mem.add(USER, SESSION, turn(f"w{writer}", i))
            if result.compaction is not None and result.compaction.changed:
                compactions += 1
                races += result.compaction.attempts - 1
    finally:
        mem.close()
    results.put((writer, compactions, races))


@dataclass(frozen=True)
class TwoWriterRun:
    sent: frozenset[str]
    visible: list[str]
    archived: list[str]
    covered: set[str]
    folded: int
    stats: list[tuple[int, int, int]]  # (writer, compactions that evicted, lost compare-and-set races)


@pytest.fixture(scope="module")
def two_writer_run(tmp_path_factory: pytest.TempPathFactory, embedder: SentenceTransformerEmbedder) -> Iterator[TwoWriterRun]:
    """Two processes, each an app instance, add 40 turns each to one session at the same time."""
    writers, adds = 2, 40
    prefix = new_prefix()
    # One shared data dir: the compaction archive (SQLite) is the ledger of evicted turns.
    env = redis_env(REDIS_URL, prefix, tmp_path_factory.mktemp("shared"), archive_turns="on_evict",
                    buffer_tokens=250, extract_facts=False, extract_profile=False)
    try:
        Memory.from_settings(Settings.from_env(env), embedder=embedder).close()  # create the SQLite schema once
        ctx = multiprocessing.get_context("spawn")  # no fork of a threaded pytest process
        start, results = ctx.Barrier(writers), ctx.Queue()
        procs = [ctx.Process(target=_app_instance, args=(env, w, adds, start, results)) for w in range(writers)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=300)
        assert [p.exitcode for p in procs] == [0] * writers
        stats = sorted(results.get(timeout=5) for _ in range(writers))
        with Memory.from_settings(Settings.from_env(env), embedder=embedder) as check:
            visible, archived, covered, folded = ledger(check, USER, SESSION)
        sent = frozenset(m["id"] for w in range(writers) for i in range(adds) for m in turn(f"w{w}", i))
        yield TwoWriterRun(sent, visible, archived, covered, folded, stats)
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        delete_prefix(client, prefix)
        client.close()


@pytest.mark.slow
def test_two_processes_adding_and_compacting_lose_and_duplicate_nothing(two_writer_run: TwoWriterRun) -> None:
    run = two_writer_run
    assert all(compactions > 0 for _, compactions, _ in run.stats), f"a process never compacted: {run.stats}"
    visible = Counter(run.visible)
    assert sorted(mid for mid, n in visible.items() if n > 1) == [], "a message twice in the buffer"
    evicted = run.sent - set(visible)
    assert set(visible) <= run.sent, "unknown messages in the buffer"
    # Every message left the buffer only into the summary, and the summary folded each once.
    assert run.folded == len(evicted) > 0
    assert set(run.archived) == evicted | run.covered, "an evicted message is missing from the archive"
    assert not set(run.archived) & set(visible)
    for w in range(2):  # each writer's messages stay in its order in the buffer
        mine = [mid for mid in run.visible if mid.startswith(f"w{w}-")]
        assert mine == sorted(mine, key=lambda mid: (int(mid.split("-")[1]), mid.endswith("-a")))


@pytest.mark.slow
def test_two_processes_compacting_archive_each_evicted_turn_once(two_writer_run: TwoWriterRun) -> None:
    twice = sorted(mid for mid, n in Counter(two_writer_run.archived).items() if n > 1)
    assert twice == [], f"{len(twice)} of {len(set(two_writer_run.archived))} archived turns are stored twice"


# -- 3. Redis unreachable ------------------------------------------------------------------------


def _silent_listener(backlog_full: bool) -> tuple[socket.socket, list[socket.socket]]:
    """A loopback port that accepts TCP but never answers (or, with ``backlog_full``,
    whose accept queue is full so new connections hang in the handshake)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    fillers: list[socket.socket] = []
    if backlog_full:
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(server.getsockname())
            fillers.append(filler)
        time.sleep(0.1)
    return server, fillers


@pytest.mark.parametrize("failure", ["refused", "silent", "backlog_full"])
def test_unreachable_redis_fails_the_build_fast_with_a_masked_url(tmp_path: Path, failure: str) -> None:
    sockets: list[socket.socket] = []
    if failure == "refused":
        port = free_port()
    else:
        server, fillers = _silent_listener(failure == "backlog_full")
        sockets = [server, *fillers]
        port = int(server.getsockname()[1])
    url = f"redis://:s3cret@127.0.0.1:{port}/0"
    timeout = 0.5
    settings = Settings.from_env(redis_env(url, "hmemtest-unreachable", tmp_path, redis_timeout_s=timeout))
    assert settings.redis_timeout_s == timeout
    try:
        started = time.perf_counter()
        with pytest.raises(BackendUnavailable) as info:
            Memory.from_settings(settings, embedder=SentenceTransformerEmbedder())  # never loaded: the build fails first
        elapsed = time.perf_counter() - started
    finally:
        for s in sockets:
            s.close()
    assert elapsed < timeout + 1.0, f"{failure}: took {elapsed:.2f}s with redis_timeout_s={timeout}"
    message = str(info.value)
    assert f"redis://:****@127.0.0.1:{port}/0" in message
    assert "Start it or fix the Redis URL" in message
    everything = "".join(traceback.format_exception(info.value))  # the whole chain, as a log would show it
    assert "s3cret" not in everything


def test_fallback_to_memory_builds_warns_and_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, embedder: SentenceTransformerEmbedder
) -> None:
    url = f"redis://:s3cret@127.0.0.1:{free_port()}/0"
    env = redis_env(url, "hmemtest-fallback", tmp_path / "a", {"HMEM_REDIS_FALLBACK_TO_MEMORY": "true"},
                    redis_timeout_s=1, archive_turns="on_evict", extract_facts=False)
    with caplog.at_level(logging.WARNING):
        started = time.perf_counter()
        mem = Memory.from_settings(Settings.from_env(env), embedder=embedder)
        elapsed = time.perf_counter() - started
    assert elapsed < 2.0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name.startswith("hmem")]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]  # one warning, not one per store
    text = warnings[0].getMessage()
    assert "will NOT survive a restart" in text and "IN-PROCESS" in text
    assert f"127.0.0.1:{url.rsplit(':', 1)[1]}" in text and "s3cret" not in caplog.text
    with mem:
        mem.add(USER, SESSION, [{"role": "user", "content": "I live in Porto.", "id": "m1"}])
        assert [m.id for m in mem.history(USER, SESSION)] == ["m1"]
        assert mem.profile.get(USER, "location") is not None
        assert mem.context(USER, SESSION).messages[-1]["content"] == "I live in Porto."
        # ... and exactly as the warning says, another instance does not share it.
        with Memory.from_settings(Settings.from_env({**env, "HMEM_DATA_DIR": str(tmp_path / "b")}), embedder=embedder) as other:
            assert other.history(USER, SESSION) == []


# -- 4. Redis killed mid-run and restarted ---------------------------------------------------------


def batch(i: int) -> list[Message]:
    topic = TOPICS[i % len(TOPICS)]
    return [
        Message(role="user", content=f"Batch {i}: what about {topic}?", id=f"b{i}-q"),
        Message(role="assistant", content=f"Batch {i}: {topic} is worth a look.", id=f"b{i}-a"),
        Message(role="user", content=f"Batch {i}: thanks, noted.", id=f"b{i}-n"),
    ]


@pytest.mark.slow
def test_redis_killed_mid_run_fails_fast_and_the_same_memory_recovers(
    tmp_path: Path, embedder: SentenceTransformerEmbedder
) -> None:
    srv = RedisServer(tmp_path, aof=True)  # AOF, fsync always: an acknowledged write survives SIGKILL
    srv.start()
    try:
        timeout = 2.0
        env = redis_env(srv.url, "hmem", tmp_path / "data", redis_timeout_s=timeout,
                        archive_turns="on_evict", extract_facts=False)
        mem = Memory.from_settings(Settings.from_env(env), embedder=embedder)
        mem.set_system_prompt(USER, SESSION, "You are a concise travel assistant.")
        acked: list[int] = []
        failures: list[BaseException] = []

        def writer() -> None:
            i = 0
            while True:
                try:
                    mem.add(USER, SESSION, batch(i))
                except BackendUnavailable as exc:
                    failures.append(exc)
                    return
                acked.append(i)
                i += 1

        thread = threading.Thread(target=writer)
        thread.start()
        deadline = time.monotonic() + 60
        while (len(acked) < 15 or mem.summary(USER, SESSION) is None) and time.monotonic() < deadline:
            time.sleep(0.02)
        srv.kill()
        thread.join(timeout=30)
        assert not thread.is_alive() and len(failures) == 1

        calls: list[tuple[str, Callable[[], object]]] = [
            ("add", lambda: mem.add(USER, SESSION, batch(10_000))),
            ("context", lambda: mem.context(USER, SESSION, query="ferry")),
            ("history", lambda: mem.history(USER, SESSION)),
        ]
        for name, call in calls:
            started = time.perf_counter()
            with pytest.raises(BackendUnavailable) as info:
                call()
            elapsed = time.perf_counter() - started
            assert elapsed < timeout / 2, f"{name} took {elapsed:.2f}s with a {timeout}s timeout"
            assert f"127.0.0.1:{srv.port}" in str(info.value)

        srv.start()  # same port; the AOF brings the data back
        visible, archived, covered, folded = ledger(mem, USER, SESSION)
        present = Counter(mid.split("-")[0] for mid in set(visible) | set(archived) | covered)
        assert {tag: n for tag, n in present.items() if n != 3} == {}, "a batch is partly there"
        assert {f"b{i}" for i in acked} <= set(present), "an acknowledged add was lost"
        assert set(present) <= {f"b{i}" for i in range(len(acked) + 1)}, "a batch that was never sent"
        assert len(visible) == len(set(visible))
        assert folded == len(set(archived) | covered) > 0

        # The same object, not rebuilt: writes, compaction and context work again.
        mem.add(USER, SESSION, batch(9_999))
        assert [m.id for m in mem.history(USER, SESSION)][-3:] == ["b9999-q", "b9999-a", "b9999-n"]
        for i in range(len(acked) + 1, len(acked) + 12):
            mem.add(USER, SESSION, batch(i))
        _, _, _, folded_after = ledger(mem, USER, SESSION)
        assert folded_after > folded
        ctx = mem.context(USER, SESSION)
        assert str(ctx.messages[0]["content"]).startswith("You are a concise travel assistant.")
        assert ctx.messages[-1]["content"] == batch(len(acked) + 11)[-1].content
        mem.close()
    finally:
        srv.stop()
