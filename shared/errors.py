"""One root exception for the project; every error we raise on purpose derives from it."""

from __future__ import annotations

from memory_client.errors import ContractError as _ClientContractError


class MemoryError_(Exception):
    """Root of every error this project raises on purpose."""


class SettingsError(MemoryError_):
    """The configuration is invalid; the message names the variable and the problem."""


class ContractError(MemoryError_, _ClientContractError):
    """An event or batch violates the event contract (`memory_client.contract`: the rules are the client's).

    `errors` is a list of {"field": "events.0.role", "message": "..."} dicts, one per violation.
    """


class EmbeddedStackError(MemoryError_):
    """The embedded PostgreSQL or Redis could not be started."""


class SchemaMismatchError(MemoryError_):
    """The database schema does not match what this code expects (migrations or embedding dimension)."""
