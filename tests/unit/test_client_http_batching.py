"""The HTTP transport's merged re-send (`HttpPublisher.publish_many`), its failure accounting through the spool,
and the background emitter under a burst, against a tiny real HTTP server on loopback (it takes
`POST /v1/events` bodies the way the API does: 202, or the status a test scripts)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memory_client.emitter import Emitter
from memory_client.http_ingest import HttpPublisher, Unavailable
from memory_client.spool import INGEST, Spool

Answer = Callable[[int, list[dict[str, Any]]], int]  # (request number from 1, the body's events) -> status


class _Server:
    """Records each POST's events and answers what `answer` says (202 by default); stored = answered < 300."""

    def __init__(self, answer: Answer | None = None, delay_s: float = 0.0):
        self.answer: Answer = answer or (lambda n, events: 202)
        self.delay_s = delay_s
        self.posts: list[list[dict[str, Any]]] = []
        self.stored: list[str] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                events = body["events"]
                if outer.delay_s:
                    time.sleep(outer.delay_s)
                with outer.lock:
                    outer.posts.append(events)
                    status = outer.answer(len(outer.posts), events)
                    if status < 300:
                        outer.stored.extend(e["event_id"] for e in events)
                payload = json.dumps({"detail": "scripted"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.close()


def _calls(n: int, *, per_call: int = 1, tenant: str = "t", prefix: str = "e") -> list[tuple[str, list[Any]]]:
    return [
        (
            INGEST,
            [
                {
                    "tenant_id": tenant,
                    "events": [
                        {
                            "event_id": f"{prefix}{i:05}-{j}",
                            "user_id": f"u{i % 7}",
                            "session_id": f"s{i % 3}",
                            "content": f"turn {i}",
                        }
                        for j in range(per_call)
                    ],
                }
            ],
        )
        for i in range(n)
    ]


def _ids(calls: list[tuple[str, list[Any]]]) -> list[str]:
    return [e["event_id"] for _, args in calls for e in args[0]["events"]]


def test_publish_many_merges_calls_into_bodies_of_at_most_500_events(server: _Server) -> None:
    publisher = HttpPublisher(server.url, "k")
    calls = _calls(1_200) + _calls(3, per_call=200, prefix="big")
    try:
        publisher.publish_many(calls)
    finally:
        publisher.close()
    # 1,200 one-event calls: 500 + 500, the last 200 with the first 200-event call, the other two together
    assert [len(p) for p in server.posts] == [500, 500, 400, 400]
    assert server.stored == _ids(calls) and publisher.requests() == 4


def test_publish_many_keeps_tenants_apart_and_bodies_under_the_byte_limit(server: _Server) -> None:
    publisher = HttpPublisher(server.url, "k", max_body_bytes=4_000)
    calls = _calls(10, tenant="a") + _calls(10, tenant="b", prefix="b") + _calls(60, tenant="a", prefix="c")
    try:
        publisher.publish_many(calls)
    finally:
        publisher.close()
    assert server.stored == _ids(calls)
    assert [p[0]["event_id"][0] for p in server.posts][:2] == ["e", "b"]  # a run of one tenant per body
    assert all({e["event_id"][0] for e in p} in ({"e"}, {"b"}, {"c"}) for p in server.posts)
    sizes = [len(json.dumps({"events": p}, separators=(",", ":"))) for p in server.posts]
    assert max(sizes) <= 4_000 and len(server.posts) < 20


def test_a_failed_merged_request_says_how_many_calls_were_stored(server: _Server) -> None:
    server.answer = lambda n, events: 503 if n == 2 else 202
    publisher = HttpPublisher(server.url, "k")
    calls = _calls(1_200)
    try:
        with pytest.raises(Unavailable) as failed:
            publisher.publish_many(calls)
    finally:
        publisher.close()
    assert failed.value.sent_calls == 500 and server.stored == _ids(calls[:500])


def test_the_spool_keeps_exactly_the_calls_a_failed_drain_did_not_store(
    server: _Server, tmp_path: Path
) -> None:
    spool = Spool(tmp_path / "spool.jsonl")
    calls = _calls(1_200)
    spool.append(calls)
    publisher = HttpPublisher(server.url, "k")
    try:
        server.answer = lambda n, events: 503 if n == 2 else 202
        with pytest.raises(Unavailable):
            spool.drain(publisher.publish_many, batch=1_000, batch_events=publisher.batch_events)
        left = [json.loads(line) for line in spool.path.read_text().splitlines()]
        assert len(left) == 700 and left[0]["args"][0]["events"][0]["event_id"] == "e00500-0"
        server.answer = lambda n, events: 202
        assert spool.drain(publisher.publish_many, batch=1_000, batch_events=publisher.batch_events) == 700
    finally:
        publisher.close()
    # every event stored once: the refused request stored nothing, and nothing was sent twice
    assert server.stored == _ids(calls) and spool.size() == 0
    assert len(server.posts) == 2 + 2  # 500 | 500 (refused) ; 500 + 200


def test_a_merged_body_refused_for_good_loses_only_the_bad_calls_events(server: _Server) -> None:
    server.answer = lambda n, events: 422 if any(e["event_id"].startswith("bad") for e in events) else 202
    publisher = HttpPublisher(server.url, "k")
    calls = _calls(40) + _calls(1, per_call=3, prefix="bad") + _calls(40, prefix="f")
    try:
        publisher.publish_many(calls)
    finally:
        publisher.close()
    assert server.stored == _ids(calls[:40]) + _ids(calls[41:])
    assert len(server.posts) < 20  # split along the calls, halving: about log2(81) refused bodies


def test_a_413_splits_the_merged_body_and_everything_arrives(server: _Server) -> None:
    server.answer = lambda n, events: 413 if len(events) > 100 else 202
    publisher = HttpPublisher(server.url, "k")
    calls = _calls(450)
    try:
        publisher.publish_many(calls)
    finally:
        publisher.close()
    assert sorted(server.stored) == sorted(_ids(calls)) and len(server.stored) == 450


def test_an_unreachable_api_is_unavailable_with_nothing_sent(tmp_path: Path) -> None:
    s = _Server()
    url = s.url
    s.close()
    publisher = HttpPublisher(url, "k", timeout_s=0.5)
    try:
        with pytest.raises(Unavailable) as failed:
            publisher.publish_many(_calls(10))
    finally:
        publisher.close()
    assert failed.value.sent_calls == 0


def test_a_burst_past_a_small_queue_spools_in_few_appends_and_loses_nothing(tmp_path: Path) -> None:
    server = _Server(delay_s=0.1)  # an API that takes its time: the sender (100 events a request) falls behind
    publisher = HttpPublisher(server.url, "k")
    emitter = Emitter(
        "t",
        publisher,
        spool_path=tmp_path / "spool.jsonl",
        background=True,
        queue_size=200,
        batch_size=100,
        flush_at_exit=False,
    )
    try:
        ids = [emitter.emit(user_id=f"u{n % 5}", session_id="s", content=f"turn {n}") for n in range(3_000)]
        emitter.flush(timeout_s=60)
        emitter.flush()
    finally:
        emitter.close()
        server.close()
    assert sorted(server.stored) == sorted(ids) and len(set(server.stored)) == len(server.stored)
    assert emitter.overflowed > 0  # the queue did overflow to the spool ...
    assert emitter.spooled <= emitter.overflowed / 50  # ... in calls of up to 100 events, few appends
    assert len(server.posts) < 3_000 / 20  # and the spool went back in merged requests


def test_a_drain_skips_torn_lines_and_a_pause_keeps_the_rest_as_written(
    server: _Server, tmp_path: Path
) -> None:
    spool = Spool(tmp_path / "spool.jsonl")
    calls = _calls(30, per_call=100)
    spool.append(calls[:10])
    with spool.path.open("a") as fh:
        fh.write('{"task": "memory.ingest", "args": [{"tenant_id"\n')  # a crash mid-write
    spool.append(calls[10:])
    publisher = HttpPublisher(server.url, "k")
    try:
        pauses = iter([False, True])  # asked before the second and the third batch
        sent = spool.drain(
            publisher.publish_many, batch_events=publisher.batch_events, pause=lambda: next(pauses)
        )
        assert sent == 10 and server.stored == _ids(calls[:10])  # two requests of 500 events
        rest = spool.path.read_text().splitlines()
        assert len(rest) == 21 and rest[0].startswith('{"task": "memory.ingest", "args": [{"tenant_id"')
        assert spool.drain(publisher.publish_many, batch_events=publisher.batch_events) == 20
    finally:
        publisher.close()
    assert server.stored == _ids(calls) and spool.size() == 0 and len(server.posts) == 6
