"""The memory tables, declared once: `memories`, `memory_history`, `memory_access`.

SQLModel classes named by role (the fastapi template's pattern): `MemoryBase` holds what a memory says and
how it stands; `Memory` is the table (with the lineage, the indexes' inputs and the bookkeeping columns);
`MemoryPublic` is what readers get (the API, memctl, the console): the base, the ids and lineage, and the
two access figures kept in `memory_access`.

The Alembic revisions in `shared/db/migrations` remain the source of truth for the DDL (indexes, checks,
row-level security); these classes mirror them, and `tests/integration/test_memory_model.py` holds the two
to the same columns. Every column list of `memories` the store writes into SQL is derived from here.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import REAL, BigInteger, Boolean, Column, DateTime, Identity, Integer, String, Text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID
from sqlmodel import Field, SQLModel


def _ts(nullable: bool = True) -> Any:
    return Column(DateTime(timezone=True), nullable=nullable)


class MemoryBase(SQLModel):
    """What a memory says and how it stands: the columns every reader sees."""

    user_id: str = Field(max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    scope: str = Field(default="user", max_length=8)  # user | agent | app
    kind: str = Field(max_length=16)  # semantic | episodic | procedural
    category: str = Field(max_length=16)
    content: str = Field(sa_column=Column(Text, nullable=False))
    slot: str | None = Field(default=None, max_length=128)
    value: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    importance: float = Field(default=0.5, sa_column=Column(REAL, nullable=False))
    confidence: float = Field(default=0.5, sa_column=Column(REAL, nullable=False))
    evidence_count: int = Field(default=1, sa_column=Column(Integer, nullable=False))
    status: str = Field(default="active", max_length=16)
    valid_from: datetime = Field(sa_column=_ts(nullable=False))
    valid_to: datetime | None = Field(default=None, sa_column=_ts())
    recorded_at: datetime = Field(sa_column=_ts(nullable=False))
    last_confirmed_at: datetime = Field(sa_column=_ts(nullable=False))
    superseded_by: uuid.UUID | None = Field(default=None, sa_column=Column(UUID(as_uuid=True), nullable=True))
    expires_at: datetime | None = Field(default=None, sa_column=_ts())
    pinned: bool = Field(default=False, sa_column=Column(Boolean, nullable=False))
    source_event_ids: list[str] = Field(default_factory=list, sa_column=Column(ARRAY(Text), nullable=False))
    source_turn_ids: list[str] = Field(default_factory=list, sa_column=Column(ARRAY(Text), nullable=False))
    consolidated_from: list[uuid.UUID] = Field(
        default_factory=list, sa_column=Column(ARRAY(UUID(as_uuid=True)), nullable=False)
    )


class Memory(MemoryBase, table=True):
    __tablename__ = "memories"

    id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    tenant_id: str = Field(max_length=128)
    content_key: str = Field(sa_column=Column(Text, nullable=False))
    lang: str = Field(default="en", max_length=8)
    archived_at: datetime | None = Field(default=None, sa_column=_ts())
    embedding: Any = Field(default=None, sa_column=Column(Vector(), nullable=True))
    search_tokens: Any = Field(default=None, sa_column=Column(TSVECTOR, nullable=True))
    updated_at: datetime = Field(sa_column=_ts(nullable=False))
    # the extractor that proposed it: rules, llm, rules+llm, residual (migration 0018); None for memories
    # written by hand, by distillation or before 0018
    origin: str | None = Field(default=None, max_length=16)


class MemoryPublic(MemoryBase):
    """A memory as readers get it: the base columns, its id, and how often and when searches returned it."""

    id: uuid.UUID
    last_accessed_at: datetime | None
    access_count: int
    # the kind's half-life (days) under the tenant's policy, not stored (`store.memory_views`); None: no decay
    half_life_days: float | None = None


class MemoryHistory(SQLModel, table=True):
    """One change to one memory, with the memory's snapshot before and after (`store.memories.SNAPSHOT`)."""

    __tablename__ = "memory_history"

    id: int | None = Field(default=None, sa_column=Column(BigInteger, Identity(), primary_key=True))
    memory_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), nullable=False))
    tenant_id: str = Field(max_length=128)
    user_id: str = Field(max_length=128)
    op: str = Field(max_length=16)
    before: dict[str, Any] | None = Field(default=None, sa_column=Column(JSONB, nullable=True))
    after: dict[str, Any] | None = Field(default=None, sa_column=Column(JSONB, nullable=True))
    reason: str = Field(sa_column=Column(Text, nullable=False))
    actor: str = Field(sa_column=Column(Text, nullable=False))
    event_ids: list[str] = Field(default_factory=list, sa_column=Column(ARRAY(Text), nullable=False))
    created_at: datetime = Field(sa_column=_ts(nullable=False))


class MemoryAccess(SQLModel, table=True):
    """How often and when searches returned a memory: a narrow table of its own (migration 0009 says why)."""

    __tablename__ = "memory_access"

    memory_id: uuid.UUID = Field(sa_column=Column(UUID(as_uuid=True), primary_key=True))
    tenant_id: str = Field(sa_column=Column(String(128), nullable=False))
    user_id: str = Field(sa_column=Column(String(128), nullable=False))
    access_count: int = Field(default=0, sa_column=Column(Integer, nullable=False))
    last_accessed_at: datetime = Field(sa_column=_ts(nullable=False))


MEMORY_COLUMNS: tuple[str, ...] = tuple(Memory.__table__.columns.keys())  # type: ignore[attr-defined]
