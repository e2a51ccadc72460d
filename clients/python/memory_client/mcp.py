"""An MCP server over the memory API (the `mcp` extra): desktop and IDE agents mount it to remember, recall and
forget on their user's behalf.

Tools: `remember`, `recall`, `get_context`, `forget`, `list_memories`. Resources: the user's working memory
(`memory://users/{user_id}/working-memory`, and `memory://working-memory` for the default user).

Every tool goes through the API with an API key, so what the key's tenant may see and do is all a tool can
see and do. The user is the tool's `user_id` argument, else the `X-Memory-User` header (over HTTP), else the
server's default user (`--user`).

Run it on stdio, for an agent on this machine:

    MEMORY_API_URL=http://127.0.0.1:8000 MEMORY_API_KEY=mk_... memory-mcp --user alice

The server (`memctl mcp --tenant T --user U`, and `/mcp` on the API over streamable HTTP) builds the same
tools with `build_server`.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import Field

from memory_client.api import AsyncMemory
from memory_client.errors import APIError, ConnectionFailed, NotFound

USER_HEADER = "x-memory-user"
INSTRUCTIONS = (
    "Long-term memory about the user, kept across conversations. Before answering anything that may depend "
    "on the user's preferences, setup, past decisions or standing rules, call get_context (or recall for a "
    "specific question). When the user states a lasting fact, preference, decision or rule, or asks you to "
    "remember something, call remember with one short statement. When they ask you to forget something, "
    "find it with recall or list_memories, then call forget with its id."
)

Kind = Literal["semantic", "episodic", "procedural"]
UserArg = Annotated[
    str | None,
    Field(description="whose memory; leave empty for the user this server was set up for"),
]
# per request: the AsyncMemory to use (its key decides the tenant)
MemoryFor = Callable[[Context], AbstractAsyncContextManager[AsyncMemory]]


def _one(memory: AsyncMemory) -> MemoryFor:
    @asynccontextmanager
    async def same(_: Context) -> AsyncIterator[AsyncMemory]:
        yield memory

    return same


def _user(ctx: Context, given: str | None, default_user: str | None) -> str:
    if given:
        return given
    try:
        headers = ctx.headers or {}
    except ValueError:  # outside a request (an in-process call)
        headers = {}
    user = headers.get(USER_HEADER) or default_user
    if not user:
        raise ToolError("no user given: pass user_id (or set the X-Memory-User header on the connection)")
    return user


def _fail(exc: Exception) -> ToolError:
    if isinstance(exc, APIError):
        return ToolError(f"the memory API refused ({exc.status}): {exc.detail}")
    return ToolError(f"the memory API is unreachable: {exc}")


def build_server(
    memory: AsyncMemory | MemoryFor,
    *,
    default_user: str | None = None,
    name: str = "memory",
) -> MCPServer:
    """The MCP server: its tools call `memory` (one client, or a function giving the client for a request)."""
    memory_for = _one(memory) if isinstance(memory, AsyncMemory) else memory
    server: MCPServer = MCPServer(name, instructions=INSTRUCTIONS, version="0.1.0")

    @server.tool(
        description="Store one lasting fact, preference, decision or rule about the user (e.g. 'Prefers "
        "TypeScript over JavaScript', 'Never run migrations on Fridays'). Write one short, self-contained "
        "statement in the third person. A statement that updates an earlier one in the same slot replaces "
        "it; repeating a known fact only strengthens it. Do not store small talk or one-off task details."
    )
    async def remember(
        content: Annotated[
            str, Field(description="the statement to remember", min_length=1, max_length=4000)
        ],
        ctx: Context,
        kind: Annotated[
            Kind,
            Field(
                description="semantic: a fact or preference; procedural: a rule for how to behave; "
                "episodic: something that happened"
            ),
        ] = "semantic",
        slot: Annotated[
            str | None,
            Field(
                description="optional topic key such as 'home.city' or 'tooling.package_manager': one "
                "current value per slot, a new one supersedes the old"
            ),
        ] = None,
        user_id: UserArg = None,
        scope: Annotated[
            Literal["user", "agent", "app"],
            Field(
                description="user (default): about this user, read by every agent; agent: only for the agent "
                "named by agent_id, with this user; app: shared knowledge every user of the app gets"
            ),
        ] = "user",
        agent_id: Annotated[
            str | None, Field(description="the agent an agent-scope memory belongs to (scope agent only)")
        ] = None,
    ) -> dict[str, Any]:
        user = None if scope == "app" else _user(ctx, user_id, default_user)
        try:
            async with memory_for(ctx) as client:
                done = await client.remember(
                    user, content, kind=kind, slot=slot, scope=scope, agent_id=agent_id
                )
        except (APIError, ConnectionFailed) as exc:
            raise _fail(exc) from exc
        memory_id = done.memory.id if done.memory else None
        return {"op": done.op, "memory_id": memory_id, "reason": done.reason, "scope": scope}

    @server.tool(
        description="Search what is remembered about the user, most relevant first. Use it for a specific "
        "question ('which package manager do they use?'). Returns each memory's id, text, kind, score and "
        "scope (user, agent or app)."
    )
    async def recall(
        query: Annotated[str, Field(description="what to look for, in natural language", min_length=1)],
        ctx: Context,
        k: Annotated[int, Field(ge=1, le=50, description="how many results")] = 5,
        user_id: UserArg = None,
        agent_id: Annotated[
            str | None, Field(description="the agent asking: its own (agent-scope) memories are included")
        ] = None,
    ) -> list[dict[str, Any]]:
        user = _user(ctx, user_id, default_user)
        try:
            async with memory_for(ctx) as client:
                hits = await client.search(user, query, k=k, agent_id=agent_id)
        except NotFound:
            return []  # nothing is known about this user yet
        except (APIError, ConnectionFailed) as exc:
            raise _fail(exc) from exc
        return [
            {
                "id": h.id,
                "content": h.content,
                "kind": h.kind,
                "category": h.category,
                "score": round(h.score, 4),
                "scope": h.scope,
            }
            for h in hits
        ]

    @server.tool(
        description="Get a ready-to-use block of everything relevant about the user (standing rules, "
        "relevant memories, where the current work stands) to read before answering. Pass the task at hand "
        "as query to focus it."
    )
    async def get_context(
        ctx: Context,
        query: Annotated[str, Field(description="the task or question at hand (optional)")] = "",
        max_tokens: Annotated[int, Field(ge=16, le=32000, description="size budget of the block")] = 800,
        user_id: UserArg = None,
        agent_id: Annotated[
            str | None, Field(description="the agent asking: its own (agent-scope) memories are included")
        ] = None,
    ) -> str:
        user = _user(ctx, user_id, default_user)
        try:
            async with memory_for(ctx) as client:
                block = await client.context(user, query=query, max_tokens=max_tokens, agent_id=agent_id)
        except NotFound:
            return "Nothing is remembered about this user yet."
        except (APIError, ConnectionFailed) as exc:
            raise _fail(exc) from exc
        return block.context or "Nothing relevant is remembered about this user."

    @server.tool(
        description="Forget one memory by its id (from recall or list_memories), when the user asks to "
        "forget something or a memory is wrong. It is never used again; its history is kept."
    )
    async def forget(
        memory_id: Annotated[str, Field(description="the id of the memory to forget")],
        ctx: Context,
    ) -> dict[str, Any]:
        try:
            async with memory_for(ctx) as client:
                gone = await client.forget(memory_id)
        except (APIError, ConnectionFailed) as exc:
            raise _fail(exc) from exc
        return {"memory_id": gone.id, "status": gone.status, "content": gone.content}

    @server.tool(
        description="List what is currently remembered about the user, most important first (for 'what do "
        "you remember about me?'). Optionally only one kind."
    )
    async def list_memories(
        ctx: Context,
        kind: Annotated[Kind | None, Field(description="only this kind (optional)")] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="at most this many")] = 20,
        user_id: UserArg = None,
    ) -> list[dict[str, Any]]:
        user = _user(ctx, user_id, default_user)
        try:
            async with memory_for(ctx) as client:
                page = await client.memories(user, kind=[kind] if kind else [], limit=limit)
        except NotFound:
            return []
        except (APIError, ConnectionFailed) as exc:
            raise _fail(exc) from exc
        return [
            {"id": m.id, "content": m.content, "kind": m.kind, "category": m.category, "pinned": m.pinned}
            for m in page.items
        ]

    async def _working_memory(memory_cm: AbstractAsyncContextManager[AsyncMemory], user: str) -> str:
        try:
            async with memory_cm as client:
                document = await client.working_memory(user)
        except (APIError, ConnectionFailed) as exc:
            raise ResourceError(str(_fail(exc))) from exc
        return document.content if document is not None else "No working memory yet."

    @server.resource(
        "memory://users/{user_id}/working-memory",
        name="working_memory",
        description="The user's working memory: where the current work stands, what was decided, what is "
        "next (one document, rewritten as things change).",
        mime_type="text/markdown",
    )
    async def user_working_memory(user_id: str, ctx: Context) -> str:
        return await _working_memory(memory_for(ctx), user_id)

    if default_user and isinstance(memory, AsyncMemory):  # one client (stdio): no request to take a key from
        own = memory

        @server.resource(
            "memory://working-memory",
            name="my_working_memory",
            description=f"The working memory of {default_user}: where the current work stands.",
            mime_type="text/markdown",
        )
        async def own_working_memory() -> str:
            assert default_user is not None
            return await _working_memory(_one(own)(None), default_user)  # type: ignore[arg-type]

    return server


def main(argv: list[str] | None = None) -> None:
    """`memory-mcp`: the MCP server on stdio, over the API at MEMORY_API_URL with MEMORY_API_KEY."""
    parser = argparse.ArgumentParser(prog="memory-mcp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--user", help="the default user of the tools (else each call names one)")
    parser.add_argument(
        "--api-url", help="the memory API (default: $MEMORY_API_URL or http://127.0.0.1:8000)"
    )
    parser.add_argument("--api-key", help="an API key (default: $MEMORY_API_KEY)")
    args = parser.parse_args(argv)
    memory = AsyncMemory(args.api_url, args.api_key, flush_at_exit=False)
    build_server(memory, default_user=args.user).run("stdio")


if __name__ == "__main__":
    main()
