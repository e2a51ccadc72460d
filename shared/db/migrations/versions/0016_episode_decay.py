"""episodes decay like other memories: episodes.last_used_at, episodes.archived_at

Revision ID: 0016_episode_decay
Revises: 0015_episode_deletion
Create Date: 2026-12-02

An episode served in a context block is marked used (`last_used_at`, written at most hourly). The prune
archives an episode not used for `archive_after_half_lives` episodic half-lives since its session ended or
its last use (`archived_at`: out of context and search); the purge deletes archived episodes past the
retention period (issue 16).
"""

from __future__ import annotations

from alembic import op

revision = "0016_episode_decay"
down_revision = "0015_episode_deletion"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE episodes ADD COLUMN last_used_at timestamptz, ADD COLUMN archived_at timestamptz")


def downgrade() -> None:
    op.execute("ALTER TABLE episodes DROP COLUMN IF EXISTS archived_at, DROP COLUMN IF EXISTS last_used_at")
