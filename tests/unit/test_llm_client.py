"""The OpenAI client's own contract (the stages' use of it is in test_llm_extractor): JSON with or without a
schema, free text, refusals and failures reported, never raised."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeOpenAI, Reply
from worker.llm import LLMClient, LLMConfig, LLMUsage, OpenAIClient

MESSAGES = [{"role": "system", "content": "Answer."}, {"role": "user", "content": "Hello"}]
SCHEMA = {"name": "answer", "strict": True, "schema": {"type": "object", "properties": {}}}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def client(fake: FakeOpenAI, *, max_retries: int = 3, structured_outputs: bool = True) -> OpenAIClient:
    config = LLMConfig(
        base_url=fake.base_url,
        api_key="k",
        model="fake-chat",
        timeout_s=5,
        max_retries=max_retries,
        structured_outputs=structured_outputs,
    )
    return OpenAIClient(config, sleep=lambda _s: None, rng=random.Random(1))


def test_the_openai_client_is_an_llm_client(fake: FakeOpenAI) -> None:
    llm: LLMClient = client(fake)

    assert llm.complete_text(MESSAGES).error is None


def test_json_without_a_schema_asks_for_a_json_object_and_keeps_the_schema_setting(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="ok", content='{"a": 1}'))
    llm = client(fake)

    content, usage, error = llm.complete_json(MESSAGES)

    assert (content, error) == ('{"a": 1}', None)
    assert fake.calls[0]["response_format"] == {"type": "json_object"}
    assert usage == LLMUsage(fake.prompt_tokens, fake.completion_tokens, 1)
    assert llm.uses_json_schema


def test_json_with_a_schema_sends_it_unless_structured_outputs_are_off(fake: FakeOpenAI) -> None:
    client(fake).complete_json(MESSAGES, json_schema=SCHEMA)
    client(fake, structured_outputs=False).complete_json(MESSAGES, json_schema=SCHEMA)

    assert fake.calls[0]["response_format"] == {"type": "json_schema", "json_schema": SCHEMA}
    assert fake.calls[1]["response_format"] == {"type": "json_object"}


def test_text_sends_no_response_format(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="ok", content="plain words"))

    completion = client(fake).complete_text(MESSAGES)

    assert completion.content == "plain words" and completion.error is None
    assert "response_format" not in fake.calls[0]


def test_a_refusal_and_a_failure_are_errors_without_content(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="refusal"), Reply(kind="status", status=503), Reply(kind="status", status=503))
    llm = client(fake, max_retries=1)

    refused = llm.complete_json(MESSAGES)
    failed = llm.complete_text(MESSAGES)

    assert (refused.content, refused.error) == (None, "refusal")
    assert (failed.content, failed.error, failed.usage.calls) == (None, "server_error_503", 2)


def test_usage_adds_up_and_counts_tokens_both_ways() -> None:
    total = LLMUsage(10, 5, 1) + LLMUsage(3, 2, 2)

    assert total == LLMUsage(13, 7, 3) and total.tokens == 20


# the response zoo: what each shape of a 200 becomes ---------------------------------------------------------

ANSWER = '{"memories": []}'


@pytest.mark.parametrize(
    ("style", "content", "error"),
    [
        ("length", None, "truncated"),
        ("refusal", None, "refusal"),
        ("tool_call", ANSWER, None),  # the JSON came as the tool call's arguments
        ("no_choices", None, "no_choices"),
        ("empty", None, "empty_content"),
        ("think", ANSWER, None),  # the reasoning block is removed
        ("fenced", f"```json\n{ANSWER}\n```", None),  # left to the caller's parser
    ],
)
def test_each_shape_of_a_json_answer_is_content_or_a_reason(
    fake: FakeOpenAI, style: str, content: str | None, error: str | None
) -> None:
    fake.script(Reply(kind="ok", content=ANSWER, style=style))  # type: ignore[arg-type]

    completion = client(fake).complete_json(MESSAGES)

    assert (completion.content, completion.error) == (content, error)
    assert completion.usage.calls == 1


def test_a_text_answer_loses_its_reasoning_block_and_a_cut_off_text_is_kept(fake: FakeOpenAI) -> None:
    fake.script(
        Reply(kind="ok", content="## Decisions\n- pnpm", style="think"),
        Reply(kind="ok", content="## Decisions\n- pnpm and more", style="length"),
        Reply(kind="ok", content="<think>still thinking about {x}"),
    )
    llm = client(fake)

    assert llm.complete_text(MESSAGES).content == "## Decisions\n- pnpm"
    assert llm.complete_text(MESSAGES).content == "## Decisions\n-"  # the first half, as sent
    assert llm.complete_text(MESSAGES).error == "truncated"


def test_a_tool_call_without_arguments_for_a_json_answer_is_a_reason(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="ok", content=" ", style="tool_call"))

    assert client(fake).complete_json(MESSAGES).error == "tool_call"


def test_temperature_and_max_tokens_are_sent_unless_configured_off(fake: FakeOpenAI) -> None:
    client(fake).complete_text(MESSAGES)
    config = LLMConfig(
        base_url=fake.base_url, api_key="k", model="m", max_output_tokens=None, temperature=None
    )
    OpenAIClient(config).complete_text(MESSAGES)

    assert (fake.calls[0]["temperature"], fake.calls[0]["max_tokens"]) == (0, 4096)
    assert "temperature" not in fake.calls[1] and "max_tokens" not in fake.calls[1]


def test_a_400_about_something_else_is_not_retried_with_other_parameters(fake: FakeOpenAI) -> None:
    fake.script(
        Reply(kind="status", status=400, content="This model's maximum context length is 8192 tokens.")
    )

    completion = client(fake).complete_text(MESSAGES)

    assert completion.error == "http_400" and len(fake.calls) == 1
