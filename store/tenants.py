"""A tenant's own settings (`tenants.settings`, JSONB): the per-tenant overrides of the global defaults."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlmodel import Session


def tenant_settings(db: Session, tenant_id: str) -> dict[str, Any]:
    """The tenant's overrides (an empty dict for a tenant without any, or without a row)."""
    value = db.execute(text("SELECT settings FROM tenants WHERE id = :t"), {"t": tenant_id}).scalar()
    return dict(value) if isinstance(value, dict) else {}
