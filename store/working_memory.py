"""Working memory (`working_memory` + `working_memory_history`): one document per (tenant, user, agent),
rewritten as a whole; every replaced version goes to history."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlmodel import Session

from core.episodes import WMItem, document_mentions, working_memory_document
from store.episodes import recent_episodes


@dataclass(frozen=True)
class Document:
    content: str
    version: int
    source_hash: str | None  # hash of the inputs the document was written from


def active_items(db: Session, tenant_id: str, user_id: str) -> list[WMItem]:
    """The user's 200 most important active user-scope memories (latest confirmed first among equals): the
    user's document is not made of one agent's own memories."""
    return [
        WMItem(*r)
        for r in db.execute(
            text(
                "SELECT kind, category, content FROM memories WHERE tenant_id = :t AND user_id = :u AND "
                "scope = 'user' AND status = 'active' ORDER BY importance DESC, last_confirmed_at DESC LIMIT 200"
            ),
            {"t": tenant_id, "u": user_id},
        ).all()
    ]


def lock_document(db: Session, tenant_id: str, user_id: str, agent_id: str) -> Document | None:
    """The current document, its row locked until the end of the transaction; None before the first."""
    row = db.execute(
        text(
            "SELECT content, version, source_hash FROM working_memory WHERE tenant_id = :t AND user_id = :u "
            "AND agent_id = :a FOR UPDATE"
        ),
        {"t": tenant_id, "u": user_id, "a": agent_id},
    ).first()
    return Document(row[0], row[1], row[2]) if row is not None else None


def archive_document(
    db: Session, tenant_id: str, user_id: str, agent_id: str, document: Document, *, now: datetime
) -> None:
    """Keep a version that is about to be replaced in history."""
    db.execute(
        text(
            "INSERT INTO working_memory_history (tenant_id, user_id, agent_id, version, content, "
            "replaced_at) VALUES (:t, :u, :a, :v, :c, :now)"
        ),
        {
            "t": tenant_id,
            "u": user_id,
            "a": agent_id,
            "v": document.version,
            "c": document.content,
            "now": now,
        },
    )


def write_document(
    db: Session,
    tenant_id: str,
    user_id: str,
    agent_id: str,
    *,
    content: str,
    mode: str,
    source_hash: str,
    now: datetime,
) -> None:
    """Replace the document (version 1, or the next version)."""
    db.execute(
        text(
            "INSERT INTO working_memory (tenant_id, user_id, agent_id, content, version, mode, source_hash, "
            "updated_at) VALUES (:t, :u, :a, :c, 1, :m, :h, :now) ON CONFLICT (tenant_id, user_id, agent_id) "
            "DO UPDATE SET content = excluded.content, version = working_memory.version + 1, "
            "mode = excluded.mode, source_hash = excluded.source_hash, updated_at = excluded.updated_at"
        ),
        {"t": tenant_id, "u": user_id, "a": agent_id, "c": content, "m": mode, "h": source_hash, "now": now},
    )


@dataclass(frozen=True)
class WorkingMemoryView:
    """The working-memory document as readers get it."""

    user_id: str
    agent_id: str
    content: str
    version: int
    updated_at: datetime


def read_document(db: Session, tenant_id: str, user_id: str, agent_id: str = "") -> WorkingMemoryView | None:
    """The current document of (user, agent) (`""`: the user's own), or None before the first."""
    row = db.execute(
        text(
            "SELECT content, version, updated_at FROM working_memory WHERE tenant_id = :t AND user_id = :u "
            "AND agent_id = :a"
        ),
        {"t": tenant_id, "u": user_id, "a": agent_id},
    ).first()
    if row is None:
        return None
    return WorkingMemoryView(
        user_id=user_id, agent_id=agent_id, content=row[0], version=row[1], updated_at=row[2]
    )


def rebuild_document(db: Session, tenant_id: str, user_id: str, *, now: datetime) -> bool:
    """Rewrite the user's existing document deterministically from the current memories and episodes (the
    previous version to history), when a change the worker does not see (an episode the user edited or
    deleted) may leave it saying something no longer true. No LLM here: the worker's next rewrite may
    polish it. False when there is no document or nothing changed."""
    current = lock_document(db, tenant_id, user_id, "")
    if current is None:
        return False
    content = working_memory_document(
        active_items(db, tenant_id, user_id), recent_episodes(db, tenant_id, user_id)
    )
    if content == current.content:
        return False
    archive_document(db, tenant_id, user_id, "", current, now=now)
    source_hash = hashlib.sha256(content.encode("utf-8")).hexdigest()
    write_document(
        db, tenant_id, user_id, "", content=content, mode="deterministic", source_hash=source_hash, now=now
    )
    return True


def refresh_if_mentioned(
    db: Session, tenant_id: str, user_id: str, changed: Iterable[tuple[str, str | None]], *, now: datetime
) -> bool:
    """After a change made outside the worker (the API's remember, edit or forget) replaced or ended memories
    (`changed`: the old rows' content and value), rebuild the user's document in the same transaction when it
    names one of them, so the next context block never shows the old value under "Working memory"."""
    if not names_any(db, tenant_id, user_id, changed):
        return False
    return rebuild_document(db, tenant_id, user_id, now=now)


def names_any(db: Session, tenant_id: str, user_id: str, changed: Iterable[tuple[str, str | None]]) -> bool:
    """Whether the user's document exists and names one of the `changed` memories (content or value)."""
    current = read_document(db, tenant_id, user_id)
    return current is not None and document_mentions(current.content, changed)
