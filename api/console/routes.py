"""The web console's pages and forms (`/console/`): server-rendered Jinja2, htmx for the small interactions.

Every page runs in one transaction authenticated from the session cookie (`api.console.session`) and scoped
to the key's tenant by row-level security, as the API's routes are: another tenant's user, memory, event or
dead letter is simply not there (404). Every change goes through the same store functions as the API, with
the key as the history's actor (`api_key:<id>`); a read-only key sees no forms, and the server answers its
POSTs 403 whatever it sends. Every POST checks the form's CSRF token first.
"""

from __future__ import annotations

import re
import secrets
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote
from uuid import UUID

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlmodel import Session

from api.console import svg
from api.console.session import (
    LOGIN_COOKIE,
    LOGIN_MAX_AGE_S,
    SESSION_COOKIE,
    SessionData,
    Signer,
    check_csrf,
    clear_cookie,
    form_fields,
    new_token,
    set_cookie,
)
from api.deps import AppState, get_state, transaction
from api.keys import Principal, authenticate, authenticate_hash, hash_key
from shared import tasknames
from shared.contract import ID_PATTERN, utcnow
from shared.db.engine import resolve_redis_url
from shared.db.vectors import vector_literal
from shared.stream import StreamProducer, stream_stats
from store import memories as repo
from store.dead_letters import list_dead_letters, replay_envelope, take_for_replay
from store.episodes import list_episodes
from store.memory_views import get_memory, list_memories, memories_as_of, memory_history
from store.runs import list_runs
from store.stats import (
    event_minutes,
    events_by_status_hourly,
    memories_by_status_daily,
    oldest_pending_s,
    tokens_by_day,
    tokens_today_by_stage,
)
from store.trace import event_trace, memory_why
from store.usage import tenant_budget
from store.users import erase_user, list_users, user_known
from store.working_memory import read_document

HERE = Path(__file__).resolve().parent
router = APIRouter(prefix="/console", include_in_schema=False)
env = Environment(
    loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(), auto_reload=False
)
KINDS = ("semantic", "episodic", "procedural")
STATUSES = ("active", "superseded", "consolidated", "archived", "deleted")
PAGE = 100
_ID = re.compile(ID_PATTERN)
FormDep = Annotated[dict[str, str], Depends(form_fields)]


def _fmt_dt(value: Any) -> str:
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    return "" if value is None else str(value)


def _fmt_iso(value: Any) -> str:
    """An ISO 8601 string (what the trace dicts carry) as the pages show times."""
    if isinstance(value, str):
        try:
            return _fmt_dt(datetime.fromisoformat(value))
        except ValueError:
            return value
    return _fmt_dt(value)


env.filters["dt"] = _fmt_dt
env.filters["isotime"] = _fmt_iso
env.filters["short"] = lambda v, n=8: str(v)[:n]
env.filters["urlq"] = lambda v: quote(str(v), safe="")
env.tests["mapping"] = lambda v: isinstance(v, dict)
env.tests["sequence_value"] = lambda v: isinstance(v, list | tuple)


SECRET_KEY = "memory:console:secret"


def signer(request: Request) -> Signer:
    """The app's cookie signer: MEMORY_CONSOLE_SECRET, or else a random secret created once in Redis (SET NX)
    and read by every API process, so that a session signed by one is good at all of them."""
    found: Signer | None = request.app.state.console_signer
    if found is not None:
        return found
    state: AppState = request.app.state.memory
    try:
        redis = state.publisher.redis
        redis.set(SECRET_KEY, new_secret(), nx=True)
        secret = redis.get(SECRET_KEY)
    except Exception as exc:
        raise HTTPException(
            503, "the console's signing secret is kept in Redis, which is unreachable"
        ) from exc
    if not secret:
        raise HTTPException(503, "the console's signing secret is missing from Redis")
    value = secret.decode() if isinstance(secret, bytes) else str(secret)
    found = Signer(value, session_max_age_s=state.settings.console_session_hours * 3600)
    request.app.state.console_signer = found
    return found


@dataclass
class View:
    """One signed-in request: its transaction (tenant-scoped), its principal and its CSRF token."""

    db: Session
    principal: Principal
    csrf: str
    state: AppState

    @property
    def actor(self) -> str:
        return f"api_key:{self.principal.key_id}"

    def render(self, template: str, **context: Any) -> HTMLResponse:
        html = env.get_template(template).render(
            principal=self.principal, csrf=self.csrf, writable=not self.principal.read_only, **context
        )
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})


class NotSignedIn(Exception):
    pass


@contextmanager
def _signed_in(state: AppState, session: SessionData | None) -> Iterator[View]:
    if session is None:
        raise NotSignedIn
    with transaction(state) as db:
        principal = authenticate_hash(db, session.key_hash)
        if principal is None:  # revoked since sign-in
            raise NotSignedIn
        state.limiter.check(db, principal.key_id, principal.tenant_id)
        yield View(db=db, principal=principal, csrf=session.csrf, state=state)


def _to_login(request: Request) -> Response:
    response = RedirectResponse("/console/login", status_code=303)
    clear_cookie(response, request, SESSION_COOKIE)
    return response


async def page(request: Request, build: Callable[[View], Response]) -> Response:
    """A GET page: signed in (else to the sign-in page), built in one thread hand-off."""
    state: AppState = await get_state(request)
    session = signer(request).read_session(request.cookies.get(SESSION_COOKIE))

    def run() -> Response:
        with _signed_in(state, session) as view:
            return build(view)

    try:
        return await run_in_threadpool(run)
    except NotSignedIn:
        return _to_login(request)
    except HTTPException as exc:
        return _error(exc)


def _error(exc: HTTPException) -> Response:
    """A refusal as a page of the console (the API's routes answer problem+json; a person reads this)."""
    html = env.get_template("error.html").render(status=exc.status_code, detail=exc.detail, principal=None)
    return HTMLResponse(html, status_code=exc.status_code, headers={"Cache-Control": "no-store"})


async def action(
    request: Request, form: dict[str, str], work: Callable[[View], str], *, writes: bool = True
) -> Response:
    """A POST form: CSRF first, then signed in, then (for a change) a writable key; `work` returns where to
    go next (303, Post/Redirect/Get) and is committed before the answer."""
    state: AppState = await get_state(request)
    session = signer(request).read_session(request.cookies.get(SESSION_COOKIE))
    try:
        check_csrf(session.csrf if session else None, form)
    except HTTPException as exc:
        return _error(exc)

    def run() -> str:
        with _signed_in(state, session) as view:
            if writes and view.principal.read_only:
                raise HTTPException(403, "this API key is read-only")
            target = work(view)
            view.db.commit()
            return target

    try:
        target = await run_in_threadpool(run)
    except NotSignedIn:
        return _error(HTTPException(401, "not signed in (or the key was revoked): sign in again"))
    except HTTPException as exc:
        return _error(exc)
    return RedirectResponse(target, status_code=303)


# --- sign-in and sign-out ---------------------------------------------------------------------------------


@router.get("/login")
async def login_page(request: Request, error: str | None = None) -> Response:
    token = new_token()
    html = env.get_template("login.html").render(csrf=token, error=error, principal=None)
    response = HTMLResponse(html, status_code=401 if error else 200, headers={"Cache-Control": "no-store"})
    set_cookie(response, request, LOGIN_COOKIE, signer(request).login_value(token), LOGIN_MAX_AGE_S)
    return response


@router.post("/login")
async def login(request: Request, form: FormDep) -> Response:
    sign = signer(request)
    try:
        check_csrf(sign.read_login(request.cookies.get(LOGIN_COOKIE)), form)
    except HTTPException as exc:
        return _error(exc)
    key = form.get("api_key", "").strip()
    state: AppState = await get_state(request)

    def check() -> Principal | None:
        with transaction(state) as db:
            principal = authenticate(db, key)
            if principal is not None:
                state.limiter.check(db, principal.key_id, principal.tenant_id)
            return principal

    principal = await run_in_threadpool(check) if key else None
    if principal is None:
        return await login_page(request, error="unknown or revoked API key")
    response = RedirectResponse("/console/", status_code=303)
    value = sign.session_value(SessionData(key_hash=hash_key(key), csrf=new_token()))
    set_cookie(response, request, SESSION_COOKIE, value, sign.session_max_age_s)
    clear_cookie(response, request, LOGIN_COOKIE)
    return response


@router.post("/logout")
async def logout(request: Request, form: FormDep) -> Response:
    session = signer(request).read_session(request.cookies.get(SESSION_COOKIE))
    try:
        check_csrf(session.csrf if session else None, form)
    except HTTPException as exc:
        return _error(exc)
    return _to_login(request)


# --- pages --------------------------------------------------------------------------------------------------


@router.get("/")
async def index(request: Request) -> Response:
    def build(v: View) -> Response:
        return v.render("index.html", users=list_users(v.db, v.principal.tenant_id))

    return await page(request, build)


@router.get("/users")
async def open_user(request: Request, user_id: Annotated[str, Query(max_length=128)] = "") -> Response:
    if not _ID.fullmatch(user_id):
        raise HTTPException(422, "a user id is 1-128 letters, digits, '.', '_', ':', '@' or '-'")
    return RedirectResponse(f"/console/users/{quote(user_id, safe='')}", status_code=303)


def _as_of(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError as exc:
        raise HTTPException(422, f"as_of is not a date or date-time: {value!r}") from exc
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    if len(value) == 10:  # a date: what was known at the end of that day
        at += timedelta(days=1)
    return at


@router.get("/users/{user_id}")
async def user_page(
    request: Request,
    user_id: str,
    q: Annotated[str, Query(max_length=200)] = "",
    kind: Annotated[str, Query(max_length=16)] = "",
    status: Annotated[str, Query(max_length=16)] = "active",
    as_of: Annotated[str | None, Query(max_length=32)] = None,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Response:
    if kind and kind not in KINDS:
        raise HTTPException(422, f"kind is one of {', '.join(KINDS)}")
    if status not in STATUSES:
        raise HTTPException(422, f"status is one of {', '.join(STATUSES)}")
    at = _as_of(as_of)
    # htmx's own requests get the list alone; a history restore (back button, cache miss) the whole page
    fragment = (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )

    def build(v: View) -> Response:
        tenant = v.principal.tenant_id
        if not user_known(v.db, tenant, user_id):
            raise HTTPException(404, f"no user {user_id!r}")
        if at is not None:
            known, more = memories_as_of(v.db, tenant, user_id, at, contains=q or None, limit=PAGE)
            groups = _group(known)
        else:
            items, more = list_memories(
                v.db,
                tenant,
                user_id,
                statuses=[status],
                kinds=[kind] if kind else [],
                contains=q or None,
                limit=PAGE,
                offset=offset,
            )
            groups = _group([m.model_dump() for m in items])
        ctx: dict[str, Any] = {
            "user_id": user_id,
            "groups": groups,
            "more": more,
            "q": q,
            "kind": kind,
            "status": status,
            "as_of": as_of or "",
            "at": at,
            "offset": offset,
            "page": PAGE,
            "kinds": KINDS,
            "statuses": STATUSES,
        }
        if fragment:
            return v.render("_memories.html", **ctx)
        episodes, _ = list_episodes(v.db, tenant, user_id, limit=20)
        return v.render("user.html", **ctx, working=read_document(v.db, tenant, user_id), episodes=episodes)

    return await page(request, build)


def _group(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Memories by kind, then scope: [("semantic · user", [...]), ...] in a fixed order."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["kind"], r.get("scope") or "user")].append(r)
    order = {k: i for i, k in enumerate(KINDS)}
    keys = sorted(groups, key=lambda k: (order.get(k[0], 9), k[1]))
    return [(f"{k} · {s}", groups[(k, s)]) for k, s in keys]


def _memory_or_404(v: View, memory_id: UUID) -> Any:
    found = get_memory(v.db, memory_id)
    if found is None:
        raise HTTPException(404, f"no memory {memory_id}")
    return found


@router.get("/memories/{memory_id}")
async def memory_page(request: Request, memory_id: UUID) -> Response:
    def build(v: View) -> Response:
        found = _memory_or_404(v, memory_id)
        return v.render("memory.html", m=found, history=memory_history(v.db, memory_id))

    return await page(request, build)


@router.get("/memories/{memory_id}/history")
async def memory_history_fragment(request: Request, memory_id: UUID) -> Response:
    def build(v: View) -> Response:
        _memory_or_404(v, memory_id)
        return v.render("_history.html", history=memory_history(v.db, memory_id))

    return await page(request, build)


@router.get("/memories/{memory_id}/why")
async def why_page(request: Request, memory_id: UUID) -> Response:
    def build(v: View) -> Response:
        why = memory_why(v.db, v.principal.tenant_id, str(memory_id))
        if why is None:
            raise HTTPException(404, f"no memory {memory_id}")
        return v.render("why.html", memory_id=memory_id, why=why)

    return await page(request, build)


@router.get("/events")
async def open_event(event_id: Annotated[str, Query(max_length=128)] = "") -> Response:
    if not _ID.fullmatch(event_id):
        raise HTTPException(422, "an event id is 1-128 letters, digits, '.', '_', ':', '@' or '-'")
    return RedirectResponse(f"/console/events/{quote(event_id, safe='')}", status_code=303)


@router.get("/events/{event_id}")
async def event_page(request: Request, event_id: str) -> Response:
    def build(v: View) -> Response:
        trace = event_trace(v.db, v.principal.tenant_id, event_id)
        if trace is None:
            raise HTTPException(404, f"no event {event_id!r}")
        return v.render("event.html", event_id=event_id, trace=trace, replayable=tasknames.INGEST)

    return await page(request, build)


@router.get("/ops")
async def ops_page(request: Request) -> Response:
    def build(v: View) -> Response:
        settings = v.state.settings
        tenant = v.principal.tenant_id
        broker: dict[str, Any] = {}
        try:
            redis = v.state.publisher.redis
            broker["queue_depth"] = int(redis.llen(settings.queue))
            broker["stream"] = stream_stats(redis, settings.queue, settings.ingest_shards)
        except Exception as exc:  # the page still shows the database's figures with the broker away
            broker["error"] = type(exc).__name__
        minutes = event_minutes(v.db, tenant, minutes=60)
        labels = [m["minute"].strftime("%H:%M") for m in minutes]
        events_chart = svg.line_chart(
            "events per minute and lag",
            labels,
            [
                svg.Series("events/min", [float(m["events"]) for m in minutes]),
                svg.Series(
                    "lag max (s)",
                    [float(m["lag_max_s"]) if m["lag_max_s"] is not None else None for m in minutes],
                ),
            ],
        )
        budget = tenant_budget(v.db, tenant, default=settings.daily_token_budget)
        per_day: dict[str, float] = defaultdict(float)
        by_day_stage = tokens_by_day(v.db, tenant, days=14)
        for r in by_day_stage:
            per_day[r["day"]] += float(r["tokens"] or 0)
        today = utcnow().date()
        days = [(today - timedelta(days=i)).isoformat() for i in range(13, -1, -1)]
        tokens_chart = svg.bar_chart(
            "LLM tokens per day against the budget",
            [d[5:] for d in days],
            [per_day.get(d, 0.0) for d in days],
            limit=float(budget),
        )
        daily = memories_by_status_daily(v.db, tenant, days=14)
        memories_chart = svg.line_chart(
            "memories by status over time",
            [str(d["day"])[5:] for d in daily],
            [
                svg.Series(name, [float(d[name]) for d in daily])
                for name in ("current", "superseded", "archived", "deleted")
            ],
        )
        hourly: dict[str, dict[str, int]] = defaultdict(dict)
        for r in events_by_status_hourly(v.db, tenant, hours=24):
            hourly[r["hour"].strftime("%m-%d %H:00")][r["status"]] = int(r["n"])
        return v.render(
            "ops.html",
            broker=broker,
            oldest_pending_s=oldest_pending_s(v.db, tenant),
            events_chart=events_chart,
            tokens_chart=tokens_chart,
            memories_chart=memories_chart,
            hourly=sorted(hourly.items()),
            hourly_statuses=sorted({s for row in hourly.values() for s in row}),
            runs=list_runs(v.db, limit=20, tenant_id=tenant),
            dead_letters=list_dead_letters(v.db, tenant, limit=50),
            replayable=tasknames.INGEST,
            tokens_today=tokens_today_by_stage(v.db, tenant),
            budget=budget,
        )

    return await page(request, build)


# --- changes ------------------------------------------------------------------------------------------------


def _changed_memory(v: View, memory_id: UUID, changes: dict[str, Any], what: str) -> str:
    found = _memory_or_404(v, memory_id)
    if found.status == "deleted":
        raise HTTPException(409, "this memory was forgotten; it cannot be edited")
    repo.edit(
        v.db,
        str(memory_id),
        tenant_id=v.principal.tenant_id,
        user_id=found.user_id,
        changes=changes,
        reason=f"edited via console: {what}",
        actor=v.actor,
        now=utcnow(),
    )
    return f"/console/memories/{memory_id}"


@router.post("/memories/{memory_id}/edit")
async def edit_memory(request: Request, memory_id: UUID, form: FormDep) -> Response:
    content = " ".join(form.get("content", "").split())
    if not content or len(content) > 4000:
        raise HTTPException(422, "the content is 1 to 4,000 characters")

    def work(v: View) -> str:
        vec = vector_literal(v.state.embedder.embed([content])[0])
        return _changed_memory(v, memory_id, {"content": content, "embedding": vec}, "content")

    return await action(request, form, work)


@router.post("/memories/{memory_id}/pin")
async def pin_memory(request: Request, memory_id: UUID, form: FormDep) -> Response:
    if form.get("pinned") not in ("true", "false"):
        raise HTTPException(422, "pinned is 'true' or 'false'")
    pinned = form["pinned"] == "true"
    return await action(request, form, lambda v: _changed_memory(v, memory_id, {"pinned": pinned}, "pinned"))


@router.post("/memories/{memory_id}/ttl")
async def ttl_memory(request: Request, memory_id: UUID, form: FormDep) -> Response:
    raw = form.get("ttl_days", "").strip()
    if form.get("clear") == "true" or raw == "":
        changes: dict[str, Any] = {"expires_at": None}
    else:
        try:
            days = float(raw)
        except ValueError:
            raise HTTPException(422, "ttl_days is a number of days") from None
        if not 0 < days <= 36500:
            raise HTTPException(422, "ttl_days is more than 0 and at most 36,500")
        changes = {"expires_at": utcnow() + timedelta(days=days)}
    return await action(request, form, lambda v: _changed_memory(v, memory_id, changes, "ttl"))


@router.post("/memories/{memory_id}/forget")
async def forget_memory(request: Request, memory_id: UUID, form: FormDep) -> Response:
    def work(v: View) -> str:
        found = _memory_or_404(v, memory_id)
        repo.forget(
            v.db,
            str(memory_id),
            tenant_id=v.principal.tenant_id,
            user_id=found.user_id,
            reason="forgotten via console",
            actor=v.actor,
            event_ids=(),
            now=utcnow(),
        )
        return f"/console/memories/{memory_id}"

    return await action(request, form, work)


@router.post("/users/{user_id}/erase")
async def erase(request: Request, user_id: str, form: FormDep) -> Response:
    def work(v: View) -> str:
        if not user_known(v.db, v.principal.tenant_id, user_id):
            raise HTTPException(404, f"no user {user_id!r}")
        if form.get("confirm", "") != user_id:
            raise HTTPException(422, "type the user id exactly to confirm the erasure")
        erase_user(v.db, v.principal.tenant_id, user_id)
        return "/console/?erased=" + quote(user_id, safe="")

    return await action(request, form, work)


@router.post("/dead-letters/{dead_letter_id}/replay")
async def replay(request: Request, dead_letter_id: int, form: FormDep) -> Response:
    def work(v: View) -> str:
        taken = take_for_replay(
            v.db, v.principal.tenant_id, dead_letter_id, task_name=tasknames.INGEST, now=utcnow()
        )
        if taken is None:
            raise HTTPException(404, f"no replayable dead letter {dead_letter_id}")
        settings = v.state.settings
        stream = StreamProducer(
            resolve_redis_url(settings), queue=settings.queue, shards=settings.ingest_shards, timeout_s=2.0
        )
        try:
            stream.append(replay_envelope(*taken))
        finally:
            stream.redis.close()
        return f"/console/ops?replayed={dead_letter_id}#dead-letters"

    return await action(request, form, work)


def new_secret() -> str:
    return secrets.token_urlsafe(32)
