"""What follows a successful store: enqueue the session stages by task name (debounced extraction)."""

from __future__ import annotations

from shared.publisher import RedisPublisher
from shared.settings import Settings


def after_store(
    publisher: RedisPublisher, settings: Settings, tenant_id: str, sessions: list[tuple[str, str]]
) -> None:
    """Called after events are committed. Never raises: the sweeper re-enqueues whatever is missed."""
    return None
