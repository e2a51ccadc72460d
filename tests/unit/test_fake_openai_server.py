"""The fake OpenAI server answers the real `openai` SDK the way a real endpoint would, faults included."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.fakes.openai_server import FakeOpenAI, Reply, fake_embedding

MESSAGES: list[Any] = [{"role": "user", "content": "Remember that I use pnpm."}]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(embedding_dim=8) as server:
        yield server


def make_client(fake: FakeOpenAI, *, max_retries: int = 0, timeout_s: float = 5.0) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=fake.base_url, api_key="test-key", max_retries=max_retries, timeout=timeout_s
    )


def chat(client: openai.OpenAI, **kwargs: Any) -> Any:
    return client.chat.completions.create(model="fake-chat", messages=MESSAGES, **kwargs)


def test_default_responder_answers_an_empty_memory_list(fake: FakeOpenAI) -> None:
    completion = chat(make_client(fake))

    assert completion.choices[0].message.content == '{"memories": []}'
    assert completion.choices[0].finish_reason == "stop"
    assert fake.calls[0]["messages"] == MESSAGES


def test_scripted_replies_are_consumed_in_order_then_the_default_responder_takes_over(
    fake: FakeOpenAI,
) -> None:
    fake.script(Reply(kind="ok", content="first"), Reply(kind="ok", content="second"))
    fake.default_responder = lambda body: f"default for {body['model']}"
    client = make_client(fake)

    contents = [chat(client).choices[0].message.content for _ in range(3)]

    assert contents == ["first", "second", "default for fake-chat"]
    assert len(fake.calls) == 3


def test_the_default_responder_may_answer_some_requests_with_a_fault(fake: FakeOpenAI) -> None:
    def responder(body: dict[str, Any]) -> str | Reply:
        if "judge" in body["messages"][0]["content"]:
            return Reply(kind="status", status=503)
        return "fine"

    fake.default_responder = responder
    client = make_client(fake)

    assert chat(client).choices[0].message.content == "fine"
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="fake-chat", messages=[{"role": "system", "content": "judge"}])
    assert len(fake.calls) == 2


def test_usage_is_reported_and_totalled(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="ok", content="x" * 40))
    completion = chat(make_client(fake))

    assert completion.usage is not None
    assert completion.usage.completion_tokens == 10
    assert completion.usage.prompt_tokens == math.ceil(len(MESSAGES[0]["content"]) / 4)
    assert fake.prompt_tokens == completion.usage.prompt_tokens
    assert fake.completion_tokens == 10


def test_response_format_is_accepted_and_recorded(fake: FakeOpenAI) -> None:
    chat(make_client(fake), response_format={"type": "json_object"})

    assert fake.calls[0]["response_format"] == {"type": "json_object"}


def test_a_429_with_retry_after_is_retried_by_the_sdk_and_then_succeeds(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="status", status=429, retry_after_s=0.01), Reply(kind="ok", content="done"))

    completion = chat(make_client(fake, max_retries=2))

    assert completion.choices[0].message.content == "done"
    assert len(fake.calls) == 2


def test_status_errors_carry_an_openai_style_body_and_the_retry_after_header(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="status", status=429, retry_after_s=3))

    with pytest.raises(openai.RateLimitError) as raised:
        chat(make_client(fake))

    assert raised.value.response.headers["retry-after"] == "3"
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["type"] == "rate_limit_exceeded"


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_surface_as_internal_server_errors(fake: FakeOpenAI, status: int) -> None:
    fake.script(Reply(kind="status", status=status))

    with pytest.raises(openai.InternalServerError) as raised:
        chat(make_client(fake))

    assert raised.value.status_code == status


def test_a_slow_reply_times_out_a_client_with_a_shorter_timeout(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="timeout", delay_s=2))

    with pytest.raises(openai.APITimeoutError):
        chat(make_client(fake, timeout_s=0.3))


def test_a_malformed_reply_is_a_200_whose_content_is_not_json(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="malformed"))

    content = chat(make_client(fake)).choices[0].message.content

    assert content is not None
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)


def test_a_refusal_has_null_content_and_the_refusal_text(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="refusal", content="No."))

    message = chat(make_client(fake)).choices[0].message

    assert message.content is None
    assert message.refusal == "No."


def test_a_down_server_closes_the_connection_and_the_sdk_reports_a_connection_error(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="down"))

    with pytest.raises(openai.APIConnectionError):
        chat(make_client(fake))


def test_the_sdk_retries_past_a_dropped_connection(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="down"), Reply(kind="ok", content="back"))
    assert chat(make_client(fake, max_retries=1)).choices[0].message.content == "back"


def test_json_schema_can_be_rejected_like_an_endpoint_without_structured_outputs(fake: FakeOpenAI) -> None:
    fake.reject_json_schema = True
    fake.script(Reply(kind="ok", content="kept for the next accepted call"))
    schema_format: Any = {"type": "json_schema", "json_schema": {"name": "x", "schema": {}, "strict": True}}

    with pytest.raises(openai.BadRequestError):
        chat(make_client(fake), response_format=schema_format)
    accepted = chat(make_client(fake), response_format={"type": "json_object"})

    assert accepted.choices[0].message.content == "kept for the next accepted call"


def test_embeddings_are_deterministic_unit_vectors_for_a_batch(fake: FakeOpenAI) -> None:
    client = make_client(fake)

    first = client.embeddings.create(model="fake-embedding", input=["a", "b"])
    again = client.embeddings.create(model="fake-embedding", input="a", encoding_format="float")

    vectors = [item.embedding for item in first.data]
    assert len(vectors) == 2 and all(len(vector) == 8 for vector in vectors)
    assert vectors[0] != vectors[1]
    assert again.data[0].embedding == pytest.approx(vectors[0], abs=1e-6)
    assert math.isclose(sum(v * v for v in vectors[0]), 1.0, rel_tol=1e-5)
    assert again.data[0].embedding == pytest.approx(fake_embedding("a", dim=8))
    assert first.usage.prompt_tokens == 2
    assert len(fake.embeddings_calls) == 2


def test_models_are_listed(fake: FakeOpenAI) -> None:
    ids = [model.id for model in make_client(fake).models.list()]

    assert "fake-chat" in ids


def test_an_unknown_route_is_a_404_with_an_error_body(fake: FakeOpenAI) -> None:
    response = httpx.post(f"{fake.base_url}/nope", json={})

    assert response.status_code == 404
    assert "error" in response.json()


def test_reset_forgets_calls_script_and_totals(fake: FakeOpenAI) -> None:
    fake.script(Reply(kind="ok", content="a"), Reply(kind="ok", content="b"))
    chat(make_client(fake))

    fake.reset()

    assert fake.calls == [] and fake.pending_replies == 0
    assert fake.prompt_tokens == 0 and fake.completion_tokens == 0


def test_a_status_reply_without_an_error_status_is_refused_when_scripted() -> None:
    with pytest.raises(ValueError):
        Reply(kind="status")
