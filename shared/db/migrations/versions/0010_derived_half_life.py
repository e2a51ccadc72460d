"""memories.half_life_days goes: a memory's half-life follows its kind and its tenant's policy

Revision ID: 0010_derived_half_life
Revises: 0009_memory_access
Create Date: 2026-12-01

The column was written once, at insert, from the global default for the kind. Pruning applied a tenant's
override (`tenants.settings->'half_life_days'`) while search ranking read the stored value, so an override
changed what decayed but not how results ranked. The half-life is now derived wherever it is used (pruning,
ranking, the memory views) by one rule, `core.forgetting.tenant_half_lives`; nothing stores it.
"""

from __future__ import annotations

from alembic import op

revision = "0010_derived_half_life"
down_revision = "0009_memory_access"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE memories DROP COLUMN IF EXISTS half_life_days")


def downgrade() -> None:
    op.execute("ALTER TABLE memories ADD COLUMN half_life_days real")
    op.execute(
        "UPDATE memories SET half_life_days = CASE kind WHEN 'episodic' THEN 30 WHEN 'procedural' THEN 90 END"
    )
