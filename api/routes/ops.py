"""Operator routes: GET /v1/runs (this tenant's run records) and GET /metrics (Prometheus)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel

from api.deps import PrincipalDep, SessionDep
from api.metrics import metrics_response
from store.runs import list_runs

router = APIRouter(tags=["operations"])


class Run(BaseModel):
    id: int
    kind: str
    scope: str
    user_id: str | None
    mode: str | None
    actor: str
    started_at: datetime
    finished_at: datetime | None
    outcome: str
    counts: dict[str, Any]
    detail: str | None


@router.get("/v1/runs", response_model=list[Run])
def runs(
    principal: PrincipalDep,
    db: SessionDep,
    kind: Annotated[str | None, Query(max_length=32, pattern=r"^[a-z_]+$")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Any:
    return [Run(**r) for r in list_runs(db, kind=kind, limit=limit, tenant_id=principal.tenant_id)]


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    return metrics_response(request.app.state.metrics_registry)
