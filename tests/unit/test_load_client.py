"""The API load benchmark's own HTTP client (bench/api_load.py), against a real loopback HTTP server: it must
count every answer, keep its connections alive, hold a paced rate, and charge a slow server for the
requests it made wait (no coordinated omission)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from bench.api_load import _drive


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    delay_s = 0.0
    connections: ClassVar[set[int]] = set()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        assert json.loads(body)["k"] == 10 and self.headers["Authorization"] == "Bearer mk_test"
        type(self).connections.add(id(self.connection))
        time.sleep(type(self).delay_s)
        answer = json.dumps({"results": [], "took_ms": 1.5}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("Handler", (_Handler,), {"delay_s": 0.0, "connections": set()})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    httpd.shutdown()
    httpd.server_close()


def _cfg(url: str, **kw: object) -> dict[str, object]:
    return {
        "url": url,
        "key": "mk_test",
        "users": 50,
        "concurrency": 4,
        "warmup_s": 0.3,
        "window_s": 2.0,
        "max_requests": 100_000,
        "seed": 1,
        **kw,
    }


def test_the_closed_loop_counts_every_answer_over_its_keep_alive_connections(server):
    url, handler = server
    r = asyncio.run(_drive(_cfg(url)))
    assert r["requests"] > 50 and r["statuses"] == {"200": r["requests"]}
    assert r["took_ms"]["p50_ms"] == pytest.approx(1.5)
    assert len(handler.connections) == 4  # one connection per client, reused for every request


def test_a_paced_run_holds_the_offered_rate(server):
    url, _ = server
    r = asyncio.run(_drive(_cfg(url, rate=50.0)))
    assert r["offered_rate"] == 50.0
    assert 0.85 * 50 <= r["requests"] / r["window_s"] <= 1.15 * 50
    assert r["latency"]["p50_ms"] < 20  # a fast server answers when asked


def test_a_paced_run_charges_a_slow_server_for_the_requests_it_made_wait(server):
    # one client due every 20 ms, a server taking 60 ms: each request waits longer than the last for the
    # connection. Timed from sending, every request would look like 60 ms; timed from when it was due, the
    # backlog shows.
    url, handler = server
    handler.delay_s = 0.06
    r = asyncio.run(_drive(_cfg(url, concurrency=1, rate=50.0, window_s=1.5)))
    assert r["requests"] / r["window_s"] < 25  # the server could not keep up
    assert r["latency"]["p95_ms"] > 3 * 60
