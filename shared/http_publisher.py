"""The client's HTTP ingest transport (`memory_client.http_ingest`), under its old server-side name."""

from memory_client.http_ingest import (
    AUTH_RETRY_S,
    DEFAULT_MAX_BODY_BYTES,
    HttpPublisher,
    Unavailable,
    parse_retry_after,
)

__all__ = ["AUTH_RETRY_S", "DEFAULT_MAX_BODY_BYTES", "HttpPublisher", "Unavailable", "parse_retry_after"]
