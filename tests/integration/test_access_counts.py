"""Access counts: searches note the memories they return, the API writes the counts in batches into
`memory_access` (not into the memory rows), and search ranking, the memory view and decay read them there."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import text

from api.access import AccessRecorder
from shared.db.engine import get_engine, session_scope
from shared.db.vectors import vector_literal
from store.embeddings.hashing import HashingEmbedder
from store.search import _MEMORY_COLS, candidates
from tests.memory_rows import insert_memory
from tests.services import wait_for

pytestmark = pytest.mark.integration

EMBEDDER = HashingEmbedder(384)
LONG_AGO = datetime.now(UTC) - timedelta(days=200)


def _memory(engine, tenant: str, user: str, content: str) -> str:
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tenants (id) VALUES (:t) ON CONFLICT DO NOTHING"), {"t": tenant})
        return insert_memory(
            conn,
            tenant_id=tenant,
            user_id=user,
            content=content,
            kind="episodic",
            valid_from=LONG_AGO,
            last_confirmed_at=LONG_AGO,
            embedding=vector_literal(EMBEDDER.embed([content])[0]),
        )


def _access(engine, tenant: str) -> dict[str, tuple[int, datetime, str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT memory_id::text, access_count, last_accessed_at, user_id FROM memory_access "
                "WHERE tenant_id = :t"
            ),
            {"t": tenant},
        ).all()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _vector_candidates(engine, tenant: str, query: str) -> list:
    """u1's memories nearest to `query`, as search() reads them (with `touch`, the recency it ranks by)."""
    params = {"t": tenant, "u": "u1", "v": vector_literal(EMBEDDER.embed_query(query)), "n": 5}
    with session_scope(engine, tenant=tenant) as db:
        rows, _ = candidates(
            db,
            table="memories",
            where="tenant_id = :t AND user_id = :u",
            params=params,
            cols=_MEMORY_COLS,
            tokens=[],
            n=5,
        )
    return rows


def _row_version(engine, memory_id: str) -> tuple[str, str]:
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT ctid::text, xmin::text FROM memories WHERE id = :m"), {"m": memory_id}
        ).one()
    return (row[0], row[1])


def test_the_recorder_adds_counts_as_the_api_role_and_skips_memories_that_are_gone(
    engine, database_url, tenant
):
    a = _memory(engine, tenant, "u1", "We deploy the billing service on Tuesdays.")
    b = _memory(engine, tenant, "u2", "The staging cluster runs in Frankfurt.")
    other = f"{tenant}-other"
    c = _memory(engine, other, "u1", "Another tenant's memory.")
    # the API's own role: row-level security applies to the counts as to everything else
    recorder = AccessRecorder(get_engine(database_url, role="memory_api", application_name="test-access"))
    recorder.note(tenant, [a, a, b, str(uuid.uuid4())])  # a memory that does not exist gets no count
    recorder.note(other, [c])
    assert recorder.flush() == 3
    first = _access(engine, tenant)
    assert {m: (n, u) for m, (n, _, u) in first.items()} == {a: (2, "u1"), b: (1, "u2")}
    assert _access(engine, other)[c][0] == 1
    recorder.note(tenant, [b])
    assert recorder.flush() == 1
    again = _access(engine, tenant)
    assert again[a] == first[a]  # untouched
    assert again[b][0] == 2 and again[b][1] >= first[b][1]
    assert recorder.flush() == 0  # nothing noted since: nothing written


def test_search_ranks_by_the_last_access_and_the_memory_view_shows_the_counts(
    engine, tenant, api_server, api_key
):
    """The recency a search ranks with counts from the last access when it is later than the last
    confirmation; a search through the API is counted, and GET /v1/memories/{id} shows it."""
    m = _memory(engine, tenant, "u1", "The billing service deploys with a blue-green switch.")
    assert [(str(r.id), r.touch) for r in _vector_candidates(engine, tenant, "billing deploy")] == [
        (m, LONG_AGO)
    ]
    version = _row_version(engine, m)

    headers = {"Authorization": f"Bearer {api_key}"}
    with httpx.Client(base_url=api_server, headers=headers) as http:
        r = http.post("/v1/search", json={"user_id": "u1", "query": "billing deploy", "k": 5})
        assert r.status_code == 200 and [h["id"] for h in r.json()["results"]] == [m]
        # the API writes its counts every 5 s
        wait_for(
            lambda: http.get(f"/v1/memories/{m}").json()["access_count"] == 1,
            timeout_s=20,
            interval_s=0.5,
            what="the search counted",
        )
        view = http.get(f"/v1/memories/{m}").json()
    accessed = datetime.fromisoformat(view["last_accessed_at"])
    assert accessed > LONG_AGO + timedelta(days=199)
    assert _vector_candidates(engine, tenant, "billing deploy")[0].touch == accessed
    assert _row_version(engine, m) == version  # the read did not write a new version of the memory row
