"""The event contract (schema_version 1), server side: `EventIn`, the typed event the API documents and the
store takes, over the one set of rules the client package defines (`memory_client.contract`).

`parse_event` / `parse_batch` return validated `EventIn`s or raise `ContractError` whose `errors` name each
bad field (`events.3.role: ...`), with the client's checks: an event an agent's `emit` accepted is an event
the server accepts, and the reverse. `now` is passed in (the future-time check), never read here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, model_validator

from memory_client import contract as rules
from memory_client.contract import (
    ID_PATTERN,
    MAX_BATCH,
    MAX_CONTENT_BYTES,
    MAX_FUTURE,
    MAX_ID_CHARS,
    MAX_METADATA_BYTES,
    SCHEMA_VERSION,
    is_safe_id,
    utcnow,
)
from memory_client.errors import ContractError as ClientContractError
from shared.errors import ContractError

__all__ = [
    "ID_PATTERN",
    "MAX_BATCH",
    "MAX_CONTENT_BYTES",
    "MAX_FUTURE",
    "MAX_ID_CHARS",
    "MAX_METADATA_BYTES",
    "SCHEMA_VERSION",
    "ApiTime",
    "CleanText",
    "EventIn",
    "SafeId",
    "is_safe_id",
    "parse_batch",
    "parse_event",
    "utcnow",
]


def _no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL; reject it with a clear message instead of a database error
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


CleanText = Annotated[str, AfterValidator(_no_nul)]

# The span of time the API takes in a request's own datetimes (a memory's valid_from, a search's as_of):
# wide enough for any fact a user tells, narrow enough that a day or a year of arithmetic on it, or its
# conversion to UTC, never leaves what Python and psycopg can represent (year 1 with a positive offset is
# year 0 in UTC: PostgreSQL stores it, psycopg cannot read it back).
TIME_MIN = datetime(1000, 1, 1, tzinfo=UTC)
TIME_MAX = datetime(9000, 1, 1, tzinfo=UTC)


def _in_time_range(value: datetime) -> datetime:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # a naive time is UTC, as the routes read it
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of range") from None
    if not TIME_MIN <= utc < TIME_MAX:
        raise ValueError(f"must be from {TIME_MIN.date()} to before {TIME_MAX.date()}")
    return value


ApiTime = Annotated[datetime, AfterValidator(_in_time_range)]
SafeId = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN)]
Role = Literal["user", "assistant", "system", "tool"]
EventType = Literal["turn", "session_end"]
assert (Role.__args__, EventType.__args__) == (rules.ROLES, rules.EVENT_TYPES)  # type: ignore[attr-defined]


class EventIn(BaseModel):
    """One transcript event as sent by an agent. The tenant is never taken from here by the API."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = SCHEMA_VERSION
    event_id: SafeId = Field(default_factory=rules.new_event_id)
    type: EventType = "turn"
    tenant_id: SafeId | None = Field(default=None, description="ignored by the HTTP API: the key decides")
    user_id: SafeId
    agent_id: SafeId | None = None
    session_id: SafeId
    role: Role = "user"
    content: str = Field(default="", description=f"at most {MAX_CONTENT_BYTES} bytes of UTF-8, no NUL")
    event_time: datetime | None = Field(default=None, description="when the turn happened; default: receipt")
    source_turn_id: SafeId | None = None
    metadata: dict[str, Any] = Field(
        default_factory=dict, description=f"plain JSON, at most {MAX_METADATA_BYTES} bytes encoded"
    )

    @model_validator(mode="before")
    @classmethod
    def _contract(cls, data: Any) -> Any:
        # built directly (not through parse_event): the same rules, without the future-time check
        if isinstance(data, BaseModel):
            return data
        try:
            return rules.check_event(data, now=None)
        except ClientContractError as exc:
            raise ValueError(str(exc)) from None

    def time_or(self, now: datetime) -> datetime:
        return self.event_time or now


def _event(checked: dict[str, Any]) -> EventIn:
    return EventIn.model_construct(**checked)  # checked once, by the contract's rules


def parse_event(data: object, *, now: datetime, prefix: str = "") -> EventIn:
    """Validate one event; raise `ContractError` listing every bad field."""
    try:
        return _event(rules.check_event(data, now=now, prefix=prefix))
    except ClientContractError as exc:
        raise ContractError(exc.errors) from None


def parse_batch(data: object, *, now: datetime) -> list[EventIn]:
    """Validate one event (an object) or a batch (a list, or {"events": [...]}) atomically.

    Raises `ContractError` with the errors of every bad event: a batch is accepted whole or not at all.
    """
    try:
        return [_event(e) for e in rules.check_batch(data, now=now)]
    except ClientContractError as exc:
        raise ContractError(exc.errors) from None
