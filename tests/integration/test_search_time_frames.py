"""A query that names a time ranks what was current or said then first (`store.search`, `core.timeframe`):
memories by their valid-from time, turns by their event time, anchors by the time of the event they name.
Each case also runs with `time_frame=False`, so the assertion is about the time frame, not the words."""

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


def _memories(engine, tenant: str) -> dict[str, str]:
    ids = {}
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tenants (id) VALUES (:t)"), {"t": tenant})
        for name, content, at in (
            ("heroku", "The API is deployed on Heroku.", datetime(2025, 3, 10, tzinfo=UTC)),
            ("render", "The API is deployed on Render.", datetime(2025, 9, 14, tzinfo=UTC)),
            ("fly", "The API is deployed on Fly.io.", NOW - timedelta(days=20)),
            ("move", "The team moved the API to a new cloud account.", datetime(2025, 9, 13, tzinfo=UTC)),
        ):
            ids[name] = insert_memory(
                conn, tenant_id=tenant, user_id="u", content=content, valid_from=at, last_confirmed_at=at
            )
    return ids


def _top(engine, tenant: str, query: str, **kw) -> list[str]:
    with session_scope(engine, tenant=tenant) as db:
        hits = search(db, tenant_id=tenant, user_id="u", query=query, k=4, embedder=EMBEDDER, now=NOW, **kw)
    # every hit carries the signals the context block's relevance floor reads, whichever list found it
    assert all(h.similarity is not None or h.keyword_coverage is not None for h in hits)
    return [h.id for h in hits]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("where was the API deployed in March 2025?", "heroku"),
        ("where was the API deployed in September 2025", "render"),
        ("where is the API deployed, as of last month?", "fly"),
        ("API 上个月部署在哪", "fly"),
    ],
)
def test_the_memory_of_the_named_time_ranks_first(engine, tenant, query, expected):
    ids = _memories(engine, tenant)
    by_id = {v: k for k, v in ids.items()}
    with_frame = [by_id[i] for i in _top(engine, tenant, query)]
    without = [by_id[i] for i in _top(engine, tenant, query, time_frame=False)]
    assert with_frame[0] == expected, (with_frame, without)
    # nothing is filtered out: a time frame reorders, it never hides a memory
    assert set(with_frame) == set(without)


def test_before_and_after_an_event_order_what_was_true_around_it(engine, tenant):
    ids = _memories(engine, tenant)
    by_id = {v: k for k, v in ids.items()}
    before = [by_id[i] for i in _top(engine, tenant, "where was the API deployed before the move to a new account")]
    after = [by_id[i] for i in _top(engine, tenant, "where was the API deployed after the move to a new account")]
    # the anchor event itself may rank first (the query holds its words); around it, the time decides
    assert before.index("heroku") < before.index("render"), before
    assert after.index("render") < after.index("heroku"), after
    assert after.index("fly") < after.index("heroku"), after


def test_turns_of_the_named_month_rank_first(engine, tenant):
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tenants (id) VALUES (:t)"), {"t": tenant})
        for i, (content, at) in enumerate(
            (
                ("went hiking with the kids at the lake", datetime(2024, 6, 8, 10, tzinfo=UTC)),
                ("went hiking with the kids in the hills", datetime(2025, 2, 8, 10, tzinfo=UTC)),
                ("went hiking with the kids again, at the coast", datetime(2025, 10, 8, 10, tzinfo=UTC)),
            )
        ):
            conn.execute(
                text(
                    "INSERT INTO events (tenant_id, event_id, user_id, session_id, role, content, event_time, "
                    "status, processed_at, embedding, search_tokens) VALUES (:t, :e, 'u', :s, 'user', :c, :ts, "
                    "'extracted', :ts, CAST(:v AS vector), to_tsvector('simple', :d))"
                ),
                {
                    "t": tenant,
                    "e": f"e{i}",
                    "s": f"s{i}",
                    "c": content,
                    "ts": at,
                    "v": vector_literal(EMBEDDER.embed([content])[0]),
                    "d": keywords.document(content),
                },
            )
    query = "when did we go hiking with the kids in June?"
    with_frame = _top(engine, tenant, query, include_turns=True, include_memories=False)
    without = _top(engine, tenant, query, include_turns=True, include_memories=False, time_frame=False)
    assert with_frame[0] == "e0", (with_frame, without)
    assert set(with_frame) == set(without)
