"""Compaction end to end: real session/summary stores, the real hybrid window policy and
tokenizer; faults injected through collaborators (store wrappers), never by patching.

Background mode is a ``compact`` job of a :class:`~hmem.jobs.JobEngine`, coalesced and keyed by
session (what Memory does with ``compaction="background"``): requests for a session
whose compaction waits coalesce, and appends racing the engine lose nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from hmem.backends.memory.jobs import MemoryJobQueue
from hmem.backends.memory.sessions import MemorySessionStore
from hmem.backends.memory.summaries import MemorySummaryStore
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.sessions import SqliteSessionStore
from hmem.backends.sqlite.summaries import SqliteSummaryStore
from hmem.errors import InvalidInput
from hmem.jobs import JobEngine, JobKind, RetryPolicy
from hmem.protocols import SessionStore, SummaryStore
from hmem.providers.llm import OpenAICompatibleLLM
from hmem.session.compaction import Compactor
from hmem.session.summarizer import Summarizer
from hmem.session.window import WindowResult, hybrid_window
from hmem.testing.llm_server import ScriptedLLMServer, ScriptedReply
from hmem.tokens import get_tokenizer
from hmem.types import Job, JobCounts, JobSpec, Message, SessionState, SessionSummary, ToolCall

TOK = get_tokenizer("gpt-4o-mini")
U, S = "u1", "s1"


def policy(budget: int = 300) -> Callable[[list[Message]], WindowResult]:
    return lambda msgs: hybrid_window(msgs, TOK, budget, threshold=0.7, target=0.5, min_messages=10)


def turns(n: int, prefix: str = "m") -> list[Message]:
    facts = ["I live in Berlin.", "My sister Lena visits on 3 May.", "Budget is 450 euros.", "We chose the 07:40 train."]
    return [
        Message(role="user" if i % 2 == 0 else "assistant", content=f"{facts[i % 4]} (turn {i})", id=f"{prefix}{i}")
        for i in range(n)
    ]


class Archive:
    """An archive hook that records what it receives (idempotent view: ``by_id``)."""

    def __init__(self) -> None:
        self.calls: list[list[Message]] = []
        self.lock = threading.Lock()

    def __call__(self, user_id: str, session_id: str, messages: list[Message]) -> None:
        with self.lock:
            self.calls.append(list(messages))

    @property
    def ids(self) -> list[str]:
        return [m.id for batch in self.calls for m in batch]


@pytest.fixture(params=["memory", "sqlite"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[SessionStore, SummaryStore]]:
    if request.param == "memory":
        yield MemorySessionStore(), MemorySummaryStore()
        return
    db = SqliteDatabase(tmp_path / "hmem.db")
    yield SqliteSessionStore(db), SqliteSummaryStore(db)
    db.close()


def assert_nothing_lost(sessions: SessionStore, summaries: SummaryStore, archive: Archive, appended: Sequence[str]) -> None:
    """Every appended message is either in the buffer or covered by summary + archive, exactly once."""
    buffer = [m.id for m in sessions.load(U, S).messages]
    archived = archive.ids
    assert len(archived) == len(set(archived)), "a message was archived twice"
    assert not set(buffer) & set(archived), "a message is both in the buffer and archived"
    assert sorted(buffer + archived) == sorted(appended), "a message was lost or duplicated"
    summary = summaries.get(U, S)
    if archived:
        assert summary is not None
        assert summary.folded_count == len(archived), "a message was summarized twice (or not at all)"
        assert summary.covers_until == archived[-1]
    else:
        assert summary is None or summary.folded_count == 0


# -- foreground --------------------------------------------------------------------------------


def test_compaction_folds_the_oldest_block_and_archives_it_verbatim(stores: tuple[SessionStore, SummaryStore]) -> None:
    sessions, summaries = stores
    msgs = turns(40)
    sessions.append(U, S, msgs)
    archive = Archive()
    result = Compactor(sessions, summaries, Summarizer(None, TOK), policy(), archive=archive).compact(U, S)
    assert result.changed and result.completed
    buffer = list(sessions.load(U, S).messages)
    assert archive.calls[0] == msgs[: result.evicted]  # verbatim, oldest first
    assert buffer == msgs[result.evicted :]
    assert TOK.count_messages(buffer) <= 0.5 * 300 + 10  # down to about the policy's target
    summary = summaries.get(U, S)
    assert summary is not None and summary.covers_until == msgs[result.evicted - 1].id
    assert summary.method == "extractive" and "Berlin" in summary.text
    assert_nothing_lost(sessions, summaries, archive, [m.id for m in msgs])


def test_nothing_happens_under_the_threshold(stores: tuple[SessionStore, SummaryStore]) -> None:
    sessions, summaries = stores
    sessions.append(U, S, turns(4))
    before = sessions.load(U, S)
    result = Compactor(sessions, summaries, Summarizer(None, TOK), policy()).compact(U, S)
    assert not result.changed
    assert sessions.load(U, S) == before and summaries.get(U, S) is None


def test_repeated_compactions_roll_the_summary_forward(stores: tuple[SessionStore, SummaryStore]) -> None:
    sessions, summaries = stores
    archive = Archive()
    compactor = Compactor(sessions, summaries, Summarizer(None, TOK, cap_tokens=120), policy(), archive=archive)
    appended: list[str] = []
    for batch in range(6):
        msgs = turns(15, prefix=f"b{batch}-")
        sessions.append(U, S, msgs)
        appended += [m.id for m in msgs]
        compactor.compact(U, S)
    assert len(archive.calls) >= 3
    summary = summaries.get(U, S)
    assert summary is not None and summary.tokens <= 120
    assert_nothing_lost(sessions, summaries, archive, appended)


def test_system_messages_stay_and_tool_pairs_move_together(stores: tuple[SessionStore, SummaryStore]) -> None:
    sessions, summaries = stores
    msgs = [Message(role="system", content="You are helpful.", id="sys")]
    for i in range(12):
        msgs += [
            Message(role="user", content=f"Weather in Oslo on day {i}?", id=f"q{i}"),
            Message(role="assistant", content=None, tool_calls=(ToolCall(f"c{i}", "weather", "{}"),), id=f"a{i}"),
            Message(role="tool", content=f"Day {i}: rain, 11°C", tool_call_id=f"c{i}", name="weather", id=f"t{i}"),
        ]
    sessions.append(U, S, msgs)
    archive = Archive()
    compactor = Compactor(sessions, summaries, Summarizer(None, TOK), policy(), archive=archive)
    assert compactor.compact(U, S).changed
    buffer = list(sessions.load(U, S).messages)
    assert buffer[0].id == "sys"
    assert "sys" not in archive.ids
    assert buffer[1].role == "user"  # no half tool pair left at the front
    # A second compaction (after more turns) must not treat the pinned system message as covered.
    sessions.append(U, S, turns(30, prefix="x"))
    compactor.compact(U, S)
    assert sessions.load(U, S).messages[0].id == "sys"
    assert_nothing_lost(sessions, summaries, archive, [m.id for m in msgs] + [f"x{i}" for i in range(30)])


# -- crash points ------------------------------------------------------------------------------


class Crash(RuntimeError):
    pass


class CrashingSummaryStore:
    """Delegates to ``inner`` but dies on every summary write (the crash point between
    eviction planning and the summary write)."""

    def __init__(self, inner: SummaryStore) -> None:
        self.inner = inner

    def get(self, user_id: str, session_id: str) -> SessionSummary | None:
        return self.inner.get(user_id, session_id)

    def put(self, summary: SessionSummary) -> None:
        raise Crash("killed before the summary write")

    def put_if(self, summary: SessionSummary, expected_covers_until: str | None) -> bool:
        raise Crash("killed before the summary write")

    def delete(self, user_id: str, session_id: str) -> bool:
        return self.inner.delete(user_id, session_id)

    def close(self) -> None:
        self.inner.close()


class CrashingSessionStore:
    """Delegates to ``inner``; ``replace`` dies the first ``failures`` times (the crash
    point after the summary write, before the buffer is trimmed). ``before_replace``
    runs just before each replace (to simulate a concurrent append)."""

    def __init__(self, inner: SessionStore, failures: int = 0, before_replace: Callable[[], None] | None = None):
        self.inner, self.failures, self.before_replace = inner, failures, before_replace

    def append(self, user_id: str, session_id: str, messages: Sequence[Message]) -> int:
        return self.inner.append(user_id, session_id, messages)

    def load(self, user_id: str, session_id: str, last_n: int | None = None) -> SessionState:
        return self.inner.load(user_id, session_id, last_n)

    def replace(self, user_id: str, session_id: str, messages: Sequence[Message], expected_version: int) -> int:
        if self.before_replace is not None:
            hook, self.before_replace = self.before_replace, None
            hook()
        if self.failures:
            self.failures -= 1
            raise Crash("killed after the summary write")
        return self.inner.replace(user_id, session_id, messages, expected_version)

    def delete(self, user_id: str, session_id: str) -> bool:
        return self.inner.delete(user_id, session_id)

    def list_sessions(self, user_id: str) -> list[object]:
        return self.inner.list_sessions(user_id)  # type: ignore[return-value]

    def close(self) -> None:
        self.inner.close()


def test_crash_before_the_summary_write_leaves_the_session_exactly_as_it_was(
    stores: tuple[SessionStore, SummaryStore],
) -> None:
    sessions, summaries = stores
    sessions.append(U, S, turns(40))
    old = SessionSummary(U, S, "User: older facts.", "m-old", 3, "llm")
    summaries.put(old)
    before = sessions.load(U, S)
    archive = Archive()
    compactor = Compactor(sessions, CrashingSummaryStore(summaries), Summarizer(None, TOK), policy(), archive=archive)
    with pytest.raises(Crash):
        compactor.compact(U, S)
    assert sessions.load(U, S) == before  # same messages, same version
    assert summaries.get(U, S) == old
    assert archive.calls == []


def test_crash_after_the_summary_write_loses_nothing_and_does_not_summarize_twice(
    stores: tuple[SessionStore, SummaryStore],
) -> None:
    sessions, summaries = stores
    msgs = turns(40)
    sessions.append(U, S, msgs)
    summarizer = Summarizer(None, TOK)
    archive = Archive()
    crashing = CrashingSessionStore(sessions, failures=1)
    with pytest.raises(Crash):
        Compactor(crashing, summaries, summarizer, policy(), archive=archive).compact(U, S)
    stored = summaries.get(U, S)
    assert stored is not None
    assert [m.id for m in sessions.load(U, S).messages] == [m.id for m in msgs]  # nothing left the buffer
    # Restart: a fresh compactor finds the covered prefix and removes it without folding again.
    fresh_archive = Archive()
    result = Compactor(sessions, summaries, summarizer, policy(), archive=fresh_archive).compact(U, S)
    assert result.covered == stored.folded_count
    assert summarizer.counts["extractive"] == 1  # not summarized a second time
    assert summaries.get(U, S) == stored
    assert fresh_archive.ids == archive.ids  # handed over again: the hook must be idempotent by id
    assert_nothing_lost(sessions, summaries, fresh_archive, [m.id for m in msgs])


def test_a_failing_archive_keeps_the_turns_in_the_buffer(stores: tuple[SessionStore, SummaryStore]) -> None:
    sessions, summaries = stores
    msgs = turns(40)
    sessions.append(U, S, msgs)

    def broken_archive(user_id: str, session_id: str, messages: list[Message]) -> None:
        raise Crash("long-term store down")

    with pytest.raises(Crash):
        Compactor(sessions, summaries, Summarizer(None, TOK), policy(), archive=broken_archive).compact(U, S)
    assert [m.id for m in sessions.load(U, S).messages] == [m.id for m in msgs]
    archive = Archive()
    Compactor(sessions, summaries, Summarizer(None, TOK), policy(), archive=archive).compact(U, S)
    assert_nothing_lost(sessions, summaries, archive, [m.id for m in msgs])


def test_an_append_racing_the_replace_is_kept_and_nothing_is_folded_twice(
    stores: tuple[SessionStore, SummaryStore],
) -> None:
    sessions, summaries = stores
    msgs = turns(40)
    sessions.append(U, S, msgs)
    late = Message(role="user", content="Late message during compaction", id="late")
    racing = CrashingSessionStore(sessions, before_replace=lambda: sessions.append(U, S, [late]))
    summarizer = Summarizer(None, TOK)
    archive = Archive()
    result = Compactor(racing, summaries, summarizer, policy(), archive=archive).compact(U, S)
    assert result.completed and result.attempts == 2
    assert summarizer.counts["extractive"] == 1
    assert sessions.load(U, S).messages[-1].id == "late"
    assert_nothing_lost(sessions, summaries, archive, [m.id for m in msgs] + ["late"])


# -- background mode ----------------------------------------------------------------------------


class CompactionJobs:
    """``compact`` jobs on a :class:`JobEngine` over a :class:`MemoryJobQueue`, run as Memory
    runs them (``compaction="background"``): coalesced per session, one user's in order.
    ``errors``: what the runs raised; ``gate``: each run waits for it (set by default)."""

    def __init__(self, compactor: Compactor, *, policy: RetryPolicy | None = None) -> None:
        self.compactor = compactor
        self.errors: list[Exception] = []
        self.runs = 0
        self.gate = threading.Event()
        self.gate.set()
        self.engine = JobEngine(MemoryJobQueue(), policy=policy)
        self.engine.register(JobKind("compact", self._run, coalesce=True))

    def _run(self, jobs: Sequence[Job]) -> None:
        for job in jobs:
            assert self.gate.wait(30)
            self.runs += 1
            try:
                self.compactor.compact(job.user_id, job.payload["session"])
            except Exception as exc:
                self.errors.append(exc)
                raise

    def submit(self, session: str = S) -> bool:
        """Queue a compaction of U/``session`` the way Memory does: one waiting run per session."""
        return self.engine.submit([JobSpec("compact", U, {"session": session}, key=session)]) == 1

    def running(self) -> int:
        return self.engine.queue.counts().get("compact", JobCounts()).running


def wait_running(jobs: CompactionJobs) -> None:
    """Until a compaction runs (held at the gate)."""
    deadline = time.monotonic() + 10
    while not jobs.running() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert jobs.running() == 1


def run_appenders(jobs: CompactionJobs, sessions: SessionStore, threads: int = 2, per_thread: int = 500) -> list[str]:
    ids: list[str] = []
    lock = threading.Lock()

    def appender(t: int) -> None:
        for i in range(per_thread):
            m = Message(role="user" if i % 2 == 0 else "assistant", content=f"Thread {t} says fact {i}: I paid {i} euros.", id=f"t{t}-{i}")
            sessions.append(U, S, [m])
            jobs.submit()
            with lock:
                ids.append(m.id)
            if i % 10 == 9:
                time.sleep(0.001)  # chat pacing: lets the engine interleave even with the in-memory store

    workers = [threading.Thread(target=appender, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert jobs.engine.flush(timeout=120)
    return ids


@pytest.mark.slow
def test_background_1000_appends_lose_and_duplicate_nothing(stores: tuple[SessionStore, SummaryStore]) -> None:
    sessions, summaries = stores
    archive = Archive()
    compactor = Compactor(sessions, summaries, Summarizer(None, TOK), policy(400), archive=archive)
    jobs = CompactionJobs(compactor)
    appended = run_appenders(jobs, sessions)
    assert len(archive.calls) >= 3, "summarization did not actually run during the appends"
    compactor.compact(U, S)  # a last foreground pass must also keep the invariant
    jobs.engine.close()
    assert len(appended) == 1000
    assert not jobs.errors and jobs.engine.report()["quarantined"] == []
    assert_nothing_lost(sessions, summaries, archive, appended)
    # Per-thread order survives: archive + buffer read as one history.
    history = archive.ids + [m.id for m in sessions.load(U, S).messages]
    for t in range(2):
        mine = [i for i in history if i.startswith(f"t{t}-")]
        assert mine == [f"t{t}-{i}" for i in range(500)]


@pytest.mark.slow
def test_background_with_a_slow_llm_loses_nothing() -> None:
    sessions, summaries = MemorySessionStore(), MemorySummaryStore()
    archive = Archive()
    with ScriptedLLMServer() as server:
        server.respond_with(lambda req: ScriptedReply(text="The user paid several amounts in euros.", delay_s=0.05))
        llm = OpenAICompatibleLLM(base_url=server.base_url, api_key="k", model="m", timeout=5, backoff_s=0.01)
        compactor = Compactor(sessions, summaries, Summarizer(llm, TOK), policy(400), archive=archive)
        jobs = CompactionJobs(compactor)
        appended = run_appenders(jobs, sessions, per_thread=200)
        jobs.engine.close()
    assert not jobs.errors and jobs.engine.report()["quarantined"] == []
    assert summaries.get(U, S) is not None and summaries.get(U, S).method == "llm"  # type: ignore[union-attr]
    assert_nothing_lost(sessions, summaries, archive, appended)


def test_two_compactors_racing_on_one_session_lose_nothing(tmp_path: Path) -> None:
    # Two compactors (think: two processes) share one SQLite file; only the stores' compare-and-sets order them.
    db = SqliteDatabase(tmp_path / "race.db")
    sessions, summaries = SqliteSessionStore(db), SqliteSummaryStore(db)
    archive = Archive()
    a = Compactor(sessions, summaries, Summarizer(None, TOK), policy(300), archive=archive)
    b = Compactor(sessions, summaries, Summarizer(None, TOK), policy(300), archive=archive)
    jobs_a, jobs_b = CompactionJobs(a), CompactionJobs(b)  # each process its own engine
    appended: list[str] = []
    for round_ in range(8):
        msgs = turns(12, prefix=f"r{round_}-")
        sessions.append(U, S, msgs)
        appended += [m.id for m in msgs]
        jobs_a.submit()
        jobs_b.submit()
    jobs_a.engine.close()
    jobs_b.engine.close()
    assert not jobs_a.errors and not jobs_b.errors
    # Racing compactors may both archive one block (at-least-once, the hook is idempotent by id).
    seen: set[str] = set()
    deduped = Archive()
    for batch in archive.calls:
        fresh = [m for m in batch if m.id not in seen]
        seen.update(m.id for m in fresh)
        if fresh:
            deduped.calls.append(fresh)
    assert_nothing_lost(sessions, summaries, deduped, appended)
    db.close()


class RunsFirst:
    """A summary store whose ``put_if`` first lets ``hook`` run: a rival compactor
    that finishes in between this one's load and its summary write."""

    def __init__(self, inner: SummaryStore, hook: Callable[[], None]) -> None:
        self.inner, self.hook = inner, hook
        self.fired = False

    def get(self, user_id: str, session_id: str) -> SessionSummary | None:
        return self.inner.get(user_id, session_id)

    def put(self, summary: SessionSummary) -> None:
        self.inner.put(summary)

    def put_if(self, summary: SessionSummary, expected_covers_until: str | None) -> bool:
        if not self.fired:
            self.fired = True
            self.hook()
        return self.inner.put_if(summary, expected_covers_until)

    def delete(self, user_id: str, session_id: str) -> bool:
        return self.inner.delete(user_id, session_id)

    def close(self) -> None:
        self.inner.close()


def test_a_slow_compactor_never_overwrites_a_newer_summary(stores: tuple[SessionStore, SummaryStore]) -> None:
    sessions, summaries = stores
    archive = Archive()
    appended = [m.id for m in turns(40)]
    sessions.append(U, S, turns(40))
    fast = Compactor(sessions, summaries, Summarizer(None, TOK), policy(), archive=archive)

    def rival_compacts_twice() -> None:
        fast.compact(U, S)
        more = turns(40, prefix="n")
        sessions.append(U, S, more)
        appended.extend(m.id for m in more)
        fast.compact(U, S)

    slow_summarizer = Summarizer(None, TOK)
    slow = Compactor(sessions, RunsFirst(summaries, rival_compacts_twice), slow_summarizer, policy(), archive=archive)
    result = slow.compact(U, S)
    assert result.attempts >= 2  # its first write lost the compare-and-set
    newest = summaries.get(U, S)
    assert newest is not None and newest.covers_until.startswith("n")  # type: ignore[union-attr]
    assert_nothing_lost(sessions, summaries, archive, appended)


def test_background_errors_are_kept_not_raised(stores: tuple[SessionStore, SummaryStore]) -> None:
    """A compaction that crashes every time is retried with back-off, then quarantined
    with its error (reported, not raised); the session is untouched. A submit after close
    is refused."""
    sessions, summaries = stores
    sessions.append(U, S, turns(40))
    before = sessions.load(U, S)
    compactor = Compactor(sessions, CrashingSummaryStore(summaries), Summarizer(None, TOK), policy())
    jobs = CompactionJobs(compactor, policy=RetryPolicy(attempts=2, first_s=0.01, max_s=0.05))
    assert jobs.submit()  # returns at once; the crash happens on the engine's thread
    assert jobs.engine.flush(timeout=30)  # a quarantined job does not hold flush up
    [stuck] = jobs.engine.report()["quarantined"]
    assert (stuck["user_id"], stuck["key"], stuck["attempts"]) == (U, S, 2) and "Crash" in stuck["error"]
    jobs.engine.close()
    assert [type(e) for e in jobs.errors] == [Crash, Crash]
    assert sessions.load(U, S) == before
    with pytest.raises(InvalidInput, match="closed"):
        jobs.submit()


def test_requests_for_a_waiting_compaction_coalesce_and_one_that_runs_does_not(
    stores: tuple[SessionStore, SummaryStore],
) -> None:
    sessions, summaries = stores
    archive = Archive()
    compactor = Compactor(sessions, summaries, Summarizer(None, TOK), policy(), archive=archive)
    jobs = CompactionJobs(compactor)
    jobs.gate.clear()
    # Another session of the user holds the kind: the user's next requests wait in the queue.
    assert jobs.submit("s0")
    wait_running(jobs)
    sessions.append(U, S, turns(40))
    assert [jobs.submit() for _ in range(5)] == [True, False, False, False, False]
    jobs.gate.set()
    assert jobs.engine.flush(30) and not jobs.errors
    assert jobs.runs == 2 and len(archive.calls) == 1  # s0's run, then five requests of s1 in one run
    more = turns(40, prefix="n")
    sessions.append(U, S, more)
    jobs.gate.clear()
    assert jobs.submit()
    wait_running(jobs)
    assert jobs.submit()  # the first is running, not waiting: this request is kept
    jobs.gate.set()
    assert jobs.engine.flush(30)
    jobs.engine.close()
    assert jobs.runs == 4 and len(archive.calls) == 2  # the second run found nothing left to fold
    assert_nothing_lost(sessions, summaries, archive, [m.id for m in turns(40) + more])
