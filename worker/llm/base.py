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
