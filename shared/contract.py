"""The event contract (schema_version 1): what agents send, validated strictly.

`parse_event` / `parse_batch` return validated `EventIn`s or raise `ContractError` whose `errors` name each
bad field (`events.3.role: ...`). `now` is passed in (the future-time check), never read here.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from shared.errors import ContractError

SCHEMA_VERSION: Final = 1
MAX_ID_CHARS = 128
MAX_CONTENT_BYTES = 32 * 1024
MAX_METADATA_BYTES = 8 * 1024
MAX_BATCH = 500
MAX_FUTURE = timedelta(days=1)

# Ids travel in URLs, logs and lock names: a conservative alphabet, no spaces, no slashes.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$"
_ID_RE = re.compile(ID_PATTERN)


def _no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL; reject it with a clear message instead of a database error
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


CleanText = Annotated[str, AfterValidator(_no_nul)]
SafeId = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN)]
Role = Literal["user", "assistant", "system", "tool"]
EventType = Literal["turn", "session_end"]


class EventIn(BaseModel):
    """One transcript event as sent by an agent. The tenant is never taken from here by the API."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = SCHEMA_VERSION
    event_id: SafeId = Field(default_factory=lambda: uuid.uuid4().hex)
    type: EventType = "turn"
    tenant_id: SafeId | None = Field(default=None, description="ignored by the HTTP API: the key decides")
    user_id: SafeId
    agent_id: SafeId | None = None
    session_id: SafeId
    role: Role = "user"
    content: str = ""
    event_time: datetime | None = Field(default=None, description="when the turn happened; default: receipt")
    source_turn_id: SafeId | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("content")
    @classmethod
    def _content_size(cls, v: str) -> str:
        try:
            size = len(v.encode("utf-8"))
        except UnicodeEncodeError:
            raise ValueError("content is not valid Unicode text (it holds a lone surrogate)") from None
        if size > MAX_CONTENT_BYTES:
            raise ValueError(
                f"content is {size} bytes; at most {MAX_CONTENT_BYTES} bytes (32 KiB) are accepted"
            )
        if "\x00" in v:
            raise ValueError("content must not contain NUL characters")
        return v

    @field_validator("metadata")
    @classmethod
    def _metadata_size(cls, v: dict[str, Any]) -> dict[str, Any]:
        try:
            encoded = json.dumps(v, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata must be plain JSON: {exc}") from None
        try:
            size = len(encoded.encode("utf-8"))
        except UnicodeEncodeError:
            raise ValueError("metadata is not valid Unicode text (it holds a lone surrogate)") from None
        if size > MAX_METADATA_BYTES:
            raise ValueError(f"metadata is {size} bytes as JSON; at most {MAX_METADATA_BYTES} bytes (8 KiB)")
        if "\\u0000" in encoded:
            raise ValueError("metadata must not contain NUL characters")
        return v

    @field_validator("event_time")
    @classmethod
    def _event_time(cls, v: datetime | None, info: ValidationInfo) -> datetime | None:
        if v is None:
            return None
        if v.tzinfo is None:
            v = v.replace(tzinfo=UTC)  # a naive time is taken as UTC, the only unambiguous choice
        now = (info.context or {}).get("now")
        if isinstance(now, datetime) and v > now + MAX_FUTURE:
            raise ValueError(f"event_time {v.isoformat()} is more than a day ahead of the server clock")
        if v.year < 1970:
            raise ValueError("event_time must be after 1970-01-01")
        return v

    def time_or(self, now: datetime) -> datetime:
        return self.event_time or now


def is_safe_id(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS and bool(_ID_RE.match(value))


def _errors_from(exc: ValidationError, prefix: str) -> list[dict[str, str]]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        field = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or "body")
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "string_pattern_mismatch":
            msg = "must be 1-128 characters from A-Z a-z 0-9 . _ : @ - and start with a letter or digit"
        elif err["type"] == "literal_error":
            msg = f"{msg} (got {err.get('input')!r})"[:300]
        out.append({"field": field, "message": msg})
    return out


def parse_event(data: object, *, now: datetime, prefix: str = "") -> EventIn:
    """Validate one event; raise `ContractError` listing every bad field."""
    if not isinstance(data, dict):
        raise ContractError([{"field": prefix or "event", "message": "must be a JSON object"}])
    try:
        return EventIn.model_validate(data, context={"now": now})
    except ValidationError as exc:
        raise ContractError(_errors_from(exc, prefix)) from None


def parse_batch(data: object, *, now: datetime) -> list[EventIn]:
    """Validate one event (an object) or a batch (a list, or {"events": [...]}) atomically.

    Raises `ContractError` with the errors of every bad event: a batch is accepted whole or not at all.
    """
    items: object = data
    if isinstance(data, dict) and "events" in data and "user_id" not in data:
        items = data["events"]
        prefix = "events"
    elif isinstance(data, dict):
        items = [data]
        prefix = ""
    else:
        prefix = "events"
    if not isinstance(items, list):
        raise ContractError(
            [{"field": prefix or "body", "message": "must be an event object or a list of events"}]
        )
    if not items:
        raise ContractError([{"field": prefix or "events", "message": "must contain at least one event"}])
    if len(items) > MAX_BATCH:
        raise ContractError(
            [{"field": prefix or "events", "message": f"{len(items)} events; at most {MAX_BATCH} per batch"}]
        )
    events: list[EventIn] = []
    errors: list[dict[str, str]] = []
    for i, item in enumerate(items):
        p = f"{prefix}.{i}" if prefix else ""
        try:
            events.append(parse_event(item, now=now, prefix=p))
        except ContractError as exc:
            errors.extend(exc.errors)
    if errors:
        raise ContractError(errors)
    return events


def utcnow() -> datetime:
    """The clock, for the shells (tasks, routes, CLI); the core receives `now` as an argument."""
    return datetime.now(UTC)
