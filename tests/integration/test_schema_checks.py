"""The embedding dimension is part of the schema: a worker or API whose settings disagree with the
database refuses to start with a clear message naming `memctl reembed`."""

from __future__ import annotations

import pytest

from shared.db.engine import get_engine
from shared.db.schema import check_embedding_schema, resolve_embedding_schema
from shared.errors import SchemaMismatchError
from shared.settings import default_embedder, load_settings
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


def test_an_automatic_embedder_follows_the_database_and_a_named_one_is_refused(database_url):
    """`MEMORY_EMBEDDER` unset (`auto`): a database made with another embedder keeps it (an upgrade never
    strands stored vectors); a named embedder that differs is refused as before."""
    engine = get_engine(database_url)  # migrated by the suite with the hashing embedder
    auto = load_settings(embedder="auto")
    assert auto.embedder_auto and auto.embedder == default_embedder()
    resolve_embedding_schema(engine, auto)
    assert (auto.embedder, auto.embedding_dim) == ("hashing", 384)
    named = load_settings(embedder="local")
    assert not named.embedder_auto
    with pytest.raises(SchemaMismatchError, match="'local'"):
        resolve_embedding_schema(engine, named)


@pytest.mark.onnx_embeddings
def test_a_worker_left_on_auto_starts_against_a_database_of_another_embedder(start_worker):
    assert default_embedder() == "onnx-minilm", "the onnx-embeddings extra is part of `make install`"
    worker = start_worker(env={"MEMORY_EMBEDDER": "auto"})
    assert worker.proc is not None and worker.proc.poll() is None
    log = worker.log_text()
    assert "embedder.follows_database" in log and "memctl reembed --embedder onnx-minilm" in log, log[-2000:]
