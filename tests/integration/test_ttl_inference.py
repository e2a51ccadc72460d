"""TTL inference end to end (issue #16, item 6): a "this week" statement extracted by a real worker expires a
week after its event time, the context block marks it temporary, and once past its expiry it is left out of
search and context even before the hourly prune archives it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from shared.db.engine import session_scope
from store.context import user_context
from store.embeddings.hashing import HashingEmbedder
from store.search import search
from tests.fakes.openai_server import FakeOpenAI
from tests.memory_rows import insert_memory
from tests.services import memory_client, wait_for

pytestmark = pytest.mark.integration

STATEMENTS = {
    "I'm in Tokyo this week for the customer workshop, so expect me to be slow to answer.": (
        "The user is in Tokyo this week.",
        timedelta(days=7),
    ),
    "这周我在出差，回复会慢一点。": ("用户这周在出差。", timedelta(days=7)),
    "The user's favourite editor is Helix, whatever the project.": (
        "The user prefers the Helix editor.",
        None,
    ),
}


def test_a_this_week_statement_expires_a_week_after_its_event_time(
    start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    said = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    by_turn = {turn: content for turn, (content, _) in STATEMENTS.items()}

    def answer(request):
        window = request["messages"][-1]["content"].split("## Conversation window", 1)[1]
        memories = []
        for line in window.strip().splitlines():
            if not line.startswith("["):
                continue
            event_id = line.split("[", 1)[1].split("]", 1)[0]
            turn = next((t for t in by_turn if t in line), None)
            if turn:
                memories.append(
                    {
                        "content": by_turn[turn],
                        "kind": "semantic",
                        "category": "fact",
                        "tier": "worth",
                        "slot": None,
                        "value": None,
                        "op": "remember",
                        "confidence": 0.9,
                        "source_event_ids": [event_id],
                    }
                )
        return json.dumps({"memories": memories})

    with FakeOpenAI() as fake_llm:
        fake_llm.default_responder = answer
        start_worker(
            env={
                "OPENAI_API_KEY": "test-key",
                "OPENAI_BASE_URL": fake_llm.base_url,
                "OPENAI_MAX_RETRIES": "1",
                "OPENAI_TIMEOUT_S": "3",
                "MEMORY_DEBOUNCE_IDLE_S": "1",
                "MEMORY_LLM_BATCH_TURNS": "1",
            }
        )
        client = memory_client(tenant, redis_url, queue_name, tmp_path)
        for i, turn in enumerate(STATEMENTS):
            client.emit(
                user_id="u1", session_id="s1", content=turn, event_id=f"{tenant}-{i}", event_time=said
            )
        client.emit(user_id="u1", session_id="s1", type="session_end", event_id=f"{tenant}-end")
        client.flush()

        def rows():
            with engine.connect() as conn:
                return {
                    r.content: r
                    for r in conn.execute(
                        text(
                            "SELECT content, valid_from, expires_at FROM memories "
                            "WHERE tenant_id = :t AND status = 'active'"
                        ),
                        {"t": tenant},
                    ).all()
                }

        wait_for(lambda: len(rows()) >= len(STATEMENTS), timeout_s=60, what="the three memories")

    memories = rows()
    for content, ttl in STATEMENTS.values():
        row = memories[content]
        assert row.valid_from == said
        assert row.expires_at == (said + ttl if ttl else None), content
    embedder = HashingEmbedder(384)
    with session_scope(engine, tenant=tenant) as db:
        block = user_context(
            db,
            tenant,
            "u1",
            query="where is the user",
            max_tokens=800,
            embedder=embedder,
            now=datetime.now(UTC),
        )
    week_end = (said + timedelta(days=7)).date().isoformat()
    assert f"The user is in Tokyo this week. (temporary, until {week_end})" in block.text
    assert "The user prefers the Helix editor." in block.text
    assert "Helix editor. (temporary" not in block.text


def test_an_expired_memory_is_not_served_before_the_prune_archives_it(engine, tenant):
    now = datetime.now(UTC)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tenants (id) VALUES (:t)"), {"t": tenant})
        insert_memory(
            conn,
            tenant_id=tenant,
            user_id="u",
            content="The user is in Lisbon this week.",
            category="profile",
            expires_at=now - timedelta(hours=1),
        )
        insert_memory(
            conn, tenant_id=tenant, user_id="u", content="The user lives in Porto.", category="profile"
        )
    embedder = HashingEmbedder(384)
    with session_scope(engine, tenant=tenant) as db:
        block = user_context(
            db, tenant, "u", query="where is the user", max_tokens=500, embedder=embedder, now=now
        )
        hits = search(db, tenant_id=tenant, user_id="u", query="Lisbon", k=5, embedder=embedder, now=now)
    assert "Porto" in block.text and "Lisbon" not in block.text
    assert all("Lisbon" not in h.content for h in hits)
