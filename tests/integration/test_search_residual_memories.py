"""A memory the residual filter kept is the user's sentence verbatim (`core/extraction/residual.py`): a search
that includes turns returns the turn, not a second copy of its words, while the turn is searchable; once the
turn's text is scrubbed the memory is found again. Other memories are never held back this way."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from core import keywords
from shared.db.engine import session_scope
from shared.db.vectors import vector_literal
from store.search import search
from tests.memory_rows import EMBEDDER, insert_memory

pytestmark = pytest.mark.integration

NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)
SAID = "The family reunion is every August at my uncle's farm in Ohio."


def _setup(engine, tenant: str) -> dict[str, str]:
    at = NOW - timedelta(days=3)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tenants (id) VALUES (:t)"), {"t": tenant})
        conn.execute(
            text(
                "INSERT INTO events (tenant_id, event_id, user_id, session_id, role, content, event_time, "
                "status, processed_at, embedding, search_tokens) VALUES (:t, 'e1', 'u', 's1', 'user', :c, :ts, "
                "'extracted', :ts, CAST(:v AS vector), to_tsvector('simple', :d))"
            ),
            {
                "t": tenant,
                "c": SAID + " Any packing tips?",
                "ts": at,
                "v": vector_literal(EMBEDDER.embed([SAID])[0]),
                "d": keywords.document(SAID),
            },
        )
        ids = {
            "residual": insert_memory(
                conn, tenant_id=tenant, user_id="u", content=SAID, valid_from=at, origin="residual",
                source_event_ids=["e1"],
            ),
            "rules": insert_memory(
                conn, tenant_id=tenant, user_id="u", content="The user's family reunion is every August in Ohio.",
                valid_from=at, origin="rules", source_event_ids=["e1"],
            ),
            # no origin: written by hand, distilled, or older than migration 0018
            "unknown": insert_memory(
                conn, tenant_id=tenant, user_id="u", content="Family reunion: August, on the farm in Ohio.",
                valid_from=at, source_event_ids=["e1"],
            ),
        }  # fmt: skip
    return ids


def _ids(engine, tenant: str, **kw) -> list[str]:
    with session_scope(engine, tenant=tenant) as db:
        hits = search(db, tenant_id=tenant, user_id="u", query="when is the family reunion?", k=5,
                      embedder=EMBEDDER, now=NOW, **kw)  # fmt: skip
    return [h.id for h in hits]


def test_the_turn_stands_for_its_verbatim_memory_while_it_is_searchable(engine, tenant):
    ids = _setup(engine, tenant)
    with_turns = _ids(engine, tenant, include_turns=True)
    assert "e1" in with_turns and ids["rules"] in with_turns and ids["unknown"] in with_turns, with_turns
    assert ids["residual"] not in with_turns, with_turns
    # without turns the memory is the only copy of those words: it is searched
    assert ids["residual"] in _ids(engine, tenant, include_turns=False)


def test_the_verbatim_memory_is_found_again_once_its_turn_is_scrubbed(engine, tenant):
    ids = _setup(engine, tenant)
    with engine.begin() as conn:  # what the retention purge does to a turn's text (store/pruning.py)
        conn.execute(
            text("UPDATE events SET content = '', embedding = NULL, search_tokens = NULL WHERE tenant_id = :t"),
            {"t": tenant},
        )
    with_turns = _ids(engine, tenant, include_turns=True)
    assert "e1" not in with_turns
    assert ids["residual"] in with_turns, with_turns
