"""Stored keyword tokens follow the tokenizer: a database whose tokens an older tokenizer made is rewritten by
`memctl migrate`, so a word whose stem changed ("live": version 1 kept "live", version 2 gives "liv", as for
"lives") finds the rows written before the upgrade."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from core import keywords
from shared.db.engine import get_engine, session_scope, sqlalchemy_url
from shared.db.migrate import migrate
from shared.embedded import create_database, drop_database
from store.memories import keyword_document
from store.retokenize import ensure_current_tokens, retokenize, stored_version, warn_if_stale
from tests.memory_rows import EMBEDDER, insert_memory
from tests.services import REPO

pytestmark = pytest.mark.integration


def _stem_v1(word: str) -> str:
    # version 1 of `core.keywords._stem`, to write rows as the code before the upgrade wrote them
    for suffix, min_len in (("ing", 5), ("ed", 4), ("es", 4), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= min_len - len(suffix) + 1:
            return word[: -len(suffix)]
    return word


def _document_v1(text_: str) -> str:
    saved = keywords._stem
    keywords._stem = _stem_v1  # type: ignore[assignment]
    try:
        return keywords.document(text_)
    finally:
        keywords._stem = saved  # type: ignore[assignment]


@pytest.fixture
def own_database(pg_admin_url):
    name = f"memtest_retok_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    url = create_database(sqlalchemy_url(pg_admin_url), name)
    yield url
    from shared.db.engine import _engines

    for key, engine in list(_engines.items()):
        if key[1] == url:
            engine.dispose()
    drop_database(sqlalchemy_url(pg_admin_url), name)


def _tokens(engine, sql: str, **params) -> set[str]:
    with session_scope(engine) as db:
        value = db.execute(text(sql), params).scalar_one()
    return {lexeme.split(":")[0].strip("'") for lexeme in str(value).split()}


def _keyword_match(engine, memory_id: str, query: str) -> bool:
    """The memory is among the keyword matches of `query`, as search's keyword list asks them."""
    with session_scope(engine) as db:
        return bool(
            db.execute(
                text("SELECT search_tokens @@ to_tsquery('simple', :q) FROM memories WHERE id = :i"),
                {"q": keywords.query(query), "i": memory_id},
            ).scalar_one()
        )



def _migrate(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`memctl migrate` in its own process, as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "memctl.cli", "migrate"], env=env, cwd=REPO, capture_output=True, text=True, timeout=120
    )

def test_the_stored_tokens_of_an_older_tokenizer_are_rewritten_by_memctl_migrate(own_database):
    url = own_database
    migrate(url, "0018_memory_origin")  # the schema as the code before the upgrade left it
    engine = get_engine(url)
    t0 = datetime(2025, 3, 1, 9, tzinfo=UTC)
    memory_text = "The user wants to live somewhere near the sea"
    question, answer = "Where would you like to live later on?", "Somewhere near the sea, honestly"
    with session_scope(engine) as db:
        memory_id = insert_memory(
            db,
            tenant_id="t1",
            user_id="u",
            content=memory_text,
            search_tokens=_document_v1(memory_text),
        )
        slotted_id = insert_memory(
            db,
            tenant_id="t1",
            user_id="u",
            content="The user is studying Dutch",
            slot="user.studying",
            search_tokens=_document_v1("The user is studying Dutch"),
        )
        for i, content in enumerate((question, answer)):
            db.execute(
                text(
                    "INSERT INTO events (tenant_id, event_id, user_id, session_id, role, content, event_time, "
                    "status, processed_at, embedding, search_tokens) VALUES ('t1', :e, 'u', 's1', :r, :c, :ts, "
                    "'extracted', :ts, CAST(:v AS vector), to_tsvector('simple', :d))"
                ),
                {
                    "e": f"e{i}",
                    "r": "assistant" if i == 0 else "user",
                    "c": content,
                    "ts": t0 + timedelta(minutes=i),
                    "v": "[" + ",".join(str(x) for x in EMBEDDER.embed([content])[0]) + "]",
                    "d": _document_v1(content if i == 0 else f"{question}\n{answer}"),
                },
            )
        db.execute(
            text(
                "INSERT INTO episodes (tenant_id, user_id, session_id, what_happened, outcome, lesson, mode, "
                "search_tokens) VALUES ('t1', 'u', 's1', 'Planned where to live', 'Chose the coast', "
                "'Housing lists move fast', 'rules', to_tsvector('simple', :d))"
            ),
            {
                "d": _document_v1(
                    "Planned where to live\nOutcome: Chose the coast\nLesson: Housing lists move fast"
                )
            },
        )
    assert "live" in _tokens(engine, "SELECT search_tokens FROM memories WHERE id = :i", i=memory_id)

    migrate(url)  # 0019 records that version 1 made the stored tokens
    assert stored_version(engine) == 1
    assert warn_if_stale(engine)
    assert not _keyword_match(engine, memory_id, "live"), "v2's 'liv' cannot meet v1's 'live'"

    env = {**os.environ, "DATABASE_URL": url}
    proc = _migrate(env)
    assert proc.returncode == 0, proc.stderr
    assert "keyword tokens rewritten with tokenizer 2: 2 memories, 1 episodes, 2 events" in proc.stderr, (
        proc.stderr
    )

    assert stored_version(engine) == keywords.TOKENIZER_VERSION == 2
    assert not warn_if_stale(engine)
    assert _tokens(engine, "SELECT search_tokens FROM memories WHERE id = :i", i=memory_id) == set(
        keyword_document(memory_text, None).split()
    )
    # a slotted memory keeps its slot's word ("studying" -> "studi"), as the writers index it
    assert _tokens(engine, "SELECT search_tokens FROM memories WHERE id = :i", i=slotted_id) == set(
        keyword_document("The user is studying Dutch", "user.studying").split()
    )
    # a turn is indexed with the words of the turn before it in its session
    answer_tokens = _tokens(engine, "SELECT search_tokens FROM events WHERE event_id = 'e1'")
    assert answer_tokens == set(keywords.document(f"{question}\n{answer}").split()) and "liv" in answer_tokens
    assert _tokens(engine, "SELECT search_tokens FROM episodes") == set(
        keywords.document(
            "Planned where to live\nOutcome: Chose the coast\nLesson: Housing lists move fast"
        ).split()
    )
    assert _keyword_match(engine, memory_id, "live") and _keyword_match(engine, memory_id, "lived")

    # one row per batch: every keyset step (uuid keys, the events' composite key) is taken
    assert retokenize(engine, batch=1) == {"memories": 2, "episodes": 1, "events": 2}
    assert _keyword_match(engine, memory_id, "live")

    again = _migrate(env)
    assert again.returncode == 0 and "rewritten" not in again.stderr, again.stderr


def test_a_database_without_tokens_records_the_current_tokenizer(own_database):
    migrate(own_database)
    engine = get_engine(own_database)
    assert stored_version(engine) is None  # nothing was written by an older tokenizer
    assert not warn_if_stale(engine)
    assert ensure_current_tokens(engine) is None
    assert stored_version(engine) == keywords.TOKENIZER_VERSION
