"""row-level security: tenant isolation enforced by PostgreSQL

Revision ID: 0005_rls
Revises: 0004_sleep_time
Create Date: 2026-11-29

Two application roles, neither of them the tables' owner:
- memory_api: what the HTTP API runs as. It sees only rows whose tenant_id equals the transaction's
  `app.tenant_id` setting; with no setting it sees nothing (fail closed). It can never widen that.
- memory_worker: what the Celery worker runs as. Same rule, except that the value '*' (set by the
  cross-tenant maintenance tasks: sweep, prune, purge, nightly distillation) opens every tenant.
API keys are looked up through a SECURITY DEFINER function, since the tenant is unknown until the key is.
"""

from __future__ import annotations

from alembic import op

revision = "0005_rls"
down_revision = "0004_sleep_time"
branch_labels = None
depends_on = None

TENANT_TABLES = {
    "tenants": "id",
    "api_keys": "tenant_id",
    "events": "tenant_id",
    "sessions": "tenant_id",
    "dead_letters": "tenant_id",
    "llm_usage": "tenant_id",
    "candidates": "tenant_id",
    "memories": "tenant_id",
    "memory_history": "tenant_id",
    "consolidation_runs": "tenant_id",
    "episodes": "tenant_id",
    "working_memory": "tenant_id",
    "working_memory_history": "tenant_id",
}
ROLES = ("memory_api", "memory_worker")


def upgrade() -> None:
    for role in ROLES:
        # roles are cluster-wide: another database of the same server may have created them already
        op.execute(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN "
            f"CREATE ROLE {role} NOLOGIN; END IF; END $$"
        )
        op.execute(f"GRANT {role} TO CURRENT_USER")
        op.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}")
        op.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}")
    op.execute("REVOKE INSERT, UPDATE, DELETE ON schema_meta, alembic_version FROM memory_api, memory_worker")
    for table, column in TENANT_TABLES.items():
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation_api ON {table} TO memory_api "
            f"USING ({column} = current_setting('app.tenant_id', true)) "
            f"WITH CHECK ({column} = current_setting('app.tenant_id', true))"
        )
        op.execute(
            f"CREATE POLICY tenant_isolation_worker ON {table} TO memory_worker "
            f"USING (current_setting('app.tenant_id', true) = '*' "
            f"OR {column} = current_setting('app.tenant_id', true)) "
            f"WITH CHECK (current_setting('app.tenant_id', true) = '*' "
            f"OR {column} = current_setting('app.tenant_id', true))"
        )
    op.execute(
        """
        CREATE FUNCTION memory_authenticate(p_key_hash text)
        RETURNS TABLE (key_id varchar, tenant_id varchar, read_only boolean)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
            SELECT id, tenant_id, read_only FROM api_keys WHERE key_hash = p_key_hash AND revoked_at IS NULL
        $$
        """
    )
    op.execute("REVOKE ALL ON FUNCTION memory_authenticate(text) FROM PUBLIC")
    op.execute("GRANT EXECUTE ON FUNCTION memory_authenticate(text) TO memory_api, memory_worker")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS memory_authenticate(text)")
    for table in TENANT_TABLES:
        op.execute(f"DROP POLICY IF EXISTS tenant_isolation_api ON {table}")
        op.execute(f"DROP POLICY IF EXISTS tenant_isolation_worker ON {table}")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    for role in ROLES:
        op.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}")
        op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {role}")
        op.execute(f"REVOKE USAGE ON SCHEMA public FROM {role}")
