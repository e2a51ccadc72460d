"""memories.origin: which extractor a memory came from (rules, llm, rules+llm, residual; NULL before 0018)

Revision ID: 0018_memory_origin
Revises: 0017_event_trace
Create Date: 2026-12-02

A memory the residual sentence filter kept (`core/extraction/residual.py`, issue 12) is the user's sentence
verbatim. While its turn is searchable, search returns the turn (with its neighbours) instead of a second
copy of the same words (`store/search.py`), which needs to know the memory's origin. The candidates table
has always recorded it; the memory now keeps it too. Rows made before this migration, and memories written
by hand through the API or by distillation, have none.
"""

from __future__ import annotations

from alembic import op

revision = "0018_memory_origin"
down_revision = "0017_event_trace"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE memories ADD COLUMN origin varchar(16)")


def downgrade() -> None:
    op.execute("ALTER TABLE memories DROP COLUMN IF EXISTS origin")
