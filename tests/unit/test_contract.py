"""The event contract: every violation names its field; good events pass; batches are all-or-nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.contract import MAX_BATCH, parse_batch, parse_event
from shared.errors import ContractError

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
GOOD = {"user_id": "alice", "session_id": "s-1", "content": "I use pnpm"}


def fields_of(exc: ContractError) -> list[str]:
    return [e["field"] for e in exc.errors]


def test_a_minimal_event_gets_defaults_and_a_generated_id():
    event = parse_event(GOOD, now=NOW)
    assert event.type == "turn" and event.role == "user" and event.schema_version == 1
    assert len(event.event_id) == 32 and event.metadata == {}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"user_id": "a" * 129}, "user_id"),
        ({"user_id": "with space"}, "user_id"),
        ({"session_id": "../etc"}, "session_id"),
        ({"event_id": "x/y"}, "event_id"),
        ({"agent_id": ""}, "agent_id"),
        ({"role": "bot"}, "role"),
        ({"type": "start"}, "type"),
        ({"content": "x" * (32 * 1024 + 1)}, "content"),
        ({"content": "汉" * 11_000}, "content"),  # 33,000 bytes in UTF-8
        ({"content": "nul\x00byte"}, "content"),
        ({"content": 42}, "content"),
        ({"metadata": [1]}, "metadata"),
        ({"metadata": {"k": "v" * 9000}}, "metadata"),
        ({"event_time": (NOW + timedelta(days=1, minutes=1)).isoformat()}, "event_time"),
        ({"event_time": "yesterday"}, "event_time"),
        ({"schema_version": 2}, "schema_version"),
        ({"unexpected": True}, "unexpected"),
    ],
)
def test_each_violation_names_the_field(change, field):
    with pytest.raises(ContractError) as info:
        parse_event({**GOOD, **change}, now=NOW)
    assert field in fields_of(info.value)
    assert field in str(info.value)


def test_content_of_exactly_32_kib_and_an_event_a_day_ahead_are_accepted():
    parse_event({**GOOD, "content": "x" * 32 * 1024}, now=NOW)
    parse_event({**GOOD, "event_time": (NOW + timedelta(hours=23)).isoformat()}, now=NOW)


def test_a_naive_event_time_is_taken_as_utc():
    event = parse_event({**GOOD, "event_time": "2026-01-01T10:00:00"}, now=NOW)
    assert event.event_time == datetime(2026, 1, 1, 10, tzinfo=UTC)


def test_a_batch_reports_every_bad_event_with_its_index():
    with pytest.raises(ContractError) as info:
        parse_batch({"events": [GOOD, {**GOOD, "role": "x"}, {"user_id": "u"}]}, now=NOW)
    assert fields_of(info.value) == ["events.1.role", "events.2.session_id"]


@pytest.mark.parametrize("body", [[], {"events": []}, "text", 5, {"events": "x"}])
def test_empty_or_shapeless_batches_are_rejected(body):
    with pytest.raises(ContractError):
        parse_batch(body, now=NOW)


def test_batches_are_capped_at_500_events():
    assert len(parse_batch([GOOD] * MAX_BATCH, now=NOW)) == MAX_BATCH
    with pytest.raises(ContractError, match="at most 500"):
        parse_batch([GOOD] * (MAX_BATCH + 1), now=NOW)


def test_a_contract_error_is_a_value_error_for_callers_of_emit():
    assert issubclass(ContractError, ValueError)
