"""POST /v1/events and GET /healthz over real HTTP against the real app, database and broker."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import text

pytestmark = pytest.mark.integration


def test_healthz_reports_database_and_broker(api_server):
    r = httpx.get(f"{api_server}/healthz")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "database": "ok", "broker": "ok", "embedder": "hashing"}


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer mk_not-a-real-key"}, {"Authorization": "Basic x"}]
)
def test_events_without_a_valid_key_get_401_as_problem_json(api_server, headers):
    r = httpx.post(f"{api_server}/v1/events", json={"user_id": "u", "session_id": "s"}, headers=headers)
    assert r.status_code == 401
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"]


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({}, {"user_id": "u", "query": "pnpm"}),
        ({}, {"query": ""}),  # no key: 401 before the body is validated
        ({"Authorization": "Basic x"}, {"query": ""}),
        ({"Authorization": "Bearer mk_not-a-real-key"}, {"user_id": "u", "query": "pnpm"}),
    ],
)
def test_search_without_a_valid_key_gets_401(api_server, headers, body):
    # the search route authenticates inside its one thread hand-off, not through the shared dependencies
    r = httpx.post(f"{api_server}/v1/search", json=body, headers=headers)
    assert r.status_code == 401, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.headers["www-authenticate"] == "Bearer"


def test_a_revoked_key_gets_401(api_server, engine, api_key):
    from api.keys import hash_key

    with engine.begin() as conn:
        conn.execute(
            text("UPDATE api_keys SET revoked_at = now() WHERE key_hash = :h"), {"h": hash_key(api_key)}
        )
    r = httpx.post(
        f"{api_server}/v1/events",
        json={"user_id": "u", "session_id": "s"},
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert r.status_code == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"user_id": "u", "session_id": "s", "role": "robot"}, "role"),
        ({"session_id": "s"}, "user_id"),
        ({"user_id": "has space", "session_id": "s"}, "user_id"),
        ({"user_id": "u", "session_id": "s", "content": "x" * 40_000}, "content"),
        ({"user_id": "u", "session_id": "s", "metadata": "nope"}, "metadata"),
        ({"user_id": "u", "session_id": "s", "event_time": "2999-01-01T00:00:00Z"}, "event_time"),
        ({"user_id": "u", "session_id": "s", "type": "explode"}, "type"),
        ({"user_id": "u", "session_id": "s", "surprise": 1}, "surprise"),
        ({"events": [{"user_id": "u", "session_id": "s"}, {"user_id": "u"}]}, "events.1.session_id"),
        ([{"user_id": "u", "session_id": "s"}] * 501, "events"),
    ],
)
def test_invalid_events_get_422_naming_the_field_and_nothing_is_stored(
    api_server, api_key, engine, tenant, body, field
):
    r = httpx.post(f"{api_server}/v1/events", json=body, headers={"Authorization": f"Bearer {api_key}"})
    assert r.status_code == 422, r.text
    problem = r.json()
    assert r.headers["content-type"].startswith("application/problem+json")
    assert any(e["field"].startswith(field) or e["field"] == field for e in problem["errors"]), problem
    assert field.split(".")[-1] in problem["detail"]
    with engine.connect() as conn:
        assert (
            conn.execute(text("SELECT count(*) FROM events WHERE tenant_id = :t"), {"t": tenant}).scalar()
            == 0
        )


def test_accepted_events_are_stored_under_the_keys_tenant_whatever_the_body_claims(
    api_server, api_key, engine, tenant
):
    body = {
        "events": [
            {
                "tenant_id": "someone-else",
                "event_id": "e-1",
                "user_id": "alice",
                "session_id": "s1",
                "content": "I moved to Lisbon",
            },
            {
                "event_id": "e-2",
                "user_id": "alice",
                "session_id": "s1",
                "role": "assistant",
                "content": "Noted.",
            },
        ]
    }
    r = httpx.post(f"{api_server}/v1/events", json=body, headers={"Authorization": f"Bearer {api_key}"})
    assert r.status_code == 202, r.text
    assert r.json() == {"accepted": ["e-1", "e-2"], "inserted": 2, "duplicates": 0}
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT tenant_id, event_id FROM events WHERE event_id IN ('e-1', 'e-2')")
        ).all()
    assert sorted(rows) == [(tenant, "e-1"), (tenant, "e-2")]
    # sending the same batch again changes nothing
    r2 = httpx.post(f"{api_server}/v1/events", json=body, headers={"Authorization": f"Bearer {api_key}"})
    assert r2.status_code == 202
    assert r2.json()["inserted"] == 0 and r2.json()["duplicates"] == 2


def test_a_body_that_is_not_json_gets_422(api_server, api_key):
    r = httpx.post(
        f"{api_server}/v1/events",
        content=b"{not json",
        headers={"Authorization": f"Bearer {api_key}", "content-type": "application/json"},
    )
    assert r.status_code == 422
    assert r.json()["errors"][0]["field"] == "body"
