"""`shared.db.raw.fetch_all` runs the hot read statements on the session's psycopg connection; its errors
must look like `Session.execute`'s, or the API would answer 500 where it answers a retryable 503."""

from __future__ import annotations

import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from sqlmodel import Session

from shared.db.raw import fetch_all

pytestmark = pytest.mark.integration


def test_rows_come_back_as_named_tuples_in_the_sessions_transaction(engine):
    with Session(engine) as db:
        db.execute(text("SELECT set_config('app.probe', 'in-tx', true)"))
        rows = fetch_all(
            db, "SELECT :a::int + 1 AS n, current_setting('app.probe') AS probe, 'x%' AS pct", {"a": 41}
        )
        assert [(r.n, r.probe, r.pct) for r in rows] == [(42, "in-tx", "x%")]
        db.rollback()


def test_the_engines_cursor_events_see_the_statement(engine):
    from sqlalchemy import event

    seen = []

    def after(conn, cursor, statement, parameters, context, many):
        seen.append((statement, dict(parameters)))

    event.listen(engine, "after_cursor_execute", after)
    try:
        with Session(engine) as db:
            fetch_all(db, "SELECT :a::int AS n", {"a": 7})
    finally:
        event.remove(engine, "after_cursor_execute", after)
    assert ("SELECT %(a)s::int AS n", {"a": 7}) in seen


def test_a_statement_error_is_sqlalchemys_and_leaves_the_connection_usable(engine):
    with Session(engine) as db:
        with pytest.raises(sa_exc.DataError) as caught:
            fetch_all(db, "SELECT 1 / :z AS x", {"z": 0})
        assert not caught.value.connection_invalidated
        db.rollback()
        assert fetch_all(db, "SELECT 2 AS x", {})[0].x == 2


def test_a_lost_connection_is_invalidated_and_raised_as_sqlalchemys_operational_error(engine):
    with Session(engine) as db:
        pid = fetch_all(db, "SELECT pg_backend_pid() AS pid", {})[0].pid
        with engine.connect() as other:
            assert other.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar()
        with pytest.raises(sa_exc.OperationalError) as caught:
            fetch_all(db, "SELECT 1 AS x", {})
        assert caught.value.connection_invalidated
        db.rollback()
        # the pool replaced the connection: the next transaction works on a new backend
        assert fetch_all(db, "SELECT pg_backend_pid() AS pid", {})[0].pid != pid
