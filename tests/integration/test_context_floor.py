"""The context block's relevance floor (issue 16, item 4), over the real API: a greeting gets the standing
rules and the profile and nothing else; a question gets what it is about; the response counts what was left
out; the floor can be turned off per request; and the labelled cases (tests/data/context_floor/cases.json,
English and Chinese) are served as labelled with the default (hashing) embedder's calibrated floor."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from tests.integration.test_episodes_api import BILLING, _close
from tests.memory_rows import insert_memory

pytestmark = pytest.mark.integration
CASES = json.loads((Path(__file__).parents[1] / "data" / "context_floor" / "cases.json").read_text())
T0 = datetime.now(UTC) - timedelta(days=2)

MEMORIES = [
    ("rule", "procedural", "feedback", "Never suggest an ORM: the user writes SQL by hand."),
    ("profile", "semantic", "profile", "The user is a backend engineer based in Berlin."),
    ("region", "semantic", "fact", "Production is deployed on Fly.io in the Frankfurt region."),
    ("go", "semantic", "fact", "The API service runs on Go 1.22 behind an nginx reverse proxy."),
    ("cat", "semantic", "fact", "The user's cat is called Miso and is allergic to chicken."),
]


def _api(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def _context(api: httpx.Client, user: str, query: str, **params: Any) -> dict[str, Any]:
    r = api.get(f"/v1/users/{user}/context", params={"query": query, "max_tokens": 4000, **params})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _seed(engine, tenant: str, user: str, rows) -> dict[str, str]:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tenants (id) VALUES (:t) ON CONFLICT DO NOTHING"), {"t": tenant})
        return {
            name: insert_memory(
                conn, tenant_id=tenant, user_id=user, content=content, kind=kind, category=cat, valid_from=T0
            )
            for name, kind, cat, content in rows
        }


def test_a_greeting_gets_rules_and_profile_only_and_a_question_gets_its_memory(  # type: ignore[no-untyped-def]
    api_server, api_key, engine, tenant
):
    ids = _seed(engine, tenant, "dev", MEMORIES)
    _close(engine, tenant, "dev", "billing", BILLING, T0)
    api = _api(api_server, api_key)

    for greeting in ("hi", "Hello there! How are you doing?", "thanks, got it", "你好", "好的，谢谢"):
        block = _context(api, "dev", greeting)
        assert "## Rules and feedback" in block["context"] and "## About the user" in block["context"], greeting
        assert "Relevant to this request" not in block["context"], (greeting, block["context"])
        assert set(block["included"]) == {ids["rule"], ids["profile"]}, greeting
        # the search found the deployment facts and the episode: left out, and counted
        assert block["left_out"]["memories_below_floor"] >= 1, block
        assert block["left_out"]["episodes_below_floor"] == 1, block
        assert block["left_out"]["over_budget"] == 0

    # the same greeting with the floor turned off: the token tax the floor removes
    off = _context(api, "dev", "hi", min_similarity=0)
    assert "Relevant to this request" in off["context"]
    assert ids["region"] in off["included"] and off["left_out"]["memories_below_floor"] == 0
    assert off["tokens"] > _context(api, "dev", "hi")["tokens"]

    asked = _context(api, "dev", "thanks! which region do we deploy production to?")
    assert ids["region"] in asked["included"] and "Fly.io" in asked["context"]
    assert ids["cat"] not in asked["included"]  # about something else: left out
    assert asked["left_out"]["memories_below_floor"] >= 1

    lesson = _context(api, "dev", "the billing deploy failed again with a database timeout")
    assert any(i.startswith("episode:") for i in lesson["included"]) and BILLING.lesson in lesson["context"]
    cat = _context(api, "dev", "what should I feed my cat?")
    assert ids["cat"] in cat["included"] and not any(i.startswith("episode:") for i in cat["included"])


def _case_user(engine, tenant: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    rows = [(m["id"], m["kind"], m["category"], m["content"]) for m in CASES["memories"]]
    return _seed(engine, tenant, "cases", rows)


# The held-back split was scored once, after the floor was chosen on the dev split (CALIBRATION.md): with
# the hashing embedder (lexical only) 5 of its 8 questions got their memory, and every one of its null
# queries got nothing. The floor was not re-tuned on it; these bars keep it from getting worse.
BARS = {"dev": (13, 10), "test": (5, 8)}  # (questions served their memory, null queries served nothing)


@pytest.mark.parametrize("split", ["dev", "test"])
def test_the_labelled_cases_are_served_as_labelled(api_server, api_key, engine, tenant, split):  # type: ignore[no-untyped-def]
    ids = _case_user(engine, tenant)
    api = _api(api_server, api_key)
    served, quiet, nulls = 0, 0, []
    for case in (c for c in CASES["queries"] if c["split"] == split):
        block = _context(api, "cases", case["q"])
        relevant = [i for i in block["included"] if i in ids.values()]  # no standing memories in this set
        if case["relevant"]:
            served += {ids[label] for label in case["relevant"]} <= set(relevant)
        elif relevant:
            nulls.append((case["q"], block["context"]))
        else:
            quiet += 1
    assert served >= BARS[split][0] and quiet == BARS[split][1], (served, quiet, nulls)


def test_memctl_context_reports_what_the_floor_left_out(worker_env, engine, tenant):  # type: ignore[no-untyped-def]
    from tests.integration.test_memctl import memctl

    ids = _seed(engine, tenant, "dev", MEMORIES)
    out = memctl(worker_env, "context", "dev", "--tenant", tenant, "--query", "hi", "--json")
    block = json.loads(out.stdout)
    assert set(block["included"]) == {ids["rule"], ids["profile"]}
    assert block["left_out"]["memories_below_floor"] >= 1
