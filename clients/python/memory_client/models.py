"""Typed results: what the API answers, as dataclasses.

Each class mirrors one schema of the server's OpenAPI document (named in `SCHEMAS`); a test of the server's
suite holds every class to its schema (the same fields, the same required ones), so the two cannot drift.
Decoding ignores fields it does not know: a newer server adding one does not break an older client.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any, TypeVar, Union

from memory_client.contract import _parse_time

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class MemoryRecord:
    """A memory: what it says, how it stands, where it came from."""

    id: str
    user_id: str
    agent_id: str | None = None
    scope: str = "user"
    kind: str
    category: str
    content: str
    slot: str | None = None
    value: str | None = None
    importance: float = 0.5
    confidence: float = 0.5
    evidence_count: int = 1
    status: str = "active"
    valid_from: datetime
    valid_to: datetime | None = None
    recorded_at: datetime
    last_confirmed_at: datetime
    superseded_by: str | None = None
    expires_at: datetime | None = None
    pinned: bool = False
    source_event_ids: list[str] = field(default_factory=list)
    source_turn_ids: list[str] = field(default_factory=list)
    consolidated_from: list[str] = field(default_factory=list)
    last_accessed_at: datetime | None = None
    access_count: int = 0
    half_life_days: float | None = None


@dataclass(frozen=True, kw_only=True)
class HistoryEntry:
    """One change to a memory, with its snapshot before and after."""

    op: str
    reason: str
    actor: str
    event_ids: list[str]
    created_at: datetime
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class MemoryDetail(MemoryRecord):
    """A memory with its full history (`get`)."""

    history: list[HistoryEntry]


@dataclass(frozen=True, kw_only=True)
class MemoryPage:
    items: list[MemoryRecord]
    next_offset: int | None = None


@dataclass(frozen=True, kw_only=True)
class SearchResult:
    """A memory, or an indexed turn (a passage of up to five turns) with `include_turns`."""

    id: str
    type: str  # memory | turn
    content: str
    score: float
    kind: str | None = None
    category: str | None = None
    status: str | None = None
    slot: str | None = None
    value: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None  # a temporary memory's end (set by an edit or inferred from its text)
    scope: str | None = None  # a memory's: user | agent | app
    agent_id: str | None = None  # an agent-scope memory's agent
    session_id: str | None = None
    source_event_ids: list[str] = field(default_factory=list)
    source_turn_ids: list[str] = field(default_factory=list)
    similarity: float | None = None  # cosine similarity to the query (vector candidates)
    keyword_coverage: float | None = None  # share of the query's keyword weight it holds (keyword candidates)


@dataclass(frozen=True, kw_only=True)
class LeftOut:
    """What a context block left out, and why (counts): below the relevance floor, or over the budget."""

    memories_below_floor: int
    episodes_below_floor: int
    over_budget: int


@dataclass(frozen=True, kw_only=True)
class Context:
    """A ready-to-inject context block for a model call, within `max_tokens`."""

    user_id: str
    context: str
    tokens: int
    max_tokens: int
    included: list[str]
    left_out: LeftOut


@dataclass(frozen=True, kw_only=True)
class Episode:
    """What happened in one closed session, its outcome and its lesson."""

    id: str
    user_id: str
    agent_id: str | None
    session_id: str
    started_at: datetime | None
    ended_at: datetime | None
    what_happened: str
    outcome: str
    lesson: str
    mode: str
    source_event_ids: list[str]
    created_at: datetime
    edited_at: datetime | None
    archived_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class EpisodePage:
    """One page of a user's episodes, latest first; `next_offset` is None on the last page."""

    items: list[Episode]
    next_offset: int | None


@dataclass(frozen=True, kw_only=True)
class EpisodeDeleted:
    """An episode deleted for good; whether the user's working memory was rewritten without it."""

    id: str
    working_memory_rewritten: bool


@dataclass(frozen=True, kw_only=True)
class Remembered:
    """What reconciliation did with an explicit memory (add, reinforce, supersede, history, noop)."""

    op: str
    reason: str
    memory: MemoryRecord | None = None


@dataclass(frozen=True, kw_only=True)
class Erased:
    user_id: str
    deleted: dict[str, int]


@dataclass(frozen=True, kw_only=True)
class WindowTurn:
    event_id: str
    role: str
    content: str
    event_time: datetime
    source_turn_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SessionWindow:
    """A session as the worker compacted it: its rolling summary and its most recent turns, oldest first."""

    session_id: str
    user_id: str
    status: str
    turn_count: int
    summary: str
    summarized_through: datetime | None = None
    turns: list[WindowTurn]


@dataclass(frozen=True, kw_only=True)
class WorkingMemory:
    """The user's working memory: one document, rewritten as a whole by the worker."""

    user_id: str
    agent_id: str
    content: str
    version: int
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class Popped:
    turn: WindowTurn | None = None


@dataclass(frozen=True, kw_only=True)
class Cleared:
    session_id: str
    user_id: str
    deleted_events: int


@dataclass(frozen=True, kw_only=True)
class EventTrace:
    """One event's journey (`trace`): stored (or dead-lettered), the extraction windows that held it (per turn:
    the gate, the rule candidates, the LLM), the candidates and decisions, what later became of the memories
    it touched, and the canonical log fields of each task. The nested shapes are the server's `store.trace`."""

    event_id: str
    stored: dict[str, Any] | None = None
    windows: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    later: list[dict[str, Any]] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class MemoryWhy:
    """Why a memory is believed (`why`): its history, its lineage (what it superseded or was consolidated
    from, breadth first) and the turns they cite, with their text where retention still keeps it."""

    memory_id: str
    memory: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    lineage: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False


# each class and the OpenAPI schema it mirrors
SCHEMAS: dict[type, str] = {
    MemoryRecord: "Memory",
    HistoryEntry: "HistoryEntry",
    MemoryDetail: "MemoryWithHistory",
    MemoryPage: "MemoryPage",
    SearchResult: "SearchResult",
    Context: "ContextResponse",
    LeftOut: "LeftOut",
    Episode: "Episode",
    EpisodePage: "EpisodePage",
    EpisodeDeleted: "EpisodeDeleted",
    Remembered: "Remembered",
    Erased: "Erased",
    WindowTurn: "WindowTurn",
    SessionWindow: "SessionWindow",
    WorkingMemory: "WorkingMemory",
    Popped: "Popped",
    Cleared: "Cleared",
    EventTrace: "EventTrace",
    MemoryWhy: "MemoryWhy",
}


@cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode(cls: type[T], data: Any) -> T:
    """Build `cls` (one of the dataclasses above) from the API's JSON, converting nested classes and times;
    unknown fields are ignored."""
    if not isinstance(data, dict):
        raise TypeError(f"expected a JSON object for {cls.__name__}, got {type(data).__name__}")
    hints = _hints(cls)  # type: ignore[arg-type]
    kwargs = {
        f.name: _convert(hints[f.name], data[f.name])
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.name in data
    }
    return cls(**kwargs)


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_convert(item, v) for v in value]
    if tp is datetime:
        return _parse_time(value)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return decode(tp, value)
    if tp is str and not isinstance(value, str):
        return str(value)  # ids the server types as UUIDs
    return value
