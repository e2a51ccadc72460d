"""memory_stats(): aggregate counts for /metrics without cross-tenant row access

Revision ID: 0006_stats
Revises: 0005_rls
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0006_stats"
down_revision = "0005_rls"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Only counts leave this function, never rows: the API role may call it for Prometheus gauges.
    op.execute(
        """
        CREATE FUNCTION memory_stats()
        RETURNS TABLE (metric text, label1 text, label2 text, value double precision)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
            SELECT 'memories', kind, status, count(*)::double precision FROM memories GROUP BY kind, status
            UNION ALL
            SELECT 'events', status, '', count(*)::double precision FROM events GROUP BY status
            UNION ALL
            SELECT 'oldest_pending_s', '', '',
                   coalesce(extract(epoch FROM now() - min(received_at)), 0)::double precision
            FROM events WHERE status = 'pending'
            UNION ALL
            SELECT 'dead_letters', '', '', count(*)::double precision FROM dead_letters WHERE replayed_at IS NULL
            UNION ALL
            SELECT 'llm_tokens_today', tenant_id, stage, sum(prompt_tokens + completion_tokens)::double precision
            FROM llm_usage WHERE day = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD') GROUP BY tenant_id, stage
            UNION ALL
            SELECT 'llm_calls_today', tenant_id, stage, sum(calls)::double precision
            FROM llm_usage WHERE day = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD') GROUP BY tenant_id, stage
        $$
        """
    )
    op.execute("REVOKE ALL ON FUNCTION memory_stats() FROM PUBLIC")
    op.execute("GRANT EXECUTE ON FUNCTION memory_stats() TO memory_api, memory_worker")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS memory_stats()")
