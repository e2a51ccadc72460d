"""Every LLM stage besides extraction (the zoo covers it) behind its own circuit breaker, end to end: a real
worker, PostgreSQL, Redis, and the fake OpenAI-compatible server failing that stage's prompt only (the others
answer well). Three units of work (users or sessions) go through the stage one after the other, with the
breaker set to open after two failures in a row:

- the first two make one call each, which fails: the stage falls back to its no-LLM path;
- the breaker opens (counted once), and the third makes no call at all: the same fallback, reason
  `circuit_open`;
- nothing is lost: every unit gets what the stage writes without an LLM (a held or added candidate, an
  extractive summary, a deterministic episode, distillation or working-memory document);
- the failures are counted by stage and reason (`memory_llm_failures_total`), every fallback is counted with
  what the stage did instead (`memory_llm_fallbacks_total`) and logged (`llm.fallback`), and `memctl stats`
  shows them by stage and reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from core.prompts.distill import DISTILL_PROMPT
from core.prompts.episode import EPISODE_PROMPT
from core.prompts.judge import JUDGE_PROMPT
from core.prompts.summary import SUMMARY_SYSTEM_PROMPT
from core.prompts.working_memory import WM_SECTIONS, WORKING_MEMORY_PROMPT
from shared import tasknames
from shared.publisher import TaskPublisher
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.memory_rows import insert_memory
from tests.metrics_files import counter
from tests.services import REPO, memory_client, wait_for

pytestmark = pytest.mark.integration

THRESHOLD = 2  # failures in a row that open a stage's breaker
UNITS = 3  # units of work through the stage: THRESHOLD failed calls, then one behind the open breaker
T0 = datetime(2020, 3, 2, 9, 0, tzinfo=UTC)  # long past: the sessions are idle at once
# the episode test's sessions: older than any other test's, so the closing run (which takes every tenant's
# idle sessions, oldest first) reaches its three first
EPISODES_T0 = datetime(2001, 1, 1, 9, 0, tzinfo=UTC)

PROMPTS = {
    "reconcile": JUDGE_PROMPT,
    "summarize": SUMMARY_SYSTEM_PROMPT,
    "episode": EPISODE_PROMPT,
    "distill": DISTILL_PROMPT,
    "working_memory": WORKING_MEMORY_PROMPT,
}
GOOD_ANSWERS = {
    "reconcile": json.dumps({"verdicts": [{"id": 0, "verdict": "update"}]}),
    "summarize": "## Decisions\n- none yet",
    "episode": json.dumps({"what_happened": "They talked.", "outcome": "", "lesson": ""}),
    "distill": json.dumps({"memories": []}),  # valid; rewrites nothing
    "working_memory": "\n\n".join(f"{h}\n- none" for h in WM_SECTIONS),
}
WORK_TURNS = [
    "I tried the migration again and it failed on the users table because of the NOT NULL constraint.",
    "We spent the morning debugging the flaky payment webhook; the retry queue was dropping jobs.",
    "The staging cluster runs on three nodes and the nightly backup finishes around 2am.",
]


def stage_of(request: dict[str, Any]) -> str:
    system = next((m["content"] for m in request["messages"] if m["role"] == "system"), "")
    return next((stage for stage, prompt in PROMPTS.items() if system == prompt), "extract")


def failing(stage: str, fault: Reply) -> Callable[[dict[str, Any]], str | Reply]:
    """A model that answers every prompt well but `stage`'s, which gets `fault`."""

    def respond(request: dict[str, Any]) -> str | Reply:
        asked = stage_of(request)
        if asked == stage:
            return fault
        return GOOD_ANSWERS.get(asked, '{"memories": []}')

    return respond


def calls_of(fake: FakeOpenAI, stage: str) -> int:
    return sum(stage_of(c) == stage for c in fake.calls)


def llm_env(fake: FakeOpenAI, metrics_dir: Path, **extra: str) -> dict[str, str]:
    metrics_dir.mkdir(parents=True, exist_ok=True)
    return {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_MAX_RETRIES": "0",  # one request per call: the calls counted are the failures
        "OPENAI_TIMEOUT_S": "5",
        "MEMORY_LLM_BREAKER_FAILURES": str(THRESHOLD),
        "MEMORY_LLM_BREAKER_BASE_S": "600",  # stays open for the rest of the test
        "MEMORY_DEBOUNCE_IDLE_S": "1",
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        **extra,
    }


def fallbacks_recorded(engine: Any, tenant: str, stage: str) -> dict[tuple[str, str], int]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT reason, action, sum(count) FROM llm_failures WHERE tenant_id = :t AND stage = :s "
                "GROUP BY reason, action"
            ),
            {"t": tenant, "s": stage},
        ).all()
    return {(r[0], r[1]): int(r[2]) for r in rows}


def memctl_stats(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "memctl.cli", "stats", "--json"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def assert_the_breaker_story(
    stage: str,
    reason: str,
    *,
    fake: FakeOpenAI,
    metrics_dir: Path,
    engine: Any,
    tenant: str,
    worker: Any,
    worker_env: dict[str, str],
) -> None:
    """THRESHOLD calls failed with `reason`, the breaker opened once, the rest made no call; each unit fell
    back once (recorded for the tenant), and the metrics, the log and `memctl stats` say so by stage."""
    assert calls_of(fake, stage) == THRESHOLD
    assert fallbacks_recorded(engine, tenant, stage) == {
        (reason, "deterministic"): THRESHOLD,
        ("circuit_open", "deterministic"): UNITS - THRESHOLD,
    }
    wait_for(
        lambda: counter(metrics_dir, "memory_llm_breaker_opened", stage=stage) == 1,
        timeout_s=10,
        what="the opening counted",
    )
    assert counter(metrics_dir, "memory_llm_failures", stage=stage, reason=reason) == THRESHOLD
    assert counter(metrics_dir, "memory_llm_failures", stage=stage, reason="circuit_open") >= 1
    fell_back = counter(metrics_dir, "memory_llm_fallbacks", stage=stage, action="deterministic")
    assert fell_back >= UNITS
    lines = [json.loads(line) for line in worker.log_text().splitlines() if '"llm.fallback"' in line]
    mine = [line for line in lines if line.get("stage") == stage and line.get("tenant_id") == tenant]
    assert [line["reason"] for line in mine][:UNITS] == [reason] * THRESHOLD + ["circuit_open"]
    assert all(line["action"] == "deterministic" for line in mine)

    stats = memctl_stats(worker_env)
    by_stage = {(r["stage"], r["reason"]): r for r in stats["llm_failures_by_stage"]}
    assert by_stage[(stage, reason)]["total"] >= THRESHOLD
    assert by_stage[(stage, reason)]["action"] == "deterministic"
    assert by_stage[(stage, "circuit_open")]["total"] >= UNITS - THRESHOLD
    assert any(b["name"].startswith(f"{stage}:") and b["open_until"] for b in stats["llm_breakers"])


@pytest.fixture
def fake_llm():
    with FakeOpenAI() as server:
        yield server


# --- the judge (reconcile) ----------------------------------------------------------------------------------


def candidates_of(engine: Any, tenant: str, user: str) -> list[tuple[str, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT status, decision FROM candidates WHERE tenant_id = :t AND user_id = :u"),
            {"t": tenant, "u": user},
        ).all()
    return [(r[0], r[1]) for r in rows]


def test_the_judge_falls_back_to_the_rule_decision_and_its_breaker_opens(
    start_worker, fake_llm, engine, tenant, redis_url, queue_name, tmp_path, worker_env
):
    """A similar-but-unclear candidate per user goes to the judge, which answers 503: the candidate is added
    as it would be without an LLM (never dropped, never left `new`)."""
    fake_llm.default_responder = failing("reconcile", Reply(kind="status", status=503))
    metrics_dir = tmp_path / "metrics"
    worker = start_worker(env=llm_env(fake_llm, metrics_dir))
    pub = TaskPublisher(redis_url, queue=queue_name)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tenants (id) VALUES (:t) ON CONFLICT DO NOTHING"), {"t": tenant})
        for n in range(UNITS):
            insert_memory(
                conn, tenant_id=tenant, user_id=f"u{n}", content="The user prefers concise answers."
            )
            conn.execute(
                text(
                    "INSERT INTO candidates (tenant_id, user_id, session_id, op, content, kind, category, "
                    "tier, confidence, lang, origin, source_event_ids, event_time) VALUES (:t, :u, 's', "
                    "'remember', 'The user prefers detailed answers with examples.', 'semantic', "
                    "'preference', 'worth', 0.8, 'en', 'rules', :e, :ts)"
                ),
                {"t": tenant, "u": f"u{n}", "e": [f"e-{n}"], "ts": T0},
            )
    for n in range(UNITS):
        pub.publish(tasknames.RECONCILE_USER, [tenant, f"u{n}"])
        wait_for(
            lambda n=n: candidates_of(engine, tenant, f"u{n}")[0][0] == "reconciled",
            timeout_s=30,
            what=f"user u{n}'s candidate reconciled",
        )
        assert candidates_of(engine, tenant, f"u{n}") == [("reconciled", "add")]
    with engine.connect() as conn:
        active = conn.execute(
            text("SELECT count(*) FROM memories WHERE tenant_id = :t AND status = 'active'"), {"t": tenant}
        ).scalar()
    assert active == 2 * UNITS  # each user's old memory and the added one
    assert_the_breaker_story(
        "reconcile",
        "server_error",
        fake=fake_llm,
        metrics_dir=metrics_dir,
        engine=engine,
        tenant=tenant,
        worker=worker,
        worker_env=worker_env,
    )


# --- the rolling summary (summarize) -------------------------------------------------------------------------


def fold_state(engine: Any, tenant: str, session: str) -> tuple[int, Any, str | None]:
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT pending_count, summarized_through, summary FROM sessions "
                "WHERE tenant_id = :t AND session_id = :s"
            ),
            {"t": tenant, "s": session},
        ).first()
    return (row[0], row[1], row[2]) if row is not None else (-1, None, None)


def test_the_rolling_summary_falls_back_to_the_extractive_one_and_its_breaker_opens(
    start_worker, fake_llm, engine, tenant, redis_url, queue_name, tmp_path, worker_env
):
    """Sessions past the fold threshold (40 turns): the summary call is refused each time, the older turns
    are folded into an extractive summary instead."""
    fake_llm.default_responder = failing("summarize", Reply(kind="refusal"))
    metrics_dir = tmp_path / "metrics"
    worker = start_worker(env=llm_env(fake_llm, metrics_dir, MEMORY_DEBOUNCE_TURNS="1000"))
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    for n in range(UNITS):
        session = f"s{n}"
        for i in range(42):
            client.emit(
                user_id="u",
                session_id=session,
                content=f"Step {i} of the rollout: {WORK_TURNS[i % len(WORK_TURNS)]}",
                event_id=f"{session}-{i}",
                event_time=T0 + timedelta(hours=n, seconds=i),
            )
        client.flush()
        wait_for(
            lambda session=session: (st := fold_state(engine, tenant, session))[0] == 0 and st[1] is not None,
            timeout_s=90,
            interval_s=0.5,
            what=f"session {session} extracted and folded",
        )
        summary = fold_state(engine, tenant, session)[2]
        assert summary and "rollout" in summary  # the extractive summary of the folded turns
    client.close()
    assert_the_breaker_story(
        "summarize",
        "refusal",
        fake=fake_llm,
        metrics_dir=metrics_dir,
        engine=engine,
        tenant=tenant,
        worker=worker,
        worker_env=worker_env,
    )


# --- episodes -------------------------------------------------------------------------------------------------


def episodes_of(engine: Any, tenant: str) -> dict[str, str]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT session_id, mode FROM episodes WHERE tenant_id = :t"), {"t": tenant}
        ).all()
    return {r[0]: r[1] for r in rows}


def test_episodes_fall_back_to_the_deterministic_episode_and_their_breaker_opens(
    start_worker, fake_llm, engine, tenant, redis_url, queue_name, tmp_path, worker_env
):
    """Three idle sessions closed in one run (oldest first): the model answers JSON of the wrong shape, each
    session still gets its episode, written deterministically."""
    fake_llm.default_responder = failing(
        "episode", Reply(kind="ok", content=json.dumps({"summary": "They talked.", "mood": "fine"}))
    )
    metrics_dir = tmp_path / "metrics"
    worker = start_worker(env=llm_env(fake_llm, metrics_dir, MEMORY_SESSION_IDLE_S="60"))
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    for n in range(UNITS):
        for i, content in enumerate(WORK_TURNS):
            client.emit(
                user_id="u",
                session_id=f"s{n}",
                content=content,
                event_id=f"s{n}-{i}",
                event_time=EPISODES_T0 + timedelta(hours=n, seconds=i),
            )
    client.flush()
    client.close()
    wait_for(
        lambda: all(fold_state(engine, tenant, f"s{n}")[0] == 0 for n in range(UNITS)),
        timeout_s=60,
        what="the sessions extracted",
    )
    TaskPublisher(redis_url, queue=queue_name).publish(tasknames.CLOSE_IDLE_SESSIONS, [None])
    wait_for(lambda: len(episodes_of(engine, tenant)) == UNITS, timeout_s=60, what="the episodes")
    assert episodes_of(engine, tenant) == {f"s{n}": "deterministic" for n in range(UNITS)}
    assert_the_breaker_story(
        "episode",
        "invalid_output",
        fake=fake_llm,
        metrics_dir=metrics_dir,
        engine=engine,
        tenant=tenant,
        worker=worker,
        worker_env=worker_env,
    )


# --- distillation and working memory -----------------------------------------------------------------------------


def seed_fragments(engine: Any, tenant: str, users: list[str]) -> None:
    """Each user: the deployment fragments of the distillation cases (they cluster)."""
    cases = json.loads((REPO / "tests" / "data" / "distill_cases.json").read_text())["deployment"][:8]
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tenants (id) VALUES (:t) ON CONFLICT DO NOTHING"), {"t": tenant})
        for user in users:
            for n, content in enumerate(cases):
                when = T0 + timedelta(minutes=n)
                insert_memory(
                    conn,
                    tenant_id=tenant,
                    user_id=user,
                    content=content,
                    kind="episodic",
                    category="fact",
                    valid_from=when,
                    recorded_at=when,
                    last_confirmed_at=when,
                    source_event_ids=[f"{user}-dep-{n}"],
                )


def runs_of(engine: Any, tenant: str) -> dict[str, tuple[str, str, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT user_id, outcome, mode, detail FROM consolidation_runs WHERE tenant_id = :t "
                "AND kind = 'distill' AND finished_at IS NOT NULL"
            ),
            {"t": tenant},
        ).all()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def distill_one_by_one(engine: Any, tenant: str, redis_url: str, queue_name: str, users: list[str]) -> None:
    pub = TaskPublisher(redis_url, queue=queue_name)
    for user in users:
        pub.publish(tasknames.DISTILL, [None, tenant, user])
        wait_for(lambda user=user: user in runs_of(engine, tenant), timeout_s=60, what=f"{user}'s run")


def test_distillation_falls_back_to_the_deterministic_path_and_its_breaker_opens(
    start_worker, fake_llm, engine, tenant, redis_url, queue_name, tmp_path, worker_env
):
    """Each user's fragments are rewritten deterministically when the distillation call fails (503) or is
    not made: consolidated with their lineage, none left behind, and the run record says why."""
    fake_llm.default_responder = failing("distill", Reply(kind="status", status=503))
    metrics_dir = tmp_path / "metrics"
    worker = start_worker(env=llm_env(fake_llm, metrics_dir))
    users = [f"u{n}" for n in range(UNITS)]
    seed_fragments(engine, tenant, users)
    distill_one_by_one(engine, tenant, redis_url, queue_name, users)
    runs = runs_of(engine, tenant)
    reasons = ["server_error"] * THRESHOLD + ["circuit_open"]
    for user, reason in zip(users, reasons, strict=True):
        outcome, mode, detail = runs[user]
        assert (outcome, mode) == ("partial", "deterministic") and f"llm: {reason}" in (detail or ""), runs
    with engine.connect() as conn:
        by_user = dict(
            conn.execute(
                text(
                    "SELECT user_id, count(*) FILTER (WHERE status = 'consolidated') FROM memories "
                    "WHERE tenant_id = :t AND cardinality(consolidated_from) = 0 GROUP BY user_id"
                ),
                {"t": tenant},
            ).all()
        )
        lineage = conn.execute(
            text(
                "SELECT user_id, count(DISTINCT f) FROM memories, unnest(consolidated_from) f "
                "WHERE tenant_id = :t GROUP BY user_id"
            ),
            {"t": tenant},
        ).all()
    assert all(by_user[u] >= 2 for u in users), by_user  # fragments merged, not dropped
    assert {u: n for u, n in lineage} == by_user  # every merged fragment is in a new memory's lineage
    assert_the_breaker_story(
        "distill",
        "server_error",
        fake=fake_llm,
        metrics_dir=metrics_dir,
        engine=engine,
        tenant=tenant,
        worker=worker,
        worker_env=worker_env,
    )


def test_working_memory_falls_back_to_the_deterministic_document_and_its_breaker_opens(
    start_worker, fake_llm, engine, tenant, redis_url, queue_name, tmp_path, worker_env
):
    """The model writes prose instead of the four sections: each user's working memory is still written,
    deterministically."""
    fake_llm.default_responder = failing("working_memory", Reply(kind="ok", content="Sure, here it is."))
    metrics_dir = tmp_path / "metrics"
    worker = start_worker(env=llm_env(fake_llm, metrics_dir))
    users = [f"u{n}" for n in range(UNITS)]
    seed_fragments(engine, tenant, users)
    distill_one_by_one(engine, tenant, redis_url, queue_name, users)
    with engine.connect() as conn:
        documents = conn.execute(
            text("SELECT user_id, mode, content FROM working_memory WHERE tenant_id = :t"), {"t": tenant}
        ).all()
    assert {r[0]: r[1] for r in documents} == dict.fromkeys(users, "deterministic")
    assert all(all(h in r[2] for h in WM_SECTIONS) for r in documents)
    assert calls_of(fake_llm, "distill") == UNITS  # the other stage answered, its breaker stayed closed
    assert_the_breaker_story(
        "working_memory",
        "invalid_output",
        fake=fake_llm,
        metrics_dir=metrics_dir,
        engine=engine,
        tenant=tenant,
        worker=worker,
        worker_env=worker_env,
    )
