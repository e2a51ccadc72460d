"""events remember why the LLM has not read them: llm_error, llm_attempts, llm_retry_at

Revision ID: 0011_llm_failure_state
Revises: 0010_derived_half_life
Create Date: 2026-12-02

A turn the LLM failed on stayed `llm_pending` with nothing said, and rode along in every later window of its
session (each failure costing a repair call). Now each such turn records the failure's category
(`llm_error`: "invalid_output", "timeout", "circuit_open", ...), how many LLM calls it was part of that
failed (`llm_attempts`; past the cap it is made final with its rule candidates, the reason kept), and when
it may be sent again (`llm_retry_at`; later windows and the sweeper leave it alone until then).
"""

from __future__ import annotations

from alembic import op

revision = "0011_llm_failure_state"
down_revision = "0010_derived_half_life"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "ALTER TABLE events ADD COLUMN llm_error varchar(32), "
        "ADD COLUMN llm_attempts smallint NOT NULL DEFAULT 0, ADD COLUMN llm_retry_at timestamptz"
    )


def downgrade() -> None:
    op.execute(
        "ALTER TABLE events DROP COLUMN IF EXISTS llm_retry_at, DROP COLUMN IF EXISTS llm_attempts, "
        "DROP COLUMN IF EXISTS llm_error"
    )
