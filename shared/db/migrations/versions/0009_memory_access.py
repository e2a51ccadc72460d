"""memory_access: how often and when a memory was returned, in a narrow table of its own

Revision ID: 0009_memory_access
Revises: 0008_superseded_by
Create Date: 2026-11-29

Searches note the memories they return, and the API writes the counts every few seconds. Written into
`memories` itself, each count was a new version of a ~2 KB row with an embedding: the rows fill their pages,
so almost none of those updates could stay on the page (HOT), and each one inserted the row again into every
index of the table, the HNSW graph included (0.2 % HOT measured under the API load benchmark). Reads made
the table and its vector index grow and needed vacuuming of the graph. Here a count is a ~80-byte row with
one primary key, updated in place with room left on its page (fillfactor 70).

No foreign key to `memories`: its check would lock each memory's row (a page write) on the first access.
The writer joins `memories`, so a count is only written for a memory that exists, and the two paths that
delete memory rows (user erasure, the retention purge) delete their counts with them.
"""

from __future__ import annotations

from alembic import op

revision = "0009_memory_access"
down_revision = "0008_superseded_by"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE memory_access (
            memory_id         uuid PRIMARY KEY,
            tenant_id         varchar(128) NOT NULL,
            user_id           varchar(128) NOT NULL,
            access_count      integer NOT NULL DEFAULT 0,
            last_accessed_at  timestamptz NOT NULL
        ) WITH (fillfactor = 70)
        """
    )
    op.execute("CREATE INDEX ix_memory_access_user ON memory_access (tenant_id, user_id)")
    op.execute(
        "INSERT INTO memory_access (memory_id, tenant_id, user_id, access_count, last_accessed_at) "
        "SELECT id, tenant_id, user_id, access_count, coalesce(last_accessed_at, last_confirmed_at) "
        "FROM memories WHERE access_count > 0 OR last_accessed_at IS NOT NULL"
    )
    op.execute("ALTER TABLE memories DROP COLUMN access_count, DROP COLUMN last_accessed_at")
    for role in ("memory_api", "memory_worker"):
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON memory_access TO {role}")
    op.execute("ALTER TABLE memory_access ENABLE ROW LEVEL SECURITY")
    # the same rules as every tenant table (0005_rls): the API sees its tenant only, the worker also '*'
    op.execute(
        "CREATE POLICY tenant_isolation_api ON memory_access TO memory_api "
        "USING (tenant_id = current_setting('app.tenant_id', true)) "
        "WITH CHECK (tenant_id = current_setting('app.tenant_id', true))"
    )
    op.execute(
        "CREATE POLICY tenant_isolation_worker ON memory_access TO memory_worker "
        "USING (current_setting('app.tenant_id', true) = '*' "
        "OR tenant_id = current_setting('app.tenant_id', true)) "
        "WITH CHECK (current_setting('app.tenant_id', true) = '*' "
        "OR tenant_id = current_setting('app.tenant_id', true))"
    )


def downgrade() -> None:
    op.execute(
        "ALTER TABLE memories ADD COLUMN last_accessed_at timestamptz, "
        "ADD COLUMN access_count integer NOT NULL DEFAULT 0"
    )
    op.execute(
        "UPDATE memories m SET access_count = a.access_count, last_accessed_at = a.last_accessed_at "
        "FROM memory_access a WHERE a.memory_id = m.id"
    )
    op.execute("DROP TABLE memory_access")
