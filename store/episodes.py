"""Episodes (`episodes`): one per closed session, what happened, its outcome and lesson, searchable; listed,
edited and deleted one by one by their user.

A deleted episode stays as a tombstone (`deleted_at`, its text, embedding and keyword document cleared) so
that closing its session again cannot write it back; an edited one (`edited_at`) is not overwritten by a later
close. Every read here leaves deleted episodes out.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlmodel import Session

from core import keywords
from core.episodes import EpisodeText
from core.extraction.candidates import Turn
from shared.db.vectors import vector_literal
from store.embeddings import Embedder
from store.sessions import ClosingSession


def upsert_episode(
    db: Session,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    session: ClosingSession,
    episode: EpisodeText,
    turns: Sequence[Turn],
    mode: str,
    vector: str,
    now: datetime,
) -> None:
    """Write the session's episode, or rewrite it when the session was closed before: one per session.
    `vector` is the pgvector literal of the episode's text; its lineage is `turns`."""
    db.execute(
        text(
            "INSERT INTO episodes (tenant_id, user_id, agent_id, session_id, started_at, ended_at, what_happened, "
            "outcome, lesson, source_event_ids, source_turn_ids, mode, embedding, search_tokens, created_at) "
            "VALUES (:t, :u, :a, :s, :st, :en, :w, :o, :l, :se, :tt, :m, CAST(:v AS vector), "
            "to_tsvector('simple', :doc), :now) ON CONFLICT (tenant_id, user_id, session_id) DO UPDATE SET "
            "ended_at = excluded.ended_at, what_happened = excluded.what_happened, outcome = excluded.outcome, "
            "lesson = excluded.lesson, source_event_ids = excluded.source_event_ids, "
            "source_turn_ids = excluded.source_turn_ids, mode = excluded.mode, embedding = excluded.embedding, "
            "search_tokens = excluded.search_tokens, archived_at = NULL "
            # what the user deleted or edited stays as they left it
            "WHERE episodes.deleted_at IS NULL AND episodes.edited_at IS NULL"
        ),
        {
            "t": tenant_id,
            "u": user_id,
            "s": session_id,
            "a": session.agent_id,
            "st": session.first_event_at,
            "en": session.last_event_at,
            "w": episode.what_happened,
            "o": episode.outcome,
            "l": episode.lesson,
            "se": [t.event_id for t in turns],
            "tt": [t.source_turn_id for t in turns if t.source_turn_id],
            "m": mode,
            "v": vector,
            "doc": keywords.document(episode.as_text()),
            "now": now,
        },
    )


def recent_episodes(db: Session, tenant_id: str, user_id: str) -> list[EpisodeText]:
    """The user's ten latest episodes, newest first."""
    return [
        EpisodeText(*r)
        for r in db.execute(
            text(
                "SELECT what_happened, outcome, lesson FROM episodes WHERE tenant_id = :t AND user_id = :u "
                "AND deleted_at IS NULL AND archived_at IS NULL ORDER BY ended_at DESC NULLS LAST LIMIT 10"
            ),
            {"t": tenant_id, "u": user_id},
        ).all()
    ]


@dataclass(frozen=True)
class EpisodeView:
    """An episode as its user sees it."""

    id: uuid.UUID
    user_id: str
    agent_id: str | None
    session_id: str
    started_at: datetime | None
    ended_at: datetime | None
    what_happened: str
    outcome: str
    lesson: str
    mode: str
    source_event_ids: list[str]
    created_at: datetime
    edited_at: datetime | None
    archived_at: datetime | None  # decayed (not used for several half-lives): out of context until purged


_VIEW = (
    "SELECT id, user_id, agent_id, session_id, started_at, ended_at, what_happened, outcome, lesson, mode, "
    "source_event_ids, created_at, edited_at, archived_at FROM episodes"
)
EDITABLE = ("what_happened", "outcome", "lesson")


def list_episodes(
    db: Session, tenant_id: str, user_id: str, *, limit: int = 50, offset: int = 0
) -> tuple[list[EpisodeView], bool]:
    """The user's episodes, latest first (deleted ones left out), and whether more follow."""
    rows = db.execute(
        text(
            f"{_VIEW} WHERE tenant_id = :t AND user_id = :u AND deleted_at IS NULL "
            "ORDER BY ended_at DESC NULLS LAST, id LIMIT :n OFFSET :o"
        ),
        {"t": tenant_id, "u": user_id, "n": limit + 1, "o": offset},
    ).all()
    return [EpisodeView(*r) for r in rows[:limit]], len(rows) > limit


def get_episode(db: Session, tenant_id: str, episode_id: uuid.UUID | str) -> EpisodeView | None:
    """One episode of the tenant, None when there is none (or it was deleted)."""
    row = db.execute(
        text(f"{_VIEW} WHERE tenant_id = :t AND id = :id AND deleted_at IS NULL"),
        {"t": tenant_id, "id": str(episode_id)},
    ).first()
    return EpisodeView(*row) if row else None


def edit_episode(
    db: Session,
    tenant_id: str,
    episode: EpisodeView,
    *,
    changes: dict[str, str],
    embedder: Embedder,
    now: datetime,
) -> None:
    """Change an episode's what_happened, outcome or lesson; its embedding and keyword document follow the
    new text, and a later close of its session leaves it as edited."""
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise ValueError(f"not editable: {sorted(unknown)}")
    current = {k: getattr(episode, k) for k in EDITABLE}
    new_text = EpisodeText(**{**current, **changes}).as_text()
    assignments = ", ".join(f"{k} = :{k}" for k in changes)
    db.execute(
        text(
            f"UPDATE episodes SET {assignments}, edited_at = :now, embedding = CAST(:v AS vector), "
            "search_tokens = to_tsvector('simple', :doc) WHERE tenant_id = :t AND id = :id"
        ),
        {
            **changes,
            "now": now,
            "v": vector_literal(embedder.embed([new_text])[0]),
            "doc": keywords.document(new_text),
            "t": tenant_id,
            "id": str(episode.id),
        },
    )


def delete_episode(db: Session, tenant_id: str, episode_id: uuid.UUID | str, *, now: datetime) -> bool:
    """Delete an episode for good: its text, embedding and keyword document go; the row stays as a
    tombstone, so closing its session again does not bring it back. False when there was none."""
    result = db.execute(
        text(
            "UPDATE episodes SET deleted_at = :now, what_happened = '', outcome = '', lesson = '', "
            "embedding = NULL, search_tokens = NULL, source_turn_ids = '{}' "
            "WHERE tenant_id = :t AND id = :id AND deleted_at IS NULL"
        ),
        {"now": now, "t": tenant_id, "id": str(episode_id)},
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]
