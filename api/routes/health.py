"""GET /healthz: the database and the broker both answer; names the embedder in use (`MEMORY_EMBEDDER`, or what
`auto` picked)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text

from api.deps import StateDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(state: StateDep) -> Any:
    checks: dict[str, str] = {}
    try:
        with state.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except Exception as exc:
        checks["database"] = f"error: {type(exc).__name__}"
    checks["broker"] = "ok" if state.publisher.ping() else "error: unreachable"
    ok = all(v == "ok" for v in checks.values())
    body = {"status": "ok" if ok else "degraded", **checks, "embedder": state.settings.embedder}
    return JSONResponse(body, status_code=200 if ok else 503)
