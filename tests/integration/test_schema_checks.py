"""The embedding dimension is part of the schema: a worker or API whose settings disagree with the
database refuses to start with a clear message naming `memctl reembed`."""

from __future__ import annotations

import pytest

from shared.db.engine import get_engine
from shared.db.schema import check_embedding_schema
from shared.errors import SchemaMismatchError
from tests.services import wait_for

pytestmark = pytest.mark.integration


def test_a_dimension_or_embedder_mismatch_is_a_clear_startup_error(database_url):
    engine = get_engine(database_url)
    check_embedding_schema(engine, embedder="hashing", dim=384)
    with pytest.raises(SchemaMismatchError, match="memctl reembed"):
        check_embedding_schema(engine, embedder="hashing", dim=256)
    with pytest.raises(SchemaMismatchError, match="'local'"):
        check_embedding_schema(engine, embedder="local", dim=384)


def test_a_worker_with_the_wrong_dimension_refuses_to_start(start_worker):
    worker = start_worker(env={"MEMORY_EMBEDDING_DIM": "256"}, wait=False)
    wait_for(
        lambda: worker.proc is not None and worker.proc.poll() is not None,
        timeout_s=60,
        what="the worker to exit",
    )
    assert worker.proc is not None and worker.proc.returncode != 0
    assert "memctl reembed" in worker.log_text()
