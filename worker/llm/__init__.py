"""The LLM behind one small Protocol (`LLMClient`), and its OpenAI-compatible implementation."""

from worker.llm.base import Completion, LLMClient, LLMUsage, Message
from worker.llm.openai import LLMConfig, OpenAIClient

__all__ = ["Completion", "LLMClient", "LLMConfig", "LLMUsage", "Message", "OpenAIClient"]
