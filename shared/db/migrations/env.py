"""Alembic environment: the URL comes from the caller (`shared.db.migrate`) or the settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool, text
from sqlmodel import SQLModel

from shared.db import models  # noqa: F401 - registers the tables on SQLModel.metadata
from shared.db.engine import resolve_database_url, sqlalchemy_url
from shared.settings import get_settings

config = context.config
target_metadata = SQLModel.metadata

# Migrations from several processes at once (`memctl up` and a worker) must not interleave.
_MIGRATION_LOCK_KEY = 727_001


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    return sqlalchemy_url(url) if url else resolve_database_url(get_settings())


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _MIGRATION_LOCK_KEY})
        connection.commit()
        try:
            context.configure(connection=connection, target_metadata=target_metadata, compare_type=False)
            with context.begin_transaction():
                context.run_migrations()
            connection.commit()
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _MIGRATION_LOCK_KEY})
            connection.commit()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
