"""Hybrid search over memories and indexed turns: vector and keyword candidates from SQL, fused in Python."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlmodel import Session

from core import keywords
from core.forgetting import tenant_half_lives
from core.passages import POOL_FACTOR, merge_passages
from core.scoring import TURN_IMPORTANCE, Ranked, rank
from core.timeframe import SLACK, TimeFrame, query_timeframe
from shared.db.raw import fetch_all
from shared.db.vectors import set_search_params, vector_literal
from store.embeddings import Embedder
from store.scopes import reader_where

# Candidates per ranked list (vector, keyword; memories and turns each): LoCoMo dev (tuning data only, issue
# #18), with passages at 10 x k: 40 -> 50 moved R@5 / R@10 from 75.9 / 81.9 to 76.8 / 82.4 for 44 more tokens
# per query (899 -> 943); 60 gave 82.5 at 986 tokens, 75 went past the 1,000-token cap (1,022)
CANDIDATES_PER_LIST = 50
# The second step (`expand`): seeds from the top of the first ranking, names taken from them, and the
# weight of the resulting keyword list in the fusion. Measured on the LoCoMo development conversations and
# nothing else (BENCHMARKS.md, locomo): 3 seeds, 8 names, weight 1 (a third of the query's own keyword list)
EXPANSION_SEEDS = 3
EXPANSION_TERMS = 8
EXPANSION_WEIGHT = 1.0
# The query's time frame: the weights of the in-frame vector and keyword lists (the same as the main
# lists'), and the keyword coverage an anchor ("before the move") needs to be believed
TIME_VECTOR_WEIGHT = 1.0
TIME_KEYWORD_WEIGHT = 3.0
ANCHOR_MIN_COVERAGE = 0.5
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
    expires_at: datetime | None = None  # a temporary memory's end (TTL set or inferred)
    scope: str | None = None  # a memory's: user | agent | app
    agent_id: str | None = None  # an agent-scope memory's agent
    session_id: str | None = None
    source_event_ids: list[str] = field(default_factory=list)
    source_turn_ids: list[str] = field(default_factory=list)
    # absolute relevance signals (the score above is a rank fusion, relative to the other candidates):
    # cosine similarity to the query when the hit was a vector candidate, and the share of the query's
    # keyword weight (idf) the hit holds when it was a keyword candidate (`core.relevance`)
    similarity: float | None = None
    keyword_coverage: float | None = None


_MEMORY_COLS = (
    "id, kind, category, content, status, slot, value, valid_from, valid_to, expires_at, importance, scope, "
    "agent_id, "
    "greatest(last_confirmed_at, coalesce((SELECT a.last_accessed_at FROM memory_access a "
    "WHERE a.memory_id = memories.id), last_confirmed_at)) AS touch, "
    "source_event_ids, source_turn_ids, "
    # the tenant's half-life overrides: an uncorrelated sub-select, evaluated once per statement
    "(SELECT t.settings->'half_life_days' FROM tenants t WHERE t.id = :t) AS half_life_overrides"
)


_TURN_COLS = "event_id, session_id, role, content, event_time, source_turn_id"


@dataclass
class _Source:
    """One table the search reads: memories ("m") or indexed turns ("t")."""

    prefix: str
    table: str
    where: str
    params: dict[str, Any]
    cols: str
    time_col: str  # the column a time frame bounds: a memory's valid_from, a turn's event_time
    half_lives: dict[str, float | None] | None = None  # the tenant's, read from the first memory row

    def key(self, row: Any) -> str:
        return f"m:{row.id}" if self.prefix == "m" else f"t:{row.event_id}"

    def keyword_rows(self, db: Session, tokens: Sequence[str], n: int) -> list[tuple[Any, float, float]]:
        """This source's keyword candidates alone (row, BM25, coverage), best first."""
        _, rows = candidates(
            db, table=self.table, where=self.where, params=self.params, cols=self.cols, tokens=tokens, n=n,
            vector=False,
        )  # fmt: skip
        return rows


def _note_rows(
    src: _Source,
    vector_rows: Sequence[Any],
    keyword_rows: Sequence[Any],
    rows: dict[str, Any],
    meta: dict[str, tuple[float, float | None, datetime]],
) -> None:
    """Remember each candidate row and its ranking inputs (importance, half-life, last touch)."""
    for r in (*vector_rows, *keyword_rows):
        key = src.key(r)
        if key in meta:
            continue
        rows[key] = r
        if src.prefix == "t":
            meta[key] = (TURN_IMPORTANCE, None, r.event_time)
        else:
            if src.half_lives is None:
                src.half_lives = tenant_half_lives(r.half_life_overrides)
            meta[key] = (r.importance, src.half_lives.get(r.kind), r.touch)


def _frame_bounds(
    db: Session, sources: Sequence[_Source], frame: TimeFrame
) -> tuple[datetime | None, datetime | None, int | None] | None:
    """(start, end, month of year) of a time frame; an anchor ("before the move") is looked up as a keyword
    query over the same sources, and its best match, when it holds at least ANCHOR_MIN_COVERAGE of the
    anchor's keyword weight, gives the bound. None when the frame bounds nothing."""
    if frame.anchor is None:
        return frame.start, frame.end, frame.month_of_year
    anchor_tokens = keywords.tokens(frame.anchor)
    best: tuple[float, float, datetime] | None = None  # (coverage, bm25, time)
    for src in sources:
        for r, score, share in src.keyword_rows(db, anchor_tokens, 1)[:1]:
            if share >= ANCHOR_MIN_COVERAGE and (best is None or (share, score) > best[:2]):
                best = (share, score, getattr(r, src.time_col))
    if best is None:
        return None
    at = best[2]
    return (None, at + SLACK, None) if frame.relation == "before" else (at - SLACK, None, None)


def _time_frame_lists(
    db: Session,
    sources: Sequence[_Source],
    frame: TimeFrame,
    toks: Sequence[str],
    n: int,
    rows: dict[str, Any],
    meta: dict[str, tuple[float, float | None, datetime]],
    extra: dict[str, list[tuple[float, int]]],
    similarity: dict[str, float],
    coverage: dict[str, float],
) -> None:
    """The query's candidates within its time frame, as two more ranked lists (vector, keyword). A hit found
    only here gets its cosine to the query and its keyword coverage (within the frame) like any other, so
    the context block's relevance floor judges it the same way."""
    bounds = _frame_bounds(db, sources, frame)
    if bounds is None:
        return
    start, end, month = bounds
    vector_list: list[tuple[float, str]] = []
    keyword_list: list[tuple[float, str]] = []
    for src in sources:
        params = dict(src.params)
        conditions = []
        if start is not None:
            conditions.append(f"{src.time_col} >= :frame_start")
            params["frame_start"] = start
        if end is not None:
            conditions.append(f"{src.time_col} < :frame_end")
            params["frame_end"] = end
        if month is not None:
            conditions.append(f"EXTRACT(MONTH FROM {src.time_col} AT TIME ZONE 'UTC') = :frame_month")
            params["frame_month"] = month
        if not conditions:
            return
        vector_rows, keyword_rows = candidates(
            db,
            table=src.table,
            where=f"{src.where} AND {' AND '.join(conditions)}",
            params=params,
            cols=src.cols,
            tokens=toks,
            n=n,
        )
        _note_rows(src, vector_rows, [r for r, _, _ in keyword_rows], rows, meta)
        for r in vector_rows:
            vector_list.append((float(r.dist), src.key(r)))
            similarity.setdefault(src.key(r), 1.0 - float(r.dist))
        for r, score, share in keyword_rows:
            keyword_list.append((-score, src.key(r)))
            coverage.setdefault(src.key(r), share)
    for weight, entries in ((TIME_VECTOR_WEIGHT, vector_list), (TIME_KEYWORD_WEIGHT, keyword_list)):
        for position, (_score, key) in enumerate(sorted(entries, key=lambda e: e[0])[:n], 1):
            extra.setdefault(key, []).append((weight, position))


def expansion_terms(texts: Sequence[str], *, exclude: set[str]) -> list[str]:
    """The search tokens of the names the `texts` mention (`keywords.names`), most frequent first (ties:
    first seen), without the `exclude`d ones (the query's own), at most EXPANSION_TERMS."""
    counts: dict[str, int] = {}
    for text in texts:
        for token in keywords.tokens(" ".join(keywords.names(text))):
            if token not in exclude:
                counts[token] = counts.get(token, 0) + 1
    return sorted(counts, key=lambda t: -counts[t])[:EXPANSION_TERMS]


# A memory the residual filter kept (origin 'residual', migration 0018) is a user's sentence verbatim
# (core/extraction/residual.py). While its turn is searchable the turn holds the same words with its
# neighbours around it, so the memory would only take a second result slot for them (measured on LoCoMo dev:
# R@5 -2.2 with them ranked beside their turns). Once the turn's text is scrubbed (retention) the memory is
# the only copy and is searched again.
# (NULL-safe: a memory without an origin, hand-written, distilled or older than 0018, is always searched.)
_NOT_A_SEARCHABLE_TURN = (
    "(origin IS DISTINCT FROM 'residual' OR NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant_id = "
    "memories.tenant_id AND e.event_id = ANY(memories.source_event_ids) AND e.embedding IS NOT NULL))"
)


def _memory_where(f: SearchFilters, params: dict[str, Any]) -> str:
    """`params` holds the tenant (`t`) and the user (`u`): the user's memories, the app's and, with
    `f.agent_id`, that agent's (`store.scopes.reader_where`), ranked together."""
    where = ["tenant_id = :t", reader_where(params, user_id=params["u"], agent_id=f.agent_id)]
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
        if "now" in params and set(f.statuses) == {"active"}:
            # a memory whose TTL has passed is not served as current, even before the prune archives it
            where.append("(expires_at IS NULL OR expires_at > :now)")
    if f.kinds:
        where.append("kind = ANY(:kinds)")
        params["kinds"] = list(f.kinds)
    if f.categories:
        where.append("category = ANY(:cats)")
        params["cats"] = list(f.categories)
    if f.scope:
        where.append("scope = :scope")
        params["scope"] = f.scope
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
    passages: bool = True,
    ef_search: int = 80,
    query_vector: str | None = None,
    expand: bool = False,
    time_frame: bool = True,
) -> list[SearchHit]:
    """The k best results for `query`. With `include_turns`, indexed turns compete with memories; with
    `passages` (the default), turn hits adjacent in one session come back as one result (see
    core.passages): its content is the turns in order, and it cites all of them. `query_vector` (the
    query's embedding as a vector literal) saves embedding it again when the caller has it already.

    Two further signals join the fusion (each one more ranked list, `Ranked.extra`):
    - `time_frame`: when the query names a time ("last month", "in July 2023", "去年", "before the move";
      `core.timeframe`), the candidates of that span of event time, counted from `filters.as_of` or `now`;
    - `expand` (with `include_turns`): a second keyword retrieval seeded by the first ranking's top
      results: the query's words plus the names those results mention (`expansion_terms`), so that a
      question about "the games Nate plays" also finds the turns that name the games the first hits named.
    """
    f = filters or SearchFilters()
    vec = query_vector or vector_literal(embedder.embed_query(query))
    toks = keywords.tokens(query)[:64]
    n = max(CANDIDATES_PER_LIST, k * 3)
    set_search_params(db, ef_search=max(ef_search, n))
    sources: list[_Source] = []
    if include_memories:
        params: dict[str, Any] = {"t": tenant_id, "u": user_id, "v": vec, "n": n, "now": now}
        mwhere = _memory_where(f, params)
        if include_turns:
            mwhere += " AND " + _NOT_A_SEARCHABLE_TURN
        sources.append(_Source("m", "memories", mwhere, params, _MEMORY_COLS, "valid_from"))
    if include_turns:
        tparams: dict[str, Any] = {"t": tenant_id, "u": user_id, "v": vec, "n": n}
        twhere = "tenant_id = :t AND user_id = :u AND embedding IS NOT NULL"
        if f.as_of is not None:
            twhere += " AND event_time <= :as_of"
            tparams["as_of"] = f.as_of
        sources.append(_Source("t", "events", twhere, tparams, _TURN_COLS, "event_time"))
    # One list per signal across memories and turns, ordered by the signal's own score: a short list of
    # memories must not put its first item level with the best turn just for being first in its list.
    vector_list: list[tuple[float, str]] = []  # (distance, key)
    keyword_list: list[tuple[float, str]] = []  # (-bm25, key)
    rows: dict[str, Any] = {}
    meta: dict[str, tuple[float, float | None, datetime]] = {}  # key -> (importance, half-life, touch)
    similarity: dict[str, float] = {}
    coverage: dict[str, float] = {}
    for src in sources:
        vector_rows, keyword_rows = candidates(
            db, table=src.table, where=src.where, params=src.params, cols=src.cols, tokens=toks, n=n
        )
        _note_rows(src, vector_rows, [r for r, _, _ in keyword_rows], rows, meta)
        for r in vector_rows:
            key = src.key(r)
            vector_list.append((float(r.dist), key))
            similarity[key] = 1.0 - float(r.dist)
        for r, score, share in keyword_rows:
            key = src.key(r)
            keyword_list.append((-score, key))
            coverage[key] = share
    ranks: dict[str, dict[str, int]] = {}
    for signal, entries in (("vector", vector_list), ("keyword", keyword_list)):
        for position, (_score, key) in enumerate(sorted(entries, key=lambda e: e[0])[:n], 1):
            ranks.setdefault(key, {})[signal] = position
    extra: dict[str, list[tuple[float, int]]] = {}
    frame = query_timeframe(query, f.as_of or now) if time_frame else None
    if frame is not None:
        _time_frame_lists(db, sources, frame, toks, n, rows, meta, extra, similarity, coverage)
    merging = include_turns and passages
    pool = k * POOL_FACTOR if merging else k

    def ranking() -> list[tuple[Ranked, float]]:
        items = [
            Ranked(
                key,
                *meta[key],
                vector_rank=ranks.get(key, {}).get("vector"),
                keyword_rank=ranks.get(key, {}).get("keyword"),
                extra=tuple(extra.get(key, ())),
            )
            for key in meta
            if key in ranks or key in extra  # a row cut from every list it was on is no candidate
        ]
        return rank(items, now=now, k=pool, keyword_weight=KEYWORD_WEIGHT)

    ranked = ranking()
    if expand and include_turns and ranked:
        seeds = [rows[item.key] for item, _ in ranked[:EXPANSION_SEEDS]]
        terms = expansion_terms([r.content for r in seeds], exclude=set(toks))
        if terms:
            for src in sources:
                keyword_rows = src.keyword_rows(db, (toks + terms)[:64], n)
                _note_rows(src, [], [r for r, _, _ in keyword_rows], rows, meta)
                for position, (r, _score, _share) in enumerate(keyword_rows, 1):
                    extra.setdefault(src.key(r), []).append((EXPANSION_WEIGHT, position))
            ranked = ranking()
    scores = {item.key: score for item, score in ranked}
    keys = [item.key for item, _ in ranked]
    if merging:
        turn_keys = [key for key in keys if key.startswith("t:")]
        previous, following = turn_neighbours(db, tenant_id, user_id, [rows[key] for key in turn_keys])
        groups = merge_passages(
            keys,
            is_turn={key: key.startswith("t:") for key in keys},
            previous={key: _turn_key(previous.get(rows[key].event_id)) for key in turn_keys},
            following={key: _turn_key(following.get(rows[key].event_id)) for key in turn_keys},
            k=k,
        )
    else:
        groups = [[key] for key in keys]
    order = {key: i for i, key in enumerate(keys)}
    hits = []
    for group in groups:
        best = min(group, key=order.__getitem__)
        if best.startswith("m:"):
            hit = _memory_hit(rows[best], scores[best])
        else:
            hit = _turn_hit([rows[key] for key in group], rows[best], scores[best])
        # a passage is as relevant as its most relevant turn
        sims = [similarity[key] for key in group if key in similarity]
        shares = [coverage[key] for key in group if key in coverage]
        hit.similarity = round(max(sims), 6) if sims else None
        hit.keyword_coverage = round(max(shares), 6) if shares else None
        hits.append(hit)
    return hits


def _turn_key(event_id: str | None) -> str | None:
    return None if event_id is None else f"t:{event_id}"


def _memory_hit(r: Any, score: float) -> SearchHit:
    return SearchHit(
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
        expires_at=r.expires_at,
        scope=r.scope,
        agent_id=r.agent_id,
        source_event_ids=list(r.source_event_ids or []),
        source_turn_ids=list(r.source_turn_ids or []),
    )


def _turn_hit(span: Sequence[Any], best: Any, score: float) -> SearchHit:
    """One turn, or a passage of consecutive turns (in conversation order) identified by its best turn."""
    return SearchHit(
        id=best.event_id,
        type="turn",
        content="\n".join(f"{r.role}: {r.content}" for r in span),
        score=round(score, 6),
        valid_from=span[0].event_time,
        session_id=best.session_id,
        source_event_ids=[r.event_id for r in span],
        source_turn_ids=[r.source_turn_id for r in span if r.source_turn_id],
    )


_NEIGHBOURS = (
    # each turn's previous and next turn in its session, in the extraction window's order; the
    # (tenant_id, user_id, event_time) index bounds both scans
    "SELECT c.id, "
    "(SELECT e.event_id FROM events e WHERE e.tenant_id = :t AND e.user_id = :u AND e.session_id = c.sid "
    " AND e.type = 'turn' AND e.event_time <= c.ts AND (e.event_time < c.ts OR e.event_id < c.id) "
    " ORDER BY e.event_time DESC, e.event_id DESC LIMIT 1) AS previous, "
    "(SELECT e.event_id FROM events e WHERE e.tenant_id = :t AND e.user_id = :u AND e.session_id = c.sid "
    " AND e.type = 'turn' AND e.event_time >= c.ts AND (e.event_time > c.ts OR e.event_id > c.id) "
    " ORDER BY e.event_time, e.event_id LIMIT 1) AS following "
    "FROM unnest(CAST(:ids AS text[]), CAST(:sids AS text[]), CAST(:ts AS timestamptz[])) AS c(id, sid, ts)"
)


def turn_neighbours(
    db: Session, tenant_id: str, user_id: str, turns: Sequence[Any]
) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """(previous, following): each given turn's neighbour event ids in its session (None at the ends)."""
    if not turns:
        return {}, {}
    previous: dict[str, str | None] = {}
    following: dict[str, str | None] = {}
    for event_id, before, after in fetch_all(
        db,
        _NEIGHBOURS,
        {
            "t": tenant_id,
            "u": user_id,
            "ids": [r.event_id for r in turns],
            "sids": [r.session_id for r in turns],
            "ts": [r.event_time for r in turns],
        },
    ):
        previous[event_id], following[event_id] = before, after
    return previous, following


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
    idf = idf_weights(query_tokens, df=df, n_docs=n_docs)
    scores = []
    for tokens in doc_tokens:
        norm = (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + BM25_B * len(tokens) / max(avgdl, 1.0)))
        scores.append(sum(idf[t] for t in idf if t in tokens) * norm)
    return scores


def idf_weights(query_tokens: Sequence[str], *, df: dict[str, int], n_docs: int) -> dict[str, float]:
    """Robertson-Sparck Jones idf of each distinct query token over the user's `n_docs` documents."""
    return {t: math.log(1 + (n_docs - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in set(query_tokens)}


def keyword_coverage(doc_tokens: Sequence[set[str]], idf: dict[str, float]) -> list[float]:
    """The share of the query's keyword weight each document holds: sum of the idf of the query tokens it
    contains over the sum of all of them (pure). Unlike BM25 it is absolute: 1.0 holds every query token,
    and a document sharing only a token that most documents hold (a speaker's name) stays near 0."""
    total = sum(idf.values())
    if total <= 0:
        return [0.0 for _ in doc_tokens]
    return [sum(w for t, w in idf.items() if t in tokens) / total for tokens in doc_tokens]


def candidates(
    db: Session,
    *,
    table: str,
    where: str,
    params: dict[str, Any],
    cols: str,
    tokens: Sequence[str],
    n: int,
    vector: bool = True,
) -> tuple[list[Any], list[tuple[Any, float, float]]]:
    """One table's candidates in one statement: the `n` nearest rows by vector distance (column `dist`), and
    the keyword rows (row, BM25 score, keyword coverage) best first, at most `n`, ranked with the user's own
    statistics.

    PostgreSQL's ts_rank has no inverse document frequency: a token every turn shares (a speaker's name,
    "user") counts as much as a rare one. Keyword candidates come from the GIN index (any shared token); the
    user's document count and mean length come with them, and the scores are computed here.

    A query token's document frequency is the number of the user's rows holding it, and every such row
    matches the keyword query: when the pool holds every match (at most KEYWORD_POOL), the frequencies are
    counted in the pool's own lexemes. Only a larger match set makes the statement count them per token.
    With `vector=False` only the keyword rows are fetched (the vector list comes back empty)."""
    vector_sql = (
        f"SELECT 'v' AS src, {cols}, embedding <=> CAST(:v AS vector) AS dist, NULL::text AS lexemes, "
        "NULL::bigint AS n_docs, NULL::float8 AS avgdl, NULL::json AS df "
        f"FROM {table} WHERE {where} ORDER BY embedding <=> CAST(:v AS vector) LIMIT :n"
    )
    if not tokens:
        return (fetch_all(db, vector_sql, params) if vector else []), []
    if not vector:  # the same statement's shape, without the vector scan
        vector_sql = vector_sql.replace("LIMIT :n", "LIMIT 0")
    names = _output_names(cols)
    sql = (
        "WITH st AS MATERIALIZED (SELECT count(*) AS n_docs, coalesce(avg(length(search_tokens)), 1) AS avgdl "
        f"  FROM {table} WHERE {where} AND search_tokens IS NOT NULL), "
        "dfs AS (SELECT json_object_agg(q.tok, (SELECT count(*) FROM "
        f"  {table} WHERE {where} AND search_tokens @@ to_tsquery('simple', quote_literal(q.tok)))) AS df "
        "  FROM unnest(CAST(:toks AS text[])) AS q(tok)), "
        f"kw AS (SELECT {cols}, search_tokens::text AS lexemes, count(*) OVER () AS n_match FROM {table} "
        f"  WHERE {where} AND search_tokens @@ to_tsquery('simple', :q) "
        "  ORDER BY ts_rank_cd(search_tokens, to_tsquery('simple', :q)) DESC LIMIT :pool) "
        f"({vector_sql}) "
        f"UNION ALL SELECT 'k', {', '.join('kw.' + name for name in names)}, NULL, kw.lexemes, NULL, NULL, NULL "
        "FROM kw "
        # the statistics once, in a row of their own (only when some row matched a token); the per-token
        # counts only when the pool was cut (a sub-select runs only when its value is needed)
        f"UNION ALL SELECT 's', {', '.join(['NULL'] * len(names))}, NULL, NULL, st.n_docs, st.avgdl, "
        "CASE WHEN (SELECT max(n_match) FROM kw) > :pool THEN (SELECT df FROM dfs) END "
        "FROM st WHERE EXISTS (SELECT 1 FROM kw)"
    )
    rows = fetch_all(
        db,
        sql,
        {**params, "toks": list(tokens), "q": " | ".join(f"'{t}'" for t in tokens), "pool": KEYWORD_POOL},
    )
    vector_rows = [r for r in rows if r.src == "v"]
    keyword = [r for r in rows if r.src == "k"]
    stats = next((r for r in rows if r.src == "s"), None)
    if not keyword or stats is None:
        return vector_rows, []
    doc_tokens = [{m.replace("''", "'") for m in _LEXEME.findall(r.lexemes or "")} for r in keyword]
    if stats.df is None:  # the pool holds every row that holds a query token
        df = {t: sum(t in d for d in doc_tokens) for t in set(tokens)}
    else:
        df = {str(t): int(c) for t, c in stats.df.items()}
    scores = bm25_scores(doc_tokens, tokens, df=df, n_docs=int(stats.n_docs), avgdl=float(stats.avgdl))
    shares = keyword_coverage(doc_tokens, idf_weights(tokens, df=df, n_docs=int(stats.n_docs)))
    order = sorted(range(len(keyword)), key=lambda i: -scores[i])
    return vector_rows, [(keyword[i], scores[i], shares[i]) for i in order[:n] if scores[i] > 0]


@functools.lru_cache(maxsize=64)
def _output_names(cols: str) -> list[str]:
    """The output names of a select list: "a, f(x, y) AS b" -> ["a", "b"]."""
    names = []
    depth, current = 0, ""
    for ch in cols + ",":
        if ch == "," and depth == 0:
            names.append(current.strip().rsplit(" AS ", 1)[-1].strip())
            current = ""
            continue
        depth += (ch == "(") - (ch == ")")
        current += ch
    return names
