"""Redaction lives in the client package (`memory_client.redaction`): agents redact in their own process
before an event leaves it, and the server redacts again with the same code (one copy, no drift). This module
keeps the server's imports (`shared.redaction`) where they were."""

from memory_client.redaction import (
    redact,
    redact_field,
    redact_obj,
    redact_with_report,
    secret_kind_of_name,
)

__all__ = ["redact", "redact_field", "redact_obj", "redact_with_report", "secret_kind_of_name"]
