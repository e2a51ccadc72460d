"""Start-up checks that the database matches this code: the embedding dimension and embedder name."""

from __future__ import annotations

from typing import get_args

import structlog
from sqlalchemy import Engine, text
from sqlalchemy.exc import ProgrammingError

from shared.errors import SchemaMismatchError
from shared.settings import Settings


def embedding_schema(engine: Engine) -> dict[str, str]:
    try:
        with engine.connect() as conn:
            return {k: v for k, v in conn.execute(text("SELECT key, value FROM schema_meta")).all()}
    except ProgrammingError:
        raise SchemaMismatchError("the database is not migrated: run `memctl migrate` first") from None


def check_embedding_schema(engine: Engine, *, embedder: str, dim: int) -> None:
    meta = embedding_schema(engine)
    db_dim, db_embedder = int(meta.get("embedding_dim", "0")), meta.get("embedder", "?")
    if db_dim != dim or db_embedder != embedder:
        raise SchemaMismatchError(
            f"the database holds {db_dim}-dim vectors from the '{db_embedder}' embedder, but the settings ask "
            f"for {dim}-dim '{embedder}' (MEMORY_EMBEDDER / MEMORY_EMBEDDING_DIM). Either restore those "
            f"settings or run `memctl reembed` to re-embed every memory and turn with the new embedder."
        )


def resolve_embedding_schema(engine: Engine, settings: Settings) -> None:
    """Check the database against the settings' embedder, after letting an automatic choice follow the
    database: when `MEMORY_EMBEDDER` was not named (`auto`) and the database already holds vectors of another
    embedder (one made before the default changed, or by `memctl reembed`), the settings take the database's
    embedder and dimension, with a warning, instead of refusing to start. A named embedder that differs is
    refused as before (`SchemaMismatchError`)."""
    if settings.embedder_auto:
        meta = embedding_schema(engine)
        db_embedder, db_dim = meta.get("embedder"), int(meta.get("embedding_dim", "0") or 0)
        known = get_args(Settings.model_fields["embedder"].annotation)
        if db_embedder in known and db_embedder != "auto" and (db_embedder, db_dim) != (
            settings.embedder,
            settings.embedding_dim,
        ):
            structlog.get_logger("shared.db").warning(
                "embedder.follows_database",
                chosen=settings.embedder,
                database=db_embedder,
                dim=db_dim,
                detail=f"MEMORY_EMBEDDER is unset: using the database's {db_embedder} vectors; "
                f"`memctl reembed --embedder {settings.embedder}` switches to {settings.embedder}",
            )
            settings.embedder = db_embedder  # type: ignore[assignment]
            settings.embedding_dim = db_dim
    check_embedding_schema(engine, embedder=settings.embedder, dim=settings.embedding_dim)
