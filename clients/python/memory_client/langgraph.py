"""A LangGraph `BaseStore` over the memory API (the `langgraph` extra).

    from langgraph.graph import StateGraph
    from memory_client import Memory
    from memory_client.langgraph import MemoryStore

    graph = builder.compile(store=MemoryStore(Memory(api_key="mk_...")))

Namespaces map onto the memory model: `(user_id,)` is everything about a user, `(user_id, kind)` one kind
of memory (`semantic`, `episodic`, `procedural`; a put into `(user_id,)` is `semantic`). The agent is the
client's (`Memory(agent_id=...)`), as for every call it makes.

An item is a memory, reconciled like every other: `put(ns, key, value)` remembers the value's text in the
slot `lg.<kind>.<key>` (one current value per key: a new value supersedes the old one, which stays in the
memory's history; the same value reinforces it), `delete` forgets it. `search` with a query is the API's
hybrid search and finds the memories the worker extracted from conversations too (their key is their id,
their value `{"content", "kind", "category"}`); without a query it lists, most important first. `filter`
keeps items whose value has the given fields equal. TTLs (minutes) become the memory's expiry.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from memory_client.api import AsyncMemory, Memory
from memory_client.contract import is_safe_id
from memory_client.errors import NotFound
from memory_client.models import MemoryRecord, SearchResult
from memory_client.redaction import redact_obj

KINDS = ("semantic", "episodic", "procedural")
SLOT_PREFIX = "lg."
_TEXT_FIELDS = ("content", "text", "memory", "data")
MAX_CONTENT = 4000


def _namespace(namespace: tuple[str, ...], *, for_write: bool) -> tuple[str, str | None]:
    if not namespace or len(namespace) > 2 or not is_safe_id(namespace[0]):
        raise InvalidNamespaceError(
            f"namespace {namespace!r}: expected (user_id,) or (user_id, kind) with kind one of {KINDS}"
        )
    kind = namespace[1] if len(namespace) == 2 else None
    if kind is not None and kind not in KINDS:
        raise InvalidNamespaceError(f"namespace {namespace!r}: the kind must be one of {KINDS}, not {kind!r}")
    return namespace[0], (kind or "semantic") if for_write else kind


def slot_of(kind: str, key: str) -> str:
    """The memory slot of a store key (a key that is not a safe id, or a long one, is hashed)."""
    if is_safe_id(key) and len(key) <= 100:
        return f"{SLOT_PREFIX}{kind}.{key}"
    return f"{SLOT_PREFIX}{kind}.h{hashlib.sha256(key.encode()).hexdigest()[:40]}"


def text_of(value: dict[str, Any]) -> str:
    """What a value says, as the memory's text (what search and the context block read)."""
    for name in _TEXT_FIELDS:
        if isinstance(value.get(name), str) and value[name].strip():
            text = str(value[name])
            break
    else:
        text = "; ".join(
            f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in value.items()
        )
    return text.strip()[:MAX_CONTENT] or "(empty)"


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _fits(pattern: tuple[str, ...], part: tuple[str, ...]) -> bool:
    return len(pattern) == len(part) and all(p in ("*", n) for p, n in zip(pattern, part, strict=True))


def _encode(key: str, value: dict[str, Any]) -> str:
    # redacted as a structure first (a field named like a secret loses its value whole), so that redacting the
    # JSON text again (the client and the server both do) finds nothing left to cut and the JSON stays whole
    clean = redact_obj(value)
    return json.dumps({"key": key, "value": clean}, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _decoded(record: MemoryRecord | SearchResult) -> tuple[str, dict[str, Any]]:
    """(key, value) of a memory: as put, or, for a memory the worker made, its id and what it says."""
    if record.slot and record.slot.startswith(SLOT_PREFIX) and record.value:
        try:
            data = json.loads(record.value)
            if isinstance(data, dict) and isinstance(data.get("value"), dict):
                return str(data["key"]), data["value"]
        except ValueError:
            pass
    return record.id, {"content": record.content, "kind": record.kind, "category": record.category}


def _time(value: datetime | None) -> datetime:
    return value or datetime.now(UTC)


def _item(user: str, record: MemoryRecord) -> Item:
    key, value = _decoded(record)
    return Item(
        namespace=(user, record.kind),
        key=key,
        value=value,
        created_at=_time(record.valid_from),
        updated_at=_time(record.last_confirmed_at),
    )


def _kinds(kind: str | None) -> list[Any]:
    return [kind] if kind else []


def _matches(value: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    return not wanted or all(value.get(k) == v for k, v in wanted.items())


class MemoryStore(BaseStore):
    """LangGraph's store interface on the memory API. Give it a `Memory` (sync graphs) and, for async
    graphs, an `AsyncMemory` too (else the async methods run the sync client in a thread)."""

    supports_ttl = True

    def __init__(self, memory: Memory, *, async_memory: AsyncMemory | None = None):
        self.memory = memory
        self.async_memory = async_memory

    # --- sync -------------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._one(op) for op in ops]

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            user, kind = _namespace(op.namespace, for_write=True)
            return self._current(user, kind or "semantic", op.key)
        if isinstance(op, PutOp):
            user, kind = _namespace(op.namespace, for_write=True)
            assert kind is not None
            if op.value is None:
                found = self._find(user, kind, op.key)
                if found is not None:
                    self.memory.forget(found.id)
                return None
            value = dict(op.value)
            self.memory.remember(
                user,
                text_of(value),
                kind=kind,  # type: ignore[arg-type]
                slot=slot_of(kind, op.key),
                value=_encode(op.key, value),
                ttl_days=op.ttl / 1440 if op.ttl else None,
            )
            return None
        if isinstance(op, SearchOp):
            user, kind = _namespace(op.namespace_prefix, for_write=False)
            try:
                if op.query:
                    hits = self.memory.search(
                        user,
                        op.query,
                        k=min(op.limit + op.offset, 100),
                        kinds=_kinds(kind),
                    )
                    return self._hits(user, hits, op)
                page = self.memory.memories(user, kind=_kinds(kind), limit=op.limit, offset=op.offset)
            except NotFound:
                return []
            return self._listed(user, page.items, op)
        if isinstance(op, ListNamespacesOp):
            user = self._user_of(op)
            kinds = []
            for kind in KINDS:
                try:
                    if self.memory.memories(user, kind=_kinds(kind), limit=1).items:
                        kinds.append(kind)
                except NotFound:
                    return []
            return self._namespaces(user, kinds, op)
        raise TypeError(f"unknown store operation {type(op).__name__}")

    def _find(self, user: str, kind: str, key: str) -> MemoryRecord | None:
        try:
            items = self.memory.memories(user, slot=slot_of(kind, key), limit=1).items
        except NotFound:
            return None
        if items:
            return items[0]
        return self._by_id(user, key)

    def _by_id(self, user: str, key: str) -> MemoryRecord | None:
        """A memory the worker made is addressed by its id."""
        if len(key) != 36:
            return None
        try:
            found = self.memory.get(key)
        except NotFound:
            return None
        return found if found.user_id == user and found.status == "active" else None

    def _current(self, user: str, kind: str, key: str) -> Item | None:
        found = self._find(user, kind, key)
        return _item(user, found) if found is not None else None

    # --- async ------------------------------------------------------------------------------------------

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if self.async_memory is None:
            return await asyncio.to_thread(self.batch, list(ops))
        return [await self._aone(op) for op in ops]

    async def _aone(self, op: Op) -> Result:
        memory = self.async_memory
        assert memory is not None
        if isinstance(op, GetOp):
            user, kind = _namespace(op.namespace, for_write=True)
            found = await self._afind(user, kind or "semantic", op.key)
            return _item(user, found) if found is not None else None
        if isinstance(op, PutOp):
            user, kind = _namespace(op.namespace, for_write=True)
            assert kind is not None
            if op.value is None:
                found = await self._afind(user, kind, op.key)
                if found is not None:
                    await memory.forget(found.id)
                return None
            value = dict(op.value)
            await memory.remember(
                user,
                text_of(value),
                kind=kind,  # type: ignore[arg-type]
                slot=slot_of(kind, op.key),
                value=_encode(op.key, value),
                ttl_days=op.ttl / 1440 if op.ttl else None,
            )
            return None
        if isinstance(op, SearchOp):
            user, kind = _namespace(op.namespace_prefix, for_write=False)
            try:
                if op.query:
                    hits = await memory.search(
                        user,
                        op.query,
                        k=min(op.limit + op.offset, 100),
                        kinds=_kinds(kind),
                    )
                    return self._hits(user, hits, op)
                page = await memory.memories(user, kind=_kinds(kind), limit=op.limit, offset=op.offset)
            except NotFound:
                return []
            return self._listed(user, page.items, op)
        if isinstance(op, ListNamespacesOp):
            user = self._user_of(op)
            kinds = []
            for kind in KINDS:
                try:
                    if (await memory.memories(user, kind=_kinds(kind), limit=1)).items:
                        kinds.append(kind)
                except NotFound:
                    return []
            return self._namespaces(user, kinds, op)
        raise TypeError(f"unknown store operation {type(op).__name__}")

    async def _afind(self, user: str, kind: str, key: str) -> MemoryRecord | None:
        memory = self.async_memory
        assert memory is not None
        try:
            items = (await memory.memories(user, slot=slot_of(kind, key), limit=1)).items
        except NotFound:
            return None
        if items:
            return items[0]
        if len(key) != 36:
            return None
        try:
            found = await memory.get(key)
        except NotFound:
            return None
        return found if found.user_id == user and found.status == "active" else None

    # --- shared -----------------------------------------------------------------------------------------

    @staticmethod
    def _hits(user: str, hits: list[SearchResult], op: SearchOp) -> list[SearchItem]:
        out = []
        for hit in hits:
            if hit.type != "memory":
                continue
            key, value = _decoded(hit)
            if not _matches(value, op.filter):
                continue
            out.append(
                SearchItem(
                    namespace=(user, hit.kind or "semantic"),
                    key=key,
                    value=value,
                    created_at=_time(hit.valid_from),
                    updated_at=_time(hit.valid_from),
                    score=hit.score,
                )
            )
        return out[op.offset : op.offset + op.limit]

    @staticmethod
    def _listed(user: str, records: list[MemoryRecord], op: SearchOp) -> list[SearchItem]:
        out = []
        for record in records:
            key, value = _decoded(record)
            if _matches(value, op.filter):
                out.append(
                    SearchItem(
                        namespace=(user, record.kind),
                        key=key,
                        value=value,
                        created_at=_time(record.valid_from),
                        updated_at=_time(record.last_confirmed_at),
                    )
                )
        return out

    @staticmethod
    def _user_of(op: ListNamespacesOp) -> str:
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix" and condition.path and condition.path[0] != "*":
                return str(condition.path[0])
        raise InvalidNamespaceError(
            "list_namespaces needs a prefix naming the user, e.g. list_namespaces(prefix=('alice',)): the "
            "store does not enumerate a tenant's users"
        )

    @staticmethod
    def _namespaces(user: str, kinds: list[str], op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found: list[tuple[str, ...]] = [(user, kind) for kind in kinds]
        for condition in op.match_conditions or ():
            path = tuple(condition.path)
            if condition.match_type == "prefix":
                found = [
                    ns
                    for ns in found
                    if all(p in ("*", n) for p, n in zip(path, ns, strict=False)) and len(ns) >= len(path)
                ]
            else:
                found = [
                    ns
                    for ns in found
                    if len(ns) >= len(path)
                    and all(p in ("*", n) for p, n in zip(path, ns[-len(path) :], strict=True))
                ]
        if op.max_depth is not None:
            found = sorted({ns[: op.max_depth] for ns in found})
        return found[op.offset : op.offset + op.limit]
