"""The MCP server, driven by the official `mcp` SDK's own client: over streamable HTTP at the API's `/mcp`
(the API's keys), over stdio as `memctl mcp --tenant T --user U` (a desktop or IDE agent on this machine),
and over stdio as the client package's `memory-mcp` (an agent elsewhere, through the API). Every transport
lists the tools and runs each; another tenant's key sees nothing."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import text

from api.keys import create_key
from shared.db.engine import session_scope
from store.scopes import APP_USER
from store.working_memory import write_document
from tests.services import REPO

pytestmark = pytest.mark.integration

TOOLS = {"remember", "recall", "get_context", "forget", "list_memories"}


def _text(content: Any) -> str:
    return str(getattr(content, "text", ""))


def _result(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data["result"] if isinstance(data, dict) and set(data) == {"result"} else data
    return json.loads(_text(result.content[0]))


def _http(url: str, key: str, user: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {key}"}
    if user:
        headers["X-Memory-User"] = user
    return Client(
        streamable_http_client(f"{url}/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=30))
    )


async def _exercise(client: Client, *, user_arg: dict[str, str]) -> dict[str, Any]:
    """List the tools and run each one; return what they answered."""
    tools = await client.list_tools()
    assert {t.name for t in tools.tools} >= TOOLS
    described = {t.name: t.description or "" for t in tools.tools}
    assert all(len(described[name]) > 60 for name in TOOLS), described  # written for a model to choose
    out: dict[str, Any] = {}
    out["remember"] = _result(
        await client.call_tool("remember", {"content": "Uses pnpm for every project", **user_arg})
    )
    out["rule"] = _result(
        await client.call_tool(
            "remember", {"content": "Never suggest an ORM", "kind": "procedural", **user_arg}
        )
    )
    out["recall"] = _result(await client.call_tool("recall", {"query": "package manager pnpm", **user_arg}))
    out["context"] = _text(
        (await client.call_tool("get_context", {"query": "set up a project", **user_arg})).content[0]
    )
    out["listed"] = _result(await client.call_tool("list_memories", user_arg))
    out["forget"] = _result(await client.call_tool("forget", {"memory_id": out["rule"]["memory_id"]}))
    out["after"] = _result(await client.call_tool("list_memories", user_arg))
    return out


def _check(out: dict[str, Any]) -> None:
    assert out["remember"]["op"] == "add" and out["remember"]["memory_id"]
    assert out["recall"][0]["id"] == out["remember"]["memory_id"]
    assert "pnpm" in out["context"] and "ORM" in out["context"]
    assert {m["content"] for m in out["listed"]} == {"Uses pnpm for every project", "Never suggest an ORM"}
    assert out["forget"]["status"] == "deleted"
    assert [m["content"] for m in out["after"]] == ["Uses pnpm for every project"]


def _key(engine, tenant: str) -> str:  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        key, _ = create_key(session, tenant, name="mcp-test")
    return key


def test_mcp_over_http_on_the_api_with_the_api_keys_and_tenant_isolation(api_server, api_key, engine, tenant):  # type: ignore[no-untyped-def]
    other_key = _key(engine, f"{tenant}-other")

    async def scenario() -> None:
        async with _http(api_server, api_key, user="alice") as client:  # the user from the header
            out = await _exercise(client, user_arg={})
            _check(out)
            with session_scope(engine, tenant=tenant) as db:
                write_document(
                    db,
                    tenant,
                    "alice",
                    "",
                    content="Now: migrating CI. Next: cut the release.",
                    mode="rules",
                    source_hash="h",
                    now=__import__("datetime").datetime.now(__import__("datetime").UTC),
                )
            templates = await client.list_resource_templates()
            assert any("working-memory" in t.uri_template for t in templates.resource_templates)
            read = await client.read_resource("memory://users/alice/working-memory")
            assert "migrating CI" in _text(read.contents[0])
            # a tool error comes back as an error result the model can read, not a crash
            missing = await client.call_tool("forget", {"memory_id": "00000000-0000-0000-0000-000000000000"})
            assert missing.is_error and "404" in _text(missing.content[0])
        remembered = out["remember"]["memory_id"]
        # another tenant's key: the same user id names nobody, the memory id is not there
        async with _http(api_server, other_key) as other:
            assert _result(await other.call_tool("recall", {"query": "pnpm", "user_id": "alice"})) == []
            assert _result(await other.call_tool("list_memories", {"user_id": "alice"})) == []
            refused = await other.call_tool("forget", {"memory_id": remembered})
            assert refused.is_error and "404" in _text(refused.content[0])
            nobody = await other.call_tool("recall", {"query": "pnpm"})
            assert nobody.is_error and "no user" in _text(nobody.content[0])
        with engine.connect() as conn:
            status = conn.execute(
                text("SELECT status FROM memories WHERE id = :i"), {"i": remembered}
            ).scalar()
        assert status == "active"  # untouched by the other tenant

    asyncio.run(scenario())


@pytest.mark.parametrize("key", [None, "mk_not-a-key"])
def test_mcp_over_http_refuses_a_missing_or_unknown_key_before_anything_runs(api_server, key):  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx2.post(
        f"{api_server}/mcp", json=body, headers={**headers, "Accept": "application/json, text/event-stream"}
    )
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "key" in response.json()["detail"].lower() or "authorization" in response.json()["detail"].lower()


def test_memctl_mcp_serves_the_tools_on_stdio_for_a_tenant_and_user(database_url, redis_url, engine, tenant):  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "OPENAI_"))}
    env.update(DATABASE_URL=database_url, REDIS_URL=redis_url, MEMORY_LOG_FORMAT="json", PYTHONPATH=str(REPO))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memctl.cli", "mcp", "--tenant", tenant, "--user", "carol"],
        env=env,
        cwd=str(REPO),
    )

    async def scenario() -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=60) as client:
            out = await _exercise(client, user_arg={})
            own = await client.read_resource("memory://working-memory")  # the --user's own document
            out["working_memory"] = _text(own.contents[0])
            return out

    out = asyncio.run(scenario())
    _check(out)
    assert out["working_memory"] == "No working memory yet."
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT user_id, count(*) FROM memories WHERE tenant_id = :t GROUP BY user_id"),
            {"t": tenant},
        ).all()
        revoked = conn.execute(
            text("SELECT count(*) FROM api_keys WHERE tenant_id = :t AND revoked_at IS NULL"), {"t": tenant}
        ).scalar()
    assert rows == [("carol", 2)]
    assert revoked == 0  # the key made for the run was revoked when it ended


def test_the_client_packages_memory_mcp_serves_the_tools_on_stdio_through_the_api(api_server, api_key):  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "OPENAI_"))}
    env.update(MEMORY_API_URL=api_server, MEMORY_API_KEY=api_key, PYTHONPATH=str(REPO))
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memory_client.mcp"], env=env, cwd=str(REPO)
    )

    async def scenario() -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=60) as client:
            return await _exercise(client, user_arg={"user_id": "dave"})  # no default user: named per call

    _check(asyncio.run(scenario()))


def test_the_mcp_remember_tool_writes_app_and_agent_memories(api_server, api_key):  # type: ignore[no-untyped-def]
    async def scenario() -> dict[str, Any]:
        async with _http(api_server, api_key, user="judy") as client:
            app = _result(
                await client.call_tool("remember", {"content": "Office closes at 6pm", "scope": "app"})
            )
            agent = _result(
                await client.call_tool(
                    "remember", {"content": "Judy likes tables", "scope": "agent", "agent_id": "writer"}
                )
            )
            as_writer = _result(
                await client.call_tool("recall", {"query": "Judy likes tables", "agent_id": "writer"})
            )
            as_other = _result(
                await client.call_tool("recall", {"query": "Judy likes tables", "agent_id": "reviewer"})
            )
            block = (
                await client.call_tool("get_context", {"query": "tables", "agent_id": "writer"})
            ).content[0]
            assert {h["id"]: h["scope"] for h in as_writer}.get(agent["memory_id"]) == "agent"
            assert agent["memory_id"] not in {h["id"] for h in as_other}
            assert "[agent] Judy likes tables" in _text(block)
            return {"app": app, "agent": agent}

    out = asyncio.run(scenario())
    got = {
        name: httpx2.get(
            f"{api_server}/v1/memories/{done['memory_id']}", headers={"Authorization": f"Bearer {api_key}"}
        ).json()
        for name, done in out.items()
    }
    assert (got["app"]["scope"], got["app"]["user_id"]) == ("app", APP_USER)
    assert (got["agent"]["scope"], got["agent"]["user_id"], got["agent"]["agent_id"]) == (
        "agent",
        "judy",
        "writer",
    )
