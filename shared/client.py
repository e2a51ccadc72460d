"""`MemoryClient(tenant).emit(...)` for agents that run next to the server: the client package's emitter
(`memory_client.emitter`) with the server's defaults (`REDIS_URL` or the embedded broker, `MEMORY_QUEUE`,
`MEMORY_INGEST_SHARDS`, the spool under `MEMORY_DATA_DIR`).

Contract (the emitter's):
- `emit` / `emit_many` validate their arguments and raise `ValueError` at once when they are invalid;
- otherwise they never raise and return within a few milliseconds: the event is redacted here (secrets
  never leave the agent's process), appended to the ingest stream (`memory_client.stream`: one XADD), or,
  when the broker is unreachable, appended to a local fsync'd spool file;
- the spool is re-sent in the background after the next successful publish, by `flush()`, and at exit.

With `api_url` and `api_key` the client sends to the API's `POST /v1/events` instead of the broker
(`memory_client.http_ingest`), in the caller: `emit` waits for the API's 202 (the events are stored before
it), at most `http_timeout_s`. A 429 is an outage like an unreachable API: the call is spooled, nothing is
sent before the `Retry-After` the API gave, and the spool is re-sent by a timer when it has passed. Agents
that only have the API should use `memory_client.Memory`, whose `emit` does not wait for the network.
"""

from __future__ import annotations

from pathlib import Path

from memory_client.emitter import Emitter, Transport
from memory_client.http_ingest import DEFAULT_MAX_BODY_BYTES, HttpPublisher, Unavailable
from memory_client.stream import StreamProducer, outage_errors


def _default_broker_url() -> str:
    from shared.embedded import _redis_socket_path
    from shared.settings import get_settings

    settings = get_settings()
    if settings.redis_url:
        return settings.redis_url
    return f"redis+socket://{_redis_socket_path(settings.data_path / 'redis')}"


def _default_spool_path() -> Path:
    from shared.settings import get_settings

    settings = get_settings()
    return settings.spool_path or settings.data_path / "spool" / "events.jsonl"


class MemoryClient(Emitter):
    """Emit transcript events to the memory worker. Thread-safe; one per process is plenty."""

    def __init__(
        self,
        tenant_id: str,
        *,
        broker_url: str | None = None,
        queue: str | None = None,
        shards: int | None = None,
        spool_path: str | Path | None = None,
        agent_id: str | None = None,
        publish_timeout_s: float = 0.05,
        retry_after_s: float = 1.0,
        flush_at_exit: bool = True,
        api_url: str | None = None,
        api_key: str | None = None,
        http_timeout_s: float = 2.0,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ):
        from shared.contract import is_safe_id

        if not is_safe_id(tenant_id):
            raise ValueError("tenant_id must be 1-128 characters from A-Z a-z 0-9 . _ : @ -")
        if api_url is not None and broker_url is not None:
            raise ValueError("give broker_url or api_url, not both")
        transport: Transport
        outage: tuple[type[BaseException], ...]
        if api_url is not None:
            # the tenant is the key's; tenant_id still names the client's events in the spool and the logs
            transport = HttpPublisher(
                api_url, api_key or "", timeout_s=http_timeout_s, max_body_bytes=max_body_bytes
            )
            outage = (Unavailable,)
        else:
            if queue is None or shards is None:
                from shared.settings import get_settings

                queue = queue or get_settings().queue
                shards = shards or get_settings().ingest_shards
            transport = StreamProducer(
                broker_url or _default_broker_url(), queue=queue, shards=shards, timeout_s=publish_timeout_s
            )
            outage = outage_errors()
        super().__init__(
            tenant_id,
            transport,
            spool_path=spool_path or _default_spool_path(),
            outage=outage,
            agent_id=agent_id,
            retry_after_s=retry_after_s,
            flush_at_exit=flush_at_exit,
            resend_on_timer=api_url is not None,
            # over HTTP the spooled calls of a batch are merged into few requests, and a refusal part-way
            # says how many calls were stored (Unavailable.sent_calls): the spool keeps only the rest
            spool_batch=500,
        )
