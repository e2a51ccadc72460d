"""Episodes (`episodes`): one per closed session, what happened, its outcome and lesson, searchable."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import text
from sqlmodel import Session

from core import keywords
from core.episodes import EpisodeText
from core.extraction.candidates import Turn
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
            "search_tokens = excluded.search_tokens"
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
                "ORDER BY ended_at DESC NULLS LAST LIMIT 10"
            ),
            {"t": tenant_id, "u": user_id},
        ).all()
    ]
