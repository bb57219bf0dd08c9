"""Liveness and readiness: ``/healthz`` (the process answers) and ``/readyz``
(every backend answers a cheap read within a timeout: :meth:`Memory.readiness
<hmem.memory.Memory.readiness>`, run off the event loop).
"""

from __future__ import annotations

import anyio.to_thread
from fastapi import APIRouter
from fastapi.responses import JSONResponse

from hmem.memory import Memory
from hmem.server.schemas import BackendStatus, ReadinessResponse

__all__ = ["build_health_router"]


def build_health_router(memory: Memory, timeout_s: float) -> APIRouter:
    r = APIRouter(tags=["health"])

    @r.get("/healthz", response_model=dict[str, str])
    async def healthz() -> dict[str, str]:
        """The process is up and serving (no backend is touched)."""
        return {"status": "ok"}

    @r.get("/readyz", response_model=ReadinessResponse,
           responses={503: {"model": ReadinessResponse, "description": "a backend is down"}})
    async def readyz() -> JSONResponse:
        """Which backends answer: 200 when all do, 503 (with the same body) otherwise."""
        # readiness() returns within timeout_s even when a backend hangs (it abandons that probe).
        answers = await anyio.to_thread.run_sync(memory.readiness, timeout_s)
        backends = {tier: BackendStatus(ok=a.ok, backend=a.backend, latency_ms=a.latency_ms, error=a.error,
                                        detail=a.detail)
                    for tier, a in answers.items()}
        body = ReadinessResponse(ready=all(b.ok for b in backends.values()), backends=backends)
        return JSONResponse(body.model_dump(mode="json"), status_code=200 if body.ready else 503)

    return r
