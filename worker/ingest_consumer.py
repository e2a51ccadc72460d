"""The ingest consumer: reads the ingest stream in batches, stores each batch in one transaction, then
acknowledges and deletes its entries, then fires the debounced extraction triggers.

Run it with `python -m worker.ingest_consumer` (`memctl up` starts it; in docker compose it is the `ingest`
service, scaled with replicas). Any number of consumers, on any hosts, share the stream's consumer group.

Delivery guarantees, from Redis Streams (see `shared/stream.py`):
- an entry read by a consumer stays in the group's pending list until it is acknowledged, and it is
  acknowledged only after its batch committed: a consumer killed at any point loses nothing;
- every consumer takes over entries that have been pending longer than `ingest_claim_idle_s` (XAUTOCLAIM):
  a dead consumer's entries are stored by the others within that time; a live consumer that is retrying
  (the database is down) touches its entries so that nobody takes them from it;
- an entry delivered more than `ingest_max_deliveries` times (each consumer that took it died) is
  dead-lettered with the reason; a payload the database refuses is isolated by splitting its batch and
  dead-lettered alone, the rest of the batch stored;
- a database outage keeps the batch pending and retries with backoff; storing is idempotent (ON CONFLICT
  DO NOTHING on the event id), so an entry stored twice (a consumer killed between commit and ack) changes
  nothing the second time.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from typing import Any

import redis
import structlog
from sqlalchemy import Engine

from shared.contract import utcnow
from shared.db.engine import dispose_inherited_engines, get_engine, resolve_database_url, resolve_redis_url
from shared.embedded import redis_py_url
from shared.logging import configure_logging
from shared.publisher import TaskPublisher
from shared.settings import Settings, get_settings
from shared.stream import FIELD, GROUP, stream_keys
from store.triggers import after_store
from worker import metrics
from worker.services.ingest import BatchResult, Item, dead_letter_entry, store_items

log = structlog.get_logger("worker.ingest")

BACKOFF_MAX_S = 5.0  # a database outage is retried at least this often
STALE_CONSUMER_S = 3600.0  # a consumer with nothing pending and idle this long is removed from the group
# events per transaction: entries carry up to 500 events each (emit_many), a read up to `ingest_batch` entries
MAX_EVENTS_PER_TXN = 1000


def consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class IngestConsumer:
    def __init__(
        self,
        client: redis.Redis,
        engine: Engine,
        settings: Settings,
        *,
        publisher: TaskPublisher,
        name: str | None = None,
    ):
        self.redis = client
        self.engine = engine
        self.settings = settings
        self.publisher = publisher
        self.name = name or consumer_name()
        self.keys = stream_keys(settings.queue, settings.ingest_shards)
        self.claim_idle_ms = max(1, int(settings.ingest_claim_idle_s * 1000))
        self.claim_every_s = max(0.5, settings.ingest_claim_idle_s / 3)
        self._next_claim = 0.0
        self._known_tenants: set[str] = set()
        self._groups_ready = False
        self._turn = 0

    # --- the loop ---------------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        log.info(
            "ingest.consumer_started",
            consumer=self.name,
            streams=self.keys,
            batch=self.settings.ingest_batch,
            claim_idle_s=self.settings.ingest_claim_idle_s,
        )
        failures = 0
        while not stop.is_set():
            try:
                self.step(stop)
                failures = 0
            except Exception as exc:  # the entries in hand stay pending: this consumer claims them back later
                failures += 1
                wait = min(BACKOFF_MAX_S, 0.25 * 2 ** min(failures, 6))
                if isinstance(exc, redis.RedisError):
                    self._groups_ready = False  # a restarted Redis without its data has no group
                    log.warning("ingest.redis_unavailable", error=type(exc).__name__, retry_in_s=wait)
                else:
                    log.exception("ingest.step_failed", error=type(exc).__name__, retry_in_s=wait)
                stop.wait(wait)
        log.info("ingest.consumer_stopped", consumer=self.name)

    def step(self, stop: threading.Event | None = None) -> int:
        """Claim what dead consumers left (when due), then read and store one batch; return entries handled."""
        self.ensure_groups()
        handled = 0
        if time.monotonic() >= self._next_claim:
            self._next_claim = time.monotonic() + self.claim_every_s
            for key in self.keys:
                handled += self.handle(key, self.claim(key), stop, claimed=True)
        if len(self.keys) == 1:
            handled += self._read(self.keys[0], self.settings.ingest_block_ms, stop)
            return handled
        # several shards: one key per read, since a Redis Cluster serves one slot per command (each shard's
        # key has its own hash tag); block only when no shard had anything, on each shard in turn
        for key in self.keys:
            handled += self._read(key, None, stop)
        if not handled:
            self._turn = (self._turn + 1) % len(self.keys)
            handled += self._read(self.keys[self._turn], self.settings.ingest_block_ms, stop)
        return handled

    def _read(self, key: str, block_ms: int | None, stop: threading.Event | None) -> int:
        response: Any = self.redis.xreadgroup(
            GROUP, self.name, {key: ">"}, count=self.settings.ingest_batch, block=block_ms
        )
        return sum(self.handle(_s(k), entries, stop) for k, entries in response or [])

    def ensure_groups(self) -> None:
        if self._groups_ready:
            return
        for key in self.keys:
            try:
                self.redis.xgroup_create(key, GROUP, id="0", mkstream=True)
            except redis.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
        self._groups_ready = True

    def claim(self, key: str) -> list[Any]:
        """Entries of consumers that stopped touching them for the claim idle time, now ours."""
        claimed: list[Any] = []
        start = "0-0"
        while len(claimed) < self.settings.ingest_batch:
            reply = self.redis.xautoclaim(
                key,
                GROUP,
                self.name,
                self.claim_idle_ms,
                start_id=start,
                count=self.settings.ingest_batch - len(claimed),
            )
            start, entries = _s(reply[0]), reply[1]
            claimed.extend(e for e in entries if e and e[1] is not None)
            if start == "0-0":
                break
        if claimed:
            log.warning("ingest.claimed", stream=key, count=len(claimed), consumer=self.name)
            metrics.INGEST_CLAIMED.inc(len(claimed))
        self._forget_stale_consumers(key)
        return claimed

    # --- one batch --------------------------------------------------------------------------------------

    def handle(
        self, key: str, entries: list[Any], stop: threading.Event | None = None, *, claimed: bool = False
    ) -> int:
        """Store, acknowledge and trigger `entries`, in transactions of at most MAX_EVENTS_PER_TXN events;
        return how many entries were settled (fewer only when stopping during an outage)."""
        items = [Item.decode(_s(entry_id), fields.get(FIELD)) for entry_id, fields in entries]
        settled = 0
        if claimed and items:
            items, dropped = self._drop_undeliverable(key, items)
            if dropped:
                self._ack(key, dropped)
                metrics.INGEST_EVENTS.labels("dead_lettered").inc(len(dropped))
                settled += len(dropped)
        for chunk in _chunks(items, MAX_EVENTS_PER_TXN):
            started = time.perf_counter()
            ids = [item.entry_id for item in chunk]
            result = self._store_with_retry(key, chunk, ids, stop)
            if result is None:
                return settled  # stopping during an outage: the rest stays pending for the next consumer
            self._ack(key, ids)
            settled += len(ids)
            for tenant_id, sessions in result.sessions.items():
                after_store(self.publisher, self.settings, tenant_id, sessions)
            duration_ms = round((time.perf_counter() - started) * 1000, 2)
            log.info(
                "ingest.batch",
                stream=key,
                entries=len(ids),
                claimed=claimed,
                duration_ms=duration_ms,
                **result.counts(),
            )
            metrics.INGEST_ENTRIES.inc(len(ids))
            metrics.INGEST_EVENTS.labels("inserted").inc(result.inserted)
            metrics.INGEST_EVENTS.labels("duplicate").inc(result.duplicates)
            metrics.INGEST_EVENTS.labels("dead_lettered").inc(result.dead_lettered)
            metrics.INGEST_BATCH_SECONDS.observe(duration_ms / 1000)
        return settled

    def _store_with_retry(
        self, key: str, items: list[Item], ids: list[str], stop: threading.Event | None
    ) -> BatchResult | None:
        attempt = 0
        while True:
            try:
                return store_items(
                    self.engine,
                    items,
                    now=utcnow(),
                    known_tenants=self._known_tenants,
                    ingested_by=f"consumer:{self.name}",
                )
            except Exception as exc:
                attempt += 1
                orig = getattr(exc, "orig", None) or exc
                wait = min(BACKOFF_MAX_S, 0.25 * 2 ** min(attempt, 6))
                log.warning(
                    "ingest.retry",
                    error=type(orig).__name__,
                    detail=str(orig)[:200],
                    entries=len(items),
                    attempt=attempt,
                    retry_in_s=wait,
                )
                metrics.INGEST_RETRIES.inc()
                self._touch(key, ids)
                if stop is not None and stop.wait(wait):
                    return None
                if stop is None:
                    time.sleep(wait)

    def _drop_undeliverable(self, key: str, items: list[Item]) -> tuple[list[Item], list[str]]:
        """Dead-letter the claimed entries delivered too many times; return the others and the dropped ids."""
        limit = self.settings.ingest_max_deliveries
        info = self.redis.xpending_range(
            key,
            GROUP,
            min=items[0].entry_id,
            max=items[-1].entry_id,
            count=len(items) * 2,
            consumername=self.name,
        )
        deliveries = {_s(p["message_id"]): int(p["times_delivered"]) for p in info}
        keep: list[Item] = []
        dropped: list[str] = []
        for item in items:
            n = deliveries.get(item.entry_id, 1)
            if n > limit:
                reason = f"delivered {n} times, each time to a consumer that stopped before storing it"
                dead_letter_entry(self.engine, item, reason, now=utcnow())
                log.error("ingest.undeliverable", stream=key, entry_id=item.entry_id, deliveries=n)
                dropped.append(item.entry_id)
            else:
                keep.append(item)
        return keep, dropped

    def _ack(self, key: str, ids: list[str]) -> None:
        """Acknowledge and delete, together: the stream's length is its backlog, never trimmed unread."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.xack(key, GROUP, *ids)
        pipe.xdel(key, *ids)
        pipe.execute()

    def _touch(self, key: str, ids: list[str]) -> None:
        """Reset the idle time of our pending entries (XCLAIM JUSTID does not count a delivery)."""
        with contextlib.suppress(redis.RedisError):  # Redis away too: nobody can claim them meanwhile
            self.redis.xclaim(key, GROUP, self.name, 0, list[Any](ids), justid=True)

    def _forget_stale_consumers(self, key: str) -> None:
        try:
            for c in self.redis.xinfo_consumers(key, GROUP):
                if (
                    int(c["pending"]) == 0
                    and int(c["idle"]) > STALE_CONSUMER_S * 1000
                    and _s(c["name"]) != self.name
                ):
                    self.redis.xgroup_delconsumer(key, GROUP, c["name"])
        except redis.ResponseError:
            pass


def _chunks(items: list[Item], max_events: int) -> list[list[Item]]:
    """Consecutive runs of items holding at most `max_events` events each (an item is never split)."""
    out: list[list[Item]] = []
    current: list[Item] = []
    events = 0
    for item in items:
        n = item.event_count()
        if current and events + n > max_events:
            out.append(current)
            current, events = [], 0
        current.append(item)
        events += n
    if current:
        out.append(current)
    return out


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def main() -> None:
    settings = get_settings()
    configure_logging(level=settings.log_level, fmt=settings.log_format)
    stop = threading.Event()

    def _stop(signum: int, _frame: Any) -> None:
        log.info("ingest.stopping", signal=signum)
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    redis_url = resolve_redis_url(settings)
    client = redis.Redis.from_url(
        redis_py_url(redis_url),
        socket_timeout=max(5.0, settings.ingest_block_ms / 1000 + 5),
        socket_connect_timeout=5.0,
        health_check_interval=30,
    )
    dispose_inherited_engines()
    engine = get_engine(
        resolve_database_url(settings),
        pool_size=1,
        application_name="memory-ingest",
        role=settings.db_role_worker or None,
    )
    publisher = TaskPublisher(redis_url, queue=settings.queue, timeout_s=2.0)
    try:
        IngestConsumer(client, engine, settings, publisher=publisher).run(stop)
    finally:
        publisher.close()
        client.close()


if __name__ == "__main__":
    main()
