"""The event contract (schema_version 1): what an agent sends, validated strictly, in plain Python.

Defined once, here: the client checks an event in the agent's process (a bad argument raises at once), and
the server checks every event it receives with the same function (`shared.contract` builds on it). Every
violation names its field (`events.3.role: ...`); a batch is accepted whole or not at all.

`now` is passed in (the future-time check), never read here.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from memory_client.errors import ContractError

SCHEMA_VERSION: Final = 1
MAX_ID_CHARS = 128
MAX_CONTENT_BYTES = 32 * 1024
MAX_METADATA_BYTES = 8 * 1024
MAX_BATCH = 500
MAX_FUTURE = timedelta(days=1)
ROLES: Final = ("user", "assistant", "system", "tool")
EVENT_TYPES: Final = ("turn", "session_end")

# Ids travel in URLs, logs and lock names: a conservative alphabet, no spaces, no slashes.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$"
_ID_RE = re.compile(ID_PATTERN)
ID_RULE = "must be 1-128 characters from A-Z a-z 0-9 . _ : @ - and start with a letter or digit"

# the fields of an event, in the order they are sent; the ids among them, and which are required
FIELDS: Final = (
    "schema_version",
    "event_id",
    "type",
    "tenant_id",
    "user_id",
    "agent_id",
    "session_id",
    "role",
    "content",
    "event_time",
    "source_turn_id",
    "metadata",
)
_IDS: Final = ("event_id", "tenant_id", "user_id", "agent_id", "session_id", "source_turn_id")
_REQUIRED: Final = ("user_id", "session_id")
_OPTIONAL_IDS: Final = ("tenant_id", "agent_id", "source_turn_id")


def is_safe_id(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS and bool(_ID_RE.match(value))


def utcnow() -> datetime:
    """The clock, for the shells (tasks, routes, CLI, the client); the core receives `now` as an argument."""
    return datetime.now(UTC)


def new_event_id() -> str:
    return uuid.uuid4().hex


def _text_size(value: str, what: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"{what} is not valid Unicode text (it holds a lone surrogate)") from None


def _check_id(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    if not is_safe_id(value):
        raise ValueError(ID_RULE)
    return value


def _check_content(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    size = _text_size(value, "content")
    if size > MAX_CONTENT_BYTES:
        raise ValueError(f"content is {size} bytes; at most {MAX_CONTENT_BYTES} bytes (32 KiB) are accepted")
    if "\x00" in value:
        raise ValueError("content must not contain NUL characters")
    return value


def _check_metadata(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("must be a JSON object")
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"metadata must be plain JSON: {exc}") from None
    size = _text_size(encoded, "metadata")
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is {size} bytes as JSON; at most {MAX_METADATA_BYTES} bytes (8 KiB)")
    if "\\u0000" in encoded or "\x00" in encoded:
        raise ValueError("metadata must not contain NUL characters")
    return value


def _parse_time(value: object) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, bool):
        raise ValueError("must be an ISO 8601 date-time")
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError("is not a valid Unix time") from None
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("z", "Z")):
            text = text[:-1] + "+00:00"
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"must be an ISO 8601 date-time (got {value[:40]!r})") from None
    raise ValueError("must be an ISO 8601 date-time")


def _check_time(value: object, now: datetime | None) -> datetime:
    when = _parse_time(value)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # a naive time is taken as UTC, the only unambiguous choice
    if now is not None and when > now + MAX_FUTURE:
        raise ValueError(f"event_time {when.isoformat()} is more than a day ahead of the server clock")
    if when.year < 1970:
        raise ValueError("event_time must be after 1970-01-01")
    return when


def _check_choice(value: object, choices: tuple[str, ...]) -> str:
    if value not in choices or not isinstance(value, str):
        raise ValueError(f"must be one of {', '.join(repr(c) for c in choices)} (got {value!r})"[:300])
    return value


def check_event(data: object, *, now: datetime | None, prefix: str = "") -> dict[str, Any]:
    """Validate one event; return it with its defaults filled in (`event_time` a datetime or None), its
    fields in `FIELDS` order. Raises `ContractError` listing every bad field. `now` None skips the
    future-time check."""
    if not isinstance(data, Mapping):
        raise ContractError([{"field": prefix or "event", "message": "must be a JSON object"}])
    errors: list[dict[str, str]] = []
    out: dict[str, Any] = {}

    def field(name: str) -> str:
        return f"{prefix}.{name}" if prefix else name

    for name in data:
        if name not in FIELDS:
            errors.append({"field": field(str(name)), "message": "unknown field"})
    for name in FIELDS:
        present = name in data
        value = data.get(name)
        try:
            if name == "schema_version":
                if present and (value != SCHEMA_VERSION or isinstance(value, bool)):
                    raise ValueError(f"must be {SCHEMA_VERSION} (got {value!r})"[:300])
                out[name] = SCHEMA_VERSION
            elif name in _REQUIRED and not present:
                raise ValueError("Field required")
            elif name in _IDS:
                if name in _OPTIONAL_IDS and value is None:
                    out[name] = None
                elif name == "event_id" and not present:
                    out[name] = new_event_id()
                else:
                    out[name] = _check_id(value)
            elif name == "type":
                out[name] = _check_choice(value, EVENT_TYPES) if present else "turn"
            elif name == "role":
                out[name] = _check_choice(value, ROLES) if present else "user"
            elif name == "content":
                out[name] = _check_content(value) if present else ""
            elif name == "event_time":
                out[name] = None if value is None else _check_time(value, now)
            elif name == "metadata":
                out[name] = _check_metadata(value) if present else {}
        except ValueError as exc:
            errors.append({"field": field(name), "message": str(exc)})
    if errors:
        raise ContractError(errors)
    return out


def check_batch(data: object, *, now: datetime | None) -> list[dict[str, Any]]:
    """Validate one event (an object) or a batch (a list, or {"events": [...]}) atomically.

    Raises `ContractError` with the errors of every bad event: a batch is accepted whole or not at all.
    """
    items: object = data
    if isinstance(data, Mapping) and "events" in data and "user_id" not in data:
        items = data["events"]
        prefix = "events"
    elif isinstance(data, Mapping):
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
    events: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    for i, item in enumerate(items):
        p = f"{prefix}.{i}" if prefix else ""
        try:
            events.append(check_event(item, now=now, prefix=p))
        except ContractError as exc:
            errors.extend(exc.errors)
    if errors:
        raise ContractError(errors)
    return events


def isoformat(when: datetime) -> str:
    """A time as the wire carries it: ISO 8601, UTC written `Z`."""
    text = when.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def to_wire(event: Mapping[str, Any]) -> dict[str, Any]:
    """A checked event as JSON-ready data: fields in order, None left out, times as ISO 8601."""
    out: dict[str, Any] = {}
    for name in FIELDS:
        value = event.get(name)
        if value is None:
            continue
        out[name] = isoformat(value) if isinstance(value, datetime) else value
    return out
