"""`Memory` and `AsyncMemory`: the whole API from Python, in the agent's process.

    from memory_client import Memory

    memory = Memory("http://127.0.0.1:8000", api_key="mk_...")
    memory.emit(user_id="alice", session_id="s-42", role="user", content="We use pnpm, not npm.")
    memory.remember("alice", "Prefers answers in French")
    hits = memory.search("alice", "package manager")
    block = memory.context("alice", query="set up CI").context

`emit` / `emit_many` never raise for transport trouble and never wait on the network (`memory_client.emitter`:
a background sender over HTTP, or one XADD when the agent runs next to the broker: `redis_url=` and
`tenant_id=`). Every other method is one request: it returns a typed result (`memory_client.models`) or raises
an `APIError` subclass with the API's problem+json detail (`memory_client.errors`). A 503, a 502/504, a 429
and a connection that could not be made are retried (`retries` times, after the server's `Retry-After` or an
exponential backoff, at most `max_retry_wait_s` each); a write whose request may have reached the server is
retried only when repeating it is harmless (`remember` sends an idempotency key for that).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import httpx

from memory_client.contract import isoformat
from memory_client.emitter import Emitter, Transport
from memory_client.errors import APIError, ConnectionFailed, error_for
from memory_client.http_ingest import HttpPublisher, Unavailable, parse_retry_after
from memory_client.models import (
    Cleared,
    Context,
    Episode,
    EpisodeDeleted,
    EpisodePage,
    Erased,
    EventTrace,
    MemoryDetail,
    MemoryPage,
    MemoryRecord,
    MemoryWhy,
    Popped,
    Remembered,
    SearchResult,
    SessionWindow,
    WindowTurn,
    WorkingMemory,
    decode,
)
from memory_client.redaction import redact

T = TypeVar("T")
Kind = Literal["semantic", "episodic", "procedural"]
Category = Literal["profile", "preference", "constraint", "decision", "lesson", "feedback", "fact"]
Status = Literal["active", "superseded", "consolidated", "archived", "deleted"]
Scope = Literal["user", "agent", "app"]

DEFAULT_API_URL = "http://127.0.0.1:8000"
_RETRY_STATUSES = frozenset({429, 502, 503, 504})
_SENT_ERRORS = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.RemoteProtocolError, httpx.ReadError)
_USER_AGENT = "memory-worker-client/0.1"


@dataclass(frozen=True)
class _Call(Generic[T]):
    """One request and how to read its answer."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    idempotent: bool = True  # may be sent again when the first try may have reached the server
    none_on_404: bool = False


def _params(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None and v != []}


def _decoder(cls: type[T]) -> Callable[[Any], T]:
    return lambda data: decode(cls, data)


def _path(value: str) -> str:
    from urllib.parse import quote

    return quote(str(value), safe="")


class _Requests:
    """The API's surface as requests (shared by `Memory` and `AsyncMemory`)."""

    @staticmethod
    def search(
        user_id: str,
        query: str,
        *,
        k: int = 10,
        kinds: Iterable[Kind] = (),
        categories: Iterable[Category] = (),
        include_turns: bool = False,
        include_memories: bool = True,
        agent_id: str | None = None,
        as_of: datetime | None = None,
    ) -> _Call[list[SearchResult]]:
        body: dict[str, Any] = {
            "user_id": user_id,
            "query": redact(query),
            "k": k,
            "kinds": list(kinds),
            "categories": list(categories),
            "include_turns": include_turns,
            "include_memories": include_memories,
        }
        if agent_id is not None:
            body["agent_id"] = agent_id
        if as_of is not None:
            body["as_of"] = isoformat(as_of)
        return _Call(
            "POST", "/v1/search", lambda d: [decode(SearchResult, r) for r in d["results"]], body=body
        )

    @staticmethod
    def context(
        user_id: str,
        *,
        query: str = "",
        max_tokens: int = 1000,
        agent_id: str | None = None,
        min_similarity: float | None = None,
        min_keyword_coverage: float | None = None,
    ) -> _Call[Context]:
        params = _params(
            query=redact(query) or None,
            max_tokens=max_tokens,
            agent_id=agent_id,
            min_similarity=min_similarity,
            min_keyword_coverage=min_keyword_coverage,
        )
        return _Call("GET", f"/v1/users/{_path(user_id)}/context", _decoder(Context), params=params)

    @staticmethod
    def memories(
        user_id: str,
        *,
        status: Iterable[Status] = (),
        kind: Iterable[Kind] = (),
        category: Category | None = None,
        slot: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> _Call[MemoryPage]:
        params = _params(
            status=list(status), kind=list(kind), category=category, slot=slot, limit=limit, offset=offset
        )
        return _Call("GET", f"/v1/users/{_path(user_id)}/memories", _decoder(MemoryPage), params=params)

    @staticmethod
    def get(memory_id: str) -> _Call[MemoryDetail]:
        return _Call("GET", f"/v1/memories/{_path(memory_id)}", _decoder(MemoryDetail))

    @staticmethod
    def trace(event_id: str) -> _Call[EventTrace]:
        return _Call("GET", f"/v1/events/{_path(event_id)}/trace", _decoder(EventTrace))

    @staticmethod
    def why(memory_id: str) -> _Call[MemoryWhy]:
        return _Call("GET", f"/v1/memories/{_path(memory_id)}/why", _decoder(MemoryWhy))

    @staticmethod
    def edit(
        memory_id: str,
        *,
        content: str | None = None,
        pinned: bool | None = None,
        ttl_days: float | None = None,
        clear_ttl: bool = False,
        kind: Kind | None = None,
    ) -> _Call[MemoryRecord]:
        body: dict[str, Any] = _params(
            content=redact(content) if content is not None else None,
            pinned=pinned,
            ttl_days=ttl_days,
            kind=kind,
        )
        if clear_ttl:
            body["clear_ttl"] = True
        if not body:
            raise ValueError("nothing to change: give content, pinned, ttl_days, clear_ttl or kind")
        return _Call("PATCH", f"/v1/memories/{_path(memory_id)}", _decoder(MemoryRecord), body=body)

    @staticmethod
    def forget(memory_id: str) -> _Call[MemoryRecord]:
        return _Call("DELETE", f"/v1/memories/{_path(memory_id)}", _decoder(MemoryRecord))

    @staticmethod
    def erase_user(user_id: str) -> _Call[Erased]:
        return _Call("DELETE", f"/v1/users/{_path(user_id)}", _decoder(Erased))

    @staticmethod
    def window(session_id: str, *, user_id: str | None = None, last: int = 20) -> _Call[SessionWindow]:
        params = _params(user_id=user_id, last=last)
        return _Call(
            "GET", f"/v1/sessions/{_path(session_id)}/window", _decoder(SessionWindow), params=params
        )

    @staticmethod
    def pop_turn(session_id: str, *, user_id: str | None = None) -> _Call[WindowTurn | None]:
        return _Call(
            "DELETE",
            f"/v1/sessions/{_path(session_id)}/turns/last",
            lambda d: decode(Popped, d).turn,
            params=_params(user_id=user_id),
            idempotent=False,  # a second try would pop the turn before
            none_on_404=True,
        )

    @staticmethod
    def clear_session(session_id: str, *, user_id: str | None = None) -> _Call[int]:
        return _Call(
            "DELETE",
            f"/v1/sessions/{_path(session_id)}",
            lambda d: decode(Cleared, d).deleted_events,
            params=_params(user_id=user_id),
            none_on_404=True,
        )

    @staticmethod
    def remember(
        user_id: str | None,
        content: str,
        *,
        kind: Kind = "semantic",
        category: Category = "fact",
        slot: str | None = None,
        value: str | None = None,
        pinned: bool = False,
        ttl_days: float | None = None,
        valid_from: datetime | None = None,
        idempotency_key: str | None = None,
        scope: Scope = "user",
        agent_id: str | None = None,
    ) -> _Call[Remembered]:
        body: dict[str, Any] = {
            "content": redact(content),
            "scope": scope,
            "kind": kind,
            "category": category,
            "pinned": pinned,
            # retries of this call (a timeout, a 503) are applied once: the server keys them on this
            "idempotency_key": idempotency_key or uuid.uuid4().hex,
        }
        body.update(
            _params(
                user_id=user_id,
                agent_id=agent_id,
                slot=slot,
                value=redact(value) if value is not None else None,
                ttl_days=ttl_days,
                valid_from=isoformat(valid_from) if valid_from is not None else None,
            )
        )
        return _Call("POST", "/v1/memories", _decoder(Remembered), body=body)

    @staticmethod
    def working_memory(user_id: str) -> _Call[WorkingMemory | None]:
        return _Call(
            "GET", f"/v1/users/{_path(user_id)}/working-memory", _decoder(WorkingMemory), none_on_404=True
        )

    @staticmethod
    def episodes(user_id: str, *, limit: int = 50, offset: int = 0) -> _Call[EpisodePage]:
        params = _params(limit=limit, offset=offset)
        return _Call("GET", f"/v1/users/{_path(user_id)}/episodes", _decoder(EpisodePage), params=params)

    @staticmethod
    def episode(episode_id: str) -> _Call[Episode | None]:
        return _Call("GET", f"/v1/episodes/{_path(episode_id)}", _decoder(Episode), none_on_404=True)

    @staticmethod
    def edit_episode(
        episode_id: str, *, what_happened: str | None = None, outcome: str | None = None, lesson: str | None = None
    ) -> _Call[Episode]:
        body = _params(
            what_happened=redact(what_happened) if what_happened is not None else None,
            outcome=redact(outcome) if outcome is not None else None,
            lesson=redact(lesson) if lesson is not None else None,
        )
        if not body:
            raise ValueError("nothing to change: give what_happened, outcome or lesson")
        return _Call("PATCH", f"/v1/episodes/{_path(episode_id)}", _decoder(Episode), body=body)

    @staticmethod
    def delete_episode(episode_id: str) -> _Call[EpisodeDeleted]:
        return _Call("DELETE", f"/v1/episodes/{_path(episode_id)}", _decoder(EpisodeDeleted))


def _error(response: httpx.Response, call: _Call[Any]) -> APIError:
    detail, errors = response.reason_phrase or "error", None
    try:
        problem = response.json()
        if isinstance(problem, dict):
            detail = str(problem.get("detail") or detail)
            errors = problem.get("errors")
    except ValueError:
        detail = response.text[:300] or detail
    return error_for(response.status_code)(
        response.status_code,
        detail,
        errors=errors if isinstance(errors, list) else None,
        retry_after_s=parse_retry_after(response.headers.get("retry-after")),
        method=call.method,
        path=call.path,
    )


class _Base:
    """Configuration and the emitter, common to `Memory` and `AsyncMemory`."""

    def __init__(
        self,
        api_url: str | None = None,
        api_key: str | None = None,
        *,
        tenant_id: str | None = None,
        redis_url: str | None = None,
        queue: str = "memory",
        shards: int = 1,
        agent_id: str | None = None,
        spool_path: str | Path | None = None,
        timeout_s: float = 10.0,
        retries: int = 3,
        max_retry_wait_s: float = 30.0,
        emit_queue_size: int = 10_000,
        emit_timeout_s: float = 5.0,
        emit_full_wait_s: float = 0.005,
        flush_at_exit: bool = True,
    ):
        self.api_url = (api_url or os.environ.get("MEMORY_API_URL") or DEFAULT_API_URL).rstrip("/")
        if not self.api_url.startswith(("http://", "https://")):
            raise ValueError("api_url must be an http:// or https:// URL")
        self.api_key = api_key or os.environ.get("MEMORY_API_KEY") or ""
        if not self.api_key:
            raise ValueError(
                "an API key is needed: pass api_key= or set MEMORY_API_KEY (create one with "
                "`memctl keys create TENANT`)"
            )
        if redis_url is not None and tenant_id is None:
            raise ValueError("the Redis path needs tenant_id= (the API takes the tenant from the key)")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.tenant_id = tenant_id
        self.agent_id = agent_id
        self.timeout_s = timeout_s
        self.retries = retries
        self.max_retry_wait_s = max_retry_wait_s
        self._redis = (redis_url, queue, shards)
        self._spool_path = spool_path
        self._emit_queue_size = emit_queue_size
        self._emit_timeout_s = emit_timeout_s
        self._emit_full_wait_s = emit_full_wait_s
        self._flush_at_exit = flush_at_exit
        self._emitter: Emitter | None = None
        self._headers = {
            "Authorization": f"Bearer {self.api_key}",
            "User-Agent": _USER_AGENT,
            "Accept": "application/json",
        }

    # --- emit: never raises for transport trouble, never waits on the network ----------------------------

    @property
    def emitter(self) -> Emitter:
        """The emitter behind `emit` (made on first use: a reader never starts a sender thread)."""
        if self._emitter is None:
            self._emitter = self._make_emitter()
        return self._emitter

    def _make_emitter(self) -> Emitter:
        redis_url, queue, shards = self._redis
        transport: Transport
        if redis_url is not None:
            from memory_client.stream import StreamProducer, outage_errors

            transport = StreamProducer(redis_url, queue=queue, shards=shards)
            outage, background = outage_errors(), False
        else:
            transport = HttpPublisher(self.api_url, self.api_key, timeout_s=self._emit_timeout_s)
            outage, background = (Unavailable,), True
        return Emitter(
            self.tenant_id or "api-key",  # over HTTP the key decides the tenant; this names the spool's calls
            transport,
            spool_path=self._spool_path or self._default_spool(),
            outage=outage,
            agent_id=self.agent_id,
            background=background,
            queue_size=self._emit_queue_size,
            full_wait_s=self._emit_full_wait_s,
            flush_at_exit=self._flush_at_exit,
        )

    def _default_spool(self) -> Path:
        configured = os.environ.get("MEMORY_SPOOL_PATH")
        if configured:
            return Path(configured)
        state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
        target = f"{self.api_url}|{self._redis[0]}|{self.tenant_id}|{self.api_key}"
        return state / "memory-client" / f"spool-{hashlib.sha256(target.encode()).hexdigest()[:16]}.jsonl"

    def emit(
        self,
        *,
        user_id: str,
        session_id: str,
        content: str = "",
        role: str = "user",
        type: str = "turn",
        event_id: str | None = None,
        agent_id: str | None = None,
        event_time: datetime | None = None,
        source_turn_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """Send one transcript event; return its event_id. Raises only `ValueError` (a bad argument)."""
        return self.emitter.emit(
            user_id=user_id,
            session_id=session_id,
            content=content,
            role=role,
            type=type,
            event_id=event_id,
            agent_id=agent_id,
            event_time=event_time,
            source_turn_id=source_turn_id,
            metadata=metadata,
        )

    def emit_many(self, events: Iterable[Mapping[str, Any]]) -> list[str]:
        """Send many events (dicts with the `emit` keywords); validates all before sending any."""
        return self.emitter.emit_many(events)

    def end_session(self, *, user_id: str, session_id: str) -> str:
        """The session is over: the worker extracts what is left and closes it into an episode."""
        return self.emit(user_id=user_id, session_id=session_id, type="session_end")

    def flush(self, timeout_s: float | None = 10.0) -> int:
        """Send what `emit` queued, then re-send the spool; return how many spooled calls were sent."""
        return self._emitter.flush(timeout_s) if self._emitter is not None else 0

    def _close_emitter(self) -> None:
        if self._emitter is not None:
            self._emitter.close()

    # --- retries ------------------------------------------------------------------------------------------

    def _wait_before_retry(self, attempt: int, call: _Call[Any], exc: Exception) -> float | None:
        """Seconds to wait before trying `call` again after `exc`, or None when it must not be retried."""
        if attempt >= self.retries:
            return None
        backoff = min(0.2 * 2**attempt, 5.0) * (0.5 + random.random() / 2)
        if isinstance(exc, APIError):
            if exc.status not in _RETRY_STATUSES:
                return None
            wait = exc.retry_after_s if exc.retry_after_s is not None else backoff
        elif isinstance(exc, _SENT_ERRORS):
            if not call.idempotent:
                return None  # the request may have been applied
            wait = backoff
        else:  # the connection was not made: nothing reached the server
            wait = backoff
        return wait if wait <= self.max_retry_wait_s else None

    def _result(self, response: httpx.Response, call: _Call[T]) -> T:
        if response.status_code == 404 and call.none_on_404:
            return None  # type: ignore[return-value]
        if response.status_code >= 400:
            raise _error(response, call)
        return call.parse(response.json())


def _failed(exc: httpx.TransportError, call: _Call[Any]) -> ConnectionFailed:
    return ConnectionFailed(
        f"{call.method} {call.path}: the API could not be reached ({type(exc).__name__}: {exc})"
    )


class Memory(_Base):
    """The memory API, synchronous. Thread-safe; one per process is plenty. See the module docstring."""

    def __init__(
        self,
        api_url: str | None = None,
        api_key: str | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        **options: Any,
    ):
        super().__init__(api_url, api_key, **options)
        self._http = httpx.Client(
            base_url=self.api_url, headers=self._headers, timeout=self.timeout_s, transport=transport
        )

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Send what `emit` queued (or spool it), then close the connections."""
        self._close_emitter()
        self._http.close()

    def _run(self, call: _Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response = self._http.request(call.method, call.path, params=call.params, json=call.body)
                if response.status_code in _RETRY_STATUSES:
                    raise _error(response, call)
                return self._result(response, call)
            except (APIError, httpx.TransportError) as exc:
                wait = self._wait_before_retry(attempt, call, exc)
                if wait is None:
                    if isinstance(exc, httpx.TransportError):
                        raise _failed(exc, call) from exc
                    raise
            time.sleep(wait)
            attempt += 1

    def search(
        self,
        user_id: str,
        query: str,
        *,
        k: int = 10,
        kinds: Iterable[Kind] = (),
        categories: Iterable[Category] = (),
        include_turns: bool = False,
        include_memories: bool = True,
        agent_id: str | None = None,
        as_of: datetime | None = None,
    ) -> list[SearchResult]:
        """The user's memories (and with `include_turns`, conversation turns) most relevant to `query`."""
        return self._run(
            _Requests.search(
                user_id,
                query,
                k=k,
                kinds=kinds,
                categories=categories,
                include_turns=include_turns,
                include_memories=include_memories,
                agent_id=agent_id,
                as_of=as_of,
            )
        )

    def context(
        self,
        user_id: str,
        *,
        query: str = "",
        max_tokens: int = 1000,
        agent_id: str | None = None,
        min_similarity: float | None = None,
        min_keyword_coverage: float | None = None,
    ) -> Context:
        """A ready-to-inject block (standing rules, relevant memories, working memory) for a model call;
        with `agent_id`, that agent's own memories join the user's and the app's (labelled). Memories and
        episodes below the relevance floor are left out (`left_out` counts them); `min_similarity` /
        `min_keyword_coverage` override the server's floor for this call (0 turns it off)."""
        return self._run(
            _Requests.context(
                user_id,
                query=query,
                max_tokens=max_tokens,
                agent_id=agent_id,
                min_similarity=min_similarity,
                min_keyword_coverage=min_keyword_coverage,
            )
        )

    def memories(
        self,
        user_id: str,
        *,
        status: Iterable[Status] = (),
        kind: Iterable[Kind] = (),
        category: Category | None = None,
        slot: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> MemoryPage:
        """A page of the user's memories (current ones unless `status` says otherwise), most important first."""
        return self._run(
            _Requests.memories(
                user_id, status=status, kind=kind, category=category, slot=slot, limit=limit, offset=offset
            )
        )

    def get(self, memory_id: str) -> MemoryDetail:
        """One memory with its full history."""
        return self._run(_Requests.get(memory_id))

    def trace(self, event_id: str) -> EventTrace:
        """The event's journey: stored, extracted, decided, consolidated, pruned (404: no such event)."""
        return self._run(_Requests.trace(event_id))

    def why(self, memory_id: str) -> MemoryWhy:
        """The memory's lineage back to the turns it came from (404: no such memory)."""
        return self._run(_Requests.why(memory_id))

    def edit(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        pinned: bool | None = None,
        ttl_days: float | None = None,
        clear_ttl: bool = False,
        kind: Kind | None = None,
    ) -> MemoryRecord:
        """Change a memory (recorded in its history)."""
        return self._run(
            _Requests.edit(
                memory_id, content=content, pinned=pinned, ttl_days=ttl_days, clear_ttl=clear_ttl, kind=kind
            )
        )

    def pin(self, memory_id: str, pinned: bool = True) -> MemoryRecord:
        """Pin a memory (never decays, never archived) or unpin it."""
        return self.edit(memory_id, pinned=pinned)

    def forget(self, memory_id: str) -> MemoryRecord:
        """Forget one memory (kept with its history until the purge, never served again)."""
        return self._run(_Requests.forget(memory_id))

    def erase_user(self, user_id: str) -> Erased:
        """Erase everything about a user: events, memories, history, sessions, episodes."""
        return self._run(_Requests.erase_user(user_id))

    def window(self, session_id: str, *, user_id: str | None = None, last: int = 20) -> SessionWindow:
        """A session as the worker compacted it: the rolling summary and the `last` turns."""
        return self._run(_Requests.window(session_id, user_id=user_id, last=last))

    def pop_turn(self, session_id: str, *, user_id: str | None = None) -> WindowTurn | None:
        """Delete the session's most recent turn and return it (None when there is none)."""
        return self._run(_Requests.pop_turn(session_id, user_id=user_id))

    def clear_session(self, session_id: str, *, user_id: str | None = None) -> int:
        """Delete a session's turns and window; return how many events went (0 for an unknown session)."""
        return self._run(_Requests.clear_session(session_id, user_id=user_id)) or 0

    def remember(
        self,
        user_id: str | None,
        content: str,
        *,
        kind: Kind = "semantic",
        category: Category = "fact",
        slot: str | None = None,
        value: str | None = None,
        pinned: bool = False,
        ttl_days: float | None = None,
        valid_from: datetime | None = None,
        idempotency_key: str | None = None,
        scope: Scope = "user",
        agent_id: str | None = None,
    ) -> Remembered:
        """Remember one statement now, reconciled like extracted memories (a slot holds one current value).
        `scope`: "user" (the default: every agent of the user reads it), "agent" (only `agent_id` reads it),
        or "app" (every user of the tenant reads it; `user_id` may be None)."""
        return self._run(
            _Requests.remember(
                user_id,
                content,
                kind=kind,
                category=category,
                slot=slot,
                value=value,
                pinned=pinned,
                ttl_days=ttl_days,
                valid_from=valid_from,
                idempotency_key=idempotency_key,
                scope=scope,
                agent_id=agent_id,
            )
        )

    def working_memory(self, user_id: str) -> WorkingMemory | None:
        """The user's working-memory document, or None before the worker wrote one."""
        return self._run(_Requests.working_memory(user_id))

    def episodes(self, user_id: str, *, limit: int = 50, offset: int = 0) -> EpisodePage:
        """The user's episodes (one per closed session), latest first; deleted ones are gone."""
        return self._run(_Requests.episodes(user_id, limit=limit, offset=offset))

    def episode(self, episode_id: str) -> Episode | None:
        """One episode, or None when there is none (or it was deleted)."""
        return self._run(_Requests.episode(episode_id))

    def edit_episode(
        self,
        episode_id: str,
        *,
        what_happened: str | None = None,
        outcome: str | None = None,
        lesson: str | None = None,
    ) -> Episode:
        """Correct an episode (a later close of its session keeps the edit); an empty lesson removes it."""
        return self._run(
            _Requests.edit_episode(episode_id, what_happened=what_happened, outcome=outcome, lesson=lesson)
        )

    def delete_episode(self, episode_id: str) -> EpisodeDeleted:
        """Delete an episode for good: it never comes back into the context block or the working memory."""
        return self._run(_Requests.delete_episode(episode_id))


class AsyncMemory(_Base):
    """The memory API for asyncio. `emit` is a plain method here too: it never waits on the network."""

    def __init__(
        self,
        api_url: str | None = None,
        api_key: str | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        **options: Any,
    ):
        super().__init__(api_url, api_key, **options)
        self._http = httpx.AsyncClient(
            base_url=self.api_url, headers=self._headers, timeout=self.timeout_s, transport=transport
        )

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Send what `emit` queued (or spool it), then close the connections."""
        await asyncio.to_thread(self._close_emitter)
        await self._http.aclose()

    async def aflush(self, timeout_s: float | None = 10.0) -> int:
        """`flush` without blocking the event loop."""
        return await asyncio.to_thread(self.flush, timeout_s)

    async def _run(self, call: _Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method, call.path, params=call.params, json=call.body
                )
                if response.status_code in _RETRY_STATUSES:
                    raise _error(response, call)
                return self._result(response, call)
            except (APIError, httpx.TransportError) as exc:
                wait = self._wait_before_retry(attempt, call, exc)
                if wait is None:
                    if isinstance(exc, httpx.TransportError):
                        raise _failed(exc, call) from exc
                    raise
            await asyncio.sleep(wait)
            attempt += 1

    async def search(
        self,
        user_id: str,
        query: str,
        *,
        k: int = 10,
        kinds: Iterable[Kind] = (),
        categories: Iterable[Category] = (),
        include_turns: bool = False,
        include_memories: bool = True,
        agent_id: str | None = None,
        as_of: datetime | None = None,
    ) -> list[SearchResult]:
        """The user's memories (and with `include_turns`, conversation turns) most relevant to `query`."""
        return await self._run(
            _Requests.search(
                user_id,
                query,
                k=k,
                kinds=kinds,
                categories=categories,
                include_turns=include_turns,
                include_memories=include_memories,
                agent_id=agent_id,
                as_of=as_of,
            )
        )

    async def context(
        self,
        user_id: str,
        *,
        query: str = "",
        max_tokens: int = 1000,
        agent_id: str | None = None,
        min_similarity: float | None = None,
        min_keyword_coverage: float | None = None,
    ) -> Context:
        """A ready-to-inject block (standing rules, relevant memories, working memory) for a model call;
        with `agent_id`, that agent's own memories join the user's and the app's (labelled). Memories and
        episodes below the relevance floor are left out (`left_out` counts them); `min_similarity` /
        `min_keyword_coverage` override the server's floor for this call (0 turns it off)."""
        return await self._run(
            _Requests.context(
                user_id,
                query=query,
                max_tokens=max_tokens,
                agent_id=agent_id,
                min_similarity=min_similarity,
                min_keyword_coverage=min_keyword_coverage,
            )
        )

    async def memories(
        self,
        user_id: str,
        *,
        status: Iterable[Status] = (),
        kind: Iterable[Kind] = (),
        category: Category | None = None,
        slot: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> MemoryPage:
        """A page of the user's memories (current ones unless `status` says otherwise), most important first."""
        return await self._run(
            _Requests.memories(
                user_id, status=status, kind=kind, category=category, slot=slot, limit=limit, offset=offset
            )
        )

    async def get(self, memory_id: str) -> MemoryDetail:
        """One memory with its full history."""
        return await self._run(_Requests.get(memory_id))

    async def trace(self, event_id: str) -> EventTrace:
        """The event's journey: stored, extracted, decided, consolidated, pruned (404: no such event)."""
        return await self._run(_Requests.trace(event_id))

    async def why(self, memory_id: str) -> MemoryWhy:
        """The memory's lineage back to the turns it came from (404: no such memory)."""
        return await self._run(_Requests.why(memory_id))

    async def edit(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        pinned: bool | None = None,
        ttl_days: float | None = None,
        clear_ttl: bool = False,
        kind: Kind | None = None,
    ) -> MemoryRecord:
        """Change a memory (recorded in its history)."""
        return await self._run(
            _Requests.edit(
                memory_id, content=content, pinned=pinned, ttl_days=ttl_days, clear_ttl=clear_ttl, kind=kind
            )
        )

    async def pin(self, memory_id: str, pinned: bool = True) -> MemoryRecord:
        """Pin a memory (never decays, never archived) or unpin it."""
        return await self.edit(memory_id, pinned=pinned)

    async def forget(self, memory_id: str) -> MemoryRecord:
        """Forget one memory (kept with its history until the purge, never served again)."""
        return await self._run(_Requests.forget(memory_id))

    async def erase_user(self, user_id: str) -> Erased:
        """Erase everything about a user: events, memories, history, sessions, episodes."""
        return await self._run(_Requests.erase_user(user_id))

    async def window(self, session_id: str, *, user_id: str | None = None, last: int = 20) -> SessionWindow:
        """A session as the worker compacted it: the rolling summary and the `last` turns."""
        return await self._run(_Requests.window(session_id, user_id=user_id, last=last))

    async def pop_turn(self, session_id: str, *, user_id: str | None = None) -> WindowTurn | None:
        """Delete the session's most recent turn and return it (None when there is none)."""
        return await self._run(_Requests.pop_turn(session_id, user_id=user_id))

    async def clear_session(self, session_id: str, *, user_id: str | None = None) -> int:
        """Delete a session's turns and window; return how many events went (0 for an unknown session)."""
        return await self._run(_Requests.clear_session(session_id, user_id=user_id)) or 0

    async def remember(
        self,
        user_id: str | None,
        content: str,
        *,
        kind: Kind = "semantic",
        category: Category = "fact",
        slot: str | None = None,
        value: str | None = None,
        pinned: bool = False,
        ttl_days: float | None = None,
        valid_from: datetime | None = None,
        idempotency_key: str | None = None,
        scope: Scope = "user",
        agent_id: str | None = None,
    ) -> Remembered:
        """Remember one statement now, reconciled like extracted memories (a slot holds one current value).
        `scope`: "user" (the default: every agent of the user reads it), "agent" (only `agent_id` reads it),
        or "app" (every user of the tenant reads it; `user_id` may be None)."""
        return await self._run(
            _Requests.remember(
                user_id,
                content,
                kind=kind,
                category=category,
                slot=slot,
                value=value,
                pinned=pinned,
                ttl_days=ttl_days,
                valid_from=valid_from,
                idempotency_key=idempotency_key,
                scope=scope,
                agent_id=agent_id,
            )
        )

    async def working_memory(self, user_id: str) -> WorkingMemory | None:
        """The user's working-memory document, or None before the worker wrote one."""
        return await self._run(_Requests.working_memory(user_id))

    async def episodes(self, user_id: str, *, limit: int = 50, offset: int = 0) -> EpisodePage:
        """The user's episodes (one per closed session), latest first; deleted ones are gone."""
        return await self._run(_Requests.episodes(user_id, limit=limit, offset=offset))

    async def episode(self, episode_id: str) -> Episode | None:
        """One episode, or None when there is none (or it was deleted)."""
        return await self._run(_Requests.episode(episode_id))

    async def edit_episode(
        self,
        episode_id: str,
        *,
        what_happened: str | None = None,
        outcome: str | None = None,
        lesson: str | None = None,
    ) -> Episode:
        """Correct an episode (a later close of its session keeps the edit); an empty lesson removes it."""
        return await self._run(
            _Requests.edit_episode(episode_id, what_happened=what_happened, outcome=outcome, lesson=lesson)
        )

    async def delete_episode(self, episode_id: str) -> EpisodeDeleted:
        """Delete an episode for good: it never comes back into the context block or the working memory."""
        return await self._run(_Requests.delete_episode(episode_id))
