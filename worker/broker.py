"""The worker's broker transport: kombu's Redis transport with a channel that finishes closing when Redis is
gone. `use_for_redis_urls()` (called by `worker.app`) makes it the transport of `redis://`, `rediss://` and
`redis+socket://` URLs in the worker's process, through kombu's alias table.

Why: when Redis stops, celery's consumer collects its connection and then closes it once more before
reconnecting. kombu's `Channel.close` first reads the channel's pending BRPOP; with the server gone that
read raises a connection error and the close stops half-way, the channel still open. That is the usual
case, because the loss is mostly noticed first on another socket (the remote-control mailbox's PUBSUB
subscription, which is always polled). `Connection.collect` then detaches the transport, and the second
close goes on to restore the channel's unacknowledged messages (a task waiting for its countdown, a
late-ack task still running) through a Redis client built from a transport that has none:
`AttributeError: 'NoneType' object has no attribute 'hostname'`. Not a connection error, so celery treats
it as unrecoverable and the worker process exited instead of reconnecting.

Here a pending BRPOP whose connection is gone is dropped and the first close goes on: restoring the
unacknowledged messages fails with a connection error while Redis is down (ignored by kombu), so they stay in
Redis's `unacked` hash and come back after the visibility timeout, as when a worker is killed; the consumer
reconnects. Tested by `tests/integration/test_broker_outage.py`.
"""

from __future__ import annotations

from queue import Empty

from kombu import transport as kombu_transport
from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    def close(self) -> None:
        if self._in_poll and not self.closed:
            try:
                self._brpop_read()  # what already arrived is delivered, as kombu's own close does
            except Empty:
                pass
            except self.connection_errors:
                pass  # the broker is gone: nothing left to read, finish closing
        super().close()


class Transport(kombu_redis.Transport):
    Channel = Channel


TRANSPORT = f"{__name__}:Transport"


def use_for_redis_urls() -> None:
    """Resolve the `redis` and `rediss` transport aliases (URL schemes, and the `redis+socket://` prefix) to
    `Transport` in this process."""
    for alias in ("redis", "rediss"):
        kombu_transport.TRANSPORT_ALIASES[alias] = TRANSPORT
        kombu_transport._transport_cache.pop(alias, None)  # resolved before: resolve again
