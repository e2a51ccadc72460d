"""A fake OpenAI-compatible HTTP server for tests.

A real HTTP server on 127.0.0.1 (stdlib `ThreadingHTTPServer` in a background thread, port chosen by the OS),
so the real `openai` SDK, its HTTP stack, its retries and its timeouts are exercised end to end.

Endpoints:
- `POST /v1/chat/completions`: answers with scripted `Reply`s, consumed in order; when the script is empty,
  with `default_responder(request_json)` (or `'{"memories": []}'` when no responder is set). Every request
  body is recorded in `calls`, including the ones answered with a fault. `response_format` is accepted and
  ignored, unless `reject_json_schema` is set: then a `json_schema` response format gets a 400 (like
  endpoints without structured outputs) before any scripted reply is consumed.
- `POST /v1/embeddings`: deterministic, L2-normalised vectors of `embedding_dim` from a hash of each input
  text; a single string or a batch; `encoding_format` "float" or "base64" (the SDK's default). Recorded in
  `embeddings_calls`.
- `GET /v1/models`: a fixed list.

Faults (`Reply.kind`): "status" (an OpenAI-style error body with `Reply.status`, and a `retry-after` header
when `retry_after_s` is given), "timeout" (waits `delay_s` - 5 s when unset - then answers normally, so a
client with a shorter timeout gives up first), "malformed" (200 whose content is truncated JSON),
"refusal" (content null, `refusal` set), "down" (the connection is closed without a response).
`delay_s` delays any reply.

Token accounting is approximate (about one token per four characters) and totals every `usage` the server
sent, including answers a timed-out client never read.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

ReplyKind = Literal["ok", "status", "timeout", "malformed", "refusal", "down"]

DEFAULT_CONTENT = '{"memories": []}'
DEFAULT_TIMEOUT_DELAY_S = 5.0
TRUNCATED_JSON = '{"memories": [{"content": "The user prefers'
CHAT_MODEL_ID = "fake-chat"
EMBEDDING_MODEL_ID = "fake-embedding"

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_exceeded",
}


@dataclass
class Reply:
    """One scripted answer to a chat completion request."""

    kind: ReplyKind
    content: str = ""
    status: int = 200
    delay_s: float = 0
    retry_after_s: float | None = None

    def __post_init__(self) -> None:
        if self.kind == "status" and self.status < 400:
            raise ValueError(f"a 'status' reply needs an error status (>= 400), not {self.status}")


def approx_tokens(text: str) -> int:
    """About one token per four characters, at least one for non-empty text."""
    return math.ceil(len(text) / 4)


def fake_embedding(text: str, *, dim: int) -> list[float]:
    """A deterministic unit vector of `dim` floats derived from a hash of `text`."""
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        for (word,) in struct.iter_unpack(">I", digest):
            values.append(word / 0xFFFFFFFF * 2.0 - 1.0)
        counter += 1
    vector = values[:dim]
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class FakeOpenAI:
    """The server and its recorded state; see the module docstring for what it answers."""

    def __init__(self, *, embedding_dim: int = 8) -> None:
        self.embedding_dim = embedding_dim
        self.default_responder: Callable[[dict[str, Any]], str] | None = None
        self.reject_json_schema = False
        self.calls: list[dict[str, Any]] = []
        self.embeddings_calls: list[dict[str, Any]] = []
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        # Set on stop so that handlers sleeping for a "timeout" fault wake up instead of outliving the test.
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._next_id = 0

    # lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        # A short poll interval keeps stop() fast (shutdown waits up to one interval).
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # scripting ---------------------------------------------------------------------------------------------

    def script(self, *responses: Reply) -> None:
        """Queue replies for the next chat completion requests, in order."""
        with self._lock:
            self._script.extend(responses)

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        """Forget the script, the recorded calls, the token totals and the configuration set since start."""
        with self._lock:
            self._script.clear()
            self.calls.clear()
            self.embeddings_calls.clear()
            self.prompt_tokens = 0
            self.completion_tokens = 0
            self.default_responder = None
            self.reject_json_schema = False

    # request handling (called from server threads) ---------------------------------------------------------

    def _record_chat(self, body: dict[str, Any]) -> Reply | None:
        with self._lock:
            self.calls.append(body)
            if self.reject_json_schema and _response_format_type(body) == "json_schema":
                return Reply(
                    kind="status", status=400, content="response_format json_schema is not supported"
                )
            return self._script.popleft() if self._script else None

    def _count_tokens(self, prompt: int, completion: int) -> None:
        with self._lock:
            self.prompt_tokens += prompt
            self.completion_tokens += completion

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            self._next_id += 1
            return f"{prefix}-fake-{self._next_id}"

    def _default_content(self, body: dict[str, Any]) -> str:
        responder = self.default_responder
        return responder(body) if responder is not None else DEFAULT_CONTENT

    def _wait(self, delay_s: float) -> bool:
        """Sleep up to `delay_s`; False when the server is stopping meanwhile."""
        return not self._stopping.wait(delay_s) if delay_s > 0 else True

    def _chat_completion(
        self, body: dict[str, Any], *, content: str | None, refusal: str | None
    ) -> dict[str, Any]:
        prompt_tokens = approx_tokens(_prompt_text(body))
        completion_tokens = approx_tokens(content or refusal or "")
        self._count_tokens(prompt_tokens, completion_tokens)
        return {
            "id": self._new_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or CHAT_MODEL_ID),
            "system_fingerprint": "fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.embeddings_calls.append(body)
        texts = _embedding_inputs(body.get("input"))
        as_base64 = body.get("encoding_format") == "base64"
        data: list[dict[str, Any]] = []
        for index, text in enumerate(texts):
            vector = fake_embedding(text, dim=self.embedding_dim)
            encoded: Any = (
                base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector
            )
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        prompt_tokens = sum(approx_tokens(text) for text in texts)
        self._count_tokens(prompt_tokens, 0)
        return {
            "object": "list",
            "data": data,
            "model": str(body.get("model") or EMBEDDING_MODEL_ID),
            "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
        }


def _response_format_type(body: dict[str, Any]) -> str | None:
    response_format = body.get("response_format")
    return response_format.get("type") if isinstance(response_format, dict) else None


def _prompt_text(body: dict[str, Any]) -> str:
    parts: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
            parts.extend(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "\n".join(parts)


def _embedding_inputs(raw: object) -> list[str]:
    # The API also takes token ids (a list of ints, or a list of such lists); hash their text form.
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list):
        if raw and all(isinstance(item, int) for item in raw):
            return [json.dumps(raw)]
        return [item if isinstance(item, str) else json.dumps(item) for item in raw]
    return [json.dumps(raw)]


def _error_body(status: int, message: str) -> dict[str, Any]:
    error_type = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": error_type, "param": None, "code": error_type}}


def _make_handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.1 keeps connections alive the way the SDK's pool expects; every answer sets Content-Length.
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                models = [
                    {"id": model_id, "object": "model", "created": 0, "owned_by": "fake"}
                    for model_id in (CHAT_MODEL_ID, EMBEDDING_MODEL_ID)
                ]
                self._send_json(200, {"object": "list", "data": models})
            else:
                self._send_json(404, _error_body(404, f"no route GET {self.path}"))

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send_json(400, _error_body(400, "request body is not valid JSON"))
                return
            if not isinstance(body, dict):
                self._send_json(400, _error_body(400, "request body must be a JSON object"))
            elif self.path == "/v1/chat/completions":
                self._answer_chat(body)
            elif self.path == "/v1/embeddings":
                self._send_json(200, fake._embeddings(body))
            else:
                self._send_json(404, _error_body(404, f"no route POST {self.path}"))

        def _answer_chat(self, body: dict[str, Any]) -> None:
            reply = fake._record_chat(body) or Reply(kind="ok", content=fake._default_content(body))
            delay_s = reply.delay_s
            if reply.kind == "timeout" and delay_s <= 0:
                delay_s = DEFAULT_TIMEOUT_DELAY_S
            if not fake._wait(delay_s):
                self._drop_connection()
                return
            if reply.kind == "down":
                self._drop_connection()
            elif reply.kind == "status":
                headers = {}
                if reply.retry_after_s is not None:
                    headers["retry-after"] = f"{reply.retry_after_s:g}"
                message = reply.content or f"fake error {reply.status}"
                self._send_json(reply.status, _error_body(reply.status, message), headers=headers)
            elif reply.kind == "refusal":
                refusal = reply.content or "I can't help with that."
                self._send_json(200, fake._chat_completion(body, content=None, refusal=refusal))
            elif reply.kind == "malformed":
                content = reply.content or TRUNCATED_JSON
                self._send_json(200, fake._chat_completion(body, content=content, refusal=None))
            else:  # "ok" and "timeout" (which answers after its delay)
                content = reply.content or fake._default_content(body)
                self._send_json(200, fake._chat_completion(body, content=content, refusal=None))

        def _send_json(
            self, status: int, payload: dict[str, Any], *, headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("x-request-id", fake._new_id("req"))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up (its timeout fired); nothing left to answer.
                self.close_connection = True

        def _drop_connection(self) -> None:
            self.close_connection = True
            with contextlib.suppress(OSError):  # already closed by the client
                self.connection.shutdown(socket.SHUT_RDWR)

    return Handler
