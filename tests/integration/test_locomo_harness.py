"""The LoCoMo harness end to end on a small slice: one session of one conversation, hashing embeddings,
through the test fixtures' real worker, API and PostgreSQL.

The data file lives outside the repository (../shared/bench-data, CC BY-NC). Without it this test fails,
unless MEMORY_BENCH_DATA_OPTIONAL=1 says that a machine without the data may skip it.
"""

from __future__ import annotations

import os

import pytest
from sqlalchemy import text

from bench import locomo
from bench.lib import locomo_data
from tests.services import REPO

pytestmark = pytest.mark.integration


def _conversations() -> list[locomo_data.Conversation]:
    path = REPO.parent / "shared" / "bench-data" / "locomo-dev.json"
    assert path == locomo_data.data_path(), "the harness must read the data relative to the repository root"
    if not path.is_file():
        message = (
            f"the LoCoMo data file is missing: {path} (expected at ../shared/bench-data relative to "
            f"the repository root); set {locomo.OPTIONAL_ENV}=1 to skip on machines without it"
        )
        if os.environ.get(locomo.OPTIONAL_ENV) == "1":
            pytest.skip(message)
        pytest.fail(message)
    return locomo_data.load_conversations(path, conversations=1, sessions=1)


def _in_unit_interval(value: float | None) -> bool:
    return value is not None and 0.0 <= value <= 1.0


def test_one_session_replayed_through_the_real_stack_is_stored_searched_scored_and_compared_to_baselines(
    start_worker, api_server, api_key, tenant, redis_url, queue_name, database_url, engine, tmp_path
):
    from store.embeddings import HashingEmbedder

    conversations = _conversations()
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

    # k = 25: the session's 18 turns fit in one answer (checked below through the embeddings baseline)
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
    assert singles["source_turns_per_item"] <= 1.0 < project["source_turns_per_item"]
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
