"""The LLM extractor: one chat call per window of turns, through any OpenAI-compatible endpoint.

Contract:
- `extract(...)` sends ONE chat completion for the whole window (plus at most one repair call when the answer
  is not valid) and returns an `LLMResult`. It never raises for LLM trouble: `ok=False` with a short `error`
  tells the caller to fall back to the rule candidates and mark the events `llm_pending`.
- Transient failures (429, 408, 409, 5xx, timeouts, connection errors) are retried here, not by the SDK
  (the client runs with `max_retries=0`), at most `config.max_retries` times, sleeping `compute_backoff(...)`
  between attempts: exponential with full jitter, or the server's Retry-After, capped by `backoff_max_s`.
- The answer is validated strictly (`prompts.parse_extraction_answer`); source ids outside the window are
  dropped, and a memory left with none is dropped. Invalid output gets one repair attempt, then `ok=False`.
  A refusal is `ok=False, error="refusal"`.
- With `structured_outputs=True` the strict `json_schema` response format is sent; an endpoint that rejects
  it with a 400 gets `json_object` instead, for that call and every later one.
- `summarize(...)` rewrites the session summary; `None` when the LLM failed.
- Token counts come from each response's `usage`. Message contents are never logged (they are redacted
  upstream, but still user data).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import openai
from pydantic import ValidationError

from core.extraction.candidates import Candidate, Turn
from core.extraction.prompts import (
    PROMPT_VERSION,
    ExtractionAnswer,
    build_extraction_messages,
    build_repair_messages,
    build_summary_messages,
    extraction_response_format,
    parse_extraction_answer,
)
from shared.openai_sdk import RETRYABLE_STATUSES, compute_backoff, retry_after_seconds, sdk_client

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


@dataclass(frozen=True)
class LLMUsage:
    """Tokens reported by the endpoint, and chat requests sent (every attempt, retries and repair too)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0


@dataclass(frozen=True)
class LLMResult:
    candidates: list[Candidate]
    usage: LLMUsage
    ok: bool  # False -> the caller falls back to rules and marks the events llm_pending
    error: str | None


class _CallFailed(Exception):
    """The chat call gave up; `args[0]` is the short, content-free reason reported in `LLMResult.error`."""


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


class LLMExtractor:
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

    def extract(
        self,
        *,
        turns: Sequence[Turn],
        summary: str,
        existing_memories: Sequence[str],
        rule_candidates: Sequence[Candidate],
    ) -> LLMResult:
        meter = _UsageMeter()
        messages = build_extraction_messages(
            turns=turns, summary=summary, existing_memories=existing_memories, rule_candidates=rule_candidates
        )
        try:
            answer = self._extract_answer(messages, meter=meter)
        except _CallFailed as failure:
            log.warning("llm extraction failed: %s (calls=%d)", failure.args[0], meter.calls)
            return LLMResult(candidates=[], usage=meter.snapshot(), ok=False, error=str(failure.args[0]))
        candidates = answer_to_candidates(answer, turns=turns)
        return LLMResult(candidates=candidates, usage=meter.snapshot(), ok=True, error=None)

    def summarize(self, *, previous_summary: str, turns: Sequence[Turn]) -> tuple[str | None, LLMUsage]:
        meter = _UsageMeter()
        messages = build_summary_messages(previous_summary=previous_summary, turns=turns)
        try:
            reply = self._chat(messages, json_answer=False, meter=meter)
        except _CallFailed as failure:
            log.warning("llm summary failed: %s (calls=%d)", failure.args[0], meter.calls)
            return None, meter.snapshot()
        if reply.refusal is not None or not (reply.content or "").strip():
            log.warning(
                "llm summary failed: %s", "refusal" if reply.refusal is not None else "empty_response"
            )
            return None, meter.snapshot()
        return (reply.content or "").strip(), meter.snapshot()

    def complete_text(self, messages: list[dict[str, str]]) -> tuple[str | None, LLMUsage, str | None]:
        """One free-text call with the same bounded retries: (content, usage, error)."""
        meter = _UsageMeter()
        try:
            reply = self._chat(messages, json_answer=False, meter=meter)
        except _CallFailed as failure:
            return None, meter.snapshot(), str(failure.args[0])
        if reply.refusal is not None:
            return None, meter.snapshot(), "refusal"
        return reply.content, meter.snapshot(), None

    def complete_json(self, messages: list[dict[str, str]]) -> tuple[str | None, LLMUsage, str | None]:
        """One JSON-mode call (`json_object`; the caller validates) with the same bounded retries.

        Returns (content, usage, error); used by the stages whose answers have their own schema
        (distillation, episodes, reconciliation judgements)."""
        meter = _UsageMeter()
        saved = self._use_json_schema
        self._use_json_schema = False
        try:
            reply = self._chat(messages, json_answer=True, meter=meter)
        except _CallFailed as failure:
            return None, meter.snapshot(), str(failure.args[0])
        finally:
            self._use_json_schema = saved
        if reply.refusal is not None:
            return None, meter.snapshot(), "refusal"
        return reply.content, meter.snapshot(), None

    # internals ---------------------------------------------------------------------------------------------

    def _extract_answer(self, messages: list[dict[str, str]], *, meter: _UsageMeter) -> ExtractionAnswer:
        reply = self._chat(messages, json_answer=True, meter=meter)
        answer, error = _validate(reply)
        if answer is not None:
            return answer
        if error == "refusal":
            raise _CallFailed("refusal")
        log.info("llm extraction answer invalid, asking once for a repair: %s", error)
        repair = build_repair_messages(messages, bad_reply=reply.content or "", error=str(error))
        repaired, repair_error = _validate(self._chat(repair, json_answer=True, meter=meter))
        if repaired is not None:
            return repaired
        raise _CallFailed("refusal" if repair_error == "refusal" else f"invalid_output: {repair_error}")

    def _chat(self, messages: list[dict[str, str]], *, json_answer: bool, meter: _UsageMeter) -> _Reply:
        """One logical chat call with bounded retries of transient failures."""
        retries_done = 0
        schema_fallback_tried = False
        while True:
            use_schema = json_answer and self._use_json_schema
            kwargs: dict[str, Any] = {}
            if json_answer:
                kwargs["response_format"] = extraction_response_format(structured=use_schema)
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
                if not _is_retryable_status(err.status_code) or retries_done >= self._config.max_retries:
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


def _is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or status >= 500


def _status_reason(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return f"server_error_{status}"
    return f"http_{status}"


def _validate(reply: _Reply) -> tuple[ExtractionAnswer | None, str | None]:
    """The parsed answer, or an error summary that names fields and problems but never echoes content."""
    if reply.refusal is not None:
        return None, "refusal"
    if not reply.content:
        return None, "empty response"
    try:
        return parse_extraction_answer(reply.content), None
    except ValidationError as err:
        problems = [
            f"{'.'.join(str(part) for part in problem['loc']) or '(root)'}: {problem['msg']}"
            for problem in err.errors(include_input=False, include_url=False)[:5]
        ]
        return None, "; ".join(problems)


def answer_to_candidates(answer: ExtractionAnswer, *, turns: Sequence[Turn]) -> list[Candidate]:
    """Candidates from a validated answer: ids outside the window dropped, then memories left with none."""
    turn_id_of = {turn.event_id: turn.source_turn_id for turn in turns}
    candidates: list[Candidate] = []
    for item in answer.memories:
        event_ids = tuple(dict.fromkeys(eid for eid in item.source_event_ids if eid in turn_id_of))
        if not event_ids:
            continue
        turn_ids = tuple(dict.fromkeys(tid for eid in event_ids if (tid := turn_id_of[eid]) is not None))
        candidates.append(
            Candidate(
                content=item.content,
                kind=item.kind,
                category=item.category,
                tier=item.tier,
                confidence=item.confidence,
                source_event_ids=event_ids,
                source_turn_ids=turn_ids,
                slot=(item.slot or "").strip() or None,
                value=(item.value or "").strip() or None,
                op=item.op,
                lang=_language_of(item.content),
                origin="llm",
                extra={"prompt_version": PROMPT_VERSION},
            )
        )
    return candidates


def _language_of(text: str) -> str:
    # Chinese if any CJK ideograph appears: the content is written in the user's language.
    return (
        "zh" if any("\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf" for char in text) else "en"
    )
