"""schema_meta.tokenizer_version: the keyword tokenizer version the stored search_tokens were made with

Revision ID: 0019_tokenizer_version
Revises: 0018_memory_origin
Create Date: 2026-12-07

Keyword tokens are made in Python (`core/keywords.py`), so a change of the tokenizer cannot be applied here:
this records version 1 (the tokenizer before the version was kept) on a database that already holds tokens,
and `memctl migrate` then rewrites them with the current one (`store/retokenize.py`). A database without
tokens records nothing here; it gets the current version on the same step.
"""

from __future__ import annotations

from alembic import op

revision = "0019_tokenizer_version"
down_revision = "0018_memory_origin"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "INSERT INTO schema_meta (key, value) SELECT 'tokenizer_version', '1' "
        "WHERE EXISTS (SELECT 1 FROM memories WHERE search_tokens IS NOT NULL) "
        "OR EXISTS (SELECT 1 FROM episodes WHERE search_tokens IS NOT NULL) "
        "OR EXISTS (SELECT 1 FROM events WHERE search_tokens IS NOT NULL) "
        "ON CONFLICT (key) DO NOTHING"
    )


def downgrade() -> None:
    op.execute("DELETE FROM schema_meta WHERE key = 'tokenizer_version'")
