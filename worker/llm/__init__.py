"""The LLM behind one small Protocol (`LLMClient`), its OpenAI-compatible implementation, and the circuit
breaker that stops calling an endpoint that keeps failing."""

from worker.llm.base import Completion, LLMClient, LLMUsage, Message, failure_reason
from worker.llm.breaker import CircuitBreaker, Gate, breaker_name
from worker.llm.openai import LLMConfig, OpenAIClient

__all__ = [
    "CircuitBreaker",
    "Completion",
    "Gate",
    "LLMClient",
    "LLMConfig",
    "LLMUsage",
    "Message",
    "OpenAIClient",
    "breaker_name",
    "failure_reason",
]
