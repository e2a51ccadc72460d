"""An LLM answer whose fields do not fit their columns (issue #16, item 7): a 300-character slot, a
2,000-character value and an 6,000-character content are dropped or cut before anything is written, and the
window goes on: its turns end `extracted`, nothing is dead-lettered, the memories are stored."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from core.extraction.candidates import Candidate, Category, Kind, Tier
from core.limits import CONTENT_MAX, SLOT_MAX, fit_candidate
from tests.fakes.openai_server import FakeOpenAI
from tests.services import memory_client, wait_for

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
TURNS = [
    "We spent the morning debugging the flaky payment webhook; the retry queue was dropping jobs.",
    "Our customers are mostly small clinics in Portugal, so GDPR questions come up a lot.",
]
LONG_SLOT = "project." + "very_long_attribute_name_" * 12  # 308 characters
LONG_CONTENT = "The user keeps a very detailed runbook. " * 150  # 6,000 characters


def _item(content: str, event_id: str, *, slot: str | None, value: str | None) -> dict:
    return {
        "content": content,
        "kind": "semantic",
        "category": "fact",
        "tier": "worth",
        "slot": slot,
        "value": value,
        "op": "remember",
        "confidence": 0.9,
        "source_event_ids": [event_id],
    }


def test_fit_candidate_drops_or_cuts_only_what_does_not_fit():
    base = Candidate(
        content="The project uses pnpm.",
        kind=Kind.SEMANTIC,
        category=Category.FACT,
        tier=Tier.WORTH,
        confidence=0.9,
        source_event_ids=("e1",),
        slot="project.package_manager",
        value="pnpm",
    )
    same, notes = fit_candidate(base)
    assert same is base and notes == []
    long_slot, notes = fit_candidate(base.__class__(**{**_fields(base), "slot": "x" * (SLOT_MAX + 1)}))
    assert long_slot.slot is None and long_slot.value is None and long_slot.content == base.content
    assert len(notes) == 1 and "slot" in notes[0]
    at_limit, notes = fit_candidate(base.__class__(**{**_fields(base), "slot": "x" * SLOT_MAX}))
    assert at_limit.slot == "x" * SLOT_MAX and notes == []
    long_value, notes = fit_candidate(base.__class__(**{**_fields(base), "value": "v" * 600}))
    assert long_value.slot is None and long_value.value is None and "value" in notes[0]
    long_content, notes = fit_candidate(base.__class__(**{**_fields(base), "content": LONG_CONTENT}))
    assert 0 < len(long_content.content) <= CONTENT_MAX and LONG_CONTENT.startswith(long_content.content)
    assert long_content.slot == base.slot and "content" in notes[0]


def _fields(c: Candidate) -> dict:
    return {name: getattr(c, name) for name in c.__dataclass_fields__}


def test_a_300_character_slot_from_the_llm_does_not_fail_its_window(
    start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    def answer(request):
        window = request["messages"][-1]["content"].split("## Conversation window", 1)[1]
        ids = [part.split("]", 1)[0] for part in window.split("[")[1:]]
        return json.dumps(
            {
                "memories": [
                    _item("The project tracks a webhook retry setting.", ids[0], slot=LONG_SLOT, value="on"),
                    _item(
                        "The user's customers are clinics.", ids[0], slot="user.customers", value="x" * 2000
                    ),
                    _item(LONG_CONTENT, ids[-1], slot=None, value=None),
                    _item(
                        "The user's customers are in Portugal.", ids[-1], slot="user.market", value="Portugal"
                    ),
                ]
            }
        )

    with FakeOpenAI() as fake_llm:
        fake_llm.default_responder = answer
        start_worker(
            env={
                "OPENAI_API_KEY": "test-key",
                "OPENAI_BASE_URL": fake_llm.base_url,
                "OPENAI_MAX_RETRIES": "1",
                "OPENAI_TIMEOUT_S": "3",
                "MEMORY_DEBOUNCE_IDLE_S": "1",
                "MEMORY_LLM_BATCH_TURNS": "1",
            }
        )
        client = memory_client(tenant, redis_url, queue_name, tmp_path)
        for i, content in enumerate(TURNS):
            client.emit(
                user_id="u1",
                session_id="s1",
                content=content,
                event_id=f"{tenant}-{i}",
                event_time=T0 + timedelta(seconds=i),
            )
        client.emit(user_id="u1", session_id="s1", type="session_end", event_id=f"{tenant}-end")
        client.flush()

        def memories():
            with engine.connect() as conn:
                return conn.execute(
                    text(
                        "SELECT content, slot, value FROM memories WHERE tenant_id = :t AND status = 'active'"
                    ),
                    {"t": tenant},
                ).all()

        wait_for(lambda: len(memories()) >= 4, timeout_s=60, what="the window's four memories")
        assert fake_llm.calls, "the window went to the LLM"

    with engine.connect() as conn:
        statuses = dict(
            conn.execute(
                text(
                    "SELECT status, count(*) FROM events WHERE tenant_id = :t AND type = 'turn' GROUP BY status"
                ),
                {"t": tenant},
            ).all()
        )
        letters = conn.execute(text("SELECT count(*) FROM dead_letters WHERE tenant_id = :t"), {"t": tenant})
        assert int(letters.scalar() or 0) == 0
    assert statuses == {"extracted": len(TURNS)}
    by_content = {m.content: m for m in memories()}
    assert by_content["The project tracks a webhook retry setting."].slot is None  # dropped, fact kept
    assert by_content["The user's customers are clinics."].slot is None
    assert by_content["The user's customers are in Portugal."].slot == "user.market"  # untouched
    cut = [m.content for m in by_content.values() if m.content.startswith("The user keeps a very detailed")]
    assert len(cut) == 1 and len(cut[0]) <= CONTENT_MAX
