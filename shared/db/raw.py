"""Read statements of the hot read path, run on the session's own psycopg connection.

SQLAlchemy's execution layer (result metadata, row processors, the compiled cache lookup) cost as much
CPU per search as psycopg itself: in-process profile of one API search, `Session.execute` 41.6 % of the
samples against 22.3 % for psycopg's `Cursor.execute` inside it. These statements are plain SQL with
named parameters, so they skip that layer: same connection, same transaction (row-level security and the
session's settings apply as to any other statement), rows as named tuples.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from psycopg.rows import namedtuple_row
from sqlmodel import Session

# `:name` outside `::type` casts and words (the syntax of sqlalchemy.text), to psycopg's `%(name)s`
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@functools.lru_cache(maxsize=512)
def pyformat(sql: str) -> str:
    """`sql` written with `:name` parameters, in psycopg's `%(name)s` form (a literal % doubled)."""
    return _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))


def fetch_all(db: Session, sql: str, params: Mapping[str, Any]) -> list[Any]:
    """Every row of `sql` (written with `:name` parameters) as named tuples, in the session's transaction."""
    dbapi = db.connection().connection.driver_connection
    with dbapi.cursor(row_factory=namedtuple_row) as cur:  # type: ignore[union-attr]
        cur.execute(pyformat(sql), params)
        return cur.fetchall()
