"""The context block for one user (shell): current rules and profile, what is relevant to the query
(memories, turns excluded, and the closest episodes), and the working memory, cut by `build_context`."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text
from sqlmodel import Session

from core.context import ContextBlock, ContextItem, build_context
from shared.db.vectors import vector_literal
from store.embeddings import Embedder
from store.scopes import reader_where
from store.search import SearchFilters, search

STANDING_LIMIT = 200
RELEVANT_K = 10
EPISODES_K = 3


def user_context(
    db: Session,
    tenant_id: str,
    user_id: str,
    *,
    query: str,
    max_tokens: int,
    embedder: Embedder,
    now: datetime,
    ef_search: int = 80,
    agent_id: str | None = None,
) -> ContextBlock:
    """The block for `user_id` (as `agent_id` when given): the user's memories, the app's and that agent's,
    ranked together, the agent's and the app's labelled (`core.context.line_of`)."""
    params = {"t": tenant_id, "u": user_id}
    owners: dict[str, object] = {}
    owned = reader_where(owners, user_id=user_id, agent_id=agent_id)
    standing = [
        ContextItem(id=str(r[0]), text=r[1], kind=r[2], category=r[3], expires_at=r[4], scope=r[5])
        for r in db.execute(
            text(
                "SELECT id, content, kind, category, expires_at, scope FROM memories WHERE tenant_id = :t "
                f"AND {owned} AND status = 'active' AND (expires_at IS NULL OR expires_at > :now) "
                "AND (kind = 'procedural' OR category IN ('feedback', 'constraint', "
                "'decision', 'profile', 'preference')) ORDER BY pinned DESC, importance DESC, "
                f"evidence_count DESC, last_confirmed_at DESC LIMIT {STANDING_LIMIT}"
            ),
            {**params, **owners, "now": now},
        ).all()
    ]
    relevant: list[ContextItem] = []
    if query.strip():
        vec = vector_literal(embedder.embed_query(query))  # once, for the memories and the episodes
        hits = search(
            db,
            tenant_id=tenant_id,
            user_id=user_id,
            query=query,
            k=RELEVANT_K,
            embedder=embedder,
            now=now,
            filters=SearchFilters(agent_id=agent_id),
            ef_search=ef_search,
            query_vector=vec,
        )
        relevant = [
            ContextItem(
                id=h.id,
                text=h.content,
                kind=h.kind,
                category=h.category,
                expires_at=h.expires_at,
                scope=h.scope,
            )
            for h in hits
        ]
        relevant += [
            ContextItem(id=f"episode:{r[0]}", text=r[1], kind="episodic")
            for r in db.execute(
                text(
                    "SELECT id, what_happened || CASE WHEN outcome <> '' THEN ' Outcome: ' || outcome ELSE '' END "
                    "|| CASE WHEN lesson <> '' THEN ' Lesson: ' || lesson ELSE '' END FROM episodes "
                    "WHERE tenant_id = :t AND user_id = :u AND deleted_at IS NULL "
                    "ORDER BY embedding <=> CAST(:v AS vector) "
                    f"LIMIT {EPISODES_K}"
                ),
                {**params, "v": vec},
            ).all()
        ]
    working = db.execute(
        text("SELECT content FROM working_memory WHERE tenant_id = :t AND user_id = :u AND agent_id = ''"),
        params,
    ).scalar()
    return build_context(
        standing=standing, relevant=relevant, working_memory=working or "", max_tokens=max_tokens
    )
