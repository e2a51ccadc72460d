"""Settings fail fast; the lean publisher writes what Celery reads; the spool keeps order and survives."""

from __future__ import annotations

import json
import random
import zlib

import pytest

from shared.errors import SettingsError
from shared.settings import load_settings
from shared.spool import Spool
from shared.stream import shard_of, split_by_shard, stream_key, stream_keys
from shared.tokens import estimate_tokens
from store.dead_letters import storable_payload
from worker.retry import retry_countdown


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"MEMORY_API_PORT": "http"}, "MEMORY_API_PORT"),
        ({"MEMORY_API_PORT": "70000"}, "MEMORY_API_PORT"),
        ({"DATABASE_URL": "mysql://root@localhost/db"}, "DATABASE_URL"),
        ({"REDIS_URL": "amqp://guest@localhost"}, "REDIS_URL"),
        ({"MEMORY_LOG_LEVEL": "LOUD"}, "MEMORY_LOG_LEVEL"),
        ({"MEMORY_QUEUE": "has space"}, "MEMORY_QUEUE"),
        ({"OPENAI_TIMEOUT_S": "-1"}, "OPENAI_TIMEOUT_S"),
    ],
)
def test_invalid_settings_fail_fast_naming_the_variable(monkeypatch, env, name):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(SettingsError, match=name):
        load_settings()


def test_a_bad_database_url_is_named_but_never_echoed(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "mysql://root:supersecret@db/x")
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert "supersecret" not in str(info.value)


def test_unset_services_mean_the_embedded_stack(monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    s = load_settings()
    assert s.database_url is None and s.redis_url is None and not s.llm_configured


def test_stream_keys_carry_one_hash_tag_per_shard_and_shards_are_stable():
    assert stream_key("memory", 0) == "memory:ingest:{memory:0}"
    assert stream_keys("q", 3) == ["memory:ingest:{q:0}", "memory:ingest:{q:1}", "memory:ingest:{q:2}"]
    assert shard_of("t", "u", 1) == 0
    # crc32, not Python's per-process salted hash: the same user lands on the same shard in every process
    assert shard_of("t", "alice", 8) == zlib.crc32(b"t\x1falice") % 8
    seen = {shard_of("t", f"user-{i}", 4) for i in range(200)}
    assert seen == {0, 1, 2, 3}


def test_an_envelope_splits_by_the_shard_of_each_events_user_and_keeps_its_tenant():
    users = [f"user-{i}" for i in range(20)]
    envelope = {"tenant_id": "t", "events": [{"user_id": u, "event_id": u} for u in users]}
    assert split_by_shard(envelope, 1) == [(0, envelope)]
    parts = split_by_shard(envelope, 4)
    assert len(parts) > 1
    regrouped = sorted(e["user_id"] for _, part in parts for e in part["events"])
    assert regrouped == sorted(users)
    for shard, part in parts:
        assert part["tenant_id"] == "t"
        assert all(shard_of("t", e["user_id"], 4) == shard for e in part["events"])
    # what is not an envelope goes whole to shard 0, where the consumer dead-letters it with the reason
    assert split_by_shard("nope", 4) == [(0, "nope")]


def test_the_spool_drains_in_order_and_keeps_what_failed_to_send(tmp_path):
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append([("t", [i]) for i in range(10)])
    sent: list[int] = []

    def flaky(calls):  # type: ignore[no-untyped-def]
        if sent:
            raise ConnectionError("broker gone again")
        sent.extend(a[0] for _, a in calls)

    with pytest.raises(ConnectionError):
        spool.drain(flaky, batch=4)
    assert sent == [0, 1, 2, 3]
    rest: list[int] = []
    assert spool.drain(lambda calls: rest.extend(a[0] for _, a in calls)) == 6
    assert rest == [4, 5, 6, 7, 8, 9]
    assert spool.size() == 0


def test_a_torn_last_spool_line_is_skipped(tmp_path):
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append([("t", [1])])
    with open(spool.path, "a") as fh:
        fh.write('{"task": "t", "ar')
    got: list[object] = []
    assert spool.drain(lambda calls: got.extend(calls)) == 1


def test_token_estimates_count_cjk_characters_one_each():
    assert estimate_tokens("") == 0
    assert estimate_tokens("我喜欢简洁的回复") == 8
    assert 3 <= estimate_tokens("we deploy with docker") <= 7


def test_retry_countdown_grows_and_is_capped():
    rng = random.Random(1)
    assert all(0.2 <= retry_countdown(n, max_s=60, rng=rng) <= 60.2 for n in range(30))
    assert max(retry_countdown(0, max_s=60, rng=rng) for _ in range(100)) <= 0.7


def test_dead_letter_payloads_are_redacted_and_bounded():
    big = {"content": "x" * (1024 * 1024), "note": "my password is hunter2!"}
    stored = storable_payload(big)
    assert stored["truncated"] is True and len(stored["preview"]) <= 64 * 1024
    small = storable_payload({"note": "my password is hunter2!"})
    assert "hunter2" not in json.dumps(small)
    assert storable_payload({"c": "nul\x00"})["preview"]


@pytest.mark.parametrize("visibility_s", [1, 8, 40, 600, 3600])
def test_lost_messages_are_swept_back_soon_after_the_visibility_timeout(visibility_s):
    from worker.app import broker_transport_options

    options = broker_transport_options(visibility_s)
    assert options["visibility_timeout"] == visibility_s
    # the longest a message can wait past its visibility timeout is one sweep period
    sweep_period = options["unacked_restore_interval"] * options["unacked_restore_throttle"]
    assert 1 <= sweep_period <= max(1, min(10, visibility_s // 4))


def test_get_engine_shares_an_engine_only_with_the_same_configuration():
    """An engine cached for one caller (say a test's own, under another application name) must never be
    handed to a caller that asked for something else: the API's backends are found by their name."""
    from shared.db.engine import get_engine

    url = "postgresql+psycopg://nobody@127.0.0.1:1/none"  # never connected to: engines connect lazily
    api = get_engine(url, role="memory_api", application_name="memory-api", pool_size=16, pre_ping=False)
    assert get_engine(url, role="memory_api", application_name="memory-api", pool_size=16, pre_ping=False) is api
    other = get_engine(url, role="memory_api", application_name="a-test")
    assert other is not api
    assert other.pool.size() == 5 and api.pool.size() == 16  # type: ignore[attr-defined]
