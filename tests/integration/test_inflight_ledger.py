"""The in-flight ledger of ingest messages (shared/publisher.py), against a real Redis: kombu's Redis
transport takes a message off the list before it records it as unacknowledged, so a worker killed in
between loses it; the ledger puts such a message back, and only such a message."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from shared import tasknames
from shared.publisher import KOMBU_UNACKED_KEY, RedisPublisher, ledger_keys

pytestmark = pytest.mark.integration


@pytest.fixture
def pub(redis_url: str) -> Iterator[RedisPublisher]:
    queue = f"memtest-ledger-{uuid.uuid4().hex[:8]}"
    publisher = RedisPublisher(redis_url, queue=queue, timeout_s=2)
    yield publisher
    publisher.redis.delete(queue, *ledger_keys(queue))
    publisher.close()


def _envelope(n: int) -> list[dict[str, object]]:
    return [{"tenant_id": "t", "events": [{"user_id": "u", "session_id": "s", "content": f"turn {n}"}]}]


def _take(pub: RedisPublisher) -> bytes:
    """What a worker's BRPOP does before kombu records the delivery: the message leaves the list."""
    item = pub.redis.rpop(pub.queue)
    assert item is not None
    return bytes(item)


def test_only_ingest_messages_go_on_the_ledger_and_settling_removes_them(pub):
    pub.publish(tasknames.INGEST, _envelope(1))
    pub.publish_many([(tasknames.INGEST, _envelope(2)), (tasknames.INGEST, _envelope(3))])
    pub.publish(tasknames.EXTRACT_SESSION, ["t", "u", "s"])
    assert pub.in_flight() == 3 and pub.redis.llen(pub.queue) == 4
    ids = [json.loads(_take(pub))["headers"]["id"] for _ in range(4)]
    for task_id in ids:
        pub.settle(task_id)
    assert pub.in_flight() == 0


def test_a_message_taken_off_the_queue_and_never_recorded_is_put_back_once(pub):
    pub.publish(tasknames.INGEST, _envelope(1))
    lost = _take(pub)  # the worker dies here
    assert pub.redeliver_lost(older_than_s=60) == 0  # still within its grace period
    assert pub.redeliver_lost(older_than_s=0) == 1
    assert pub.redis.lrange(pub.queue, 0, -1) == [lost]  # the same message, byte for byte
    # restamped: not put back again before another grace period, even once it left the queue again
    _take(pub)
    assert pub.redeliver_lost(older_than_s=30) == 0


def test_messages_still_queued_or_held_by_a_live_worker_are_left_alone(pub):
    pub.publish(tasknames.INGEST, _envelope(1))
    pub.publish(tasknames.INGEST, _envelope(2))
    # a backlog: nothing is copied while the queue holds messages, however old the entries
    assert pub.redeliver_lost(older_than_s=0) == 0 and pub.redis.llen(pub.queue) == 2
    held = json.loads(_take(pub))
    _take(pub)  # the second one is lost
    tag = held["properties"]["delivery_tag"]
    # the first is held by a live worker, unacknowledged
    pub.redis.hset(KOMBU_UNACKED_KEY, tag, json.dumps([held, "", pub.queue]))
    try:
        assert pub.redeliver_lost(older_than_s=0) == 1
        back = json.loads(pub.redis.lindex(pub.queue, 0))
        assert back["headers"]["id"] != held["headers"]["id"]
    finally:
        pub.redis.hdel(KOMBU_UNACKED_KEY, tag)


def test_a_retry_postpones_the_grace_period_past_its_due_time_and_settled_entries_stay_gone(pub):
    pub.publish(tasknames.INGEST, _envelope(1))
    task_id = json.loads(_take(pub))["headers"]["id"]
    pub.postpone(task_id, delay_s=60)  # the retry is due in a minute: not lost before then
    assert pub.redeliver_lost(older_than_s=0) == 0
    pub.postpone(task_id, delay_s=-1)  # a retry that was due a second ago and never ran
    assert pub.redeliver_lost(older_than_s=0) == 1
    pub.settle(task_id)
    pub.postpone(task_id, delay_s=0)  # a late retry of a settled message adds nothing back
    assert pub.in_flight() == 0 and pub.redeliver_lost(older_than_s=0) == 0
