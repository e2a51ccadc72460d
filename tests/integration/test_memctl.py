"""`memctl` against the real services: every data command answers --json with one JSON document."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from sqlalchemy import text

from tests.services import REPO, wait_for

pytestmark = pytest.mark.integration


def memctl(
    env: dict[str, str], *args: str, stdin: str | None = None, ok: bool = True
) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "memctl.cli", *args],
        env=env,
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if ok:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def test_the_operator_cli_end_to_end(worker_env, start_worker, engine, tenant):
    env = worker_env
    key = json.loads(memctl(env, "keys", "create", tenant, "--json").stdout)
    assert key["tenant"] == tenant and key["key"].startswith("mk_")
    plain = memctl(env, "keys", "create", tenant).stdout.strip()
    assert plain.startswith("mk_") and "\n" not in plain
    listed = json.loads(memctl(env, "keys", "list", "--tenant", tenant, "--json").stdout)
    assert len(listed) == 2 and all("key_hash" not in k for k in listed)

    start_worker(env={"MEMORY_DEBOUNCE_IDLE_S": "1"})
    sent = json.loads(
        memctl(
            env,
            "emit",
            "--tenant",
            tenant,
            "--user",
            "u1",
            "--session",
            "s1",
            "--content",
            "Please remember that I am allergic to peanuts.",
            "--json",
        ).stdout
    )
    memctl(
        env,
        "emit",
        "--tenant",
        tenant,
        "--stdin",
        stdin=json.dumps({"user_id": "u1", "session_id": "s1", "type": "session_end"}),
    )
    bad = memctl(
        env, "emit", "--tenant", tenant, "--user", "u1", "--session", "s1", "--role", "bot", ok=False
    )
    assert bad.returncode == 2 and "role" in bad.stderr

    def memories():
        return json.loads(memctl(env, "memories", "u1", "--tenant", tenant, "--json").stdout)

    rows = wait_for(lambda: memories(), timeout_s=60, what="the memory")
    assert "peanuts" in rows[0]["content"]
    events = json.loads(memctl(env, "events", "--tenant", tenant, "--user", "u1", "--json").stdout)
    assert sent["event_id"] in {e["event_id"] for e in events}
    hits = json.loads(memctl(env, "search", "u1", "allergy peanuts", "--tenant", tenant, "--json").stdout)
    assert hits and "peanuts" in hits[0]["content"]
    block = json.loads(memctl(env, "context", "u1", "--tenant", tenant, "--query", "food", "--json").stdout)
    assert "peanuts" in block["context"]
    stats = json.loads(memctl(env, "stats", "--json").stdout)
    assert stats["queue_depth"] >= 0 and stats["events"]
    assert isinstance(json.loads(memctl(env, "dlq", "list", "--json").stdout), list)
    assert isinstance(json.loads(memctl(env, "runs", "--json").stdout), list)

    refused = memctl(env, "erase", "u1", "--tenant", tenant, ok=False, stdin="n\n")
    assert refused.returncode != 0
    erased = json.loads(memctl(env, "erase", "u1", "--tenant", tenant, "--yes", "--json").stdout)
    assert erased["deleted"]["memories"] >= 1
    with engine.connect() as conn:
        assert (
            conn.execute(text("SELECT count(*) FROM events WHERE tenant_id = :t"), {"t": tenant}).scalar()
            == 0
        )


def test_a_bad_setting_is_a_clear_cli_error(worker_env):
    proc = memctl({**worker_env, "MEMORY_API_PORT": "nope"}, "stats", ok=False)
    assert proc.returncode == 2 and "MEMORY_API_PORT" in proc.stderr
