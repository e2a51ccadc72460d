"""The `LLMClient` over any OpenAI-compatible chat endpoint, through the `openai` SDK.

- Transient failures (429, 408, 409, 5xx, timeouts, connection errors) are retried here, not by the SDK
  (the client runs with `max_retries=0`), at most `config.max_retries` times, sleeping `compute_backoff(...)`
  between attempts: exponential with full jitter, or the server's Retry-After, capped by `backoff_max_s`.
- With `structured_outputs=True` a call given a `json_schema` sends the strict `json_schema` response
  format; an endpoint that rejects it with a 400 gets `json_object` instead, for that call and every later
  one. A call without a schema always sends `json_object`.
- A refusal is `error="refusal"`. Token counts come from each response's `usage`. Message contents are never
  logged (they are redacted upstream, but still user data).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import openai

from shared.openai_sdk import compute_backoff, is_retryable_status, retry_after_seconds, sdk_client
from worker.llm.base import Completion, LLMUsage, Message

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LLMConfig:
    base_url: str | None
    api_key: str
    model: str
    timeout_s: float = 20
    max_retries: int = 3
    structured_outputs: bool = True  # False -> response_format={"type": "json_object"}
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8


class _CallFailed(Exception):
    """The chat call gave up; `args[0]` is the short, content-free reason reported as the error."""


@dataclass(frozen=True)
class _Reply:
    content: str | None
    refusal: str | None


class _UsageMeter:
    def __init__(self) -> None:
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.calls = 0

    def snapshot(self) -> LLMUsage:
        return LLMUsage(self.prompt_tokens, self.completion_tokens, self.calls)


class OpenAIClient:
    def __init__(
        self,
        config: LLMConfig,
        *,
        client: openai.OpenAI | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self._config = config
        self._client = sdk_client(
            client, api_key=config.api_key, base_url=config.base_url, timeout_s=config.timeout_s
        )
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._use_json_schema = config.structured_outputs

    @property
    def uses_json_schema(self) -> bool:
        """False once the endpoint rejected the strict json_schema format (or when configured off)."""
        return self._use_json_schema

    def complete_json(
        self, messages: list[Message], *, json_schema: dict[str, Any] | None = None
    ) -> Completion:
        return self._complete(messages, json_answer=True, json_schema=json_schema)

    def complete_text(self, messages: list[Message]) -> Completion:
        return self._complete(messages, json_answer=False, json_schema=None)

    # internals ---------------------------------------------------------------------------------------------

    def _complete(
        self, messages: list[Message], *, json_answer: bool, json_schema: dict[str, Any] | None
    ) -> Completion:
        meter = _UsageMeter()
        try:
            reply = self._chat(messages, json_answer=json_answer, json_schema=json_schema, meter=meter)
        except _CallFailed as failure:
            return Completion(None, meter.snapshot(), str(failure.args[0]))
        if reply.refusal is not None:
            return Completion(None, meter.snapshot(), "refusal")
        return Completion(reply.content, meter.snapshot(), None)

    def _chat(
        self,
        messages: list[Message],
        *,
        json_answer: bool,
        json_schema: dict[str, Any] | None,
        meter: _UsageMeter,
    ) -> _Reply:
        """One logical chat call with bounded retries of transient failures."""
        retries_done = 0
        schema_fallback_tried = False
        while True:
            use_schema = json_schema is not None and self._use_json_schema
            kwargs: dict[str, Any] = {}
            if json_answer:
                kwargs["response_format"] = (
                    {"type": "json_schema", "json_schema": json_schema}
                    if use_schema
                    else {"type": "json_object"}
                )
            meter.calls += 1
            try:
                completion = self._client.chat.completions.create(
                    model=self._config.model, messages=cast(Any, messages), **kwargs
                )
            except openai.APIStatusError as err:
                if err.status_code == 400 and use_schema and not schema_fallback_tried:
                    # Many OpenAI-compatible servers lack strict structured outputs; json_object still
                    # yields JSON, and the answer is validated either way.
                    log.warning("endpoint rejected json_schema response_format; falling back to json_object")
                    self._use_json_schema = False
                    schema_fallback_tried = True
                    continue
                if schema_fallback_tried and err.status_code == 400:
                    # json_object was rejected too: the 400 was not about the schema, so keep using it.
                    self._use_json_schema = True
                if not is_retryable_status(err.status_code) or retries_done >= self._config.max_retries:
                    raise _CallFailed(_status_reason(err.status_code)) from None
                self._back_off(retries_done, retry_after_s=retry_after_seconds(err.response.headers))
                retries_done += 1
                continue
            except openai.APIConnectionError as err:  # includes APITimeoutError
                reason = "timeout" if isinstance(err, openai.APITimeoutError) else "connection_error"
                if retries_done >= self._config.max_retries:
                    raise _CallFailed(reason) from None
                self._back_off(retries_done, retry_after_s=None)
                retries_done += 1
                continue
            except openai.OpenAIError as err:
                raise _CallFailed(f"client_error: {type(err).__name__}") from None
            if completion.usage is not None:
                meter.prompt_tokens += completion.usage.prompt_tokens
                meter.completion_tokens += completion.usage.completion_tokens
            if not completion.choices:
                return _Reply(content=None, refusal=None)
            message = completion.choices[0].message
            return _Reply(content=message.content, refusal=message.refusal)

    def _back_off(self, attempt: int, *, retry_after_s: float | None) -> None:
        delay_s = compute_backoff(
            attempt,
            base_s=self._config.backoff_base_s,
            max_s=self._config.backoff_max_s,
            rng=self._rng,
            retry_after_s=retry_after_s,
        )
        log.info("llm call failed transiently; retry %d in %.2fs", attempt + 1, delay_s)
        self._sleep(delay_s)


def _status_reason(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return f"server_error_{status}"
    return f"http_{status}"
