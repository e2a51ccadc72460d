"""Sessions closed into episodes: what happened, its outcome and lesson, searchable like memories."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine

from shared.db.engine import ALL_TENANTS, session_scope
from store.embeddings import Embedder
from store.sessions import sessions_to_close
from worker.llm.extractor import LLMExtractor
from worker.services.sleep import close_session


def close_idle_sessions(
    engine: Engine,
    *,
    now: datetime,
    idle_s: float,
    settle_s: float,
    embedder: Embedder,
    llm: LLMExtractor | None,
) -> dict[str, int]:
    """Close every session that ended (and settled) or went idle into its episode, one transaction per
    session. Returns the sessions closed, the episodes written and the LLM tokens spent."""
    with session_scope(engine, tenant=ALL_TENANTS) as db:
        todo = sessions_to_close(db, now=now, idle_s=idle_s, settle_s=settle_s)
    totals = {"sessions": 0, "episodes": 0, "tokens": 0}
    for tenant_id, user_id, session_id in todo:
        with session_scope(engine, tenant=tenant_id) as db:
            out = close_session(db, tenant_id, user_id, session_id, embedder=embedder, llm=llm, now=now)
        totals["sessions"] += 1
        totals["episodes"] += out.get("episodes", 0)
        totals["tokens"] += out.get("tokens", 0)
    return totals
