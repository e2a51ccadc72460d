"""The read/write HTTP API (FastAPI). `create_app()` builds it; `uvicorn api.app:create_app --factory`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from prometheus_client import CollectorRegistry

from api import console, mcp, problems
from api.access import AccessRecorder
from api.deps import AppState
from api.limits import BodyLimitMiddleware, RateLimit, RateLimiter
from api.metrics import StoreCollector, TimingMiddleware
from api.routes import episodes, events, health, memories, ops, search, sessions, trace
from shared.db.engine import get_engine, resolve_database_url, resolve_redis_url
from shared.db.schema import resolve_embedding_schema
from shared.logging import configure_logging
from shared.publisher import TaskPublisher
from shared.settings import Settings, get_settings
from store.embeddings import embedder_from_settings
from store.retokenize import warn_if_stale


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    configure_logging(level=settings.log_level, fmt=settings.log_format)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = get_engine(
            resolve_database_url(settings),
            # connections are opened on demand and kept: no overflow connection closed on return and
            # reopened by the next request (fork, authentication, SET ROLE); past the pool, requests wait
            pool_size=settings.api_db_pool_size,
            max_overflow=0,
            application_name="memory-api",
            role=settings.db_role_api or None,
            pre_ping=False,
        )
        resolve_embedding_schema(engine, settings)
        warn_if_stale(engine)
        publisher = TaskPublisher(resolve_redis_url(settings), queue=settings.queue, timeout_s=1.0)
        embedder = embedder_from_settings(settings)
        access = AccessRecorder(engine).start()
        limiter = RateLimiter(
            resolve_redis_url(settings),
            RateLimit(per_s=settings.rate_limit_per_s, burst=settings.rate_limit_burst),
        )
        registry = CollectorRegistry()
        registry.register(StoreCollector(engine, publisher.redis, settings.queue, settings.ingest_shards))
        app.state.metrics_registry = registry
        app.state.memory = AppState(
            settings=settings,
            engine=engine,
            publisher=publisher,
            embedder=embedder,
            access=access,
            limiter=limiter,
        )
        async with mcp_sessions:
            yield
        access.stop()
        limiter.close()
        publisher.close()
        engine.dispose()

    app = FastAPI(
        title="Memory worker API",
        version="0.1.0",
        description="Transcript events in; memories, context and operator views out.",
        lifespan=lifespan,
    )
    problems.install(app)
    mcp_sessions = mcp.install(app)  # /mcp: the MCP server over streamable HTTP, with the same keys
    # every route may answer these (api.limits); documented once here
    too_large: dict[int | str, dict[str, Any]] = {
        413: {"description": "request body over MEMORY_MAX_BODY_BYTES (events: MEMORY_MAX_EVENTS_BODY_BYTES)"}
    }
    limited = {**too_large, 429: {"description": "the key's rate limit: retry after `Retry-After` seconds"}}
    app.include_router(health.router, responses=too_large)
    app.include_router(events.router, responses=limited)
    app.include_router(sessions.router, responses=limited)
    app.include_router(search.router, responses=limited)
    app.include_router(memories.router, responses=limited)
    app.include_router(episodes.router, responses=limited)
    app.include_router(ops.router, responses=limited)
    app.include_router(trace.router, responses=limited)
    console.install(app, settings)  # /console/: the web console (server-rendered, same keys and store)
    # outermost last: the timing middleware sees the 413s too
    app.add_middleware(
        BodyLimitMiddleware,
        default=settings.max_body_bytes,
        limits={events.EVENTS_PATH: settings.max_events_body_bytes},
    )
    app.add_middleware(TimingMiddleware)

    def custom_openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            app.openapi_schema = events.register_schemas(schema)
        return app.openapi_schema

    app.openapi = custom_openapi  # type: ignore[method-assign]
    return app
