"""One root exception for the project; every error we raise on purpose derives from it."""

from __future__ import annotations


class MemoryError_(Exception):
    """Root of every error this project raises on purpose."""


class SettingsError(MemoryError_):
    """The configuration is invalid; the message names the variable and the problem."""


class ContractError(MemoryError_, ValueError):
    """An event or batch violates the event contract.

    `errors` is a list of {"field": "events.0.role", "message": "..."} dicts, one per violation.
    """

    def __init__(self, errors: list[dict[str, str]]):
        self.errors = errors
        super().__init__("; ".join(f"{e['field']}: {e['message']}" for e in errors) or "invalid event")


class EmbeddedStackError(MemoryError_):
    """The embedded PostgreSQL or Redis could not be started."""


class SchemaMismatchError(MemoryError_):
    """The database schema does not match what this code expects (migrations or embedding dimension)."""
