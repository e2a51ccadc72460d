"""What distillation reads and writes: a user's fragments (active, unslotted, unpinned memories)."""

from __future__ import annotations

from sqlalchemy import text
from sqlmodel import Session


def count_fragments(db: Session, tenant_id: str, user_id: str) -> int:
    """The user's active memories without a slot (pinned ones included)."""
    value = db.execute(
        text(
            "SELECT count(*) FROM memories WHERE tenant_id = :t AND user_id = :u AND status = 'active' "
            "AND slot IS NULL"
        ),
        {"t": tenant_id, "u": user_id},
    ).scalar()
    return int(value or 0)
