"""SQLModel tables of the foundation: tenants, api_keys, events, sessions, dead_letters, llm_usage.

The Alembic revisions in `shared/db/migrations` are the source of truth for the DDL (indexes, extensions);
these classes mirror them for typed queries, and a test checks that the two agree.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CHAR, BigInteger, Column, DateTime, Identity, Index, SmallInteger, Text, func, text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlmodel import Field, SQLModel

# Event status lifecycle: pending -> (extracted | skipped | llm_pending) ; failed after too many attempts.
EVENT_STATUSES = ("pending", "extracted", "skipped", "llm_pending", "failed")


def _ts(nullable: bool = False, default_now: bool = False) -> Any:
    return Column(
        DateTime(timezone=True),
        nullable=nullable,
        server_default=func.now() if default_now else None,
    )


class Tenant(SQLModel, table=True):
    __tablename__ = "tenants"

    id: str = Field(primary_key=True, max_length=128)
    name: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    # per-tenant overrides (half-lives, token budget); read by later stages
    settings: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSONB, nullable=False, server_default=text("'{}'::jsonb"))
    )
    created_at: datetime | None = Field(default=None, sa_column=_ts(default_now=True))


class ApiKey(SQLModel, table=True):
    __tablename__ = "api_keys"

    id: str = Field(primary_key=True, max_length=32)
    tenant_id: str = Field(foreign_key="tenants.id", index=True, max_length=128)
    # sha256 of the full key; the key itself is shown once and never stored
    key_hash: str = Field(sa_column=Column(Text, nullable=False, unique=True))
    prefix: str = Field(max_length=16)
    name: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    read_only: bool = False
    created_at: datetime | None = Field(default=None, sa_column=_ts(default_now=True))
    revoked_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    last_used_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))


class Event(SQLModel, table=True):
    """One redacted transcript turn. (tenant_id, event_id) is the idempotency key."""

    __tablename__ = "events"
    __table_args__ = (
        # "pending events of one session, in event-time order": the extraction window query
        Index(
            "ix_events_pending_session",
            "tenant_id",
            "user_id",
            "session_id",
            "event_time",
            postgresql_where=text("status IN ('pending', 'llm_pending')"),
        ),
        # per-user scans (erasure, window, recall), newest first
        Index("ix_events_user_time", "tenant_id", "user_id", "event_time"),
        # sweeper: old pending events across all tenants
        Index("ix_events_pending_received", "received_at", postgresql_where=text("status = 'pending'")),
    )

    tenant_id: str = Field(primary_key=True, max_length=128)
    event_id: str = Field(primary_key=True, max_length=128)
    schema_version: int = Field(default=1, sa_column=Column(SmallInteger, nullable=False, server_default="1"))
    type: str = Field(default="turn", max_length=16)
    user_id: str = Field(max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    session_id: str = Field(max_length=128)
    role: str = Field(max_length=16)
    content: str = Field(sa_column=Column(Text, nullable=False))
    token_count: int = 0
    event_time: datetime = Field(sa_column=_ts())
    source_turn_id: str | None = Field(default=None, max_length=128)
    meta: dict[str, Any] = Field(
        default_factory=dict,
        sa_column=Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    )
    redactions: dict[str, int] = Field(
        default_factory=dict, sa_column=Column(JSONB, nullable=False, server_default=text("'{}'::jsonb"))
    )
    status: str = Field(default="pending", max_length=16)
    attempts: int = 0
    received_at: datetime | None = Field(default=None, sa_column=_ts(default_now=True))
    processed_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    # why the LLM has not read the turn (a category of worker.llm.failure_reason), how many failed LLM calls
    # it was part of, and when it may be sent again (migration 0011)
    llm_error: str | None = Field(default=None, max_length=32)
    llm_attempts: int = Field(default=0, sa_column=Column(SmallInteger, nullable=False, server_default="0"))
    llm_retry_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    # a turn past retention keeps its row and the SHA-256 of its scrubbed text (migration 0012)
    content_sha256: str | None = Field(default=None, sa_column=Column(CHAR(64), nullable=True))
    content_purged_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    # which ingest path stored the turn: `consumer:<name>` or `api:<key id>` (migration 0017; None before)
    ingested_by: str | None = Field(default=None, max_length=64)


class SessionState(SQLModel, table=True):
    """One conversation session: pending counters for debounced extraction, and its rolling window."""

    __tablename__ = "sessions"
    __table_args__ = (
        Index("ix_sessions_pending", "last_event_at", postgresql_where=text("pending_count > 0")),
        Index("ix_sessions_open_idle", "last_event_at", postgresql_where=text("status = 'open'")),
    )

    tenant_id: str = Field(primary_key=True, max_length=128)
    user_id: str = Field(primary_key=True, max_length=128)
    session_id: str = Field(primary_key=True, max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    status: str = Field(default="open", max_length=16)  # open | ended | closed
    pending_count: int = 0
    pending_tokens: int = 0
    turn_count: int = 0
    first_event_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    last_event_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    ended_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    summary: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    summarized_through: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    updated_at: datetime | None = Field(default=None, sa_column=_ts(default_now=True))


class DeadLetter(SQLModel, table=True):
    """A payload that can never succeed, kept (redacted) with the reason, for operators to inspect or replay."""

    __tablename__ = "dead_letters"

    id: int | None = Field(default=None, sa_column=Column(BigInteger, Identity(), primary_key=True))
    # sha256 of the redacted payload + reason: the same poison message seen again bumps `count`
    fingerprint: str = Field(sa_column=Column(Text, nullable=False, unique=True))
    tenant_id: str | None = Field(default=None, max_length=128, index=True)
    event_id: str | None = Field(default=None, max_length=128)
    task_name: str = Field(max_length=64)
    payload: Any = Field(sa_column=Column(JSONB, nullable=False))
    reason: str = Field(sa_column=Column(Text, nullable=False))
    count: int = 1
    first_seen: datetime | None = Field(default=None, sa_column=_ts(default_now=True))
    last_seen: datetime | None = Field(default=None, sa_column=_ts(default_now=True))
    replayed_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))


class LlmUsage(SQLModel, table=True):
    """Tokens spent per tenant, day and stage: the daily budget check reads this."""

    __tablename__ = "llm_usage"

    tenant_id: str = Field(primary_key=True, max_length=128)
    day: str = Field(primary_key=True, max_length=10)  # UTC date, YYYY-MM-DD
    stage: str = Field(primary_key=True, max_length=32)  # extract | repair | summarize | reconcile | distill
    calls: int = 0
    prompt_tokens: int = Field(default=0, sa_column=Column(BigInteger, nullable=False, server_default="0"))
    completion_tokens: int = Field(
        default=0, sa_column=Column(BigInteger, nullable=False, server_default="0")
    )


class CandidateRow(SQLModel, table=True):
    """A memory candidate from extraction, waiting for reconciliation (status new -> reconciled)."""

    __tablename__ = "candidates"

    id: int | None = Field(default=None, sa_column=Column(BigInteger, Identity(), primary_key=True))
    tenant_id: str = Field(max_length=128)
    user_id: str = Field(max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    session_id: str = Field(max_length=128)
    op: str = Field(default="remember", max_length=16)
    content: str = Field(sa_column=Column(Text, nullable=False))
    kind: str = Field(max_length=16)
    category: str = Field(max_length=16)
    tier: str = Field(max_length=8)
    slot: str | None = Field(default=None, max_length=128)
    value: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    confidence: float
    lang: str = Field(default="en", max_length=8)
    origin: str = Field(max_length=16)
    rule: str | None = Field(default=None, max_length=64)
    source_event_ids: list[str] = Field(sa_column=Column(ARRAY(Text), nullable=False))
    source_turn_ids: list[str] = Field(
        default_factory=list, sa_column=Column(ARRAY(Text), nullable=False, server_default="{}")
    )
    event_time: datetime = Field(sa_column=_ts())
    status: str = Field(default="new", max_length=16)
    created_at: datetime | None = Field(default=None, sa_column=_ts(default_now=True))
