"""llm_failures: every time a stage did without the LLM, by tenant, day, stage, reason and what it did instead

Revision ID: 0012_llm_failures
Revises: 0011_llm_failure_state
Create Date: 2026-12-02

Failures of the extraction call are on its events (`events.llm_error`, migration 0011); the other stages
(the rolling summary, the judge, episodes, distillation, working memory) have no row of their own to carry
one, and fell back to their deterministic path without a trace. Each such fallback (a failed call, or no
call because the stage's circuit breaker was open) now adds one to a row here, in the stage's own
transaction: `memctl stats` shows them by stage and reason. `action` says what the stage did instead:
`deterministic` (its no-LLM path) or `deferred` (turns kept `llm_pending`, sent again later).
"""

from __future__ import annotations

from alembic import op

revision = "0012_llm_failures"
down_revision = "0011_llm_failure_state"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE llm_failures (
            tenant_id  varchar(128) NOT NULL,
            day        varchar(10) NOT NULL,
            stage      varchar(32) NOT NULL,
            reason     varchar(32) NOT NULL,
            action     varchar(16) NOT NULL,
            count      integer NOT NULL DEFAULT 0,
            last_at    timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (tenant_id, day, stage, reason, action)
        )
        """
    )
    for role in ("memory_api", "memory_worker"):
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON llm_failures TO {role}")
    op.execute("ALTER TABLE llm_failures ENABLE ROW LEVEL SECURITY")
    # the same rules as every tenant table (0005_rls): the API sees its tenant only, the worker also '*'
    op.execute(
        "CREATE POLICY tenant_isolation_api ON llm_failures TO memory_api "
        "USING (tenant_id = current_setting('app.tenant_id', true)) "
        "WITH CHECK (tenant_id = current_setting('app.tenant_id', true))"
    )
    op.execute(
        "CREATE POLICY tenant_isolation_worker ON llm_failures TO memory_worker "
        "USING (current_setting('app.tenant_id', true) = '*' "
        "OR tenant_id = current_setting('app.tenant_id', true)) "
        "WITH CHECK (current_setting('app.tenant_id', true) = '*' "
        "OR tenant_id = current_setting('app.tenant_id', true))"
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS llm_failures")
