"""index memories.superseded_by: deleting a memory must not scan the table for rows that reference it

Revision ID: 0008_superseded_by
Revises: 0007_wm_source
Create Date: 2026-11-29

The foreign key superseded_by -> memories(id) ON DELETE SET NULL makes every deleted row look up the rows
that point at it; without an index that is a sequential scan per deleted row, which made purging archived
memories quadratic (the 1,000,000-memory prune benchmark did not finish its purge in 90 s).
"""

from __future__ import annotations

from alembic import op

revision = "0008_superseded_by"
down_revision = "0007_wm_source"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_memories_superseded_by ON memories (superseded_by) "
        "WHERE superseded_by IS NOT NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_memories_superseded_by")
