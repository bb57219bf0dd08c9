"""Liveness and readiness: ``/healthz`` (the process answers) and ``/readyz``
(every backend answers a cheap read within a timeout).

Each probe is a read for a user id no client can own in practice; it touches the
backend (a Redis round trip, a SQLite query, a Chroma lookup) without writing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import anyio.to_thread
from fastapi import APIRouter
from fastapi.responses import JSONResponse

from hmem.memory import Memory
from hmem.server.schemas import BackendStatus, ReadinessResponse

__all__ = ["PROBE_USER", "build_health_router", "probes"]

PROBE_USER = "hmem.readyz-probe"


def probes(memory: Memory) -> dict[str, tuple[object, Callable[[], object]]]:
    """Tier name → (backend object, a cheap read that raises when it is down)."""
    lt = memory.longterm
    return {
        "sessions": (memory.sessions, lambda: memory.sessions.list_sessions(PROBE_USER)),
        "summaries": (memory.summaries, lambda: memory.summaries.get(PROBE_USER, PROBE_USER)),
        "profile": (memory.profile, lambda: memory.profile.get(PROBE_USER, "probe")),
        "items": (lt.items, lambda: lt.items.count(PROBE_USER)),
        "vectors": (lt.vectors, lambda: lt.vectors.count(PROBE_USER)),
        "lexical": (lt.lexical, lambda: lt.lexical.count(PROBE_USER)),
    }


async def _probe(backend: object, call: Callable[[], object], timeout_s: float) -> BackendStatus:
    name = type(backend).__name__
    started = time.perf_counter()
    try:
        with anyio.fail_after(timeout_s):
            # abandon_on_cancel: a hung backend must not hang the probe; the thread ends on its own timeout.
            await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    except TimeoutError:
        return BackendStatus(ok=False, backend=name, error=f"no answer within {timeout_s:g} s")
    except Exception as exc:  # any failure means "not ready"; the type is enough for an operator
        return BackendStatus(ok=False, backend=name, error=type(exc).__name__)
    return BackendStatus(ok=True, backend=name, latency_ms=round((time.perf_counter() - started) * 1000, 3))


def build_health_router(memory: Memory, timeout_s: float) -> APIRouter:
    r = APIRouter(tags=["health"])
    checks = probes(memory)

    @r.get("/healthz", response_model=dict[str, str])
    async def healthz() -> dict[str, str]:
        """The process is up and serving (no backend is touched)."""
        return {"status": "ok"}

    @r.get("/readyz", response_model=ReadinessResponse,
           responses={503: {"model": ReadinessResponse, "description": "a backend is down"}})
    async def readyz() -> JSONResponse:
        """Which backends answer: 200 when all do, 503 (with the same body) otherwise."""
        results: dict[str, BackendStatus] = {}

        async def run(tier: str, backend: object, call: Callable[[], object]) -> None:
            results[tier] = await _probe(backend, call, timeout_s)

        async with anyio.create_task_group() as tg:
            for tier, (backend, call) in checks.items():
                tg.start_soon(run, tier, backend, call)
        ordered = {tier: results[tier] for tier in checks}
        body = ReadinessResponse(ready=all(b.ok for b in ordered.values()), backends=ordered)
        return JSONResponse(body.model_dump(mode="json"), status_code=200 if body.ready else 503)

    return r
