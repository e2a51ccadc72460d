"""The `LLMClient` over any OpenAI-compatible chat endpoint, through the `openai` SDK.

- Transient failures (429, 408, 409, 5xx, timeouts, connection errors) are retried here, not by the SDK
  (the client runs with `max_retries=0`), at most `config.max_retries` times, sleeping `compute_backoff(...)`
  between attempts: exponential with full jitter, or the server's Retry-After, capped by `backoff_max_s`.
- With `structured_outputs=True` a call given a `json_schema` sends the strict `json_schema` response
  format; an endpoint that rejects it with a 400 gets `json_object` instead, then no response format at all
  (the prompt alone asks for JSON), for that call and every later one. A call without a schema starts at
  `json_object`. A 400 that persists without any response format was not about it: the level is restored.
- `temperature` and `max_tokens` are sent when configured; a 400 naming one of them (reasoning models take
  no temperature but the default and want `max_completion_tokens`) switches to `max_completion_tokens` or
  drops the temperature, for that call and every later one.
- Answers that are not one: a refusal (`refusal` set, or `finish_reason: content_filter`) is
  `error="refusal"`; a JSON answer cut off (`finish_reason: length`) is `"truncated"`; no choice at all is
  `"no_choices"`; no content is `"empty_content"`, unless a JSON answer came as the arguments of a tool call
  (some servers turn JSON output into one): those are the content. A leading reasoning block
  (`<think>...</think>`) is removed from every answer; one never closed is `"truncated"`.
- Token counts come from each response's `usage`. Message contents are never logged (they are redacted
  upstream, but still user data).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import openai

from core.prompts.json_answer import strip_reasoning
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
    max_output_tokens: int | None = 4096  # a runaway answer costs at most this; None: not sent
    temperature: float | None = 0.0  # None: not sent (the endpoint's default)


# response formats, strictest first; a 400 steps down one level
_FORMATS = ("json_schema", "json_object", "none")


class _CallFailed(Exception):
    """The chat call gave up; `args[0]` is the short, content-free reason reported as the error."""


@dataclass(frozen=True)
class _Reply:
    content: str | None
    error: str | None = None


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
        # the strictest response format the endpoint has not rejected (json_schema only when configured)
        self._format_floor = 0 if config.structured_outputs else 1
        self._token_param = "max_tokens"
        self._send_temperature = config.temperature is not None

    @property
    def uses_json_schema(self) -> bool:
        """False once the endpoint rejected the strict json_schema format (or when configured off)."""
        return self._format_floor == 0

    @property
    def response_format_level(self) -> str:
        """The strictest response format still sent: "json_schema", "json_object" or "none"."""
        return _FORMATS[self._format_floor]

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
        if reply.error is not None:
            return Completion(None, meter.snapshot(), reply.error)
        return Completion(reply.content, meter.snapshot(), None)

    def _chat(
        self,
        messages: list[Message],
        *,
        json_answer: bool,
        json_schema: dict[str, Any] | None,
        meter: _UsageMeter,
    ) -> _Reply:
        """One logical chat call with bounded retries of transient failures, adapting the request to what
        the endpoint rejects (response format, token parameter, temperature)."""
        retries_done = 0
        start_floor = self._format_floor
        while True:
            level = self._level(json_answer=json_answer, json_schema=json_schema)
            kwargs = self._request_options(level=level, json_schema=json_schema)
            meter.calls += 1
            try:
                completion = self._client.chat.completions.create(
                    model=self._config.model, messages=cast(Any, messages), **kwargs
                )
            except openai.APIStatusError as err:
                if err.status_code == 400 and self._adapt(err, kwargs=kwargs):
                    continue
                if err.status_code == 400 and level != "none" and json_answer:
                    if level == "json_schema" and self._format_floor == 0:
                        log.warning(
                            "endpoint rejected json_schema response_format; falling back to json_object"
                        )
                    else:
                        log.warning("endpoint rejected response_format %s; sending the prompt alone", level)
                    self._format_floor = _FORMATS.index(level) + 1
                    continue
                if err.status_code == 400 and self._format_floor != start_floor:
                    # rejected without any response format too: the 400 was not about the format
                    self._format_floor = start_floor
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
            return _read_reply(completion, json_answer=json_answer)

    def _level(self, *, json_answer: bool, json_schema: dict[str, Any] | None) -> str:
        if not json_answer:
            return "none"
        floor = self._format_floor if json_schema is not None else max(self._format_floor, 1)
        return _FORMATS[floor]

    def _request_options(self, *, level: str, json_schema: dict[str, Any] | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if level == "json_schema":
            kwargs["response_format"] = {"type": "json_schema", "json_schema": json_schema}
        elif level == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        if self._config.max_output_tokens is not None:
            kwargs[self._token_param] = self._config.max_output_tokens
        if self._send_temperature:
            kwargs["temperature"] = self._config.temperature
        return kwargs

    def _adapt(self, err: openai.APIStatusError, *, kwargs: dict[str, Any]) -> bool:
        """Whether a 400 named a parameter this client can do without (or rename); adapted if so."""
        named = f"{getattr(err, 'param', None) or ''} {err.message}".lower()
        if "max_tokens" in kwargs and "max_tokens" in named and "max_completion_tokens" not in kwargs:
            log.warning("endpoint rejected max_tokens; sending max_completion_tokens")
            self._token_param = "max_completion_tokens"
            return True
        if "temperature" in kwargs and "temperature" in named:
            log.warning("endpoint rejected temperature; sending none")
            self._send_temperature = False
            return True
        return False  # a response format is stepped down by the caller

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


def _read_reply(completion: Any, *, json_answer: bool) -> _Reply:
    """The content of a 200, or why it holds none (see the module docstring)."""
    if not completion.choices:
        return _Reply(None, "no_choices")
    choice = completion.choices[0]
    message = choice.message
    if getattr(message, "refusal", None) or choice.finish_reason == "content_filter":
        return _Reply(None, "refusal")
    content = message.content
    if content is not None:
        reasoned = strip_reasoning(content)
        if not reasoned and content.strip():
            return _Reply(None, "truncated")  # cut off inside its reasoning
        content = reasoned
    if json_answer and choice.finish_reason == "length":
        return _Reply(None, "truncated")
    if not content:
        calls = getattr(message, "tool_calls", None) or []
        arguments = [getattr(getattr(c, "function", None), "arguments", None) for c in calls]
        if json_answer and arguments and isinstance(arguments[0], str) and arguments[0].strip():
            return _Reply(arguments[0].strip())
        return _Reply(None, "tool_call" if calls else "empty_content")
    return _Reply(content)


def _status_reason(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return f"server_error_{status}"
    return f"http_{status}"
