"""Dead letters: payloads that can never succeed, kept redacted with a reason; a repeat bumps the count."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

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
