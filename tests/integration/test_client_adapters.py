"""The framework adapters against the real libraries and the real stack: a compiled LangGraph graph whose
nodes use `MemoryStore`, and the OpenAI Agents SDK's own `Runner` with `MemorySession` and the
`recall_memory` tool, its model answered by the fake OpenAI-compatible server (which calls the tool)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, TypedDict

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import InvalidNamespaceError
from openai import AsyncOpenAI

from memory_client import AsyncMemory, Memory
from memory_client.agents import MemorySession, recall_memory
from memory_client.langgraph import MemoryStore
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.integration


class State(TypedDict):
    user: str
    question: str
    answer: str


def _learn(state: State, runtime: Runtime) -> dict[str, Any]:
    assert runtime.store is not None
    runtime.store.put(
        (state["user"], "semantic"), "package-manager", {"content": "Uses pnpm as the package manager"}
    )
    runtime.store.put(
        (state["user"], "procedural"), "orm", {"content": "Never suggest an ORM", "why": "perf"}
    )
    return {}


def _answer(state: State, runtime: Runtime) -> dict[str, Any]:
    assert runtime.store is not None
    hits = runtime.store.search((state["user"],), query=state["question"], limit=3)
    return {"answer": hits[0].value["content"] if hits else ""}


def _graph(store: MemoryStore) -> Any:
    builder = StateGraph(State)
    builder.add_node("learn", _learn)
    builder.add_node("answer", _answer)
    builder.add_edge(START, "learn")
    builder.add_edge("learn", "answer")
    builder.add_edge("answer", END)
    return builder.compile(store=store)


def test_a_compiled_langgraph_graph_remembers_and_recalls_through_the_store(api_server, api_key, tmp_path):  # type: ignore[no-untyped-def]
    memory = Memory(api_server, api_key, spool_path=tmp_path / "s.jsonl", flush_at_exit=False)
    store = MemoryStore(memory)
    try:
        out = _graph(store).invoke({"user": "alice", "question": "which package manager?", "answer": ""})
        assert out["answer"] == "Uses pnpm as the package manager"

        # get / put / search / delete / list_namespaces behave as LangGraph's stores do
        item = store.get(("alice", "semantic"), "package-manager")
        assert item is not None and item.value == {"content": "Uses pnpm as the package manager"}
        assert item.namespace == ("alice", "semantic") and item.key == "package-manager"
        store.put(("alice", "semantic"), "package-manager", {"content": "Uses bun now"})  # a new value
        assert store.get(("alice", "semantic"), "package-manager").value == {"content": "Uses bun now"}  # type: ignore[union-attr]
        page = memory.memories("alice", slot="lg.semantic.package-manager", status=["active", "superseded"])
        assert sorted(m.status for m in page.items) == ["active", "superseded"]  # the old value is history
        rules = store.search(("alice", "procedural"))
        assert [(i.key, i.value) for i in rules] == [
            ("orm", {"content": "Never suggest an ORM", "why": "perf"})
        ]
        assert store.search(("alice",), filter={"why": "perf"})[0].key == "orm"
        assert set(store.list_namespaces(prefix=("alice",))) == {
            ("alice", "semantic"),
            ("alice", "procedural"),
        }
        assert store.list_namespaces(prefix=("alice",), max_depth=1) == [("alice",)]
        store.delete(("alice", "procedural"), "orm")
        assert store.get(("alice", "procedural"), "orm") is None
        assert store.get(("nobody", "semantic"), "x") is None and store.search(("nobody",), query="x") == []
        # a memory the worker extracted (here: remembered through the API) is found by its id
        extracted = memory.remember("alice", "Deploys with ArgoCD")
        assert extracted.memory is not None
        hit = store.search(("alice",), query="deploy argocd", limit=1)[0]
        assert hit.key == extracted.memory.id and hit.value["content"] == "Deploys with ArgoCD"
        assert store.get(("alice", "semantic"), extracted.memory.id) is not None
        # a value holding a secret: redacted before it leaves the process, and still a whole JSON object
        store.put(
            ("alice", "semantic"),
            "db",
            {"content": "Staging database", "password": "hunter22!", "port": 5432},
        )
        db = store.get(("alice", "semantic"), "db")
        assert db is not None and db.value["port"] == 5432 and "hunter22" not in json.dumps(db.value)
        with pytest.raises(InvalidNamespaceError, match="kind"):
            store.put(("alice", "notes"), "k", {"content": "x"})
        with pytest.raises(InvalidNamespaceError, match="prefix naming the user"):
            store.list_namespaces()
    finally:
        memory.close()


def test_the_async_variants_run_the_same_graph_with_async_memory(api_server, api_key, tmp_path):  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        memory = Memory(api_server, api_key, spool_path=tmp_path / "s.jsonl", flush_at_exit=False)
        async_memory = AsyncMemory(api_server, api_key, spool_path=tmp_path / "a.jsonl", flush_at_exit=False)
        store = MemoryStore(memory, async_memory=async_memory)
        try:
            await store.aput(("bob",), "editor", {"content": "Edits in Helix"}, ttl=60 * 24 * 30)
            got = await store.aget(("bob", "semantic"), "editor")
            assert got is not None and got.value == {"content": "Edits in Helix"}
            assert memory.memories("bob", slot="lg.semantic.editor").items[0].expires_at is not None
            found = await store.asearch(("bob",), query="which editor")
            assert [i.key for i in found][:1] == ["editor"]
            assert await store.alist_namespaces(prefix=("bob",)) == [("bob", "semantic")]
            await store.adelete(("bob", "semantic"), "editor")
            assert await store.aget(("bob", "semantic"), "editor") is None
        finally:
            memory.close()
            await async_memory.aclose()

    asyncio.run(scenario())


def test_the_agents_sdk_runner_keeps_its_session_in_memory_and_calls_recall_memory(  # type: ignore[no-untyped-def]
    api_server, api_key, tmp_path
):
    set_tracing_disabled(True)
    with FakeOpenAI() as fake:

        async def scenario() -> None:
            memory = AsyncMemory(api_server, api_key, spool_path=tmp_path / "s.jsonl", flush_at_exit=False)
            try:
                await memory.remember("carol", "Uses pnpm for every project")
                model = OpenAIChatCompletionsModel(
                    model="fake-chat", openai_client=AsyncOpenAI(base_url=fake.base_url, api_key="test-key")
                )
                agent = Agent(
                    name="assistant",
                    instructions="Answer using what you remember.",
                    model=model,
                    tools=[recall_memory(memory, user_id="carol")],
                )
                session = MemorySession("chat-1", user_id="carol", memory=memory)
                fake.script(
                    Reply(
                        kind="ok",
                        style="tool_call",
                        tool_name="recall_memory",
                        content='{"query": "package manager"}',
                    ),
                    Reply(kind="ok", content="You use pnpm."),
                )
                first = await Runner.run(agent, "Which package manager do I use?", session=session)
                assert first.final_output == "You use pnpm."
                # the model's second request carried the tool's answer, from the memory API
                tool_messages = [m for m in fake.calls[1]["messages"] if m["role"] == "tool"]
                assert tool_messages and "Uses pnpm for every project" in tool_messages[0]["content"]

                # the run's items became events; the window gives them back as items, tool call included
                items = await session.get_items()
                kinds = [i.get("type") or i.get("role") for i in items]
                assert kinds == ["user", "function_call", "function_call_output", "assistant"]
                assert json.loads(str(items[1]["arguments"])) == {"query": "package manager"}  # type: ignore[typeddict-item]
                assert items[1]["call_id"] == items[2]["call_id"]  # type: ignore[typeddict-item]

                fake.script(Reply(kind="ok", content="It was pnpm."))
                second = await Runner.run(agent, "Remind me?", session=session)
                assert second.final_output == "It was pnpm."
                sent = [m.get("content") for m in fake.calls[-1]["messages"]]
                assert (
                    "Which package manager do I use?" in sent and "You use pnpm." in sent
                )  # history came back

                popped = await session.pop_item()
                assert popped == {"role": "assistant", "content": "It was pnpm."}
                assert (await session.get_items(limit=1)) == [{"role": "user", "content": "Remind me?"}]
                await session.clear_session()
                assert await session.get_items() == []
            finally:
                await memory.aclose()

        asyncio.run(scenario())
