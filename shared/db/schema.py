"""Start-up checks that the database matches this code: the embedding dimension and embedder name."""

from __future__ import annotations

from sqlalchemy import Engine, text
from sqlalchemy.exc import ProgrammingError

from shared.errors import SchemaMismatchError


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
