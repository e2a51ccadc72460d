"""Per-process resources of a worker: settings, the resolved URLs, the database engine.

Resolved lazily (the embedded stack starts only when a task first needs it) and re-created after fork.
"""

from __future__ import annotations

from functools import lru_cache

from sqlalchemy import Engine

from shared.db.engine import get_engine, resolve_database_url
from shared.settings import Settings, get_settings


@lru_cache(maxsize=1)
def database_url() -> str:
    return resolve_database_url(get_settings())


def engine() -> Engine:
    return get_engine(database_url(), pool_size=2, application_name="memory-worker")


def settings() -> Settings:
    return get_settings()
