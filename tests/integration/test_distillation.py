"""Sleep-time distillation through a real worker: twenty fragments about one deployment (English and
Chinese) become one or a few consolidated memories covering all twenty; a second run changes nothing; with
the LLM down the deterministic path runs and the run record says so. Also: with an LLM, one call per user."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from shared import tasknames
from shared.db.vectors import vector_literal
from shared.publisher import TaskPublisher
from store.embeddings import HashingEmbedder
from store.memories import snapshot
from tests.fakes.openai_server import FakeOpenAI
from tests.memory_rows import insert_memory
from tests.services import free_port, wait_for
from worker.services import distillation

pytestmark = pytest.mark.integration

CASES = json.loads((Path(__file__).parent.parent / "data" / "distill_cases.json").read_text())
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _seed(engine, tenant: str, user: str) -> dict[str, str]:
    emb = HashingEmbedder(384)
    ids: dict[str, str] = {}
    rows = [("episodic", "fact", c, f"dep-{i}") for i, c in enumerate(CASES["deployment"])]
    rows += [(k, cat, c, f"other-{i}") for i, (k, cat, c) in enumerate(CASES["unrelated"])]
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tenants (id) VALUES (:t) ON CONFLICT DO NOTHING"), {"t": tenant})
        for n, (kind, cat, content, event_id) in enumerate(rows):
            when = T0 + timedelta(minutes=n)
            ids[event_id] = insert_memory(
                conn,
                tenant_id=tenant,
                user_id=user,
                content=content,
                kind=kind,
                category=cat,
                valid_from=when,
                recorded_at=when,
                last_confirmed_at=when,
                source_event_ids=[event_id],
                source_turn_ids=[f"D1:{n}"],
                embedding=vector_literal(emb.embed([content])[0]),
                search_tokens=None,
            )
    return ids


def _runs(engine, tenant: str) -> list:
    with engine.connect() as conn:
        return conn.execute(
            text(
                "SELECT outcome, mode, counts, detail FROM consolidation_runs WHERE tenant_id = :t "
                "AND kind = 'distill' AND finished_at IS NOT NULL ORDER BY id"
            ),
            {"t": tenant},
        ).all()


def _memories(engine, tenant: str) -> list:
    with engine.connect() as conn:
        return conn.execute(
            text(
                "SELECT id::text, status, content, consolidated_from::text[] AS cf, "
                "source_event_ids, evidence_count FROM memories WHERE tenant_id = :t"
            ),
            {"t": tenant},
        ).all()


def test_twenty_deployment_fragments_consolidate_and_a_second_run_changes_nothing_with_the_llm_down(
    start_worker, engine, tenant, redis_url, queue_name
):
    ids = _seed(engine, tenant, "dev")
    dead = f"http://127.0.0.1:{free_port()}/v1"
    start_worker(
        env={
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": dead,
            "OPENAI_MAX_RETRIES": "0",
            "OPENAI_TIMEOUT_S": "1",
        }
    )
    pub = TaskPublisher(redis_url, queue=queue_name)
    pub.publish(tasknames.DISTILL, [None, tenant, "dev"])
    wait_for(lambda: len(_runs(engine, tenant)) == 1, timeout_s=60, what="the distill run")
    _outcome, mode, counts, detail = _runs(engine, tenant)[0]
    assert mode == "deterministic" and "llm" in (detail or "")
    rows = _memories(engine, tenant)
    new = [r for r in rows if r.cf]
    assert 1 <= len(new) <= 3
    fragment_ids = {ids[f"dep-{i}"] for i in range(20)}
    assert {fid for r in new for fid in r.cf} == fragment_ids
    assert {e for r in new for e in r.source_event_ids} == {f"dep-{i}" for i in range(20)}
    by_id = {r.id: r for r in rows}
    assert all(by_id[f].status == "consolidated" for f in fragment_ids)
    assert all(by_id[ids[f"other-{i}"]].status == "active" for i in range(len(CASES["unrelated"])))
    assert counts["consolidated"] == 20

    pub.publish(tasknames.DISTILL, [None, tenant, "dev"])
    wait_for(lambda: len(_runs(engine, tenant)) == 2, timeout_s=60, what="the second run")
    assert _runs(engine, tenant)[1][2]["consolidated"] == 0
    assert sorted(map(tuple, _memories(engine, tenant))) == sorted(map(tuple, rows))


def test_with_an_llm_distillation_makes_one_call_per_user_and_keeps_uncovered_fragments(
    start_worker, engine, tenant, redis_url, queue_name
):
    ids = _seed(engine, tenant, "dev")
    english = [ids[f"dep-{i}"] for i in range(10)]

    def answer(request):  # merges only the English half; the Chinese fragments stay active
        return json.dumps(
            {
                "memories": [
                    {
                        "content": "Billing service v2.3 reached production after a pool fix.",
                        "kind": "episodic",
                        "category": "lesson",
                        "covers": english,
                    }
                ]
            }
        )

    with FakeOpenAI() as fake:
        fake.default_responder = answer
        start_worker(env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.base_url})
        TaskPublisher(redis_url, queue=queue_name).publish(tasknames.DISTILL, [None, tenant, "dev"])
        wait_for(lambda: len(_runs(engine, tenant)) == 1, timeout_s=60, what="the distill run")
        # one distillation call for the user (the working-memory rewrite is a separate stage)
        distill_calls = [c for c in fake.calls if "consolidate" in c["messages"][0]["content"]]
        assert len(distill_calls) == 1
    _outcome, mode, counts, _ = _runs(engine, tenant)[0]
    assert mode == "llm" and counts["consolidated"] == 10 and counts["tokens"] > 0
    by_id = {r.id: r for r in _memories(engine, tenant)}
    assert all(by_id[i].status == "consolidated" for i in english)
    assert all(by_id[ids[f"dep-{i}"]].status == "active" for i in range(10, 20))


def test_history_rows_are_those_of_writing_each_rewrite_in_turn(engine, db, tenant):
    """The batched writes leave what one memory at a time did: per new memory a `consolidate` row with its
    snapshot and events, then per fragment, in `consolidated_from` order, a `consolidated` row from its
    snapshot before to its snapshot after; a second run writes nothing."""
    ids = _seed(engine, tenant, "dev")
    before = {fid: snapshot(db, fid) for fid in ids.values()}

    def run() -> distillation.DistillResult:
        return distillation.distill_user(
            db,
            tenant,
            "dev",
            embedder=HashingEmbedder(384),
            llm=None,
            now=T0 + timedelta(days=1),
            actor="test",
            new_since=None,
            token_cap=0,
        )

    result = run()
    assert result.created >= 1 and result.consolidated == 20
    new = db.execute(
        text(
            "SELECT id::text, consolidated_from::text[] AS cf, source_event_ids FROM memories "
            "WHERE tenant_id = :t AND cardinality(consolidated_from) > 0"
        ),
        {"t": tenant},
    ).all()
    hist = db.execute(
        text(
            "SELECT memory_id::text AS m, op, before, after, reason, actor, event_ids FROM memory_history "
            "WHERE tenant_id = :t ORDER BY id"
        ),
        {"t": tenant},
    ).all()
    expected = []
    for n in sorted(new, key=lambda r: [h.m for h in hist].index(r.id)):
        reason = f"deterministic distillation of {len(n.cf)} fragments"
        expected.append(
            (n.id, "consolidate", None, snapshot(db, n.id), reason, "test", list(n.source_event_ids))
        )
        for fid in n.cf:
            assert snapshot(db, fid)["superseded_by"] == n.id
            expected.append(
                (fid, "consolidated", before[fid], snapshot(db, fid), f"merged into {n.id}", "test", [])
            )
    assert [tuple(h) for h in hist] == expected
    assert {h.m for h in hist if h.op == "consolidated"} == {ids[f"dep-{i}"] for i in range(20)}

    assert run().created == 0  # nothing active is left to merge: the second run is a no-op
    assert db.execute(
        text("SELECT count(*) FROM memory_history WHERE tenant_id = :t"), {"t": tenant}
    ).scalar() == len(hist)
