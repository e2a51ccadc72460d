"""working_memory.source_hash: rewrite (and call the LLM) only when the inputs changed

Revision ID: 0007_wm_source
Revises: 0006_stats
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0007_wm_source"
down_revision = "0006_stats"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE working_memory ADD COLUMN source_hash text")


def downgrade() -> None:
    op.execute("ALTER TABLE working_memory DROP COLUMN IF EXISTS source_hash")
