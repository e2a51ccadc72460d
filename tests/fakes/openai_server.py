"""A fake OpenAI-compatible HTTP server for tests.

A real HTTP server on 127.0.0.1 (stdlib `ThreadingHTTPServer` in a background thread, port chosen by the OS),
so the real `openai` SDK, its HTTP stack, its retries and its timeouts are exercised end to end.

Endpoints:
- `POST /v1/chat/completions`: answers with scripted `Reply`s, consumed in order; when the script is empty,
  with `default_responder(request_json)` (or `'{"memories": []}'` when no responder is set): the content of
  the answer, or a whole `Reply` (a fault for some kinds of request only, e.g. one prompt). Every request
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
`delay_s` delays any reply; `FakeOpenAI.delay_s` delays every chat answer (a slow model near the timeout).

The response zoo: how endpoints that are not the model the prompts were written for answer a 200. A `Style`
(`Reply.style` for one reply, `FakeOpenAI.style` for every answer of the default responder) renders the
answer's content as such an endpoint sends it:
- content styles: "plain", "fenced" (a Markdown ```json block), "prose" (sentences before and after the
  JSON), "think" (a `<think>...</think>` reasoning block, braces included, before the answer),
  "single_quotes" (Python-style quoting), "trailing_commas";
- response shapes: "length" (the content cut in half, `finish_reason: "length"`), "refusal" (content null,
  `refusal` set), "tool_call" (content null, the answer as the arguments of a tool call), "no_choices" (an
  empty `choices` list), "empty" (content "").
Request checks, as stricter endpoints make them (a 400 with the offending `param`, before any scripted reply
is consumed): `reject_json_schema` (a `json_schema` response format), `reject_json_object` (a `json_object`
one), `reasoning_model` (`max_tokens`, or a `temperature` other than 1, like OpenAI's reasoning models).

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
from typing import Any, Literal, get_args

ReplyKind = Literal["ok", "status", "timeout", "malformed", "refusal", "down"]
Style = Literal[
    "plain",
    "fenced",
    "prose",
    "think",
    "single_quotes",
    "trailing_commas",
    "length",
    "refusal",
    "tool_call",
    "no_choices",
    "empty",
]
STYLES: tuple[Style, ...] = get_args(Style)  # every style, in the order the Literal names them

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
    style: Style | None = None  # for "ok": how the content is sent (None: the server's `style`)
    tool_name: str = "record_memories"  # the function a "tool_call" style answer calls (agents' tools)

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

    def __init__(self, *, embedding_dim: int = 8, port: int = 0) -> None:
        self.embedding_dim = embedding_dim
        self.bind_port = port  # 0: any free port; a fixed one lets a fault run stop and restart it in place
        self.default_responder: Callable[[dict[str, Any]], str | Reply] | None = None
        self.reject_json_schema = False
        self.reject_json_object = False
        self.reasoning_model = False
        self.style: Style = "plain"
        self.delay_s = 0.0
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
        server = ThreadingHTTPServer(("127.0.0.1", self.bind_port), _make_handler(self))
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
            self.reject_json_object = False
            self.reasoning_model = False
            self.style = "plain"
            self.delay_s = 0.0

    # request handling (called from server threads) ---------------------------------------------------------

    def _record_chat(self, body: dict[str, Any]) -> tuple[Reply | None, str | None]:
        """The scripted reply (None: the default answer), or a 400 `Reply` and the `param` it names."""
        with self._lock:
            self.calls.append(body)
            rejection = self._rejection(body)
            if rejection is not None:
                return Reply(kind="status", status=400, content=rejection[1]), rejection[0]
            return (self._script.popleft() if self._script else None), None

    def _rejection(self, body: dict[str, Any]) -> tuple[str, str] | None:
        """(param, message) of the 400 a stricter endpoint gives this request, or None."""
        format_type = _response_format_type(body)
        if self.reject_json_schema and format_type == "json_schema":
            return (
                "response_format",
                "Invalid parameter: 'response_format' of type 'json_schema' is not supported.",
            )
        if self.reject_json_object and format_type == "json_object":
            return (
                "response_format",
                "Invalid parameter: 'response_format' of type 'json_object' is not supported.",
            )
        if self.reasoning_model:
            if "max_tokens" in body:
                return "max_tokens", (
                    "Unsupported parameter: 'max_tokens' is not supported with this model. "
                    "Use 'max_completion_tokens' instead."
                )
            if "temperature" in body and body["temperature"] != 1:
                return "temperature", (
                    f"Unsupported value: 'temperature' does not support {body['temperature']} with this "
                    "model. Only the default (1) value is supported."
                )
        return None

    def _count_tokens(self, prompt: int, completion: int) -> None:
        with self._lock:
            self.prompt_tokens += prompt
            self.completion_tokens += completion

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            self._next_id += 1
            return f"{prefix}-fake-{self._next_id}"

    def _default_reply(self, body: dict[str, Any]) -> Reply:
        """The answer when no scripted reply is queued: the responder's, a content or a whole `Reply`."""
        responder = self.default_responder
        answer = responder(body) if responder is not None else DEFAULT_CONTENT
        if isinstance(answer, Reply):
            return answer
        return Reply(kind="ok", content=answer, delay_s=self.delay_s)

    def _default_content(self, body: dict[str, Any]) -> str:
        answer = self._default_reply(body)
        return answer.content if answer.kind == "ok" else DEFAULT_CONTENT

    def _wait(self, delay_s: float) -> bool:
        """Sleep up to `delay_s`; False when the server is stopping meanwhile."""
        return not self._stopping.wait(delay_s) if delay_s > 0 else True

    def _chat_completion(
        self,
        body: dict[str, Any],
        *,
        content: str | None,
        refusal: str | None,
        finish_reason: str = "stop",
        tool_calls: list[dict[str, Any]] | None = None,
        no_choices: bool = False,
    ) -> dict[str, Any]:
        prompt_tokens = approx_tokens(_prompt_text(body))
        sent = content or refusal or "".join(c["function"]["arguments"] for c in tool_calls or [])
        completion_tokens = 0 if no_choices else approx_tokens(sent)
        self._count_tokens(prompt_tokens, completion_tokens)
        message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
        if tool_calls:
            message["tool_calls"] = tool_calls
        choices = [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}]
        return {
            "id": self._new_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or CHAT_MODEL_ID),
            "system_fingerprint": "fake",
            "choices": [] if no_choices else choices,
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


def _styled(
    fake: FakeOpenAI, body: dict[str, Any], content: str, style: Style, tool_name: str = "record_memories"
) -> dict[str, Any]:
    """The chat completion an endpoint of `style` sends for an answer whose plain content is `content`."""
    if style == "length":
        return fake._chat_completion(
            body, content=content[: max(len(content) // 2, 1)], refusal=None, finish_reason="length"
        )
    if style == "refusal":
        return fake._chat_completion(body, content=None, refusal="I'm sorry, I can't help with that.")
    if style == "tool_call":
        call = {
            "id": fake._new_id("call"),
            "type": "function",
            "function": {"name": tool_name, "arguments": content},
        }
        return fake._chat_completion(
            body, content=None, refusal=None, finish_reason="tool_calls", tool_calls=[call]
        )
    if style == "no_choices":
        return fake._chat_completion(body, content=None, refusal=None, no_choices=True)
    if style == "empty":
        return fake._chat_completion(body, content="", refusal=None)
    return fake._chat_completion(body, content=render_content(content, style), refusal=None)


def render_content(content: str, style: Style) -> str:
    """`content` written as an endpoint of a content style writes it; not JSON: unchanged but for the
    wrappers (a fence, prose, a reasoning block)."""
    if style == "fenced":
        return f"```json\n{content}\n```"
    if style == "prose":
        return (
            "Sure! Here are the memories I extracted from the conversation:\n\n"
            f"{content}\n\nLet me know if you want me to change anything."
        )
    if style == "think":
        return (
            '<think>\nThe user wants a JSON object like {"memories": [...]}. Let me look at each turn '
            "and decide what is worth keeping {stable facts only}.\n</think>\n\n" + content
        )
    if style in ("single_quotes", "trailing_commas"):
        try:
            value = json.loads(content)
        except json.JSONDecodeError:
            return content
        return _loose_json(
            value, single_quotes=style == "single_quotes", trailing_commas=style == "trailing_commas"
        )
    return content


def _loose_json(value: Any, *, single_quotes: bool, trailing_commas: bool, indent: int = 0) -> str:
    """JSON as small local models write it: strings in single quotes, or a comma after every last item."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    tail = "," if trailing_commas else ""

    def nested(item: Any) -> str:
        return _loose_json(
            item, single_quotes=single_quotes, trailing_commas=trailing_commas, indent=indent + 1
        )

    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{nested(str(k))}: {nested(v)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + tail + "\n" + pad + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(inner + nested(v) for v in value) + tail + "\n" + pad + "]"
    if isinstance(value, str) and single_quotes:
        body = json.dumps(value, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("'", "\\'")
        return f"'{body}'"
    return json.dumps(value, ensure_ascii=False)


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


def _error_body(status: int, message: str, *, param: str | None = None) -> dict[str, Any]:
    error_type = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": error_type, "param": param, "code": error_type}}


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
            scripted, param = fake._record_chat(body)
            reply = scripted or fake._default_reply(body)
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
                error = _error_body(reply.status, message, param=param)
                self._send_json(reply.status, error, headers=headers)
            elif reply.kind == "refusal":
                refusal = reply.content or "I can't help with that."
                self._send_json(200, fake._chat_completion(body, content=None, refusal=refusal))
            elif reply.kind == "malformed":
                content = reply.content or TRUNCATED_JSON
                self._send_json(200, fake._chat_completion(body, content=content, refusal=None))
            else:  # "ok" and "timeout" (which answers after its delay)
                content = reply.content or fake._default_content(body)
                self._send_json(200, _styled(fake, body, content, reply.style or fake.style, reply.tool_name))

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
