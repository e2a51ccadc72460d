"""Embedding dimensions and pgvector's HNSW limit (issue #16, item 8): settings refuse a dimension the
`vector` HNSW index cannot hold, with a message naming the variable and the way out, and accept the largest
one it can; the boundary is checked against the real pgvector, so a pgvector that moves it fails here."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from shared.errors import SettingsError
from shared.settings import HNSW_MAX_DIM, load_settings

pytestmark = pytest.mark.integration


def test_a_dimension_above_the_hnsw_limit_is_refused_by_settings_naming_the_variable(monkeypatch):
    monkeypatch.setenv("MEMORY_EMBEDDING_DIM", "3072")
    with pytest.raises(SettingsError) as info:
        load_settings()
    message = str(info.value)
    assert "MEMORY_EMBEDDING_DIM" in message and "3072" in message and f"at most {HNSW_MAX_DIM}" in message


def test_the_largest_accepted_dimension_builds_its_hnsw_index(monkeypatch, engine):
    monkeypatch.setenv("MEMORY_EMBEDDING_DIM", str(HNSW_MAX_DIM))
    assert load_settings().embedding_dim == HNSW_MAX_DIM
    with engine.connect() as conn:
        with conn.begin():
            conn.execute(text(f"CREATE TEMP TABLE dim_ok (embedding vector({HNSW_MAX_DIM}))"))
            conn.execute(text("CREATE INDEX ON dim_ok USING hnsw (embedding vector_cosine_ops)"))
        with pytest.raises(DBAPIError, match="2000 dimensions"), conn.begin():
            conn.execute(text(f"CREATE TEMP TABLE dim_over (embedding vector({HNSW_MAX_DIM + 1}))"))
            conn.execute(text("CREATE INDEX ON dim_over USING hnsw (embedding vector_cosine_ops)"))
