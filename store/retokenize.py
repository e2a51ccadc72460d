"""Keep the stored keyword tokens in step with the tokenizer (`core.keywords.TOKENIZER_VERSION`).

Every memory, episode and indexed turn stores its keyword document as a `tsvector` (`search_tokens`), made by
`core.keywords` when the row was written; a query is tokenized by the same code when it is asked. When the
tokenizer changes (version 2 folds "live" / "lives" / "lived" onto one stem, which version 1 did not), rows
written before the change no longer meet the queries of the new code on those words. So the version the stored
tokens were made with is recorded in `schema_meta.tokenizer_version`, and `memctl migrate` (run by `memctl
up` and by docker compose's `migrate` service) rewrites every stored document from its source text when it
differs (`ensure_current_tokens`). Migration 0019 records version 1 for a database that already held tokens;
a database with none gets the current version the first time this runs.

The rewrite is idempotent (each document is recomputed from the row's own text, as the writers make it), runs
in batches of its own transactions, and can be stopped and run again: the version is recorded only at the
end. Workers and the API keep serving meanwhile; until it ends, a word whose stem changed matches only the
rows already rewritten. `memctl retokenize` runs it on demand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import structlog
from sqlalchemy import Engine, text

from core import keywords
from core.episodes import EpisodeText
from shared.db.engine import session_scope
from store.memories import keyword_document

log = structlog.get_logger("store.retokenize")

META_KEY = "tokenizer_version"


@dataclass(frozen=True)
class _Table:
    name: str
    key: tuple[str, ...]  # keyset order of the batches


_TABLES = (
    _Table("memories", ("id",)),
    _Table("episodes", ("id",)),
    _Table("events", ("tenant_id", "event_id")),
)


def stored_version(engine: Engine) -> int | None:
    """The tokenizer version the stored tokens were made with; None when nothing records one (a database
    that held no tokens when migration 0019 ran)."""
    with session_scope(engine) as db:
        value = db.execute(text("SELECT value FROM schema_meta WHERE key = :k"), {"k": META_KEY}).scalar()
    return int(value) if value else None


def _record_version(engine: Engine, version: int) -> None:
    with session_scope(engine) as db:
        db.execute(
            text(
                "INSERT INTO schema_meta (key, value) VALUES (:k, :v) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ),
            {"k": META_KEY, "v": str(version)},
        )


def _batch(
    engine: Engine, table: _Table, after: tuple[str, ...] | None, size: int
) -> tuple[tuple[str, ...] | None, int]:
    """Rewrite the next `size` documents of `table` after the key `after`; return the last key (None at the
    end) and the rows rewritten."""
    cols = ", ".join(table.key)
    where = "search_tokens IS NOT NULL"
    params: dict[str, object] = {"n": size}
    keys: list[tuple[str, ...]]
    if after is not None:
        # the keys compared as the column's own type, so that the primary key's index serves the keyset
        marks = ", ".join(f"CAST(:k{i} AS uuid)" if table.key == ("id",) else f":k{i}" for i in range(len(after)))
        where += f" AND ({cols}) > ({marks})"
        params.update({f"k{i}": v for i, v in enumerate(after)})
    with session_scope(engine) as db:
        if table.name == "memories":
            rows = db.execute(
                text(
                    f"SELECT id::text AS k0, content, slot FROM memories WHERE {where} ORDER BY {cols} LIMIT :n"
                ),
                params,
            ).all()
            docs = [keyword_document(r.content or "", r.slot) for r in rows]
            keys = [(r.k0,) for r in rows]
        elif table.name == "episodes":
            rows = db.execute(
                text(
                    "SELECT id::text AS k0, what_happened, outcome, lesson FROM episodes "
                    f"WHERE {where} ORDER BY {cols} LIMIT :n"
                ),
                params,
            ).all()
            docs = [
                keywords.document(EpisodeText(r.what_happened or "", r.outcome or "", r.lesson or "").as_text())
                for r in rows
            ]
            keys = [(r.k0,) for r in rows]
        else:
            # a turn is indexed under its own words and those of the turn before it in its session
            # (`worker.services.window.keyword_contexts`)
            rows = db.execute(
                text(
                    "SELECT e.tenant_id AS k0, e.event_id AS k1, e.content, ("
                    "  SELECT p.content FROM events p WHERE p.tenant_id = e.tenant_id AND p.user_id = e.user_id "
                    "  AND p.session_id = e.session_id AND p.type = 'turn' "
                    "  AND (p.event_time, p.event_id) < (e.event_time, e.event_id) "
                    "  ORDER BY p.event_time DESC, p.event_id DESC LIMIT 1) AS previous "
                    f"FROM events e WHERE {where.replace('search_tokens', 'e.search_tokens')} "
                    f"ORDER BY {', '.join('e.' + c for c in table.key)} LIMIT :n"
                ),
                params,
            ).all()
            docs = [
                keywords.document(f"{r.previous}\n{r.content}" if r.previous else r.content or "")
                for r in rows
            ]
            keys = [(r.k0, r.k1) for r in rows]
        if not rows:
            return None, 0
        if table.name == "events":
            db.execute(
                text(
                    "UPDATE events e SET search_tokens = to_tsvector('simple', v.doc) "
                    "FROM unnest(CAST(:t AS text[]), CAST(:ids AS text[]), CAST(:docs AS text[])) AS v(t, id, doc) "
                    "WHERE e.tenant_id = v.t AND e.event_id = v.id"
                ),
                {"t": [k[0] for k in keys], "ids": [k[1] for k in keys], "docs": docs},
            )
        else:
            db.execute(
                text(
                    f"UPDATE {table.name} x SET search_tokens = to_tsvector('simple', v.doc) "
                    "FROM unnest(CAST(:ids AS uuid[]), CAST(:docs AS text[])) AS v(id, doc) WHERE x.id = v.id"
                ),
                {"ids": [k[0] for k in keys], "docs": docs},
            )
    return keys[-1], len(keys)


def counts_text(counts: dict[str, int]) -> str:
    """The rows a rewrite touched, for an operator: "1,204 memories, 3 episodes, 9,110 events"."""
    return ", ".join(f"{n:,} {table}" for table, n in counts.items())


def retokenize(
    engine: Engine, *, batch: int = 1000, progress: Callable[[str, int], None] | None = None
) -> dict[str, int]:
    """Rewrite every stored keyword document with the current tokenizer, then record its version; return
    the rows rewritten per table. `progress(table, rows)` is called after each batch with the batch's rows."""
    counts: dict[str, int] = {}
    for table in _TABLES:
        counts[table.name] = 0
        after: tuple[str, ...] | None = None
        while True:
            after, n = _batch(engine, table, after, batch)
            if after is None:
                break
            counts[table.name] += n
            if progress:
                progress(table.name, n)
    _record_version(engine, keywords.TOKENIZER_VERSION)
    log.info("keywords.retokenized", version=keywords.TOKENIZER_VERSION, **counts)
    return counts


def ensure_current_tokens(
    engine: Engine, *, progress: Callable[[str, int], None] | None = None
) -> dict[str, int] | None:
    """Bring the stored tokens to the current tokenizer when they were made by another version (a rewrite,
    `retokenize`); record the version on a database that has none yet. Return the rewrite's counts, or None
    when nothing had to be rewritten."""
    version = stored_version(engine)
    if version == keywords.TOKENIZER_VERSION:
        return None
    if version is None:
        _record_version(engine, keywords.TOKENIZER_VERSION)
        return None
    log.warning(
        "keywords.retokenizing",
        stored=version,
        current=keywords.TOKENIZER_VERSION,
        detail="the stored keyword tokens were made by another tokenizer; rewriting them from their texts",
    )
    return retokenize(engine, progress=progress)


def warn_if_stale(engine: Engine) -> bool:
    """Log a warning when the stored tokens were made by another tokenizer version than this code's (a
    worker or API started before `memctl migrate` ran); return whether they were. Serving goes on: a word
    whose stem changed matches fewer rows until the rewrite."""
    version = stored_version(engine)
    if version is None or version == keywords.TOKENIZER_VERSION:
        return False
    log.warning(
        "keywords.stale_tokens",
        stored=version,
        current=keywords.TOKENIZER_VERSION,
        detail="run `memctl migrate` (or `memctl retokenize`) to rewrite the stored keyword tokens",
    )
    return True
