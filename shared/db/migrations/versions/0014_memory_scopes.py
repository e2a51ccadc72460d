"""memory scopes: who owns a memory is stated by (scope, user_id, agent_id), checked by the database

Revision ID: 0014_memory_scopes
Revises: 0013_transcript_retention
Create Date: 2026-12-04

A memory is user, agent or app scope (issue 16):
- user: `user_id` is the user, `agent_id` is NULL (extracted memories are always this scope; the agent that
  heard a statement is in its source events, not in the row, so every agent of the user shares the fact);
- agent: `user_id` is the user and `agent_id` the agent that owns it; only that agent reads it;
- app: the whole tenant's shared knowledge; `user_id` is the sentinel `*app` (`store.scopes.APP_USER`),
  which no real user id can take (ids start with a letter or a digit), `agent_id` is NULL.
Keeping `tenant_id` and a `user_id` on every row keeps row-level security (by tenant) and the current-slot
unique index (tenant, user, coalesce(agent_id, ''), slot) working unchanged: each owner has its own slots.
"""

from __future__ import annotations

from alembic import op

revision = "0014_memory_scopes"
down_revision = "0013_transcript_retention"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "ALTER TABLE memories ADD CONSTRAINT ck_memories_scope_owner CHECK ("
        "(scope = 'user' AND agent_id IS NULL AND user_id <> '*app') "
        "OR (scope = 'agent' AND agent_id IS NOT NULL AND user_id <> '*app') "
        "OR (scope = 'app' AND agent_id IS NULL AND user_id = '*app'))"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE memories DROP CONSTRAINT IF EXISTS ck_memories_scope_owner")
