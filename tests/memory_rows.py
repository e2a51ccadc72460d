"""Memory rows for integration tests, written through the store's own INSERT (`store.memories.insert_sql`),
so tests never carry a column list of `memories` of their own."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text

from core import keywords
from shared.db.vectors import vector_literal
from store.embeddings.hashing import HashingEmbedder
from store.memories import insert_sql

EMBEDDER = HashingEmbedder(384)


def insert_memory(conn: Any, *, tenant_id: str, user_id: str, content: str, **columns: Any) -> str:
    """Insert one memory and return its id. Unless given: kind `semantic`, category `fact`, valid and last
    confirmed now, the content's key, its hashing embedding and its keyword document."""
    now = datetime.now(UTC)
    row: dict[str, Any] = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "content": content,
        "content_key": content,
        "kind": "semantic",
        "category": "fact",
        "valid_from": now,
        "last_confirmed_at": now,
        "embedding": vector_literal(EMBEDDER.embed([content])[0]),
        "search_tokens": keywords.document(content),
        **columns,
    }
    return str(conn.execute(text(insert_sql(tuple(row))), row).scalar_one())
