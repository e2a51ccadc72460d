"""memory-worker-client: long-term memory for LLM agents, from Python.

    from memory_client import Memory

    memory = Memory("http://127.0.0.1:8000", api_key="mk_...")
    memory.emit(user_id="alice", session_id="s-42", content="We use pnpm, not npm.")
    memory.search("alice", "package manager")

Extras: `redis` (the broker fast path for `emit`), `mcp` (`memory_client.mcp`: an MCP server over the API),
`langgraph` (`memory_client.langgraph.MemoryStore`), `openai-agents` (`memory_client.agents`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Names load on first use (PEP 562): the server imports `memory_client.redaction` and
# `memory_client.contract`, which must not pull in httpx and the rest with them.
_HOMES = {
    "Memory": "api",
    "AsyncMemory": "api",
    "ContractError": "errors",
    "Emitter": "emitter",
    **dict.fromkeys(
        (
            "APIError",
            "BadRequest",
            "Conflict",
            "ConnectionFailed",
            "Forbidden",
            "MemoryClientError",
            "NotFound",
            "RateLimited",
            "ServiceUnavailable",
            "Unauthorized",
        ),
        "errors",
    ),
    **dict.fromkeys(
        (
            "Context",
            "Episode",
            "EpisodeDeleted",
            "EpisodePage",
            "Erased",
            "EventTrace",
            "HistoryEntry",
            "LeftOut",
            "MemoryDetail",
            "MemoryPage",
            "MemoryRecord",
            "MemoryWhy",
            "Remembered",
            "SearchResult",
            "SessionWindow",
            "WindowTurn",
            "WorkingMemory",
        ),
        "models",
    ),
}

__all__ = [
    "APIError",
    "AsyncMemory",
    "BadRequest",
    "Conflict",
    "ConnectionFailed",
    "Context",
    "ContractError",
    "Emitter",
    "Episode",
    "EpisodeDeleted",
    "EpisodePage",
    "Erased",
    "EventTrace",
    "Forbidden",
    "HistoryEntry",
    "LeftOut",
    "Memory",
    "MemoryClientError",
    "MemoryDetail",
    "MemoryPage",
    "MemoryRecord",
    "MemoryWhy",
    "NotFound",
    "RateLimited",
    "Remembered",
    "SearchResult",
    "ServiceUnavailable",
    "SessionWindow",
    "Unauthorized",
    "WindowTurn",
    "WorkingMemory",
]
assert set(__all__) == set(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memory_client' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"memory_client.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


if TYPE_CHECKING:
    from memory_client.api import AsyncMemory, Memory
    from memory_client.emitter import Emitter
    from memory_client.errors import (
        APIError,
        BadRequest,
        Conflict,
        ConnectionFailed,
        ContractError,
        Forbidden,
        MemoryClientError,
        NotFound,
        RateLimited,
        ServiceUnavailable,
        Unauthorized,
    )
    from memory_client.models import (
        Context,
        Episode,
        EpisodeDeleted,
        EpisodePage,
        Erased,
        EventTrace,
        HistoryEntry,
        LeftOut,
        MemoryDetail,
        MemoryPage,
        MemoryRecord,
        MemoryWhy,
        Remembered,
        SearchResult,
        SessionWindow,
        WindowTurn,
        WorkingMemory,
    )
