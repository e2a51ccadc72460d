"""`/mcp`: the MCP server (`memory_client.mcp`) over streamable HTTP, on the API, with the API's keys.

The request must carry `Authorization: Bearer <api key>`: a missing, unknown or revoked key is refused with a
401 problem before the MCP layer sees anything (and a key over its rate limit with a 429). Each tool then
calls this very app in-process (`httpx.ASGITransport`: no socket, the same routes, limits and row-level
security as `/v1/...`) with that key, so a key's tenant is all a tool can reach. The user is the tool's
`user_id` argument or the `X-Memory-User` header.

Stateless (`stateless_http`): any API process answers any request, as for the rest of the API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI, HTTPException
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from api.deps import bearer_key, in_tenant
from api.problems import problem
from memory_client.api import AsyncMemory
from memory_client.mcp import build_server

MCP_PATH = "/mcp"
_LOOPBACK = "http://memory-api.internal"  # the in-process base URL (never resolved)


class _KeyGate:
    """Let a request through to the MCP app only with a valid key of a tenant (401 / 429 problems)."""

    def __init__(self, inner: ASGIApp):
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        try:
            key = await bearer_key(request.headers.get("authorization"))
            await in_tenant(request.app.state.memory, key, lambda _db, principal: principal)
        except HTTPException as exc:
            response = problem(exc.status_code, str(exc.detail))
            for name, value in (exc.headers or {}).items():
                response.headers[name] = value
            await response(scope, receive, send)
            return
        await self.inner(scope, receive, send)


def install(app: FastAPI) -> Any:
    """Add `/mcp` to the app; return the context manager the app's lifespan must run (the MCP sessions)."""
    transport = httpx.ASGITransport(app=app)

    @asynccontextmanager
    async def memory_for(ctx: Context) -> AsyncIterator[AsyncMemory]:
        headers = ctx.headers or {}
        key = (headers.get("authorization") or "").partition(" ")[2].strip()
        client = AsyncMemory(_LOOPBACK, key, transport=transport, retries=0, flush_at_exit=False)
        try:
            yield client
        finally:
            await client.aclose()

    server = build_server(memory_for)
    starlette_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        # keys, not cookies, authenticate: a rebound DNS name gains a page nothing it could use
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    (route,) = [r for r in starlette_app.routes if isinstance(r, Route) and r.path == MCP_PATH]
    app.router.routes.append(
        Route(MCP_PATH, endpoint=_KeyGate(route.app), methods=["GET", "POST", "DELETE"], include_in_schema=False)
    )
    manager: AbstractAsyncContextManager[None] = server.session_manager.run()
    return manager
