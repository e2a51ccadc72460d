"""LLM extraction and summaries over the OpenAI client, against a real HTTP fake of the OpenAI API, through the
real `openai` SDK."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.extraction.candidates import Candidate, Category, Kind, Operation, Tier, Turn
from core.prompts.extraction import PROMPT_VERSION, build_extraction_messages, extraction_json_schema
from core.prompts.summary import SUMMARY_SECTIONS
from shared.openai_sdk import compute_backoff, retry_after_seconds
from tests.fakes.openai_server import FakeOpenAI, Reply
from worker.llm import LLMConfig, LLMUsage, OpenAIClient
from worker.services.llm_extraction import extract_candidates
from worker.services.summary import summarize

WINDOW = [
    Turn(
        event_id=f"ev-{n}",
        role="user" if n % 2 else "assistant",
        content=f"turn {n}",
        source_turn_id=f"t-{n}",
    )
    for n in range(1, 13)
]


def memory(
    content: str = "The user uses pnpm.", *, ids: list[str] | None = None, **fields: Any
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "content": content,
        "kind": "semantic",
        "category": "fact",
        "tier": "worth",
        "slot": "project.package_manager",
        "value": "pnpm",
        "op": "remember",
        "confidence": 0.8,
        "source_event_ids": ids if ids is not None else ["ev-3"],
    }
    item.update(fields)
    return item


def answer(*memories: dict[str, Any]) -> str:
    return json.dumps({"memories": list(memories)}, ensure_ascii=False)


class Sleeps:
    """A no-op `sleep` that remembers what it was asked to wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def make_extractor(fake: FakeOpenAI, sleeps: Sleeps, **overrides: Any) -> OpenAIClient:
    config = LLMConfig(
        **{
            "base_url": fake.base_url,
            "api_key": "test-key",
            "model": "fake-chat",
            "timeout_s": 5,
            **overrides,
        }
    )
    return OpenAIClient(config, sleep=sleeps, rng=random.Random(7))


def extract(extractor: OpenAIClient, turns: list[Turn] = WINDOW) -> Any:
    return extract_candidates(extractor, turns=turns, summary="", existing_memories=[], rule_candidates=[])


# the happy path ------------------------------------------------------------------------------------------


def test_a_twelve_turn_window_takes_one_chat_call(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.default_responder = lambda body: answer(memory(ids=["ev-3", "ev-5"]))

    result = extract(make_extractor(fake, sleeps))

    assert result.ok and result.error is None
    assert len(fake.calls) == 1
    [candidate] = result.candidates
    assert candidate.content == "The user uses pnpm."
    assert (candidate.kind, candidate.category, candidate.tier) == (Kind.SEMANTIC, Category.FACT, Tier.WORTH)
    assert (candidate.slot, candidate.value, candidate.op) == (
        "project.package_manager",
        "pnpm",
        Operation.REMEMBER,
    )
    assert candidate.source_event_ids == ("ev-3", "ev-5")
    assert candidate.source_turn_ids == ("t-3", "t-5")
    assert candidate.origin == "llm"
    assert candidate.extra["prompt_version"] == PROMPT_VERSION


def test_every_turn_of_the_window_is_in_the_single_request(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    extract(make_extractor(fake, sleeps))

    user_message = fake.calls[0]["messages"][-1]["content"]
    assert all(f"[{turn.event_id}] {turn.role}: {turn.content}" in user_message for turn in WINDOW)


def test_the_strict_json_schema_is_sent_when_structured_outputs_are_on(
    fake: FakeOpenAI, sleeps: Sleeps
) -> None:
    extract(make_extractor(fake, sleeps))

    response_format = fake.calls[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["strict"] is True
    assert response_format["json_schema"]["schema"] == extraction_json_schema()


def test_json_object_mode_is_sent_when_structured_outputs_are_off(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    extract(make_extractor(fake, sleeps, structured_outputs=False))

    assert fake.calls[0]["response_format"] == {"type": "json_object"}


def test_a_chinese_memory_is_tagged_zh(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(
        Reply(kind="ok", content=answer(memory("用户住在柏林。", slot="user.location", value="柏林")))
    )

    [candidate] = extract(make_extractor(fake, sleeps)).candidates

    assert candidate.lang == "zh"
    assert candidate.value == "柏林"


# transient failures ----------------------------------------------------------------------------------------


def test_a_429_then_success_is_retried_after_the_retry_after_delay(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(
        Reply(kind="status", status=429, retry_after_s=1.5), Reply(kind="ok", content=answer(memory()))
    )

    result = extract(make_extractor(fake, sleeps))

    assert result.ok
    assert len(result.candidates) == 1
    assert len(fake.calls) == 2
    assert sleeps.delays == [1.5]


def test_500_on_every_attempt_gives_up_after_max_retries(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(*[Reply(kind="status", status=500) for _ in range(4)])

    result = extract(make_extractor(fake, sleeps, max_retries=3))

    assert not result.ok
    assert result.error == "server_error_500"
    assert result.candidates == []
    assert len(fake.calls) == 4
    assert len(sleeps.delays) == 3
    assert result.usage.calls == 4


def test_the_sdk_does_not_add_retries_of_its_own_to_an_injected_client(
    fake: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake.script(Reply(kind="status", status=503), Reply(kind="ok"))
    client = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=5)
    config = LLMConfig(base_url=fake.base_url, api_key="test-key", model="fake-chat", max_retries=0)

    result = extract_candidates(
        OpenAIClient(config, client=client, sleep=sleeps),
        turns=WINDOW,
        summary="",
        existing_memories=[],
        rule_candidates=[],
    )

    assert not result.ok
    assert len(fake.calls) == 1


def test_a_timeout_is_retried(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(Reply(kind="timeout", delay_s=2), Reply(kind="ok", content=answer(memory())))

    result = extract(make_extractor(fake, sleeps, timeout_s=0.5))

    assert result.ok
    assert len(result.candidates) == 1
    assert len(fake.calls) == 2


def test_a_dropped_connection_is_retried(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(Reply(kind="down"), Reply(kind="ok", content=answer(memory())))

    result = extract(make_extractor(fake, sleeps))

    assert result.ok
    assert len(fake.calls) == 2


def test_a_timeout_on_every_attempt_reports_timeout(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(Reply(kind="timeout", delay_s=2), Reply(kind="timeout", delay_s=2))

    result = extract(make_extractor(fake, sleeps, timeout_s=0.2, max_retries=1))

    assert not result.ok
    assert result.error == "timeout"


def test_a_client_error_is_not_retried(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(Reply(kind="status", status=401))

    result = extract(make_extractor(fake, sleeps))

    assert not result.ok
    assert result.error == "http_401"
    assert len(fake.calls) == 1


# invalid answers -------------------------------------------------------------------------------------------


def test_malformed_json_twice_fails_after_exactly_one_repair(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(Reply(kind="malformed"), Reply(kind="malformed"))

    result = extract(make_extractor(fake, sleeps))

    assert not result.ok
    assert result.error is not None and result.error.startswith("invalid_output")
    assert len(fake.calls) == 2


def test_malformed_then_valid_succeeds_after_the_repair(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(Reply(kind="malformed"), Reply(kind="ok", content=answer(memory())))

    result = extract(make_extractor(fake, sleeps))

    assert result.ok
    assert len(result.candidates) == 1
    repair_messages = fake.calls[1]["messages"]
    assert repair_messages[:2] == fake.calls[0]["messages"]
    assert repair_messages[2]["role"] == "assistant"
    assert "not valid" in repair_messages[3]["content"]


def test_an_answer_that_breaks_the_schema_is_repaired(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    invalid = answer(memory(kind="gossip", surprise="extra field"))
    fake.script(Reply(kind="ok", content=invalid), Reply(kind="ok", content=answer(memory())))

    result = extract(make_extractor(fake, sleeps))

    assert result.ok
    repair_request = fake.calls[1]["messages"][-1]["content"]
    assert "memories.0.kind" in repair_request and "memories.0.surprise" in repair_request


def test_a_refusal_fails_without_a_repair(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(Reply(kind="refusal"))

    result = extract(make_extractor(fake, sleeps))

    assert not result.ok
    assert result.error == "refusal"
    assert len(fake.calls) == 1


def test_unknown_source_ids_are_dropped_and_a_memory_left_without_ids_too(
    fake: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake.script(
        Reply(
            kind="ok",
            content=answer(
                memory("The user uses pnpm.", ids=["ev-1", "made-up", "ev-1"]),
                memory("The user lives on Mars.", ids=["made-up"], slot=None, value=None),
            ),
        )
    )

    result = extract(make_extractor(fake, sleeps))

    assert result.ok
    assert [c.content for c in result.candidates] == ["The user uses pnpm."]
    assert result.candidates[0].source_event_ids == ("ev-1",)


# accounting and fallbacks ----------------------------------------------------------------------------------


def test_tokens_are_taken_from_usage_across_retries_and_repairs(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(
        Reply(kind="status", status=503),
        Reply(kind="malformed"),
        Reply(kind="ok", content=answer(memory())),
    )

    result = extract(make_extractor(fake, sleeps))

    assert result.ok
    assert result.usage == LLMUsage(
        prompt_tokens=fake.prompt_tokens, completion_tokens=fake.completion_tokens, calls=3
    )
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0


def test_a_rejected_json_schema_falls_back_to_json_object_and_remembers(
    fake: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake.reject_json_schema = True
    fake.default_responder = lambda body: answer(memory())
    extractor = make_extractor(fake, sleeps)

    first = extract(extractor)
    second = extract(extractor)

    assert first.ok and second.ok
    formats = [call["response_format"]["type"] for call in fake.calls]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert not extractor.uses_json_schema
    assert sleeps.delays == []


def test_a_400_that_json_object_mode_and_the_prompt_alone_also_get_keeps_json_schema(
    fake: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake.script(*[Reply(kind="status", status=400)] * 3)
    extractor = make_extractor(fake, sleeps)

    result = extract(extractor)

    assert not result.ok and result.error == "http_400"
    assert [call.get("response_format", {}).get("type") for call in fake.calls] == [
        "json_schema",
        "json_object",
        None,
    ]
    assert extractor.uses_json_schema


def test_an_endpoint_rejecting_every_response_format_gets_the_prompt_alone_from_then_on(
    fake: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake.reject_json_schema = True
    fake.reject_json_object = True
    fake.default_responder = lambda body: answer(memory())
    extractor = make_extractor(fake, sleeps)

    first = extract(extractor)
    second = extract(extractor)

    assert first.ok and second.ok
    formats = [call.get("response_format", {}).get("type") for call in fake.calls]
    assert formats == ["json_schema", "json_object", None, None]
    assert extractor.response_format_level == "none"
    assert sleeps.delays == []


def test_a_reasoning_model_gets_max_completion_tokens_and_no_temperature_from_then_on(
    fake: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake.reasoning_model = True
    fake.default_responder = lambda body: answer(memory())
    extractor = make_extractor(fake, sleeps)

    first = extract(extractor)
    second = extract(extractor)

    assert first.ok and second.ok
    assert len(fake.calls) == 4  # max_tokens rejected, temperature rejected, then one call each
    last = fake.calls[-1]
    assert "max_tokens" not in last and "temperature" not in last
    assert last["max_completion_tokens"] == 4096
    assert fake.calls[0]["max_tokens"] == 4096 and fake.calls[0]["temperature"] == 0
    assert sleeps.delays == []


# summaries -------------------------------------------------------------------------------------------------


def test_summarize_returns_the_rewritten_summary_and_its_usage(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(Reply(kind="ok", content="## Decisions\n- use pnpm\n"))

    summary, usage, error = summarize(
        make_extractor(fake, sleeps), previous_summary="## Decisions\n- none", turns=WINDOW
    )

    assert summary == "## Decisions\n- use pnpm" and error is None
    assert usage.calls == 1 and usage.prompt_tokens == fake.prompt_tokens
    system_prompt = fake.calls[0]["messages"][0]["content"]
    assert all(section in system_prompt for section in SUMMARY_SECTIONS)
    assert "response_format" not in fake.calls[0]


def test_summarize_gives_none_when_the_llm_is_down(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    fake.script(*[Reply(kind="status", status=503) for _ in range(2)])

    summary, usage, error = summarize(
        make_extractor(fake, sleeps, max_retries=1), previous_summary="", turns=WINDOW
    )

    assert summary is None and error is not None and error.startswith("server_error")
    assert usage.calls == 2


# prompts ---------------------------------------------------------------------------------------------------


def test_the_extraction_prompt_carries_summary_memories_and_rule_candidates() -> None:
    rule = Candidate(
        content="Never suggest an ORM.",
        kind=Kind.PROCEDURAL,
        category=Category.FEEDBACK,
        tier=Tier.MUST,
        confidence=0.95,
        source_event_ids=("ev-2",),
    )

    messages = build_extraction_messages(
        turns=WINDOW[:2],
        summary="## Decisions\n- pnpm",
        existing_memories=["The user lives in Berlin."],
        rule_candidates=[rule],
    )

    assert [m["role"] for m in messages] == ["system", "user"]
    assert all(word in messages[0]["content"] for word in ("MUST", "WORTH", "SKIP", "记住", "JSON"))
    user = messages[1]["content"]
    assert "- pnpm" in user and "The user lives in Berlin." in user
    assert "[must] remember procedural/feedback: Never suggest an ORM. (events: ev-2)" in user


def test_the_schema_is_strict_on_every_object() -> None:
    def objects(node: Any) -> Iterator[dict[str, Any]]:
        if isinstance(node, dict):
            if "properties" in node:
                yield node
            for child in node.values():
                yield from objects(child)
        elif isinstance(node, list):
            for child in node:
                yield from objects(child)

    found = list(objects(extraction_json_schema()))

    assert len(found) == 2
    for node in found:
        assert node["additionalProperties"] is False
        assert sorted(node["required"]) == sorted(node["properties"])
        assert all("default" not in prop for prop in node["properties"].values())


# backoff (pure) --------------------------------------------------------------------------------------------


@given(attempt=st.integers(min_value=0, max_value=10_000), seed=st.integers())
def test_backoff_stays_between_zero_and_the_cap(attempt: int, seed: int) -> None:
    delay = compute_backoff(attempt, base_s=0.5, max_s=8, rng=random.Random(seed))

    assert 0 <= delay <= min(8, 0.5 * 2 ** min(attempt, 32))


def test_backoff_honours_retry_after_capped_by_the_max() -> None:
    rng = random.Random(0)

    assert compute_backoff(0, base_s=0.5, max_s=8, rng=rng, retry_after_s=3) == 3
    assert compute_backoff(0, base_s=0.5, max_s=8, rng=rng, retry_after_s=60) == 8


def test_retry_after_is_read_in_seconds_or_milliseconds_and_ignored_when_unreadable() -> None:
    assert retry_after_seconds({"retry-after": "2"}) == 2
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert retry_after_seconds({}) is None
