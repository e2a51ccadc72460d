"""The web console (`/console/`, issue #17) in a real headless Chromium (Debian's `chromium`, driven by
Playwright) against the real API server over real HTTP, on the real PostgreSQL and Redis.

One browser and one API server for the module (the CI budget is tight); each test signs in with its own
fresh browser context. What a browser cannot show (a form posted without its CSRF token, a read-only key's
POST) is sent with plain httpx. Screenshots of each page are saved to `$MEMORY_SCREENSHOT_DIR` when it is set
(`MEMORY_SCREENSHOT_DIR=docs/screenshots` refreshes the README's), else to a temp folder (printed), so a
test run does not rewrite tracked files.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from api.keys import create_key, revoke_key
from shared import tasknames
from shared.db.engine import session_scope
from shared.db.vectors import vector_literal
from shared.embedded import redis_py_url
from store.dead_letters import record_dead_letter
from tests.memory_rows import EMBEDDER, insert_memory
from tests.services import app_server

pytestmark = pytest.mark.integration
CHROMIUM = Path("/usr/bin/chromium")
SHOTS = (
    Path(os.environ["MEMORY_SCREENSHOT_DIR"]).resolve()
    if os.environ.get("MEMORY_SCREENSHOT_DIR")
    else Path(tempfile.gettempdir()) / "memory-console-screenshots"
)
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture(scope="module")
def console_queue() -> str:
    return f"memtest-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def server(database_url: str, redis_url: str, console_queue: str) -> Iterator[str]:
    """The real app under uvicorn on a free loopback port, shared by the module's tests."""
    from shared.settings import load_settings

    with app_server(
        load_settings(database_url=database_url, redis_url=redis_url, queue=console_queue)
    ) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module: Debian's package, never a downloaded one. Missing: the test
    fails (`.ci/run` installs it), it is not skipped."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def world(engine: Any, console_queue: str) -> dict[str, Any]:
    """Two tenants. A: user `ada` with memories (one from event `ev-ada-1`), a session, an episode, a working
    memory document, a dead letter; user `eve` to erase. B: user `bob`. Keys: A writer, A read-only, B."""
    a, b = f"ca-{uuid.uuid4().hex[:8]}", f"cb-{uuid.uuid4().hex[:8]}"
    t0 = datetime.now(UTC) - timedelta(days=2)
    ids: dict[str, str] = {}
    with engine.begin() as conn:
        for tenant in (a, b):
            conn.execute(text("INSERT INTO tenants (id) VALUES (:t)"), {"t": tenant})
        for tenant, user, session in ((a, "ada", "s-ada"), (a, "eve", "s-eve"), (b, "bob", "s-bob")):
            conn.execute(
                text(
                    "INSERT INTO sessions (tenant_id, user_id, session_id, turn_count) VALUES (:t, :u, :s, 1)"
                ),
                {"t": tenant, "u": user, "s": session},
            )
            conn.execute(
                text(
                    "INSERT INTO events (tenant_id, event_id, user_id, session_id, role, content, event_time, "
                    "status, processed_at) VALUES (:t, :e, :u, :s, 'user', :c, :ts, 'extracted', :ts)"
                ),
                {
                    "t": tenant,
                    "e": f"ev-{user}-1",
                    "u": user,
                    "s": session,
                    "c": f"{user}: we deploy with ArgoCD",
                    "ts": t0,
                },
            )
        for name, tenant, user, content, kind in (
            ("deploy", a, "ada", "The team deploys with ArgoCD.", "semantic"),
            ("orm", a, "ada", "Never suggest an ORM in this repository.", "procedural"),
            ("eve", a, "eve", "Eve prefers tabs.", "semantic"),
            ("bob", b, "bob", "Bob's secret project is called Nightjar.", "semantic"),
        ):
            ids[name] = insert_memory(
                conn,
                tenant_id=tenant,
                user_id=user,
                content=content,
                kind=kind,
                valid_from=t0,
                recorded_at=t0,
                last_confirmed_at=t0,
                source_event_ids=[f"ev-{user}-1"],
            )
            conn.execute(
                text(
                    "INSERT INTO memory_history (memory_id, tenant_id, user_id, op, after, reason, actor, "
                    "event_ids, created_at) VALUES (:m, :t, :u, 'add', CAST(:a AS jsonb), 'extracted', "
                    "'worker:extract', :e, :ts)"
                ),
                {
                    "m": ids[name],
                    "t": tenant,
                    "u": user,
                    "a": json.dumps({"content": content}),
                    "e": [f"ev-{user}-1"],
                    "ts": t0,
                },
            )
        conn.execute(  # LLM tokens on the last five days, one of them over the daily budget
            text(
                "INSERT INTO llm_usage (tenant_id, day, stage, calls, prompt_tokens, completion_tokens) "
                "SELECT :t, to_char(now() AT TIME ZONE 'UTC' - make_interval(days => g), 'YYYY-MM-DD'), "
                "'extract', 10, 500000 * g + 300000, 50000 FROM generate_series(0, 4) g"
            ),
            {"t": a},
        )
        conn.execute(
            text(
                "INSERT INTO episodes (tenant_id, user_id, session_id, what_happened, outcome, lesson, mode, "
                "embedding) VALUES (:t, 'ada', 's-ada', 'moved the deploys to ArgoCD', 'done', "
                "'roll out one service first', 'deterministic', CAST(:v AS vector))"
            ),
            {"t": a, "v": vector_literal(EMBEDDER.embed(["moved the deploys to ArgoCD"])[0])},
        )
        conn.execute(
            text(
                "INSERT INTO working_memory (tenant_id, user_id, content, mode) VALUES (:t, 'ada', "
                "'## Now\n- moving the deploys to ArgoCD', 'deterministic')"
            ),
            {"t": a},
        )
    with session_scope(engine) as db:
        record_dead_letter(
            db,
            task_name=tasknames.INGEST,
            payload={
                "event_id": "ev-ada-dead",
                "user_id": "ada",
                "session_id": "s-ada",
                "role": "user",
                "content": "a poison turn",
                "event_time": t0.isoformat(),
            },
            reason="contract: bad role",
            now=t0,
            tenant_id=a,
            event_id="ev-ada-dead",
        )
        dead = db.execute(text("SELECT id FROM dead_letters WHERE tenant_id = :t"), {"t": a}).scalar_one()
        key_a, row_a = create_key(db, a, name="console writer")
        key_ro, _ = create_key(db, a, name="console reader", read_only=True)
        key_b, _ = create_key(db, b, name="console other")
    return {
        "a": a,
        "b": b,
        "ids": ids,
        "key_a": key_a,
        "key_a_id": row_a.id,
        "key_ro": key_ro,
        "key_b": key_b,
        "dead_letter": int(dead),
        "queue": console_queue,
    }


def _shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"console-{name}.png"))


def _sign_in(browser: Any, server: str, key: str, shot: str | None = None) -> Any:
    context = browser.new_context(base_url=server, viewport={"width": 1100, "height": 760})
    page = context.new_page()
    page.goto("/console/")
    assert page.url.endswith("/console/login")  # not signed in: to the sign-in page
    page.fill("input[name=api_key]", key)
    if shot:
        _shot(page, shot)
    page.click("#sign-in")
    page.wait_for_url(f"{server}/console/")
    return page


def _history(engine: Any, memory_id: str) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        return [
            (r[0], r[1])
            for r in conn.execute(
                text("SELECT op, actor FROM memory_history WHERE memory_id = :m ORDER BY id"),
                {"m": memory_id},
            )
        ]


def test_sign_in_search_edit_pin_ttl_forget_and_sign_out(browser, server, world, engine):
    page = _sign_in(browser, server, world["key_a"], shot="login")
    assert page.locator("#tenant").inner_text() == world["a"]
    assert page.locator("#users li").all_inner_texts() == ["ada", "eve"]
    page.click("text=ada")
    page.wait_for_url(re.compile(r".*/console/users/ada$"))
    assert page.locator("#working-memory").is_visible()
    assert "moved the deploys to ArgoCD" in page.locator("#episodes").inner_text()
    # search (htmx swaps the list as one types)
    page.fill("#search", "argocd")
    page.wait_for_function("document.querySelectorAll('#memories tr.memory').length === 1")
    assert "deploys with ArgoCD" in page.locator("#memories").inner_text()
    _shot(page, "user")
    # the history of a row, loaded in place
    page.click(f"tr[data-id='{world['ids']['deploy']}'] button")
    page.wait_for_selector(f"#h-{world['ids']['deploy']} .history-entry")
    page.click("text=The team deploys with ArgoCD.")
    page.wait_for_url(re.compile(r".*/console/memories/"))
    # edit: the new content and a history entry naming the key
    page.fill("#edit-form textarea", "The team deploys with ArgoCD and Helm.")
    page.click("#save")
    page.wait_for_selector("text=The team deploys with ArgoCD and Helm.")
    entries = page.locator(".history-entry").all_inner_texts()
    assert len(entries) == 2 and f"api_key:{world['key_a_id']}" in entries[-1] and "edit" in entries[-1]
    # pin, then a TTL
    page.click("#pin")
    page.wait_for_selector("#memory-pinned")
    page.fill("input[name=ttl_days]", "30")
    page.click("#set-ttl")
    page.wait_for_selector("#memory-expires")
    _shot(page, "memory")
    # forget
    page.click("#forget")
    page.wait_for_function("document.querySelector('#memory-status').innerText === 'deleted'")
    assert page.locator("#edit-forms").count() == 0  # a forgotten memory has nothing left to change
    assert _history(engine, world["ids"]["deploy"]) == [
        ("add", "worker:extract"),
        *[("edit", f"api_key:{world['key_a_id']}")] * 3,
        ("forget", f"api_key:{world['key_a_id']}"),
    ]
    # the user page no longer lists it; "as of" yesterday still shows what was known then
    page.goto("/console/users/ada?q=argocd")
    assert page.locator("#no-memories").is_visible()
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    page.goto(f"/console/users/ada?as_of={yesterday}")
    assert "The team deploys with ArgoCD." in page.locator("#memories").inner_text()
    assert "Helm" not in page.locator("#memories").inner_text()
    page.goto(f"/console/users/ada?as_of={yesterday}&q=helm")  # searched as it read then
    assert page.locator("#no-memories").is_visible()
    page.goto(f"/console/users/ada?as_of={yesterday}&q=argocd")
    assert page.locator("#memories tr.memory").count() == 1
    # sign out: back to the sign-in page, and the console is closed again
    page.click("#sign-out")
    page.wait_for_url(re.compile(r".*/console/login$"))
    page.goto("/console/ops")
    assert page.url.endswith("/console/login")
    page.context.close()


def test_trace_from_an_event_id_and_the_why_of_a_memory(browser, server, world):
    page = _sign_in(browser, server, world["key_a"])
    page.goto("/console/ops")
    assert page.locator("svg.chart").count() == 3
    assert page.locator("svg.chart rect[fill='#991b1b']").count() == 1  # the day over the 2,000,000 budget
    assert "extract" in page.locator("#tokens-today").inner_text()
    _shot(page, "ops")
    page.fill("#trace-event-id", "ev-ada-1")
    page.click("#trace-open")
    page.wait_for_url(re.compile(r".*/console/events/ev-ada-1$"))
    assert page.locator("#event-id").inner_text() == "ev-ada-1"
    body = page.locator("main").inner_text()
    assert "Never suggest an ORM in this repository." in body  # a memory the event is a source of
    _shot(page, "event")
    page.goto(f"/console/memories/{world['ids']['orm']}")
    page.click("#why-link")
    page.wait_for_url(re.compile(r".*/why$"))
    assert "ev-ada-1" in page.locator("main").inner_text()
    page.context.close()


def test_replay_a_dead_letter(browser, server, world, redis_url):
    import redis

    page = _sign_in(browser, server, world["key_a"])
    # the dead-lettered event's trace: never stored, its dead letter named
    page.goto("/console/events/ev-ada-dead")
    assert page.locator("#not-stored").is_visible()
    assert "contract: bad role" in page.locator("#event-dead-letters").inner_text()
    page.goto("/console/ops")
    row = page.locator(f"tr.dead-letter[data-id='{world['dead_letter']}']")
    assert row.locator(".replayed").inner_text() == ""
    row.locator("button.replay").click()
    page.wait_for_url(re.compile(r".*replayed=.*"))
    assert page.locator(f"tr.dead-letter[data-id='{world['dead_letter']}'] .replayed").inner_text() != ""
    # the envelope is back on the ingest stream, for the consumer to store
    client = redis.Redis.from_url(redis_py_url(redis_url))
    entries = [
        e
        for key in client.scan_iter(f"*{world['queue']}*")
        if client.type(key) == b"stream"
        for e in client.xrange(key)
    ]
    assert any(b"ev-ada-dead" in b"".join(v for v in fields.values()) for _, fields in entries), entries
    page.context.close()


def test_another_tenants_key_sees_none_of_it(browser, server, world):
    page = _sign_in(browser, server, world["key_b"])
    assert page.locator("#users li").all_inner_texts() == ["bob"]
    for path in (
        "/console/users/ada",
        f"/console/memories/{world['ids']['orm']}",
        "/console/events/ev-ada-1",
        f"/console/memories/{world['ids']['orm']}/why",
    ):
        response = page.goto(path)
        assert response is not None and response.status == 404, path
    page.goto("/console/ops")
    assert page.locator("tr.dead-letter").count() == 0
    page.context.close()


def _http_session(server: str, key: str) -> tuple[httpx.Client, str]:
    """A signed-in httpx client and its CSRF token, through the sign-in form as a browser would."""
    http = httpx.Client(base_url=server)
    login = http.get("/console/login")
    token = CSRF.search(login.text).group(1)  # type: ignore[union-attr]
    signed = http.post("/console/login", data={"api_key": key, "csrf_token": token})
    assert signed.status_code == 303, signed.text
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict"), cookie
    assert key not in cookie  # the key itself is never in the cookie
    page = http.get("/console/")
    return http, CSRF.search(page.text).group(1)  # type: ignore[union-attr]


def test_a_read_only_key_gets_no_edit_buttons_and_its_forms_are_refused(browser, server, world, engine):
    page = _sign_in(browser, server, world["key_ro"])
    assert page.locator("#read-only").is_visible()
    page.goto(f"/console/memories/{world['ids']['orm']}")
    assert (
        page.locator("#edit-forms").count() == 0 and page.locator("form[action*='/memories/']").count() == 0
    )
    page.goto("/console/users/ada")
    assert page.locator("#erase-form").count() == 0
    page.goto("/console/ops")
    assert page.locator("button.replay").count() == 0 and page.locator("tr.dead-letter").count() == 1
    page.context.close()
    http, token = _http_session(server, world["key_ro"])
    mem = world["ids"]["orm"]
    for path, data in (
        (f"/console/memories/{mem}/edit", {"content": "changed"}),
        (f"/console/memories/{mem}/pin", {"pinned": "true"}),
        (f"/console/memories/{mem}/ttl", {"ttl_days": "3"}),
        (f"/console/memories/{mem}/forget", {}),
        ("/console/users/ada/erase", {"confirm": "ada"}),
        (f"/console/dead-letters/{world['dead_letter']}/replay", {}),
    ):
        r = http.post(path, data={**data, "csrf_token": token})
        assert r.status_code == 403 and "read-only" in r.text, (path, r.status_code, r.text)
    assert _history(engine, mem) == [("add", "worker:extract")]  # nothing changed
    http.close()


def test_a_form_without_its_csrf_token_is_refused(server, world, engine):
    http, token = _http_session(server, world["key_a"])
    mem = world["ids"]["orm"]
    assert http.post(f"/console/memories/{mem}/pin", data={"pinned": "true"}).status_code == 403
    assert (
        http.post(f"/console/memories/{mem}/pin", data={"pinned": "true", "csrf_token": "x" * 43}).status_code
        == 403
    )
    # the sign-in form too: without the token of its page, even a good key is refused
    assert httpx.post(f"{server}/console/login", data={"api_key": world["key_a"]}).status_code == 403
    assert _history(engine, mem) == [("add", "worker:extract")]
    # with the token, the same form works: the refusals above were the CSRF check
    assert (
        http.post(f"/console/memories/{mem}/pin", data={"pinned": "true", "csrf_token": token}).status_code
        == 303
    )
    assert _history(engine, mem)[-1] == ("edit", f"api_key:{world['key_a_id']}")
    http.close()


def test_a_revoked_key_ends_its_console_sessions(server, engine):
    with session_scope(engine) as db:
        key, row = create_key(db, f"cr-{uuid.uuid4().hex[:8]}", name="soon revoked")
    http, _ = _http_session(server, key)
    assert http.get("/console/ops").status_code == 200
    with session_scope(engine) as db:
        assert revoke_key(db, row.id, now=datetime.now(UTC))
    gone = http.get("/console/ops")
    assert gone.status_code == 303 and gone.headers["location"] == "/console/login"
    http.close()


def test_erasing_a_user_needs_the_typed_confirmation(server, world):
    http, token = _http_session(server, world["key_a"])
    assert http.get("/console/users/eve").status_code == 200
    wrong = http.post("/console/users/eve/erase", data={"confirm": "ev", "csrf_token": token})
    assert wrong.status_code == 422 and http.get("/console/users/eve").status_code == 200
    assert wrong.headers["content-type"].startswith("text/html") and "type the user id exactly" in wrong.text
    done = http.post("/console/users/eve/erase", data={"confirm": "eve", "csrf_token": token})
    assert done.status_code == 303
    assert http.get("/console/users/eve").status_code == 404
    http.close()


def test_memories_by_status_over_time_counts_each_memory_in_the_right_state_each_day(db):
    from store.stats import memories_by_status_daily

    tenant = f"cs-{uuid.uuid4().hex[:8]}"
    now = datetime.now(UTC)
    db.execute(text("INSERT INTO tenants (id) VALUES (:t)"), {"t": tenant})
    conn = db.connection()
    # long-lived and current; recorded 5 days ago, superseded 2 days ago; forgotten 20 days ago (before the
    # window); recorded today
    insert_memory(conn, tenant_id=tenant, user_id="u", content="old", recorded_at=now - timedelta(days=40))
    insert_memory(
        conn,
        tenant_id=tenant,
        user_id="u",
        content="replaced",
        recorded_at=now - timedelta(days=5),
        status="superseded",
        valid_to=now - timedelta(days=2),
    )
    insert_memory(
        conn,
        tenant_id=tenant,
        user_id="u",
        content="forgotten",
        recorded_at=now - timedelta(days=30),
        status="deleted",
        valid_to=now - timedelta(days=20),
        archived_at=now - timedelta(days=20),
    )
    insert_memory(conn, tenant_id=tenant, user_id="u", content="new", recorded_at=now)
    daily = memories_by_status_daily(db, tenant, days=14)
    assert len(daily) == 14 and daily[-1]["day"] == now.date()
    by_day = {(now.date() - d["day"]).days: d for d in daily}
    assert (by_day[13]["current"], by_day[13]["superseded"], by_day[13]["deleted"]) == (1, 0, 1)
    assert (by_day[4]["current"], by_day[4]["superseded"]) == (2, 0)
    assert (by_day[1]["current"], by_day[1]["superseded"]) == (1, 1)
    assert (by_day[0]["current"], by_day[0]["superseded"], by_day[0]["deleted"]) == (2, 1, 1)
