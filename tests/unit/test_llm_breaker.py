"""The LLM circuit breaker against a real Redis (the tests' server), on a hand-driven clock: it opens after
the threshold of failures in a row, lets one probe through once the open period has passed, doubles the
period on each failed probe up to the cap, closes on a success, and is shared by every client of the key."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from shared.embedded import redis_py_url
from worker.llm.breaker import CircuitBreaker, breaker_name, breaker_states


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    r = redis.Redis.from_url(redis_py_url(redis_url))
    yield r
    r.close()


@pytest.fixture
def name(client: redis.Redis) -> Iterator[str]:
    value = f"test-{uuid.uuid4().hex[:10]}"
    yield value
    client.delete(f"memory:llm:breaker:{value}", f"memory:llm:breaker:{value}:probe")


def make(client: redis.Redis, name: str, clock: Clock, **kw: float) -> CircuitBreaker:
    options = {"threshold": 3, "base_s": 10.0, "max_s": 35.0, **kw}
    return CircuitBreaker(client, name, clock=clock, **options)  # type: ignore[arg-type]


def test_it_opens_after_the_threshold_of_failures_in_a_row(client: redis.Redis, name: str) -> None:
    clock = Clock()
    breaker = make(client, name, clock)

    assert breaker.failure() is None and breaker.failure() is None
    assert breaker.allow().allowed
    opened = breaker.failure()

    assert opened == clock.now + 10
    gate = breaker.allow()
    assert not gate.allowed and gate.retry_at == clock.now + 10
    assert breaker.is_open()


def test_a_success_resets_the_count(client: redis.Redis, name: str) -> None:
    breaker = make(client, name, Clock())
    breaker.failure()
    breaker.failure()
    breaker.success()
    breaker.failure()
    breaker.failure()

    assert breaker.allow().allowed and not breaker.is_open()


def test_one_probe_after_the_open_period_and_its_failure_doubles_the_period_up_to_the_cap(
    client: redis.Redis, name: str
) -> None:
    clock = Clock()
    breaker = make(client, name, clock)
    other_process = make(client, name, clock)  # the same key: another worker process
    for _ in range(3):
        breaker.failure()
    periods = []
    for _ in range(4):
        until = breaker.state()["open_until"]
        periods.append(round(until - clock.now, 3))
        clock.now = until + 0.1
        assert not breaker.is_open()
        probe = breaker.allow()
        assert probe.allowed and probe.probe
        assert not other_process.allow().allowed  # only one probe at a time
        breaker.failure()  # the probe failed: open again, for longer

    assert periods == [10, 20, 35, 35]  # doubling, capped by max_s
    assert other_process.is_open()


def test_a_successful_probe_closes_it(client: redis.Redis, name: str) -> None:
    clock = Clock()
    breaker = make(client, name, clock)
    for _ in range(3):
        breaker.failure()
    clock.now += 11
    assert breaker.allow().probe
    breaker.success()

    assert breaker.allow().allowed and not breaker.allow().probe
    assert breaker.state() == {"name": name, "failures": 0, "opens": 0, "open_until": None}


def test_an_unreachable_redis_never_blocks_a_call(name: str) -> None:
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    breaker = CircuitBreaker(dead, name)

    assert breaker.allow().allowed
    assert breaker.failure() is None and not breaker.is_open()


def test_names_hide_the_endpoint_and_states_are_listed(client: redis.Redis, name: str) -> None:
    key = breaker_name("extract", base_url="https://user:secret@llm.example/v1", model="m")
    assert key.startswith("extract:") and "secret" not in key and "example" not in key
    make(client, name, Clock()).failure()

    assert any(s["name"] == name and s["failures"] == 1 for s in breaker_states(client))


def test_bad_settings_are_refused(client: redis.Redis) -> None:
    with pytest.raises(ValueError, match="threshold"):
        CircuitBreaker(client, "x", threshold=0)
