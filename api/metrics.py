"""Prometheus metrics of the API, plus gauges read from the database and Redis at scrape time, plus the
worker processes' counters when they share `PROMETHEUS_MULTIPROC_DIR` with the API (as `memctl up` sets)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

from fastapi import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Engine, text
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.stream import stream_stats

API_LATENCY = Histogram(
    "memory_api_request_seconds",
    "API latency by route",
    ["method", "route", "status"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)


class StoreCollector(Collector):
    """Gauges computed on scrape: memories by kind and status, events by status and lag, dead letters, LLM
    tokens and calls today by tenant and stage, queue depth."""

    def __init__(self, engine: Engine, redis_client: Any, queue: str, shards: int = 1):
        self._engine, self._redis, self._queue, self._shards = engine, redis_client, queue, shards

    def collect(self) -> Iterator[GaugeMetricFamily]:
        memories = GaugeMetricFamily(
            "memory_memories", "memories by kind and status", labels=["kind", "status"]
        )
        events = GaugeMetricFamily("memory_events", "events by status", labels=["status"])
        lag = GaugeMetricFamily("memory_events_lag_seconds", "age of the oldest pending event")
        dlq = GaugeMetricFamily("memory_dead_letters", "dead letters not yet replayed")
        tokens = GaugeMetricFamily(
            "memory_llm_tokens_today", "LLM tokens today (UTC)", labels=["tenant", "stage"]
        )
        calls = GaugeMetricFamily(
            "memory_llm_calls_today", "LLM calls today (UTC)", labels=["tenant", "stage"]
        )
        depth = GaugeMetricFamily("memory_queue_depth", "task messages waiting in the broker queue")
        stream = GaugeMetricFamily(
            "memory_ingest_stream",
            "the ingest stream: backlog (length), delivered not acknowledged (pending)",
            labels=["what"],
        )
        stream_age = GaugeMetricFamily(
            "memory_ingest_oldest_age_seconds",
            "age of the oldest ingest entry, unread or pending",
            labels=["what"],
        )
        consumers = GaugeMetricFamily("memory_ingest_consumers", "consumers in the ingest group")
        try:
            with self._engine.connect() as conn:
                for metric, l1, l2, value in conn.execute(text("SELECT * FROM memory_stats()")).all():
                    if metric == "memories":
                        memories.add_metric([l1, l2], value)
                    elif metric == "events":
                        events.add_metric([l1], value)
                    elif metric == "oldest_pending_s":
                        lag.add_metric([], value)
                    elif metric == "dead_letters":
                        dlq.add_metric([], value)
                    elif metric == "llm_tokens_today":
                        tokens.add_metric([l1, l2], value)
                    elif metric == "llm_calls_today":
                        calls.add_metric([l1, l2], value)
        except Exception:  # a scrape must not fail because the database is briefly away
            pass
        with contextlib.suppress(Exception):
            depth.add_metric([], float(self._redis.llen(self._queue)))
        with contextlib.suppress(Exception):
            st = stream_stats(self._redis, self._queue, self._shards)
            stream.add_metric(["length"], float(st["length"]))
            stream.add_metric(["pending"], float(st["pending"]))
            stream_age.add_metric(["entry"], float(st["oldest_entry_age_s"]))
            stream_age.add_metric(["pending"], float(st["oldest_pending_age_s"]))
            consumers.add_metric([], float(len(st["consumers"])))
        yield from (memories, events, lag, dlq, tokens, calls, depth, stream, stream_age, consumers)


def metrics_response(registry: CollectorRegistry) -> Response:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from shared.prometheus import MultiProcessCollector

        combined = CollectorRegistry()
        MultiProcessCollector(combined)
        body = generate_latest(registry) + generate_latest(combined)
    else:
        from prometheus_client import REGISTRY

        body = generate_latest(registry) + generate_latest(REGISTRY)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


class TimingMiddleware:
    """API latency by route, as a plain ASGI middleware: Starlette's `@app.middleware("http")` wraps every
    request and response in anyio streams and a task group, which cost more CPU than a search's SQL."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an exception that escapes every handler becomes a 500 further out

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            # the router writes the matched route into the request's scope
            path = getattr(scope.get("route"), "path", "unmatched")
            API_LATENCY.labels(scope["method"], path, str(status)).observe(time.perf_counter() - started)
