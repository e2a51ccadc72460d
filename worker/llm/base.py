"""The LLM as every stage sees it: chat messages in, (content, usage, error) out.

Contract of an `LLMClient`:
- `complete_json(messages, json_schema=...)` asks for one JSON object; with `json_schema` (an OpenAI
  `json_schema` object: name, strict, schema) the endpoint is asked to follow that schema when it can. The
  caller validates the content: the client never parses it.
- `complete_text(messages)` asks for free text.
- Neither raises for LLM trouble: `error` is a short, content-free reason ("timeout", "rate_limited",
  "server_error_503", "http_400", "refusal", ...) and `content` is then None. Transient failures are retried
  inside, boundedly; `usage` counts every request sent, retries included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": ...}


@dataclass(frozen=True)
class LLMUsage:
    """Tokens reported by the endpoint, and chat requests sent (every attempt, retries and repair too)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.calls + other.calls,
        )


class Completion(NamedTuple):
    content: str | None
    usage: LLMUsage
    error: str | None  # None: the endpoint answered (content may still be empty or invalid)


class LLMClient(Protocol):
    def complete_json(
        self, messages: list[Message], *, json_schema: dict[str, Any] | None = None
    ) -> Completion: ...

    def complete_text(self, messages: list[Message]) -> Completion: ...


# Why an LLM call gave no usable answer, as a short category: stored on the events it leaves `llm_pending`
# (`events.llm_error`), counted per category (`memory_llm_failures_total`) and shown by `memctl stats`.
# The client's errors are already short; details (which field failed validation, which status) go to logs.
FAILURE_REASONS = frozenset(
    {
        "timeout",
        "connection_error",
        "rate_limited",
        "server_error",
        "http_error",
        "client_error",
        "refusal",
        "truncated",
        "no_choices",
        "empty_content",
        "tool_call",
        "invalid_output",
        "circuit_open",
        "budget_exhausted",
    }
)


def failure_reason(error: str) -> str:
    """The category of an error string (`"server_error_503"` -> `"server_error"`, `"invalid_output: ..."` ->
    `"invalid_output"`, `"http_400"` -> `"http_error"`); unknown errors are `"client_error"`."""
    head = error.split(":", 1)[0].strip()
    if head.startswith("server_error"):
        return "server_error"
    if head.startswith("http_"):
        return "http_error"
    return head if head in FAILURE_REASONS else "client_error"
