"""OpenAI Agents SDK adapters (the `openai-agents` extra): a `Session` whose history is the memory worker's
session window, and a ready `recall_memory` function tool.

    from agents import Agent, Runner
    from memory_client import AsyncMemory
    from memory_client.agents import MemorySession, recall_memory

    memory = AsyncMemory(api_key="mk_...")
    agent = Agent(name="assistant", tools=[recall_memory(memory, user_id="alice")])
    session = MemorySession("chat-42", user_id="alice", memory=memory)
    result = await Runner.run(agent, "Which package manager do I use?", session=session)

`MemorySession`: the items a run adds become transcript events (the worker extracts memories from them,
folds old turns into a rolling summary and closes the session into an episode); `get_items` reads the window
back: the summary of what was folded (as a system message) and the most recent turns. Messages, function
calls and their outputs travel as turns (the item's type and call id in the event's metadata) and come back
as the items they were; other items (reasoning) are not kept. A window that would start with a tool output
whose call fell out of it starts after it. `pop_item` deletes the newest turn, `clear_session` the session's
turns and window (memories already made stay).
"""

from __future__ import annotations

import json
from typing import Any

from agents import RunContextWrapper, function_tool
from agents.items import TResponseInputItem
from agents.memory import SessionABC
from agents.memory.session_settings import SessionSettings
from agents.tool import FunctionTool

from memory_client.api import AsyncMemory
from memory_client.contract import MAX_CONTENT_BYTES
from memory_client.errors import NotFound
from memory_client.models import WindowTurn

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TOOL_ITEMS = ("function_call", "function_call_output")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text") or part.get("refusal")
                if isinstance(text, str):
                    parts.append(text)
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def _fit(text: str) -> str:
    """At most the contract's 32 KiB (a long tool output is cut, with a note)."""
    data = text.encode("utf-8")
    if len(data) <= MAX_CONTENT_BYTES:
        return text
    return data[: MAX_CONTENT_BYTES - 64].decode("utf-8", errors="ignore") + "\n[... cut: too long to keep]"


def event_of(item: Any) -> dict[str, Any] | None:
    """The event fields (role, content, metadata) an item travels as, or None for an item not kept."""
    data = item if isinstance(item, dict) else getattr(item, "model_dump", lambda **_: {})(exclude_unset=True)
    kind = data.get("type")
    if kind == "function_call":
        meta = {"item": "function_call", "call_id": data.get("call_id"), "name": data.get("name")}
        return {"role": "tool", "content": _fit(str(data.get("arguments") or "")), "metadata": meta}
    if kind == "function_call_output":
        output = data.get("output")
        meta = {"item": "function_call_output", "call_id": data.get("call_id")}
        return {"role": "tool", "content": _fit(_text(output)), "metadata": meta}
    if kind in (None, "message") and data.get("role") in _ROLES:
        content = _text(data.get("content"))
        if not content:
            return None
        return {"role": _ROLES[str(data["role"])], "content": _fit(content), "metadata": {"item": "message"}}
    return None


def item_of(turn: WindowTurn) -> TResponseInputItem:
    """A window turn as the item it was added as."""
    meta = turn.metadata or {}
    if meta.get("item") == "function_call":
        return {  # type: ignore[return-value]
            "type": "function_call",
            "call_id": str(meta.get("call_id")),
            "name": str(meta.get("name")),
            "arguments": turn.content,
        }
    if meta.get("item") == "function_call_output":
        return {"type": "function_call_output", "call_id": str(meta.get("call_id")), "output": turn.content}  # type: ignore[return-value]
    role = turn.role if turn.role in ("user", "assistant", "system") else "user"
    return {"role": role, "content": turn.content}  # type: ignore[return-value,misc]


def _complete(items: list[TResponseInputItem]) -> list[TResponseInputItem]:
    """Drop tool items whose partner fell out of the window (a model refuses an output without its call)."""
    calls = {i.get("call_id") for i in items if isinstance(i, dict) and i.get("type") == "function_call"}
    outputs = {
        i.get("call_id") for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
    }
    kept = []
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "function_call_output" and item.get("call_id") not in calls:  # type: ignore[union-attr]
            continue
        if kind == "function_call" and item.get("call_id") not in outputs:  # type: ignore[union-attr]
            continue
        kept.append(item)
    return kept


class MemorySession(SessionABC):
    """An Agents SDK session kept by the memory worker. `window` is how many recent turns `get_items`
    returns at most (older ones are in the rolling summary)."""

    def __init__(
        self,
        session_id: str,
        *,
        user_id: str,
        memory: AsyncMemory,
        agent_id: str | None = None,
        window: int = 50,
        session_settings: SessionSettings | None = None,
    ):
        if not 1 <= window <= 200:
            raise ValueError("window must be 1..200 turns")
        self.session_id = session_id
        self.session_settings = session_settings
        self.user_id = user_id
        self.agent_id = agent_id
        self.memory = memory
        self.window = window

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        last = min(limit or self.window, self.window)
        try:
            window = await self.memory.window(self.session_id, user_id=self.user_id, last=last)
        except NotFound:
            return []
        items = _complete([item_of(t) for t in window.turns])
        if limit is not None:
            return items[-limit:] if limit > 0 else []
        if window.summary and window.turn_count > len(window.turns):
            summary: TResponseInputItem = {
                "role": "system",
                "content": f"Summary of the earlier part of this conversation: {window.summary}",
            }
            items.insert(0, summary)
        return items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        events = []
        for item in items:
            event = event_of(item)
            if event is not None:
                events.append(
                    {
                        "user_id": self.user_id,
                        "session_id": self.session_id,
                        "agent_id": self.agent_id,
                        **event,
                    }
                )
        if not events:
            return
        self.memory.emit_many(events)  # validated and redacted here; sent in the background
        await self.memory.aflush()  # the next get_items sees them (spooled and re-sent when the API is away)

    async def pop_item(self) -> TResponseInputItem | None:
        turn = await self.memory.pop_turn(self.session_id, user_id=self.user_id)
        return item_of(turn) if turn is not None else None

    async def clear_session(self) -> None:
        await self.memory.clear_session(self.session_id, user_id=self.user_id)

    async def end(self) -> None:
        """The conversation is over: the worker extracts what is left and closes it into an episode."""
        self.memory.end_session(user_id=self.user_id, session_id=self.session_id)
        await self.memory.aflush()


def recall_memory(memory: AsyncMemory, *, user_id: str | None = None, k: int = 5) -> FunctionTool:
    """A function tool the model calls to look up what is remembered about the user. The user is `user_id`,
    else the run context's `user_id` attribute (`Runner.run(..., context=...)`)."""

    async def recall(ctx: RunContextWrapper[Any], query: str) -> str:
        """Search what is remembered about the user (preferences, facts, decisions, standing rules) from
        earlier conversations. Call it before answering anything that may depend on them.

        Args:
            query: What to look for, in natural language (e.g. "package manager", "deployment setup").
        """
        user = user_id or getattr(ctx.context, "user_id", None)
        if not user:
            return "No user is known for this run: nothing can be recalled."
        try:
            hits = await memory.search(str(user), query, k=k)
        except NotFound:
            return "Nothing is remembered about this user yet."
        if not hits:
            return "Nothing relevant is remembered."
        return "\n".join(f"- {h.content} ({h.kind or h.type}, id {h.id})" for h in hits)

    return function_tool(recall, name_override="recall_memory")
