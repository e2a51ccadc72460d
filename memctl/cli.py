"""`memctl`: the operator and developer command line (typer + rich). Every data command takes `--json`."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from memctl.tables import Col, print_table
from shared.errors import ContractError, MemoryError_, SettingsError
from shared.settings import Settings, load_settings

if TYPE_CHECKING:
    from sqlalchemy.sql.elements import ColumnElement

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Operate the memory worker.")
keys_app = typer.Typer(no_args_is_help=True, help="API keys (bound to one tenant).")
dlq_app = typer.Typer(no_args_is_help=True, help="The dead-letter queue.")
episodes_app = typer.Typer(
    no_args_is_help=True, help="Episodes (one per closed session): list, show, edit, delete."
)
app.add_typer(keys_app, name="keys")
app.add_typer(dlq_app, name="dlq")
app.add_typer(episodes_app, name="episodes")

out = Console()
err = Console(stderr=True)
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON document on stdout")]
WideOpt = Annotated[
    bool, typer.Option("--wide", help="every column, full ids and times (default: fit the terminal)")
]


def _table(cols: list[Col], rows: list[list[Any]], wide: bool) -> None:
    print_table(out, cols, rows, wide=wide, err=err)


def _settings() -> Settings:
    try:
        return load_settings()
    except SettingsError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None


def _embedding_settings() -> Settings:
    """Settings for a command that embeds: checked against the database, whose embedder an automatic choice
    follows (`shared.db.schema.resolve_embedding_schema`); a mismatch is a clear error, never wrong vectors."""
    from shared.db.schema import resolve_embedding_schema
    from shared.errors import MemoryError_

    settings = _settings()
    try:
        resolve_embedding_schema(_engine(settings), settings)
    except MemoryError_ as exc:
        _fail(str(exc), 2)
    return settings


def _engine(settings: Settings) -> Any:
    from shared.db.engine import get_engine, resolve_database_url

    return get_engine(resolve_database_url(settings), application_name="memctl")


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=_json_default, indent=2) + "\n")


def _json_default(o: Any) -> Any:
    if isinstance(o, datetime):
        return o.isoformat()
    return str(o)


def _fail(message: str, code: int = 1) -> None:
    err.print(f"[red]error:[/] {message}")
    raise typer.Exit(code)


@app.command()
def up(no_scheduler: Annotated[bool, typer.Option(help="do not start the scheduler")] = False) -> None:
    """Start the stack in the foreground: database, broker, migrations, worker, API, scheduler."""
    from memctl.stack import run_foreground

    settings = _settings()
    try:
        code = run_foreground(settings, with_scheduler=not no_scheduler)
    except MemoryError_ as exc:
        _fail(str(exc))
    raise typer.Exit(code)


@app.command()
def migrate() -> None:
    """Apply the database migrations (idempotent)."""
    from shared.db.engine import resolve_database_url
    from shared.db.migrate import current_revision
    from shared.db.migrate import migrate as run

    settings = _settings()
    url = resolve_database_url(settings)
    run(url)
    err.print(f"database at revision {current_revision(url)}")
    _ensure_current_tokens(settings)


def _ensure_current_tokens(settings: Settings) -> None:
    """Rewrite the stored keyword tokens when an older tokenizer made them (`store/retokenize.py`)."""
    from core.keywords import TOKENIZER_VERSION
    from store.retokenize import counts_text, ensure_current_tokens

    counts = ensure_current_tokens(_engine(settings))
    if counts is not None:
        err.print(f"keyword tokens rewritten with tokenizer {TOKENIZER_VERSION}: " + counts_text(counts))


@app.command()
def retokenize(
    batch: Annotated[int, typer.Option(min=1, max=100_000, help="rows per transaction")] = 1000,
) -> None:
    """Rewrite every stored keyword document (memories, episodes, indexed turns) with this version's tokenizer.
    `memctl migrate` does it by itself when the tokenizer version changed; this runs it on demand (after
    restoring a dump made by another version, say)."""
    from core.keywords import TOKENIZER_VERSION
    from store.retokenize import counts_text
    from store.retokenize import retokenize as run

    settings = _settings()
    counts = run(_engine(settings), batch=batch)
    err.print(f"keyword tokens rewritten with tokenizer {TOKENIZER_VERSION}: " + counts_text(counts))


@keys_app.command("create")
def keys_create(
    tenant: str,
    name: Annotated[str | None, typer.Option(help="a label for the key")] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="search and read only")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Create an API key for TENANT and print it once (only its hash is stored)."""
    from api.keys import create_key
    from shared.contract import is_safe_id
    from shared.db.engine import session_scope

    if not is_safe_id(tenant):
        _fail("TENANT must be 1-128 characters from A-Z a-z 0-9 . _ : @ -", 2)
    settings = _settings()
    with session_scope(_engine(settings)) as session:
        key, row = create_key(session, tenant, name=name, read_only=read_only)
    if as_json:
        _print_json({"key": key, "tenant": tenant, "id": row.id, "read_only": read_only})
    else:
        sys.stdout.write(key + "\n")


@keys_app.command("list")
def keys_list(
    tenant: Annotated[str | None, typer.Option()] = None, as_json: JsonOpt = False, wide: WideOpt = False
) -> None:
    """List keys (id, tenant, prefix, created, revoked); never the keys themselves."""
    from sqlalchemy import select
    from sqlmodel import col

    from shared.db.engine import session_scope
    from shared.db.models import ApiKey

    settings = _settings()
    with session_scope(_engine(settings)) as session:
        stmt = select(ApiKey).order_by(col(ApiKey.created_at))
        if tenant:
            stmt = stmt.where(col(ApiKey.tenant_id) == tenant)
        rows = [r.model_dump(exclude={"key_hash"}) for r in session.scalars(stmt)]
    if as_json:
        _print_json(rows)
        return
    _table(
        [
            Col("id", "id"),
            Col("tenant"),
            Col("prefix"),
            Col("name", "content"),
            Col("read-only"),
            Col("created", "time"),
            Col("revoked", "time"),
        ],
        [
            [
                r["id"],
                r["tenant_id"],
                r["prefix"] + "…",
                r["name"] or "",
                "yes" if r["read_only"] else "",
                r["created_at"],
                r["revoked_at"],
            ]
            for r in rows
        ],
        wide,
    )


@keys_app.command("revoke")
def keys_revoke(key_id: str) -> None:
    """Revoke the key with id KEY_ID (see `keys list`)."""
    from api.keys import revoke_key
    from shared.contract import utcnow
    from shared.db.engine import session_scope

    settings = _settings()
    with session_scope(_engine(settings)) as session:
        if not revoke_key(session, key_id, now=utcnow()):
            _fail(f"no active key with id {key_id}")
    err.print(f"revoked {key_id}")


@app.command()
def mcp(
    tenant: Annotated[str, typer.Option(help="the tenant whose memory the tools reach")],
    user: Annotated[
        str | None, typer.Option(help="the default user of the tools (else each call names one)")
    ] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="recall and read only")] = False,
) -> None:
    """Serve the MCP tools (remember, recall, get_context, forget, list_memories) on stdio, for a desktop or
    IDE agent on this machine. The tools run the API's routes in this process (no server needed, the
    database of `make run` or DATABASE_URL) with an API key made for this run and revoked when it ends."""
    import asyncio

    import httpx

    from api.app import create_app
    from api.keys import create_key, revoke_key
    from memory_client.api import AsyncMemory
    from memory_client.mcp import build_server
    from shared.contract import is_safe_id, utcnow
    from shared.db.engine import session_scope

    if not is_safe_id(tenant) or (user is not None and not is_safe_id(user)):
        _fail("--tenant and --user must be 1-128 characters from A-Z a-z 0-9 . _ : @ -", 2)
    settings = _settings()
    engine = _engine(settings)
    with session_scope(engine) as session:
        key, row = create_key(session, tenant, name="memctl mcp (this run only)", read_only=read_only)

    async def serve() -> None:
        api = create_app(settings)
        async with api.router.lifespan_context(api):
            memory = AsyncMemory(
                "http://memctl-mcp.internal", key, transport=httpx.ASGITransport(app=api), flush_at_exit=False
            )
            try:
                await build_server(memory, default_user=user).run_stdio_async()
            finally:
                await memory.aclose()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    finally:
        with session_scope(engine) as session:
            revoke_key(session, row.id, now=utcnow())


@app.command()
def emit(
    tenant: Annotated[str, typer.Option(help="tenant id")],
    user: Annotated[str | None, typer.Option(help="user id")] = None,
    session: Annotated[str | None, typer.Option(help="session id")] = None,
    content: Annotated[str | None, typer.Option(help="the turn's text")] = None,
    role: Annotated[str, typer.Option()] = "user",
    event_type: Annotated[str, typer.Option("--type", help="turn or session_end")] = "turn",
    event_id: Annotated[str | None, typer.Option()] = None,
    stdin: Annotated[bool, typer.Option("--stdin", help="read one event (JSON object) from stdin")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Emit one event through the broker (from flags, or a JSON object on stdin)."""
    from shared.client import MemoryClient

    _settings()
    if stdin:
        try:
            data = json.loads(sys.stdin.read())
        except ValueError as exc:
            _fail(f"stdin: not valid JSON ({exc})", 2)
        if not isinstance(data, dict):
            _fail("stdin: expected one JSON object", 2)
        data.pop("tenant_id", None)
        data.pop("schema_version", None)
    else:
        if not user or not session:
            _fail("--user and --session are required (or use --stdin)", 2)
        data = {
            "user_id": user,
            "session_id": session,
            "content": content or "",
            "role": role,
            "type": event_type,
        }
        if event_id:
            data["event_id"] = event_id
    try:
        client = MemoryClient(tenant)
        ids = client.emit_many([data])
        client.close()
    except ContractError as exc:
        _fail(str(exc), 2)
    except ValueError as exc:
        _fail(str(exc), 2)
    if as_json:
        _print_json({"event_id": ids[0], "spooled": client.spooled > 0})
    else:
        out.print(ids[0] + (" (spooled: broker unreachable)" if client.spooled else ""))


@app.command()
def replay(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="JSONL, one event per line")],
    tenant: Annotated[str | None, typer.Option(help="tenant for lines without tenant_id")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay a JSONL file of events through the broker, with a progress bar; bad lines are reported."""
    from rich.progress import Progress

    from shared.client import MemoryClient

    _settings()
    clients: dict[str, MemoryClient] = {}
    sent = 0
    bad: list[dict[str, Any]] = []
    lines = file.read_text(encoding="utf-8").splitlines()
    batches: dict[str, list[dict[str, Any]]] = {}
    with Progress(console=err, transient=as_json) as progress:
        task = progress.add_task("replaying", total=len(lines))
        for n, line in enumerate(lines, 1):
            progress.advance(task)
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError("not a JSON object")
                t = data.pop("tenant_id", None) or tenant
                data.pop("schema_version", None)
                if not t:
                    raise ValueError("no tenant_id on the line and no --tenant")
                if t not in clients:
                    clients[t] = MemoryClient(t)
                clients[t].emit_many([data])  # validate per line so one bad line names itself
                sent += 1
            except ValueError as exc:
                bad.append({"line": n, "error": str(exc)[:500]})
        for c in clients.values():
            c.close()
    del batches
    spooled = sum(c.spooled for c in clients.values())
    if as_json:
        _print_json({"sent": sent, "rejected": bad, "spooled": spooled})
    else:
        out.print(f"sent {sent} events" + (f", {spooled} spooled" if spooled else ""))
        for b in bad[:20]:
            err.print(f"[yellow]line {b['line']}:[/] {b['error']}")
    if bad:
        raise typer.Exit(1)


@app.command()
def events(
    tenant: Annotated[str | None, typer.Option()] = None,
    user: Annotated[str | None, typer.Option()] = None,
    session: Annotated[str | None, typer.Option()] = None,
    status: Annotated[str | None, typer.Option()] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000)] = 20,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Counts by status; with --user/--session/--status, the latest events."""
    from sqlalchemy import func, select
    from sqlmodel import col

    from shared.db.engine import session_scope
    from shared.db.models import Event

    settings = _settings()
    with session_scope(_engine(settings)) as db:
        filters: list[ColumnElement[bool]] = []
        if tenant:
            filters.append(col(Event.tenant_id) == tenant)
        if user:
            filters.append(col(Event.user_id) == user)
        if session:
            filters.append(col(Event.session_id) == session)
        if status:
            filters.append(col(Event.status) == status)
        if not (user or session or status):
            counts: dict[str, int] = dict(
                db.execute(
                    select(col(Event.status), func.count()).where(*filters).group_by(col(Event.status))
                ).all()
            )
            if as_json:
                _print_json({"by_status": counts, "total": sum(counts.values())})
                return
            _table(
                [Col("status"), Col("events", "number")],
                [[k, v] for k, v in sorted(counts.items())] + [["total", sum(counts.values())]],
                wide,
            )
            return
        rows = db.scalars(select(Event).where(*filters).order_by(col(Event.event_time).desc()).limit(limit))
        data = [r.model_dump() for r in rows]
    if as_json:
        _print_json(data)
        return
    _table(
        [
            Col("content", "content"),
            Col("event"),
            Col("time", "time"),
            Col("role"),
            Col("status"),
            Col("user"),
            Col("session"),
            Col("tenant"),
        ],
        [
            [
                r["content"] if not r["content_purged_at"] else "[purged]",
                r["event_id"],
                r["event_time"],
                r["role"],
                r["status"],
                r["user_id"],
                r["session_id"],
                r["tenant_id"],
            ]
            for r in data
        ],
        wide,
    )


@dlq_app.command("list")
def dlq_list(
    limit: Annotated[int, typer.Option(min=1)] = 50, as_json: JsonOpt = False, wide: WideOpt = False
) -> None:
    """Dead letters, newest first: id, reason, count, first and last seen."""
    from sqlalchemy import select
    from sqlmodel import col

    from shared.db.engine import session_scope
    from shared.db.models import DeadLetter

    settings = _settings()
    with session_scope(_engine(settings)) as db:
        rows = [
            r.model_dump()
            for r in db.scalars(select(DeadLetter).order_by(col(DeadLetter.last_seen).desc()).limit(limit))
        ]
    if as_json:
        _print_json(rows)
        return
    _table(
        [
            Col("reason", "content"),
            Col("id", "number"),
            Col("event"),
            Col("count", "number"),
            Col("last seen", "time"),
            Col("replayed", "time"),
            Col("tenant"),
        ],
        [
            [
                r["reason"],
                r["id"],
                r["event_id"],
                r["count"],
                r["last_seen"],
                r["replayed_at"],
                r["tenant_id"],
            ]
            for r in rows
        ],
        wide,
    )


@dlq_app.command("replay")
def dlq_replay(
    dead_letter_id: Annotated[int | None, typer.Argument(help="the id from `dlq list`")] = None,
    all_: Annotated[bool, typer.Option("--all", help="replay every dead letter not yet replayed")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Re-enqueue dead letters (after a fix); each is marked replayed, and comes back if it fails again."""
    from sqlalchemy import select
    from sqlmodel import col

    from shared import tasknames
    from shared.contract import utcnow
    from shared.db.engine import resolve_redis_url, session_scope
    from shared.db.models import DeadLetter
    from shared.stream import StreamProducer
    from store.dead_letters import replay_envelope

    if dead_letter_id is None and not all_:
        _fail("give a dead letter id or --all", 2)
    settings = _settings()
    stream = StreamProducer(
        resolve_redis_url(settings), queue=settings.queue, shards=settings.ingest_shards, timeout_s=2.0
    )
    replayed: list[int] = []
    with session_scope(_engine(settings)) as db:
        stmt = select(DeadLetter).where(col(DeadLetter.task_name) == tasknames.INGEST)
        stmt = (
            stmt.where(col(DeadLetter.id) == dead_letter_id)
            if dead_letter_id is not None
            else stmt.where(col(DeadLetter.replayed_at).is_(None))
        )
        rows = list(db.scalars(stmt.with_for_update(skip_locked=True)))
        if dead_letter_id is not None and not rows:
            _fail(f"no dead letter {dead_letter_id}")
        now = utcnow()
        for row in rows:
            stream.append(replay_envelope(row.payload, row.tenant_id))
            row.replayed_at = now
            db.add(row)
            replayed.append(int(row.id or 0))
    if as_json:
        _print_json({"replayed": replayed})
    else:
        out.print(f"replayed {len(replayed)} dead letter(s)")


def _scoped(settings: Settings, tenant: str | None) -> Any:
    """A session for operator reads: one tenant when given, every tenant otherwise (the owner's view)."""
    from shared.db.engine import session_scope

    return session_scope(_engine(settings))


@app.command()
def memories(
    user: str,
    tenant: Annotated[str, typer.Option(help="tenant id")],
    all_: Annotated[
        bool, typer.Option("--all", help="include superseded, consolidated, archived, deleted")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, max=5000)] = 100,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """The user's current memories (or, with --all, every row with its validity: the history). Ids are
    shortened to 8 characters (`memctl why` takes them); --wide shows them whole."""
    from store.memory_views import list_memories

    statuses = ("active", "superseded", "consolidated", "archived", "deleted") if all_ else ("active",)
    settings = _settings()
    with _scoped(settings, tenant) as db:
        found, _more = list_memories(db, tenant, user, statuses=statuses, limit=limit, order="timeline")
    rows = [m.model_dump() for m in found]
    if as_json:
        _print_json(rows)
        return
    _table(
        [
            Col("content", "content"),
            Col("id", "id"),
            Col("status"),
            Col("kind"),
            Col("slot"),
            Col("valid from", "time"),
            Col("valid to", "time"),
            Col("category"),
            Col("ev", "number"),
        ],
        [
            [
                r["content"],
                r["id"],
                r["status"],
                r["kind"],
                r["slot"],
                r["valid_from"],
                r["valid_to"],
                r["category"],
                r["evidence_count"],
            ]
            for r in rows
        ],
        wide,
    )


@app.command()
def trace(
    event_id: str,
    tenant: Annotated[
        str | None, typer.Option(help="tenant id (default: the one tenant holding the id)")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The event's journey: stored (when, by which consumer, redactions), the extraction window(s) it was in
    (gate, rule candidates, LLM, tokens), the decisions taken, later consolidations and prunes of the
    memories it touched, and the log fields of each task. A dead-lettered event shows its dead letter."""
    from memctl.trace_view import render_trace
    from store.trace import event_trace, locate_event

    settings = _settings()
    with _scoped(settings, tenant) as db:
        if tenant is None:
            tenants = locate_event(db, event_id)
            if not tenants:
                _fail(f"no event {event_id!r} in any tenant")
            if len(tenants) > 1:
                _fail(f"event {event_id!r} is in several tenants ({', '.join(tenants)}): give --tenant", 2)
            tenant = tenants[0]
        assert tenant is not None
        found = event_trace(db, tenant, event_id)
    if found is None:
        _fail(f"no event {event_id!r} in tenant {tenant!r}")
        return
    if as_json:
        _print_json({"tenant_id": tenant, **found})
        return
    sys.stdout.write("\n".join(render_trace(found, tenant=str(tenant), width=out.width)) + "\n")


@app.command()
def why(
    memory_id: Annotated[str, typer.Argument(help="a memory id, or its first 8 characters as tables show")],
    tenant: Annotated[str | None, typer.Option(help="tenant id (default: the memory's)")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Why the memory is believed: its history, its lineage (what it superseded, what it was consolidated
    from) back to the turns, with their text where retention still keeps it."""
    from memctl.trace_view import render_why
    from store.trace import locate_memory, memory_why

    settings = _settings()
    with _scoped(settings, tenant) as db:
        matches = locate_memory(db, memory_id, tenant_id=tenant)
        if not matches:
            _fail(f"no memory {memory_id!r}" + (f" in tenant {tenant!r}" if tenant else ""))
        if len(matches) > 1:
            _fail(
                f"{memory_id!r} matches several memories ({', '.join(m for _t, m in matches)}): give more", 2
            )
        owner, full_id = matches[0]
        found = memory_why(db, owner, full_id)
    if found is None:
        _fail(f"no memory {memory_id!r}")
        return
    if as_json:
        _print_json({"tenant_id": owner, **found})
        return
    sys.stdout.write("\n".join(render_why(found, tenant=owner, width=out.width)) + "\n")


def _episode_or_fail(db: Any, tenant: str, episode_id: str) -> Any:
    from uuid import UUID

    from store.episodes import get_episode

    try:
        UUID(episode_id)
    except ValueError:
        _fail(f"not an episode id: {episode_id!r}", 2)
    found = get_episode(db, tenant, episode_id)
    if found is None:
        _fail(f"no episode {episode_id} in tenant {tenant!r}")
    return found


@episodes_app.command("list")
def episodes_list(
    user: str,
    tenant: Annotated[str, typer.Option(help="tenant id")],
    limit: Annotated[int, typer.Option(min=1, max=5000)] = 50,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """The user's episodes, latest first."""
    from store.episodes import list_episodes

    with _scoped(_settings(), tenant) as db:
        found, _more = list_episodes(db, tenant, user, limit=limit)
    rows = [e.__dict__ for e in found]
    if as_json:
        _print_json(rows)
        return
    _table(
        [
            Col("what happened", "content"),
            Col("id", "id"),
            Col("ended", "time"),
            Col("lesson"),
            Col("session"),
        ],
        [[r["what_happened"], r["id"], r["ended_at"], r["lesson"], r["session_id"]] for r in rows],
        wide,
    )


@episodes_app.command("show")
def episodes_show(
    episode_id: str, tenant: Annotated[str, typer.Option(help="tenant id")], as_json: JsonOpt = False
) -> None:
    """One episode in full."""
    with _scoped(_settings(), tenant) as db:
        found = _episode_or_fail(db, tenant, episode_id)
    if as_json:
        _print_json(found.__dict__)
        return
    for name in (
        "id",
        "user_id",
        "session_id",
        "ended_at",
        "what_happened",
        "outcome",
        "lesson",
        "edited_at",
    ):
        out.print(f"[bold]{name}[/]: {getattr(found, name) or ''}")


@episodes_app.command("edit")
def episodes_edit(
    episode_id: str,
    tenant: Annotated[str, typer.Option(help="tenant id")],
    what_happened: Annotated[str | None, typer.Option(help="what happened in the session")] = None,
    outcome: Annotated[str | None, typer.Option(help="how it ended")] = None,
    lesson: Annotated[str | None, typer.Option(help="the lesson (an empty string removes it)")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Correct an episode; the user's working memory is rewritten from it."""
    from shared.contract import utcnow
    from shared.redaction import redact
    from store.embeddings import embedder_from_settings
    from store.episodes import edit_episode, get_episode
    from store.working_memory import rebuild_document

    changes = {
        k: redact(v)
        for k, v in {"what_happened": what_happened, "outcome": outcome, "lesson": lesson}.items()
        if v is not None
    }
    if not changes:
        _fail("nothing to change: give --what-happened, --outcome or --lesson", 2)
    if changes.get("what_happened") == "":
        _fail("--what-happened cannot be empty", 2)
    settings = _embedding_settings()
    now = utcnow()
    with _scoped(settings, tenant) as db:
        found = _episode_or_fail(db, tenant, episode_id)
        edit_episode(db, tenant, found, changes=changes, embedder=embedder_from_settings(settings), now=now)
        rebuild_document(db, tenant, found.user_id, now=now)
        edited = get_episode(db, tenant, episode_id)
    if as_json:
        _print_json(edited.__dict__ if edited else None)
    else:
        out.print(f"edited episode {episode_id}")


@episodes_app.command("delete")
def episodes_delete(
    episode_id: str, tenant: Annotated[str, typer.Option(help="tenant id")], as_json: JsonOpt = False
) -> None:
    """Delete an episode for good: it never comes back into context or working memory."""
    from shared.contract import utcnow
    from store.episodes import delete_episode
    from store.working_memory import rebuild_document

    now = utcnow()
    with _scoped(_settings(), tenant) as db:
        found = _episode_or_fail(db, tenant, episode_id)
        delete_episode(db, tenant, episode_id, now=now)
        rewritten = rebuild_document(db, tenant, found.user_id, now=now)
    if as_json:
        _print_json({"id": episode_id, "deleted": True, "working_memory_rewritten": rewritten})
    else:
        out.print(f"deleted episode {episode_id}")


@app.command()
def search(
    user: str,
    query: str,
    tenant: Annotated[str, typer.Option(help="tenant id")],
    k: Annotated[int, typer.Option(min=1, max=100)] = 10,
    turns: Annotated[bool, typer.Option("--turns", help="search indexed turns too")] = False,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Hybrid search over the user's memories (and turns with --turns)."""
    from shared.contract import utcnow
    from store.embeddings import embedder_from_settings
    from store.search import search as run_search

    settings = _embedding_settings()
    embedder = embedder_from_settings(settings)
    with _scoped(settings, tenant) as db:
        hits = run_search(
            db,
            tenant_id=tenant,
            user_id=user,
            query=query,
            k=k,
            embedder=embedder,
            now=utcnow(),
            include_turns=turns,
        )
    data = [h.__dict__ for h in hits]
    if as_json:
        _print_json(data)
        return
    _table(
        [
            Col("content", "content"),
            Col("score", "number"),
            Col("type"),
            Col("kind"),
            Col("sources"),
        ],
        [[h.content, f"{h.score:.4f}", h.type, h.kind, ",".join(h.source_turn_ids[:3])] for h in hits],
        wide,
    )


@app.command()
def context(
    user: str,
    tenant: Annotated[str, typer.Option(help="tenant id")],
    query: Annotated[str, typer.Option(help="what the agent is about to do")] = "",
    max_tokens: Annotated[int, typer.Option(min=16, max=32000)] = 1000,
    as_json: JsonOpt = False,
) -> None:
    """The ready-to-inject context block for USER (as GET /v1/users/{user}/context returns it)."""
    from core.relevance import floor_for
    from shared.contract import utcnow
    from store.context import user_context
    from store.embeddings import embedder_from_settings

    settings = _embedding_settings()
    embedder = embedder_from_settings(settings)
    floor = floor_for(
        settings.embedder,
        min_similarity=settings.context_min_similarity,
        min_keyword_coverage=settings.context_min_keyword_coverage,
    )
    with _scoped(settings, tenant) as db:
        block = user_context(
            db, tenant, user, query=query, max_tokens=max_tokens, embedder=embedder, now=utcnow(), floor=floor
        )
    if as_json:
        _print_json(
            {
                "context": block.text,
                "tokens": block.tokens,
                "included": list(block.included),
                "left_out": block.left_out,
            }
        )
    else:
        sys.stdout.write(block.text + "\n")
        left = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in block.left_out.items() if v)
        err.print(f"{block.tokens} tokens" + (f" (left out: {left})" if left else ""))


@app.command()
def runs(
    kind: Annotated[str | None, typer.Option(help="prune, purge, sweep, distill, close_sessions")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 30,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Recent run records: what each scheduled or manual run did."""
    from store.runs import list_runs

    settings = _settings()
    with _scoped(settings, None) as db:
        rows = list_runs(db, kind=kind, limit=limit)
    if as_json:
        _print_json(rows)
        return
    table_rows = []
    for r in rows:
        took = f"{(r['finished_at'] - r['started_at']).total_seconds():.1f}s" if r["finished_at"] else "…"
        counts = ", ".join(f"{k}={v}" for k, v in (r["counts"] or {}).items() if v)
        table_rows.append(
            [counts, r["id"], r["kind"], r["started_at"], took, r["outcome"], r["mode"], r["scope"]]
        )
    _table(
        [
            Col("counts", "content"),
            Col("id", "number"),
            Col("kind"),
            Col("started", "time"),
            Col("took", "number"),
            Col("outcome"),
            Col("mode"),
            Col("scope"),
        ],
        table_rows,
        wide,
    )


def _enqueue(task: str, args: list[Any]) -> None:
    from shared.db.engine import resolve_redis_url
    from shared.publisher import TaskPublisher

    settings = _settings()
    TaskPublisher(resolve_redis_url(settings), queue=settings.queue, timeout_s=2.0).publish(task, args)


@app.command()
def consolidate(
    user: Annotated[str | None, typer.Option("--user", help="one user (needs --tenant)")] = None,
    tenant: Annotated[str | None, typer.Option(help="tenant of --user")] = None,
    all_: Annotated[bool, typer.Option("--all", help="every user with new fragments")] = False,
) -> None:
    """Run sleep-time distillation now (enqueued to the worker); see `memctl runs` for the outcome."""
    from shared import tasknames

    if bool(user) == all_:
        _fail("give --user U --tenant T, or --all", 2)
    if user and not tenant:
        _fail("--user needs --tenant", 2)
    _enqueue(tasknames.DISTILL, [None, tenant, user] if user else [None])
    err.print("distillation enqueued; `memctl runs --kind distill` shows the outcome")


@app.command()
def prune(
    purge: Annotated[bool, typer.Option("--purge", help="also purge archived rows past retention")] = False,
) -> None:
    """Run pruning (TTL, half-life decay) now; with --purge also purge. Enqueued to the worker."""
    from shared import tasknames

    _enqueue(tasknames.PRUNE, [None])
    if purge:
        _enqueue(tasknames.PURGE, [None])
    err.print("enqueued; `memctl runs` shows the outcome")


@app.command()
def erase(
    user: str,
    tenant: Annotated[str, typer.Option(help="tenant id")],
    yes: Annotated[bool, typer.Option("--yes", help="do not ask for confirmation")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Erase everything about USER: events, memories, history, episodes, sessions, working memory."""
    from shared.db.engine import session_scope
    from store.users import erase_user

    settings = _settings()
    if not yes and not typer.confirm(
        f"Erase every trace of user {user!r} in tenant {tenant!r}?", default=False
    ):
        _fail("not erased", 1)
    with session_scope(_engine(settings)) as db:
        counts = erase_user(db, tenant, user)
    if as_json:
        _print_json({"user_id": user, "deleted": counts})
    else:
        out.print(", ".join(f"{k}: {v}" for k, v in counts.items()))


@app.command()
def stats(as_json: JsonOpt = False, wide: WideOpt = False) -> None:
    """Events by status, the ingest stream (backlog, pending, oldest age, consumers), task queue depth,
    memories by kind and status, tokens today per tenant, LLM failures by reason (turns) and by stage (every
    stage that did without the LLM, and what it did instead), the endpoints' circuit breakers, last runs."""
    from shared.db.engine import resolve_redis_url
    from shared.embedded import redis_py_url
    from shared.stream import stream_stats
    from store.stats import overview
    from worker.llm.breaker import breaker_states

    settings = _settings()
    with _scoped(settings, None) as db:
        data = overview(db)
    breakers: list[dict[str, Any]] = []
    try:
        import redis

        client = redis.Redis.from_url(redis_py_url(resolve_redis_url(settings)), socket_timeout=2)
        depth = int(client.llen(settings.queue))
        breakers = breaker_states(client)
        ingest: dict[str, Any] | None = stream_stats(client, settings.queue, settings.ingest_shards)
    except Exception:
        depth, ingest = -1, None
    data["queue_depth"] = depth
    data["ingest_stream"] = ingest
    data["llm_breakers"] = breakers
    if as_json:
        _print_json(data)
        return
    out.print(f"task queue depth: {depth}   dead letters: {data['dead_letters']}")
    if ingest is None:
        out.print("ingest stream: Redis unreachable")
    else:
        out.print(
            f"ingest stream: {ingest['length']} entries (backlog), {ingest['pending']} pending, oldest entry "
            f"{ingest['oldest_entry_age_s']} s, oldest pending {ingest['oldest_pending_age_s']} s, "
            f"{len(ingest['consumers'])} consumer(s)"
        )
        for name, c in sorted(ingest["consumers"].items()):
            out.print(f"  consumer {name}: {c['pending']} pending, idle {c['idle_ms'] / 1000:.1f} s")
    _table(
        [Col("event status"), Col("count", "number")],
        [[k, v] for k, v in sorted(data["events"].items())],
        wide,
    )
    _table(
        [Col("kind"), Col("status"), Col("memories", "number")],
        [[r["kind"], r["status"], r["n"]] for r in data["memories"]],
        wide,
    )
    _table(
        [Col("tenant"), Col("tokens today", "number"), Col("calls", "number")],
        [[r["tenant_id"], r["tokens"], r["calls"]] for r in data["tokens_today"]],
        wide,
    )
    _table(
        [
            Col("LLM failure reason"),
            Col("turns waiting", "number"),
            Col("turns final", "number"),
            Col("max attempts", "number"),
        ],
        [[r["reason"], r["waiting"], r["final"], r["max_attempts"]] for r in data["llm_failures"]],
        wide,
    )
    _table(
        [
            Col("LLM stage"),
            Col("failure reason"),
            Col("did instead"),
            Col("today", "number"),
            Col("total", "number"),
        ],
        [
            [r["stage"], r["reason"], r["action"], r["today"], r["total"]]
            for r in data["llm_failures_by_stage"]
        ],
        wide,
    )
    for b in breakers:
        until = b["open_until"]
        state = "closed"
        if until:
            opened = datetime.fromtimestamp(until, UTC)
            state = f"open until {opened.isoformat()[:19]}Z" if opened > datetime.now(UTC) else "half-open"
        out.print(
            f"llm breaker {b['name']}: {state}, {b['failures']} failures in a row, opened {b['opens']}x"
        )
    _table(
        [Col("run kind"), Col("last started", "time"), Col("outcome")],
        [[r["kind"], r["started_at"], r["outcome"]] for r in data["last_runs"]],
        wide,
    )


@app.command()
def reembed(
    embedder: Annotated[
        str | None,
        typer.Option(help="hashing, local, onnx-minilm, e5-small or openai (default: MEMORY_EMBEDDER)"),
    ] = None,
    batch: Annotated[int, typer.Option(min=1, max=2048)] = 256,
) -> None:
    """Re-embed every memory, episode and indexed turn with the configured embedder (resumable: rows are
    re-embedded in batches and the schema records the new embedder only when all are done)."""
    from rich.progress import Progress
    from sqlalchemy import text

    from shared.db.engine import session_scope
    from shared.db.vectors import vector_literal
    from shared.settings import HNSW_MAX_DIM
    from store.embeddings import make_embedder

    settings = _settings()
    name = embedder or settings.embedder
    emb = make_embedder(
        name,
        dim=settings.embedding_dim if name != "openai" else None,
        openai_base_url=settings.openai_base_url,
        openai_api_key=settings.openai_api_key,
        openai_model=settings.embedding_model,
    )
    if emb.dim > HNSW_MAX_DIM:  # the OpenAI embedder's dimension is the model's, not MEMORY_EMBEDDING_DIM
        _fail(
            f"the {name} embedder gives {emb.dim}-dimensional vectors; pgvector's HNSW index holds at most "
            f"{HNSW_MAX_DIM}: choose a smaller model (OPENAI_EMBEDDING_MODEL=text-embedding-3-small: 1536)"
        )
    engine = _engine(settings)
    marker = f"reembed:{name}:{emb.dim}"
    with session_scope(engine) as db:
        current = dict(db.execute(text("SELECT key, value FROM schema_meta")).all())
        resuming = current.get("reembed_in_progress") == marker
        if int(current.get("embedding_dim", 0)) != emb.dim and not resuming:
            # a new dimension: retype the columns (vectors are recomputed below); HNSW indexes are rebuilt
            for table in ("memories", "events", "episodes"):
                db.execute(
                    text(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({emb.dim}) USING NULL")
                )
        db.execute(
            text(
                "INSERT INTO schema_meta (key, value) VALUES ('reembed_in_progress', :m) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ),
            {"m": marker},
        )
    specs = [
        ("memories", "id", "content", "id::text"),
        ("episodes", "id", "what_happened || ' ' || outcome || ' ' || lesson", "id::text"),
        ("events", "(tenant_id, event_id)", "content", "tenant_id || '/' || event_id"),
    ]
    with Progress(console=err) as progress:
        for table, _key, expr, key_text in specs:
            # indexed turns are the ones with keyword tokens (their vectors may have been cleared by a retype)
            where = "search_tokens IS NOT NULL" if table == "events" else "true"
            progress_key = f"reembed_progress:{table}"
            with session_scope(engine) as db:
                total = db.execute(text(f"SELECT count(*) FROM {table} WHERE {where}")).scalar() or 0
                last = (
                    db.execute(
                        text("SELECT value FROM schema_meta WHERE key = :k"), {"k": progress_key}
                    ).scalar()
                    if resuming
                    else None
                ) or ""
                done = (
                    db.execute(
                        text(f"SELECT count(*) FROM {table} WHERE {where} AND {key_text} <= :l"), {"l": last}
                    ).scalar()
                    or 0
                    if last
                    else 0
                )
            task = progress.add_task(table, total=total, completed=done)
            while True:
                with session_scope(engine) as db:
                    rows = db.execute(
                        text(
                            f"SELECT {key_text} AS k, {expr} AS body FROM {table} WHERE {where} "
                            f"AND {key_text} > :last ORDER BY 1 LIMIT :n"
                        ),
                        {"last": last, "n": batch},
                    ).all()
                    if not rows:
                        break
                    vectors = emb.embed([r.body or "" for r in rows])
                    for r, v in zip(rows, vectors, strict=True):
                        db.execute(
                            text(f"UPDATE {table} SET embedding = CAST(:v AS vector) WHERE {key_text} = :k"),
                            {"v": vector_literal(v), "k": r.k},
                        )
                    last = rows[-1].k
                    db.execute(
                        text(
                            "INSERT INTO schema_meta (key, value) VALUES (:k, :v) ON CONFLICT (key) "
                            "DO UPDATE SET value = excluded.value"
                        ),
                        {"k": progress_key, "v": last},
                    )
                progress.advance(task, len(rows))
    with session_scope(engine) as db:
        db.execute(text("UPDATE schema_meta SET value = :d WHERE key = 'embedding_dim'"), {"d": str(emb.dim)})
        db.execute(text("UPDATE schema_meta SET value = :e WHERE key = 'embedder'"), {"e": name})
        db.execute(
            text("DELETE FROM schema_meta WHERE key = 'reembed_in_progress' OR key LIKE 'reembed_progress:%'")
        )
    err.print(
        f"re-embedded with {emb.name} ({emb.dim} dimensions); set MEMORY_EMBEDDER={name} "
        f"MEMORY_EMBEDDING_DIM={emb.dim} for the worker and the API"
    )


def main() -> None:
    app()


if __name__ == "__main__":
    main()
