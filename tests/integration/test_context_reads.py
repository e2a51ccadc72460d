"""The context block's reads: the query is embedded once for the memories and the episodes alike (agents ask
for context before every model call, and a local embedder costs milliseconds per query)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from shared.db.engine import session_scope
from store.context import user_context
from store.embeddings.hashing import HashingEmbedder
from tests.memory_rows import insert_memory

pytestmark = pytest.mark.integration


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(384)
        self.queries: list[str] = []

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return super().embed_query(text)


def test_the_context_block_embeds_its_query_once(engine, tenant):
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tenants (id) VALUES (:t)"), {"t": tenant})
        insert_memory(conn, tenant_id=tenant, user_id="u", content="The user deploys with Buildkite.")
    embedder = CountingEmbedder()
    with session_scope(engine, tenant=tenant) as db:
        block = user_context(
            db, tenant, "u", query="how do we deploy", max_tokens=500, embedder=embedder, now=datetime.now(UTC)
        )
    assert "Buildkite" in block.text
    assert embedder.queries == ["how do we deploy"]
