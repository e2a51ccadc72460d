"""episodes the user edited or deleted stay that way: episodes.edited_at, episodes.deleted_at

Revision ID: 0015_episode_deletion
Revises: 0014_memory_scopes
Create Date: 2026-12-04

Episodes can be listed, edited and deleted one by one (issue 16). A deleted episode keeps its row as a
tombstone (ids and time; its text, embedding and keyword document cleared) so that closing its session again
(a late turn reopens it) cannot write it back; an edited one is not overwritten by a later close either.
"""

from __future__ import annotations

from alembic import op

revision = "0015_episode_deletion"
down_revision = "0014_memory_scopes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE episodes ADD COLUMN edited_at timestamptz, ADD COLUMN deleted_at timestamptz")


def downgrade() -> None:
    op.execute("ALTER TABLE episodes DROP COLUMN IF EXISTS deleted_at, DROP COLUMN IF EXISTS edited_at")
