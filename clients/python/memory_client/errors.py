"""What the client raises. Only `emit` / `emit_many` promise never to raise for transport trouble; they raise
`ContractError` (a `ValueError`) for an invalid argument, at once, in the caller. Every other method raises
an `APIError` subclass carrying the API's problem+json (`status`, `detail`, `errors`)."""

from __future__ import annotations

from typing import Any


class MemoryClientError(Exception):
    """Root of every error the client raises on purpose."""


class ContractError(MemoryClientError, ValueError):
    """An event or a batch violates the event contract (`memory_client.contract`).

    `errors` is a list of {"field": "events.0.role", "message": "..."} dicts, one per violation.
    """

    def __init__(self, errors: list[dict[str, str]]):
        self.errors = errors
        super().__init__("; ".join(f"{e['field']}: {e['message']}" for e in errors) or "invalid event")


class APIError(MemoryClientError):
    """The API answered with an error: its status, and the problem+json's `detail` and field `errors`."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        errors: list[dict[str, Any]] | None = None,
        retry_after_s: float | None = None,
        method: str = "",
        path: str = "",
    ):
        self.status = status
        self.detail = detail
        self.errors = errors or []
        self.retry_after_s = retry_after_s
        self.method = method
        self.path = path
        where = f" ({method} {path})" if method else ""
        super().__init__(f"{status}{where}: {detail}")


class BadRequest(APIError):
    """400 / 422: the request is invalid; `errors` names each bad field."""


class Unauthorized(APIError):
    """401: a missing, unknown or revoked API key."""


class Forbidden(APIError):
    """403: the key may not do this (a read-only key writing)."""


class NotFound(APIError):
    """404: no such user, memory or session for this key's tenant (another tenant's data is never seen)."""


class Conflict(APIError):
    """409: the request conflicts with the memory's state (editing a forgotten memory)."""


class RateLimited(APIError):
    """429: over the key's rate limit, still after the client's retries; wait `retry_after_s`."""


class ServiceUnavailable(APIError):
    """503 (or another 5xx), still after the client's retries: the database or a dependency is away."""


class ConnectionFailed(MemoryClientError):
    """The API could not be reached (refused, reset, timed out), still after the client's retries."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: BadRequest,
    422: BadRequest,
    429: RateLimited,
}


def error_for(status: int) -> type[APIError]:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServiceUnavailable if status >= 500 else APIError
