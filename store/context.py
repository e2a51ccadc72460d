"""The context block for one user (shell): current rules and profile, what is relevant to the query
(memories, turns excluded, and the closest episodes, both above the relevance floor), and the working
memory, cut by `build_context`."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlmodel import Session

from core import keywords
from core.context import ContextBlock, ContextItem, build_context
from core.relevance import NO_FLOOR, RelevanceFloor, has_topic, token_coverage, topical_text
from shared.db.vectors import vector_literal
from store.embeddings import Embedder
from store.scopes import reader_where
from store.search import SearchFilters, search

STANDING_LIMIT = 200
RELEVANT_K = 10
EPISODES_K = 3
# an episode served in a context block counts as used (it does not decay); written at most this often
EPISODE_TOUCH_EVERY = timedelta(hours=1)


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
    floor: RelevanceFloor = NO_FLOOR,
) -> ContextBlock:
    """The block for `user_id` (as `agent_id` when given): the user's memories, the app's and that agent's,
    ranked together, the agent's and the app's labelled (`core.context.line_of`).

    Search hits and episodes below `floor` are left out, and so is every one of them when the query has no
    topic (a greeting, thanks); the block's `left_out` counts them. Episodes served are marked used (they
    decay when never used, `store.pruning`)."""
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
    below = {"memories_below_floor": 0, "episodes_below_floor": 0}
    topical = has_topic(query)

    def kept(similarity: float | None, coverage: float | None) -> bool:
        # a query without a topic keeps nothing, unless the floor is off
        return (topical or floor.disabled) and floor.keeps(similarity, coverage)

    if query.strip():
        # with a floor, the query's social words ("thanks! now ...") are not part of what is searched for
        searched = topical_text(query) if topical and not floor.disabled else query
        vec = vector_literal(embedder.embed_query(searched))  # once, for the memories and the episodes
        hits = search(
            db,
            tenant_id=tenant_id,
            user_id=user_id,
            query=searched,
            k=RELEVANT_K,
            embedder=embedder,
            now=now,
            filters=SearchFilters(agent_id=agent_id),
            ef_search=ef_search,
            query_vector=vec,
        )
        for h in hits:
            if not kept(h.similarity, h.keyword_coverage):
                below["memories_below_floor"] += 1
                continue
            relevant.append(
                ContextItem(
                    id=h.id,
                    text=h.content,
                    kind=h.kind,
                    category=h.category,
                    expires_at=h.expires_at,
                    scope=h.scope,
                )
            )
        query_tokens = keywords.tokens(searched)
        served: list[str] = []
        for episode_id, episode_text, similarity in db.execute(
            text(
                "SELECT id, what_happened || CASE WHEN outcome <> '' THEN ' Outcome: ' || outcome ELSE '' END "
                "|| CASE WHEN lesson <> '' THEN ' Lesson: ' || lesson ELSE '' END, "
                "1 - (embedding <=> CAST(:v AS vector)) FROM episodes "
                "WHERE tenant_id = :t AND user_id = :u AND deleted_at IS NULL AND archived_at IS NULL "
                "ORDER BY embedding <=> CAST(:v AS vector) "
                f"LIMIT {EPISODES_K}"
            ),
            {**params, "v": vec},
        ).all():
            share = token_coverage(query_tokens, set(keywords.tokens(episode_text)))
            if not kept(None if similarity is None else float(similarity), share):
                below["episodes_below_floor"] += 1
                continue
            relevant.append(ContextItem(id=f"episode:{episode_id}", text=episode_text, kind="episodic"))
            served.append(str(episode_id))
        if served:
            db.execute(
                text(
                    "UPDATE episodes SET last_used_at = :now WHERE tenant_id = :t AND id = ANY(CAST(:ids AS uuid[])) "
                    "AND (last_used_at IS NULL OR last_used_at < :stale)"
                ),
                {"t": tenant_id, "ids": served, "now": now, "stale": now - EPISODE_TOUCH_EVERY},
            )
    working = db.execute(
        text("SELECT content FROM working_memory WHERE tenant_id = :t AND user_id = :u AND agent_id = ''"),
        params,
    ).scalar()
    block = build_context(
        standing=standing, relevant=relevant, working_memory=working or "", max_tokens=max_tokens
    )
    return dataclasses.replace(block, left_out={**block.left_out, **below})
