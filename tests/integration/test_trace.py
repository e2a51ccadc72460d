"""Event trace and memory lineage (issue 17) on a real pipeline run: a real worker and ingest consumer, the
real API over HTTP, `memctl` as a subprocess.

Three journeys: an event whose memory a later event superseded (and a prune then archived), one whose memory
distillation consolidated, one that was dead-lettered; the reverse (`why`) from the memories back to the turns, after the retention purge
scrubbed some of their text; another tenant's key gets 404 for all of it.
"""

from __future__ import annotations

import json
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import text

from shared import tasknames
from shared.contract import utcnow
from shared.db.engine import session_scope
from shared.publisher import TaskPublisher
from shared.stream import StreamProducer
from store.pruning import purge_transcripts
from store.trace import event_trace, memory_why
from tests.integration.test_memctl import memctl
from tests.services import memory_client, wait_for

pytestmark = pytest.mark.integration

T0 = (utcnow() - timedelta(days=60)).replace(microsecond=0)
CANARY = [
    "Remember that the billing service v2.3 canary runs for two hours.",
    "Remember that the billing service canary runs in production for two hours before rollout.",
]


def _say(client, user, content, when, *, event_id, session):
    client.emit(user_id=user, session_id=session, content=content, event_time=when, event_id=event_id)
    client.emit(user_id=user, session_id=session, type="session_end", event_time=when + timedelta(seconds=1))


def _one(engine, sql, **params):
    with engine.connect() as conn:
        return conn.execute(text(sql), params).all()


def _settled(engine, tenant):
    rows = _one(
        engine,
        "SELECT (SELECT count(*) FROM events WHERE tenant_id = :t AND status = 'pending') "
        "+ (SELECT count(*) FROM candidates WHERE tenant_id = :t AND status = 'new')",
        t=tenant,
    )
    return rows[0][0] == 0


@pytest.fixture
def pipeline(start_worker, engine, tenant, redis_url, queue_name, tmp_path):
    """One run of the real pipeline: Berlin superseded by Paris (user ana), two canary notes consolidated by
    distillation (user dev), one event dead-lettered by the consumer."""
    start_worker(env={"MEMORY_DEBOUNCE_IDLE_S": "1"})
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    _say(client, "ana", "I live in Berlin.", T0, event_id="ev-berlin", session="s-berlin")
    wait_for(
        lambda: _one(
            engine, "SELECT 1 FROM memories WHERE tenant_id = :t AND slot = 'user.location'", t=tenant
        ),
        timeout_s=60,
        what="the Berlin memory",
    )
    _say(client, "ana", "I moved to Paris.", T0 + timedelta(days=30), event_id="ev-paris", session="s-paris")
    for i, line in enumerate(CANARY):
        _say(
            client, "dev", line, T0 + timedelta(days=1, hours=i), event_id=f"ev-canary-{i}", session=f"s-c{i}"
        )
    wait_for(
        lambda: (
            len(
                _one(
                    engine, "SELECT 1 FROM memories WHERE tenant_id = :t AND slot = 'user.location'", t=tenant
                )
            )
            == 2
            and len(_one(engine, "SELECT 1 FROM memories WHERE tenant_id = :t AND user_id = 'dev'", t=tenant))
            == 2
            and _settled(engine, tenant)
        ),
        timeout_s=90,
        what="Paris and the two canary notes",
    )
    TaskPublisher(redis_url, queue=queue_name).publish(tasknames.DISTILL, [None, tenant, "dev"])
    wait_for(
        lambda: _one(
            engine,
            "SELECT 1 FROM consolidation_runs WHERE tenant_id = :t AND kind = 'distill' "
            "AND finished_at IS NOT NULL",
            t=tenant,
        ),
        timeout_s=60,
        what="the distill run",
    )
    StreamProducer(redis_url, queue=queue_name, timeout_s=2).append(
        {
            "tenant_id": tenant,
            "events": [
                {
                    "event_id": "ev-bad",
                    "user_id": "ana",
                    "session_id": "s-bad",
                    "role": "wizard",
                    "content": "hi",
                }
            ],
        }
    )
    wait_for(
        lambda: _one(
            engine, "SELECT 1 FROM dead_letters WHERE tenant_id = :t AND event_id = 'ev-bad'", t=tenant
        ),
        timeout_s=30,
        what="the dead letter",
    )
    return client


def _trace(engine, tenant, event_id):
    with session_scope(engine, tenant=tenant) as db:
        return event_trace(db, tenant, event_id)


def _why(engine, tenant, memory_id):
    with session_scope(engine, tenant=tenant) as db:
        return memory_why(db, tenant, memory_id)


def test_trace_and_why_follow_a_real_pipeline_run(
    pipeline, engine, tenant, api_server, api_key, worker_env, redis_url, queue_name
):
    # (a) Berlin: stored by the consumer, one window, added, later superseded by Paris (another event)
    berlin = _trace(engine, tenant, "ev-berlin")
    assert berlin is not None and json.loads(json.dumps(berlin)) == berlin  # JSON as it is
    stored = berlin["stored"]
    assert stored["ingested_by"].startswith("consumer:") and stored["content"] == "I live in Berlin."
    assert stored["status"] == "extracted" and stored["redaction_count"] == 0
    (window,) = berlin["windows"]
    assert window["task_id"] and window["turn"]["rule_candidates"] >= 1
    assert window["turn"]["llm"] == "not_needed" and window["turn"]["status"] == "extracted"
    assert window["summary"]["turns"] >= 1 and "gate" in window["summary"]
    assert [c["decision"] for c in berlin["candidates"]] == ["add"]
    (decision,) = berlin["decisions"]
    berlin_id = decision["memory_id"]
    assert decision["op"] == "add" and decision["task_id"] and "Berlin" in decision["content"]
    # later: the supersede of Berlin's memory (by the Paris event), then Paris's own history
    assert berlin["later"][0]["op"] == "supersede" and berlin["later"][0]["memory_id"] == berlin_id
    assert "ev-paris" in berlin["later"][0]["event_ids"]
    by_id = {m["id"]: m for m in berlin["memories"]}
    assert by_id[berlin_id]["status"] == "superseded"
    paris_id = by_id[berlin_id]["superseded_by"]
    assert by_id[paris_id]["relation"] == "successor" and "Paris" in by_id[paris_id]["content"]
    stages = {t["stage"] for t in berlin["tasks"]}
    assert {"extract", "reconcile"} <= stages
    reconcile = next(t for t in berlin["tasks"] if t["stage"] == "reconcile")
    assert reconcile["summary"]["outcome"] == "ok" and reconcile["summary"].get("add", 0) >= 1

    # (b) a canary note: added, then consolidated by distillation into a new memory
    canary = _trace(engine, tenant, "ev-canary-0")
    assert canary is not None
    assert "consolidated" in [h["op"] for h in canary["later"]]
    successor = next(m for m in canary["memories"] if m["relation"] == "successor")
    assert successor["status"] == "active" and len(successor["consolidated_from"]) == 2
    assert any(t["stage"] == "distill" and "consolidated" in t["summary"] for t in canary["tasks"])
    why = _why(engine, tenant, successor["id"])
    assert why is not None and why["memory"]["id"] == successor["id"]
    assert {n["relation"] for n in why["lineage"][1:]} == {"consolidated_from"}
    assert {t["event_id"] for t in why["turns"]} == {"ev-canary-0", "ev-canary-1"}
    assert all(t["content"] == line for t, line in zip(why["turns"], CANARY, strict=True))

    # (c) dead-lettered: never stored, the dead letter says why
    bad = _trace(engine, tenant, "ev-bad")
    assert bad is not None and bad["stored"] is None and bad["windows"] == []
    assert "role" in bad["dead_letters"][0]["reason"]

    # retention purges Berlin's text (60 days old, a 45-day tenant retention): purged, not an error
    with session_scope(engine) as db:
        db.execute(
            text("UPDATE tenants SET settings = CAST(:s AS jsonb) WHERE id = :t"),
            {"t": tenant, "s": json.dumps({"retention": {"turn_days": 45}})},
        )
        counts = purge_transcripts(db, now=utcnow(), turn_days=90, candidate_days=90, tenant_id=tenant)
    assert counts["turns_scrubbed"] >= 1 and counts["traces_purged"] == 0
    why = _why(engine, tenant, paris_id)
    assert why is not None
    assert [(n["memory_id"], n["relation"]) for n in why["lineage"]] == [
        (paris_id, "self"),
        (berlin_id, "supersedes"),
    ]
    turns = {t["event_id"]: t for t in why["turns"]}
    assert turns["ev-paris"]["content"] == "I moved to Paris." and not turns["ev-paris"]["content_purged"]
    assert turns["ev-berlin"]["content"] is None and turns["ev-berlin"]["content_purged"]
    assert len(turns["ev-berlin"]["content_sha256"]) == 64
    purged = _trace(engine, tenant, "ev-berlin")
    assert purged["stored"]["content"] is None and purged["stored"]["content_purged"]
    assert purged["windows"] and purged["decisions"]  # the journey outlives the text

    # a prune archives Paris (its TTL passed): the Paris event's trace shows it, with the prune run's counts
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE memories SET expires_at = now() - interval '1 day' WHERE id = :id"), {"id": paris_id}
        )
    TaskPublisher(redis_url, queue=queue_name).publish(tasknames.PRUNE, [None])
    wait_for(
        lambda: _one(
            engine,
            "SELECT 1 FROM memory_history h JOIN consolidation_runs r ON r.actor = h.actor "
            "WHERE h.memory_id = :m AND h.op = 'archive' AND r.kind = 'prune' AND r.finished_at IS NOT NULL",
            m=paris_id,
        ),
        timeout_s=60,
        what="the prune run",
    )
    paris = _trace(engine, tenant, "ev-paris")
    assert {h["op"] for h in paris["decisions"]} == {"supersede", "add"}
    archive = next(h for h in paris["later"] if h["op"] == "archive")
    assert archive["memory_id"] == paris_id and "ttl" in archive["reason"]
    prune = next(t for t in paris["tasks"] if t["actor"] == archive["actor"])
    assert prune["stage"] == "prune" and prune["summary"]["archived_ttl"] >= 1

    # the API, tenant-bound: the key's tenant sees it all, another tenant's key gets 404 problem+json
    headers = {"Authorization": f"Bearer {api_key}"}
    got = httpx.get(f"{api_server}/v1/events/ev-berlin/trace", headers=headers, timeout=10)
    assert got.status_code == 200 and got.json()["decisions"][0]["memory_id"] == berlin_id
    got = httpx.get(f"{api_server}/v1/memories/{paris_id}/why", headers=headers, timeout=10)
    assert got.status_code == 200 and got.json()["lineage"][1]["memory_id"] == berlin_id
    assert (
        httpx.get(f"{api_server}/v1/events/ev-bad/trace", headers=headers, timeout=10).json()["stored"]
        is None
    )
    missing = httpx.get(f"{api_server}/v1/events/no-such-event/trace", headers=headers, timeout=10)
    assert missing.status_code == 404 and missing.headers["content-type"].startswith(
        "application/problem+json"
    )
    other = json.loads(memctl(worker_env, "keys", "create", f"{tenant}-other", "--json").stdout)["key"]
    for path in ("/v1/events/ev-berlin/trace", "/v1/events/ev-bad/trace", f"/v1/memories/{paris_id}/why"):
        refused = httpx.get(f"{api_server}{path}", headers={"Authorization": f"Bearer {other}"}, timeout=10)
        assert refused.status_code == 404, path
        assert refused.headers["content-type"].startswith("application/problem+json")

    # an event posted to the API says which key stored it
    posted = httpx.post(
        f"{api_server}/v1/events",
        json={"event_id": "ev-api", "user_id": "zed", "session_id": "s-api", "content": "hello"},
        headers=headers,
        timeout=10,
    )
    assert posted.status_code == 202
    via_api = httpx.get(f"{api_server}/v1/events/ev-api/trace", headers=headers, timeout=10).json()
    assert via_api["stored"]["ingested_by"].startswith("api:")

    # the client package, typed
    from memory_client import Memory, NotFound

    with Memory(api_server, api_key) as memory:
        traced = memory.trace("ev-canary-0")
        assert traced.event_id == "ev-canary-0" and traced.stored and traced.decisions[0]["op"] == "add"
        assert memory.why(paris_id).lineage[1]["memory_id"] == berlin_id
        with pytest.raises(NotFound):
            memory.trace("no-such-event")
    with Memory(api_server, other) as memory, pytest.raises(NotFound):
        memory.why(paris_id)

    # memctl, 80 columns: the same journeys as text, and as the same JSON with --json
    env = {**worker_env, "COLUMNS": "80"}
    shown = memctl(env, "trace", "ev-berlin").stdout  # the tenant found from the id
    assert all(len(line) <= 80 for line in shown.splitlines()), shown
    assert "consumer:" in shown and "text purged by retention" in shown and "supersede" in shown
    assert "window" in shown and "decision" in shown and "later" in shown
    as_json = json.loads(memctl(env, "trace", "ev-berlin", "--tenant", tenant, "--json").stdout)
    assert as_json["tenant_id"] == tenant and as_json["decisions"] == purged["decisions"]
    dead = memctl(env, "trace", "ev-bad", "--tenant", tenant).stdout
    assert "never stored" in dead and "dead letter" in dead and "role" in dead
    consolidated = memctl(env, "trace", "ev-canary-0", "--tenant", tenant).stdout
    assert "consolidated" in consolidated and "distill" in consolidated
    lineage = memctl(env, "why", paris_id[:8]).stdout  # the short id the tables show
    assert all(len(line) <= 80 for line in lineage.splitlines()), lineage
    assert "superseded by" in lineage and "I moved to Paris." in lineage and "text purged" in lineage
    why_json = json.loads(memctl(env, "why", paris_id, "--json").stdout)
    assert [(n["memory_id"], n["relation"]) for n in why_json["lineage"]] == [
        (n["memory_id"], n["relation"]) for n in why["lineage"]
    ]
    assert why_json["memory"]["status"] == "archived"  # pruned meanwhile
    assert "no event" in memctl(env, "trace", "no-such-event", ok=False).stderr
    assert memctl(env, "why", "zz", ok=False).returncode != 0

    # memctl's tables at 80 columns: content first and whole, ids short; --wide shows the full ids
    table = memctl(env, "memories", "dev", "--tenant", tenant, "--all").stdout
    assert all(len(line) <= 80 for line in table.splitlines()), table
    # not cut into tiny pieces: the content column gets the room (40+ characters of it on one line)
    assert "The billing service v2.3 canary runs for" in table, table
    assert table.splitlines()[0].split()[0] == "content"
    assert successor["id"][:8] in table and successor["id"] not in table
    assert successor["id"] in memctl(env, "memories", "dev", "--tenant", tenant, "--wide").stdout
    events = memctl(env, "events", "--tenant", tenant, "--user", "ana").stdout
    assert all(len(line) <= 80 for line in events.splitlines()) and "[purged]" in events

    # erasing the user takes the traces with it: task rows, the events, the dead letter naming them
    erased = httpx.delete(f"{api_server}/v1/users/ana", headers=headers, timeout=10)
    assert erased.status_code == 200 and erased.json()["deleted"]["task_traces"] >= 3
    assert not _one(engine, "SELECT 1 FROM task_traces WHERE tenant_id = :t AND user_id = 'ana'", t=tenant)
    for event_id in ("ev-berlin", "ev-bad"):
        gone = httpx.get(f"{api_server}/v1/events/{event_id}/trace", headers=headers, timeout=10)
        assert gone.status_code == 404, event_id
