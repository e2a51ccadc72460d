"""The LoCoMo harness end to end on a small slice: one session of one conversation, hashing embeddings,
through the test fixtures' real worker, API and PostgreSQL.

It always runs on `tests/data/locomo/mini_conversation.json`, a small conversation in the LoCoMo format
written for the tests; it runs again on the real development data (`../shared/bench-data/locomo-dev.json`
relative to the repository root, CC BY-NC, never copied into the repository) when that file is present,
and skips that run, saying why, when it is not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from bench import locomo
from bench.lib import locomo_data
from tests.services import REPO

pytestmark = pytest.mark.integration

MINI = REPO / "tests" / "data" / "locomo" / "mini_conversation.json"
REAL = REPO.parent / "shared" / "bench-data" / "locomo-dev.json"


def _sources() -> list[object]:
    absent = pytest.mark.skipif(
        not REAL.is_file(),
        reason=f"the LoCoMo data file is not at {REAL} (it lives outside the repository); "
        "the harness ran on the test conversation only",
    )
    return [pytest.param(MINI, id="test-conversation"), pytest.param(REAL, id="locomo-dev", marks=absent)]


def test_the_harness_reads_the_real_data_relative_to_the_repository_root():
    assert locomo_data.data_path() == REAL


def test_the_test_conversation_is_read_like_the_real_data():
    (conv,) = locomo_data.load_conversations(MINI, conversations=1, sessions=1)
    assert conv.sample_id == "mini-1"
    assert [s.number for s in conv.sessions] == [1]
    assert [t.dia_id for t in conv.turns] == [f"D1:{n}" for n in range(1, 17)]
    # the turn sharing an image carries its caption; questions citing sessions 2 and 3 are dropped
    assert conv.turns[4].content.endswith("[image: a photo of a beagle puppy sitting on a blue rug]")
    assert conv.dropped_questions == 3
    assert frozenset({"D1:7", "D1:8"}) in {q.evidence for q in conv.questions}  # "D1:7; D1:8"
    assert {q.category for q in conv.questions} == {1, 2, 3, 4, 5}


def _conversations(path: Path) -> list[locomo_data.Conversation]:
    return locomo_data.load_conversations(path, conversations=1, sessions=1)


def _in_unit_interval(value: float | None) -> bool:
    return value is not None and 0.0 <= value <= 1.0


@pytest.mark.parametrize("data", _sources())
def test_one_session_replayed_through_the_real_stack_is_stored_searched_scored_and_compared_to_baselines(
    data, start_worker, api_server, api_key, tenant, redis_url, queue_name, database_url, engine, tmp_path
):
    from store.embeddings import HashingEmbedder

    conversations = _conversations(data)
    conv = conversations[0]
    assert len(conv.sessions) == 1 and conv.questions, "the first session must have questions to ask"
    worker = start_worker()
    stack = locomo.Stack(
        tenant=tenant,
        redis_url=redis_url,
        queue=queue_name,
        database_url=database_url,
        api_url=api_server,
        api_key=api_key,
        worker_alive=lambda: worker.proc is not None and worker.proc.poll() is None,
        worker_log_tail=worker.log_tail,
        spool_dir=tmp_path,
    )

    # k = 25: the session's turns (18 in the real data, 16 in the test's) fit in one answer (checked below through the embeddings baseline)
    figures = locomo.evaluate(conversations, stack, embedder=HashingEmbedder(), k=25, deadline=None)

    assert figures["drain"]["drained"], figures["drain"]
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT type, status, source_turn_id, session_id FROM events WHERE tenant_id = :t AND "
                "user_id = :u"
            ),
            {"t": tenant, "u": conv.sample_id},
        ).all()
    turns = [r for r in rows if r.type == "turn"]
    assert len(turns) == len(conv.turns)
    assert {r.source_turn_id for r in turns} == {t.dia_id for t in conv.turns}
    assert {r.session_id for r in rows} == {f"{conv.sample_id}-s1"}
    assert sum(r.type == "session_end" for r in rows) == 1
    assert not [r for r in rows if r.status == "pending"]

    assert figures["search_latency_ms"]["n"] == len(conv.questions)
    assert figures["result_types"].get("turn", 0) > 0, "turns are indexed and searched by default"
    assert set(figures["systems"]) == set(locomo.SCORED)
    for name in locomo.SCORED:
        overall = figures["systems"][name]["overall_with_adversarial"]
        assert overall["questions"] == len(conv.questions)
        assert overall["scored"] > 0
        values = [
            *overall["recall_at"].values(),
            *overall["recall_within"].values(),
            overall["recall_all_at_10"],
            overall["hit_at_10"],
            overall["ndcg_at_10"],
            overall["mrr"],
        ]
        for value in values:
            assert _in_unit_interval(value), (name, overall)
    # one session fits in k=25: the embeddings baseline ranks every turn, so it returns all the evidence
    # (BM25 returns only the turns that share a token with the question)
    assert len(conv.turns) <= 25
    assert figures["systems"]["embeddings"]["overall_with_adversarial"]["recall_at"][25] == 1.0
    # passages: merged results cite consecutive turns, and never more results than asked for
    project = figures["systems"]["project"]["overall_with_adversarial"]
    singles = figures["systems"]["project_turns"]["overall_with_adversarial"]
    # passages cite more turns per result than single turns do (a memory may cite two turns it was told in)
    assert singles["source_turns_per_item"] < project["source_turns_per_item"]
    assert project["source_turns_per_item"] > 1.0
    order = [t.dia_id for t in conv.turns]
    for q in figures["questions"]:
        assert len(q["project"]) <= 25
        for _type, cited, _tokens, _score in q["project"]:
            if _type == "turn" and len(cited) > 1:
                positions = [order.index(c) for c in cited]
                assert positions == list(range(positions[0], positions[0] + len(cited))), cited
    store = figures["store"][0]
    assert store["turns_stored"] == len(conv.turns)
    assert _in_unit_interval(store["extraction_coverage"])
    assert _in_unit_interval(store["evidence_indexed"])
    assert len(figures["questions"]) == len(conv.questions)
    assert all({"project", "bm25", "embeddings"} <= q.keys() for q in figures["questions"])

    options = {
        "embedder": "hashing",
        "index_turns": True,
        "conversations": [conv.sample_id],
        "sessions": 1,
        "complete_data": False,
    }
    result = {
        "name": "locomo",
        "quick": True,
        "skipped": [],
        "figures": {
            **figures,
            "duration_s": 0.0,
            "deadline_hit": False,
            "services": "test fixtures",
            "options": options,
        },
    }
    result["targets"] = locomo.targets(result["figures"])
    markdown = locomo.render_markdown(result)
    assert "BM25 over raw turns" in markdown and conv.sample_id in markdown
