"""Dead letters: payloads that can never succeed, kept redacted with a reason; a repeat bumps the count."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert
from sqlmodel import Session

from shared.db.models import DeadLetter
from shared.redaction import redact, redact_obj

MAX_STORED_PAYLOAD_CHARS = 64 * 1024


def storable_payload(payload: Any) -> Any:
    """Redact the payload and bound its size (a 1 MiB poison message is kept as a truncated preview)."""
    clean = redact_obj(payload)
    try:
        encoded = json.dumps(clean, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        encoded = json.dumps(redact(repr(payload)))
        clean = {"repr": json.loads(encoded)}
    # JSONB rejects NUL characters and lone surrogates: keep a readable repr instead
    encoded_safe = encoded.replace("\\u0000", "\\\\u0000")
    try:
        encoded_safe.encode("utf-8")
    except UnicodeEncodeError:
        encoded_safe = encoded_safe.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(encoded_safe) > MAX_STORED_PAYLOAD_CHARS or encoded_safe != encoded:
        return {
            "truncated": len(encoded_safe) > MAX_STORED_PAYLOAD_CHARS,
            "size_chars": len(encoded),
            "preview": encoded_safe[:MAX_STORED_PAYLOAD_CHARS],
        }
    return clean


def record_dead_letter(
    session: Session,
    *,
    task_name: str,
    payload: Any,
    reason: str,
    now: datetime,
    tenant_id: str | None = None,
    event_id: str | None = None,
) -> None:
    stored = storable_payload(payload)
    reason = redact(reason)[:2000]
    fingerprint = hashlib.sha256(
        json.dumps([task_name, stored, reason], sort_keys=True, ensure_ascii=False, default=str).encode()
    ).hexdigest()
    table = DeadLetter.__table__  # type: ignore[attr-defined]
    stmt = insert(table).values(
        fingerprint=fingerprint,
        tenant_id=tenant_id,
        event_id=event_id,
        task_name=task_name,
        payload=stored,
        reason=reason,
        count=1,
        first_seen=now,
        last_seen=now,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["fingerprint"],
        set_={"count": table.c.count + 1, "last_seen": stmt.excluded.last_seen, "replayed_at": None},
    )
    session.execute(stmt)


def list_dead_letters(db: Session, tenant_id: str, *, limit: int = 50) -> list[dict[str, Any]]:
    """The tenant's dead letters, newest first."""
    rows = db.execute(
        text(
            "SELECT id, tenant_id, event_id, task_name, reason, count, first_seen, last_seen, replayed_at "
            "FROM dead_letters WHERE tenant_id = :t ORDER BY last_seen DESC, id DESC LIMIT :n"
        ),
        {"n": limit, "t": tenant_id},
    )
    return [dict(r) for r in rows.mappings().all()]


def take_for_replay(
    db: Session, tenant_id: str, dead_letter_id: int, *, task_name: str, now: datetime
) -> tuple[Any, str | None] | None:
    """Mark one of the tenant's dead letters of `task_name` replayed and return (its payload, its tenant)
    for the caller to send again; None when the tenant has no such dead letter."""
    row = db.execute(
        text(
            "UPDATE dead_letters SET replayed_at = :now WHERE id = :id AND tenant_id = :t AND task_name = :task "
            "RETURNING payload, tenant_id"
        ),
        {"now": now, "id": dead_letter_id, "t": tenant_id, "task": task_name},
    ).first()
    return (row[0], row[1]) if row is not None else None


def replay_envelope(payload: Any, tenant_id: str | None) -> Any:
    """A dead letter holds either a whole envelope or one event of one: rebuild an envelope."""
    if isinstance(payload, dict) and "events" in payload:
        return payload
    return {"tenant_id": tenant_id, "events": [payload]}
