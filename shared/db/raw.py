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

import psycopg
from psycopg.rows import namedtuple_row
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

# `:name` outside `::type` casts and words (the syntax of sqlalchemy.text), to psycopg's `%(name)s`
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@functools.lru_cache(maxsize=512)
def pyformat(sql: str) -> str:
    """`sql` written with `:name` parameters, in psycopg's `%(name)s` form (a literal % doubled)."""
    return _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))


def fetch_all(db: Session, sql: str, params: Mapping[str, Any]) -> list[Any]:
    """Every row of `sql` (written with `:name` parameters) as named tuples, in the session's transaction.

    A driver error comes out as SQLAlchemy's, as from `Session.execute`: a lost connection is invalidated
    (the pool replaces it) and raised with `connection_invalidated`, so callers and the API's error
    handlers (503 and Retry-After) see one kind of error whichever path ran the statement."""
    conn = db.connection()
    dbapi = conn.connection.driver_connection
    statement = pyformat(sql)
    try:
        with dbapi.cursor(row_factory=namedtuple_row) as cur:  # type: ignore[union-attr]
            # the engine's cursor events fire as for any statement (tracing, the benchmarks' statement
            # capture); with no listener each call is a loop over an empty list
            conn.dispatch.before_cursor_execute(conn, cur, statement, params, None, False)
            cur.execute(statement, params)
            rows = cur.fetchall()
            conn.dispatch.after_cursor_execute(conn, cur, statement, params, None, False)
            return rows
    except psycopg.Error as exc:
        lost = bool(dbapi.closed or dbapi.broken)  # type: ignore[union-attr]
        if lost:
            conn.invalidate(exc)
        raise DBAPIError.instance(
            sql, None, exc, psycopg.Error, hide_parameters=True, connection_invalidated=lost
        ) from exc
