"""No secret from the redaction cases reaches `events`, `dead_letters` or the logs, whichever way it arrives:
the client, a raw queue message that bypasses the client, the HTTP API, or an invalid event."""

from __future__ import annotations

import logging
import re

import httpx
import pytest
from sqlalchemy import text

from shared.client import MemoryClient
from shared.stream import StreamProducer
from tests.services import queue_depth, wait_for
from tests.unit.test_redaction import SECRET_CASES as _PARAMS

SECRET_CASES = [tuple(p.values) for p in _PARAMS]

pytestmark = pytest.mark.integration


def _dump(engine, tenant: str) -> str:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        events = (
            conn.execute(
                text("SELECT row_to_json(e)::text FROM events e WHERE tenant_id = :t"), {"t": tenant}
            )
            .scalars()
            .all()
        )
        letters = (
            conn.execute(
                text("SELECT row_to_json(d)::text FROM dead_letters d WHERE tenant_id = :t"), {"t": tenant}
            )
            .scalars()
            .all()
        )
    return "\n".join([*events, *letters])


def test_no_secret_reaches_postgres_or_the_logs(
    start_worker, engine, tenant, redis_url, queue_name, api_server, api_key, tmp_path, caplog
):
    worker = start_worker()
    caplog.set_level(logging.INFO)
    client = MemoryClient(
        tenant, broker_url=redis_url, queue=queue_name, spool_path=tmp_path / "s.jsonl", flush_at_exit=False
    )
    raw = StreamProducer(redis_url, queue=queue_name, timeout_s=2)
    expected_rows = 0
    for i, (sentence, _secret, _kind) in enumerate(SECRET_CASES):
        client.emit(
            user_id="u", session_id="s", content=sentence, event_id=f"client-{i}", metadata={"note": sentence}
        )
        # straight onto the stream: the consumer must redact on its own
        raw.append(
            {
                "tenant_id": tenant,
                "events": [
                    {
                        "event_id": f"raw-{i}",
                        "user_id": "u",
                        "session_id": "s",
                        "content": sentence,
                        "metadata": {"k": [sentence]},
                    },
                    # invalid (unknown role): dead-lettered with its payload, which must be redacted too
                    {
                        "event_id": f"bad-{i}",
                        "user_id": "u",
                        "session_id": "s",
                        "role": "hacker",
                        "content": sentence,
                    },
                ],
            }
        )
        r = httpx.post(
            f"{api_server}/v1/events",
            headers={"Authorization": f"Bearer {api_key}"},
            json={"event_id": f"api-{i}", "user_id": "u", "session_id": "s", "content": sentence},
        )
        assert r.status_code == 202, r.text
        expected_rows += 3
    # an invalid event sent to the API: its 422 answer must not echo the secret either
    first_sentence = SECRET_CASES[0][0]
    r = httpx.post(
        f"{api_server}/v1/events",
        headers={"Authorization": f"Bearer {api_key}"},
        json={"user_id": "u", "session_id": "s", "role": "nope", "content": first_sentence},
    )
    assert r.status_code == 422
    assert SECRET_CASES[0][1] not in r.text

    def stored() -> int:
        with engine.connect() as conn:
            return int(
                conn.execute(text("SELECT count(*) FROM events WHERE tenant_id = :t"), {"t": tenant}).scalar()
            )

    wait_for(lambda: stored() == expected_rows, timeout_s=90, what="every event")
    wait_for(lambda: queue_depth(redis_url, queue_name) == 0, timeout_s=60, what="the queue to drain")
    with engine.connect() as conn:
        letters = conn.execute(
            text("SELECT count(*) FROM dead_letters WHERE tenant_id = :t"), {"t": tenant}
        ).scalar()
    assert letters == len(SECRET_CASES)
    worker.stop()

    stored_text = _scrub(_dump(engine, tenant))
    logs = _scrub(worker.log_text() + "\n" + caplog.text)
    assert "[REDACTED:" in stored_text
    leaks = [
        (kind, "postgres" if _found(secret, stored_text) else "logs", _where(secret, stored_text + logs))
        for _s, secret, kind in SECRET_CASES
        if _found(secret, stored_text) or _found(secret, logs)
    ]
    assert leaks == []


# Ids, times and durations are random digits: a 4-digit password ("4821") turns up in them by chance.
_NOISE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r'|"(?:duration_ms|timestamp|retry_in_s|took_ms)": [0-9.e+-]+'
)


def _scrub(text: str) -> str:
    return _NOISE.sub("<noise>", text)


def _found(secret: str, text: str) -> bool:
    if len(secret) > 8:
        return secret in text
    # short secrets must stand alone, not inside a longer word or number
    return re.search(rf"(?<![0-9A-Za-z]){re.escape(secret)}(?![0-9A-Za-z])", text) is not None


def _where(secret: str, text: str) -> str:
    i = text.find(secret)
    return text[max(0, i - 120) : i].replace(secret, "<SECRET>")


def test_no_secret_of_the_case_table_reaches_postgres_in_content_or_metadata(
    engine, tenant, api_server, api_key
):
    """Every secret of `tests/data/redaction_cases.jsonl` (both splits), sent over HTTP as content, as a
    metadata string, or as the case's own metadata (fields named after a secret, nested JSON)."""
    from tests.unit.test_redaction_cases import CASES

    cases = [c for c in CASES if c.is_secret]
    events = []
    for c in cases:
        if c.text is not None:
            metadata = {"note": c.text, "nested": {"raw": [c.text]}}
            events.append(
                {"event_id": c.id, "user_id": "u", "session_id": "s", "content": c.text, "metadata": metadata}
            )
        else:
            events.append(
                {
                    "event_id": c.id,
                    "user_id": "u",
                    "session_id": "s",
                    "content": "see metadata",
                    "metadata": c.metadata,
                }
            )
    r = httpx.post(
        f"{api_server}/v1/events", headers={"Authorization": f"Bearer {api_key}"}, json={"events": events}
    )
    assert r.status_code == 202, r.text
    assert r.json()["inserted"] == len(cases)

    stored = _scrub(_dump(engine, tenant))
    assert stored.count("[REDACTED:") >= len(cases)
    leaks = [(c.id, s) for c in cases for s in c.secrets if _found(s, stored)]
    assert leaks == []
