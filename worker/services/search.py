"""Hybrid search over memories and indexed turns: vector and keyword candidates from SQL, fused in Python."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlmodel import Session

from worker.embeddings import Embedder
from worker.memory import keywords
from worker.memory.scoring import TURN_IMPORTANCE, Ranked, rank
from worker.services.memories import set_search_params, vector_literal

CANDIDATES_PER_LIST = 40
# BM25 outranks single-turn MiniLM on conversational recall (LoCoMo dev: 52.5 vs 40.1 R@5 over raw turns);
# equal-weight fusion scored below BM25 alone, a keyword weight of 3 above both (BENCHMARKS.md)
KEYWORD_WEIGHT = 3.0


@dataclass
class SearchFilters:
    kinds: Sequence[str] = ()
    categories: Sequence[str] = ()
    scope: str | None = None
    agent_id: str | None = None
    statuses: Sequence[str] = ("active",)
    as_of: datetime | None = None


@dataclass
class SearchHit:
    id: str
    type: str  # memory | turn
    content: str
    score: float
    kind: str | None = None
    category: str | None = None
    status: str | None = None
    slot: str | None = None
    value: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    session_id: str | None = None
    source_event_ids: list[str] = field(default_factory=list)
    source_turn_ids: list[str] = field(default_factory=list)


_MEMORY_COLS = (
    "id, kind, category, content, status, slot, value, valid_from, valid_to, importance, half_life_days, "
    "greatest(last_confirmed_at, coalesce(last_accessed_at, last_confirmed_at)) AS touch, "
    "source_event_ids, source_turn_ids"
)


def _memory_where(f: SearchFilters, params: dict[str, Any]) -> str:
    where = ["tenant_id = :t", "user_id = :u"]
    if f.as_of is not None:
        # what was current then (valid time, from the events' own times), whatever happened later;
        # forgotten memories stay forgotten for every as_of
        where += [
            "valid_from <= :as_of",
            "(valid_to IS NULL OR valid_to > :as_of)",
            "status <> 'deleted'",
        ]
        params["as_of"] = f.as_of
    else:
        where.append("status = ANY(:statuses)")
        params["statuses"] = list(f.statuses)
    if f.kinds:
        where.append("kind = ANY(:kinds)")
        params["kinds"] = list(f.kinds)
    if f.categories:
        where.append("category = ANY(:cats)")
        params["cats"] = list(f.categories)
    if f.scope:
        where.append("scope = :scope")
        params["scope"] = f.scope
    if f.agent_id:
        where.append("(agent_id IS NULL OR agent_id = :agent)")
        params["agent"] = f.agent_id
    return " AND ".join(where)


def search(
    db: Session,
    *,
    tenant_id: str,
    user_id: str,
    query: str,
    k: int,
    embedder: Embedder,
    now: datetime,
    filters: SearchFilters | None = None,
    include_memories: bool = True,
    include_turns: bool = False,
    ef_search: int = 80,
) -> list[SearchHit]:
    f = filters or SearchFilters()
    vec = vector_literal(embedder.embed_query(query))
    toks = keywords.tokens(query)[:64]
    n = max(CANDIDATES_PER_LIST, k * 3)
    set_search_params(db, ef_search=max(ef_search, n))
    # One list per signal across memories and turns, ordered by the signal's own score: a short list of
    # memories must not put its first item level with the best turn just for being first in its list.
    vector_list: list[tuple[float, str, Any, dict[str, Any]]] = []  # (distance, key, row, meta)
    keyword_list: list[tuple[float, str, Any, dict[str, Any]]] = []  # (-bm25, key, row, meta)
    if include_memories:
        params: dict[str, Any] = {"t": tenant_id, "u": user_id, "v": vec, "n": n}
        where = _memory_where(f, params)
        vector_rows = db.execute(
            text(
                f"SELECT {_MEMORY_COLS}, embedding <=> CAST(:v AS vector) AS dist FROM memories WHERE {where} "
                "ORDER BY embedding <=> CAST(:v AS vector) LIMIT :n"
            ),
            params,
        ).all()
        for r in vector_rows:
            meta = {"importance": r.importance, "half_life": r.half_life_days, "touch": r.touch}
            vector_list.append((float(r.dist), f"m:{r.id}", r, meta))
        if toks:
            for r, score in bm25_ranked(
                db, table="memories", where=where, params=params, cols=_MEMORY_COLS, tokens=toks, n=n
            ):
                meta = {"importance": r.importance, "half_life": r.half_life_days, "touch": r.touch}
                keyword_list.append((-score, f"m:{r.id}", r, meta))
    if include_turns:
        tparams: dict[str, Any] = {"t": tenant_id, "u": user_id, "v": vec, "n": n}
        twhere = "tenant_id = :t AND user_id = :u AND embedding IS NOT NULL"
        if f.as_of is not None:
            twhere += " AND event_time <= :as_of"
            tparams["as_of"] = f.as_of
        cols = "event_id, session_id, role, content, event_time, source_turn_id"
        for r in db.execute(
            text(
                f"SELECT {cols}, embedding <=> CAST(:v AS vector) AS dist FROM events WHERE {twhere} "
                "ORDER BY embedding <=> CAST(:v AS vector) LIMIT :n"
            ),
            tparams,
        ).all():
            meta = {"importance": TURN_IMPORTANCE, "half_life": None, "touch": r.event_time}
            vector_list.append((float(r.dist), f"t:{r.event_id}", r, meta))
        if toks:
            for r, score in bm25_ranked(
                db, table="events", where=twhere, params=tparams, cols=cols, tokens=toks, n=n
            ):
                meta = {"importance": TURN_IMPORTANCE, "half_life": None, "touch": r.event_time}
                keyword_list.append((-score, f"t:{r.event_id}", r, meta))
    items: dict[str, Ranked] = {}
    rows: dict[str, Any] = {}
    ranks: dict[str, dict[str, int]] = {}
    for signal, entries in (("vector", vector_list), ("keyword", keyword_list)):
        for position, (_score, key, row, meta) in enumerate(sorted(entries, key=lambda e: e[0])[:n], 1):
            ranks.setdefault(key, {})[signal] = position
            rows[key] = row
            items[key] = Ranked(key, meta["importance"], meta["half_life"], meta["touch"])
    for key, item in items.items():
        items[key] = Ranked(
            item.key,
            item.importance,
            item.half_life_days,
            item.last_touch,
            vector_rank=ranks[key].get("vector"),
            keyword_rank=ranks[key].get("keyword"),
        )
    hits = []
    for item, score in rank(list(items.values()), now=now, k=k, keyword_weight=KEYWORD_WEIGHT):
        r = rows[item.key]
        if item.key.startswith("m:"):
            hits.append(
                SearchHit(
                    id=str(r.id),
                    type="memory",
                    content=r.content,
                    score=round(score, 6),
                    kind=r.kind,
                    category=r.category,
                    status=r.status,
                    slot=r.slot,
                    value=r.value,
                    valid_from=r.valid_from,
                    valid_to=r.valid_to,
                    source_event_ids=list(r.source_event_ids or []),
                    source_turn_ids=list(r.source_turn_ids or []),
                )
            )
        else:
            hits.append(
                SearchHit(
                    id=r.event_id,
                    type="turn",
                    content=f"{r.role}: {r.content}",
                    score=round(score, 6),
                    valid_from=r.event_time,
                    session_id=r.session_id,
                    source_event_ids=[r.event_id],
                    source_turn_ids=[r.source_turn_id] if r.source_turn_id else [],
                )
            )
    return hits


BM25_K1, BM25_B = 1.2, 0.75
KEYWORD_POOL = 300  # rows pre-selected by any shared token before BM25 scoring
_LEXEME = re.compile(r"'((?:[^']|'')*)'")


def bm25_scores(
    doc_tokens: Sequence[set[str]],
    query_tokens: Sequence[str],
    *,
    df: dict[str, int],
    n_docs: int,
    avgdl: float,
) -> list[float]:
    """BM25 (Robertson-Sparck Jones idf, k1 = 1.2, b = 0.75) over token sets (pure).

    Documents store distinct tokens, so term frequency is 1 and a document's length is its token count."""
    idf = {t: math.log(1 + (n_docs - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in set(query_tokens)}
    scores = []
    for tokens in doc_tokens:
        norm = (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + BM25_B * len(tokens) / max(avgdl, 1.0)))
        scores.append(sum(idf[t] for t in idf if t in tokens) * norm)
    return scores


def bm25_ranked(
    db: Session, *, table: str, where: str, params: dict[str, Any], cols: str, tokens: Sequence[str], n: int
) -> list[tuple[Any, float]]:
    """Keyword results (row, score) ranked by BM25 with the user's own document frequencies.

    PostgreSQL's ts_rank has no inverse document frequency: a token every turn shares (a speaker's name, "user")
    counts as much as a rare one. Candidates come from the GIN index (any shared token); statistics and scores
    are computed here."""
    tsq = " | ".join(f"'{t}'" for t in tokens)
    stats = db.execute(
        text(
            f"SELECT count(*), coalesce(avg(length(search_tokens)), 1) FROM {table} "
            f"WHERE {where} AND search_tokens IS NOT NULL"
        ),
        params,
    ).one()
    df = {
        str(tok): int(count)
        for tok, count in db.execute(
            text(
                f"SELECT q.tok, (SELECT count(*) FROM {table} WHERE {where} AND "
                "search_tokens @@ to_tsquery('simple', quote_literal(q.tok))) "
                "FROM unnest(CAST(:toks AS text[])) AS q(tok)"
            ),
            {**params, "toks": list(tokens)},
        ).all()
    }
    rows = db.execute(
        text(
            f"SELECT {cols}, search_tokens::text AS lexemes FROM {table} WHERE {where} AND "
            "search_tokens @@ to_tsquery('simple', :q) "
            "ORDER BY ts_rank_cd(search_tokens, to_tsquery('simple', :q)) DESC LIMIT :pool"
        ),
        {**params, "q": tsq, "pool": KEYWORD_POOL},
    ).all()
    doc_tokens = [{m.replace("''", "'") for m in _LEXEME.findall(r.lexemes or "")} for r in rows]
    scores = bm25_scores(doc_tokens, tokens, df=df, n_docs=int(stats[0]), avgdl=float(stats[1]))
    order = sorted(range(len(rows)), key=lambda i: -scores[i])
    return [(rows[i], scores[i]) for i in order[:n] if scores[i] > 0]


def record_access(db: Session, counts: dict[str, int], *, now: datetime) -> int:
    """Apply buffered access counts in one UPDATE (reads never write one row at a time)."""
    if not counts:
        return 0
    ids, hits = zip(*counts.items(), strict=True)
    result = db.execute(
        text(
            "UPDATE memories m SET access_count = access_count + v.n, last_accessed_at = :now "
            "FROM unnest(CAST(:ids AS uuid[]), CAST(:ns AS int[])) AS v(id, n) WHERE m.id = v.id"
        ),
        {"ids": list(ids), "ns": list(hits), "now": now},
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
