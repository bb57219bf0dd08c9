"""Readiness: does every backend answer a cheap read within a timeout?

Each probe reads for a user id no client can own in practice: it touches the backend
(a Redis round trip, a SQLite query, a Chroma lookup) without writing. Probes run in
parallel on daemon threads; one that hangs is abandoned at the deadline (its thread
ends on the backend's own timeout) and reported as not ready.

Example::

    >>> from hmem.backends.memory.profile import MemoryProfileStore
    >>> run_probes({"profile": (MemoryProfileStore(), lambda: None)}, 1.0)["profile"].ok
    True
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hmem._options import UserStores
from hmem.backends.write_behind import WriteBehindVectorIndex
from hmem.jobs import JobEngine
from hmem.protocols import VectorIndex

__all__ = ["PROBE_USER", "BackendReady", "probes", "run_probes"]

PROBE_USER = "hmem.readyz-probe"

#: tier name -> (the backend object, a cheap read that raises when it is down; a ``str``
#: it returns is a note for the operator, :attr:`BackendReady.detail`)
Probes = Mapping[str, tuple[object, Callable[[], object]]]


@dataclass(frozen=True, slots=True)
class BackendReady:
    """One backend's answer: ``backend`` is its class name; ``error`` says why not
    (an exception type, or the timeout), never a message that could leak details;
    ``detail``, something an operator should look at while it serves (counts only)."""

    ok: bool
    backend: str
    latency_ms: float | None = None
    error: str | None = None
    detail: str | None = None


def probes(stores: UserStores, engine: JobEngine | None = None) -> dict[str, tuple[object, Callable[[], object]]]:
    """A probe per tier: sessions, summaries, profile, items, vectors, lexical; and the
    background jobs' queue (``jobs``) when ``engine`` is given."""
    lt = stores.longterm
    # Named after the index behind a write-behind front: that is what answers.
    vectors = lt.vectors.inner if isinstance(lt.vectors, WriteBehindVectorIndex) else lt.vectors
    return {
        "sessions": (stores.sessions, lambda: stores.sessions.list_sessions(PROBE_USER)),
        "summaries": (stores.summaries, lambda: stores.summaries.get(PROBE_USER, PROBE_USER)),
        "profile": (stores.profile, lambda: stores.profile.get(PROBE_USER, "probe")),
        "items": (lt.items, lambda: lt.items.count(PROBE_USER)),
        "vectors": (vectors, lambda: _vectors_probe(lt.vectors)),
        "lexical": (lt.lexical, lambda: lt.lexical.count(PROBE_USER)),
        **({"jobs": (engine.queue, lambda: _jobs_probe(engine))} if engine is not None else {}),
    }


def _jobs_probe(engine: JobEngine) -> str | None:
    """What the background engine has waiting, and what it set aside (counts only)."""
    counts = engine.queue.counts()
    waiting = {kind: c.waiting + c.running for kind, c in counts.items() if c.waiting or c.running}
    stuck = {kind: c.quarantined for kind, c in counts.items() if c.quarantined}
    if not (waiting or stuck):
        return None
    parts = []
    if waiting:
        parts.append("background jobs waiting: " + ", ".join(f"{k} {n}" for k, n in sorted(waiting.items())))
    if stuck:
        parts.append("quarantined after failing repeatedly (each user's stats and inspector page name them): "
                     + ", ".join(f"{k} {n}" for k, n in sorted(stuck.items())))
    return "; ".join(parts)


def _vectors_probe(vectors: VectorIndex) -> str | None:
    """Count the probe user's vectors; with vectors written behind, say how many the
    index refused (counts only: ``/readyz`` needs no key, so no user or item is named)."""
    vectors.count(PROBE_USER)
    refused = vectors.quarantined() if isinstance(vectors, WriteBehindVectorIndex) else []
    if not refused:
        return None
    users = len({q.user_id for q in refused})
    return (f"{len(refused)} vector{'s' * (len(refused) != 1)} of {users} user{'s' * (users != 1)} refused by the "
            "index and set aside (the items are kept): each user's stats and inspector page name them; deleting "
            "an item, or storing it again with metadata the index takes, clears it")


def run_probes(checks: Probes, timeout_s: float) -> dict[str, BackendReady]:
    """Run every probe at once; wait at most ``timeout_s`` in all. Same order as ``checks``."""
    results: dict[str, BackendReady] = {}
    lock = threading.Lock()

    def run(tier: str, name: str, call: Callable[[], object]) -> None:
        started = time.perf_counter()
        try:
            note = call()
            answer = BackendReady(True, name, latency_ms=round((time.perf_counter() - started) * 1000, 3),
                                  detail=note if isinstance(note, str) else None)
        except Exception as exc:  # any failure means "not ready"; the type is enough for an operator
            answer = BackendReady(False, name, error=type(exc).__name__)
        with lock:
            results[tier] = answer

    threads = [
        threading.Thread(target=run, args=(tier, type(backend).__name__, call), name=f"hmem-ready-{tier}", daemon=True)
        for tier, (backend, call) in checks.items()
    ]
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        done = dict(results)
    late = f"no answer within {timeout_s:g} s"
    return {
        tier: done.get(tier) or BackendReady(False, type(backend).__name__, error=late)
        for tier, (backend, _) in checks.items()
    }
