"""events keep their ids, time and a hash once their text is past retention: content_sha256, content_purged_at

Revision ID: 0013_transcript_retention
Revises: 0012_llm_failures
Create Date: 2026-12-03

Turn text was kept forever. The daily purge now scrubs a processed turn's text (and its embedding and keyword
document) after the tenant's turn retention (`MEMORY_TURN_RETENTION_DAYS`, default 90; per tenant
`tenants.settings.retention.turn_days`): the row stays, with its ids, time, status and the SHA-256 of the
text it held, so idempotency (the primary key) and lineage (memories' source_event_ids) hold.
"""

from __future__ import annotations

from alembic import op

revision = "0013_transcript_retention"
down_revision = "0012_llm_failures"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "ALTER TABLE events ADD COLUMN content_sha256 char(64), ADD COLUMN content_purged_at timestamptz"
    )
    # the purge looks only at rows still holding text
    op.execute("CREATE INDEX ix_events_retention ON events (event_time) WHERE content_purged_at IS NULL")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_events_retention")
    op.execute(
        "ALTER TABLE events DROP COLUMN IF EXISTS content_purged_at, DROP COLUMN IF EXISTS content_sha256"
    )
