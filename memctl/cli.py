"""`memctl`: the operator and developer command line (typer + rich). Every data command takes `--json`."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from shared.errors import ContractError, MemoryError_, SettingsError
from shared.settings import Settings, load_settings

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Operate the memory worker.")
keys_app = typer.Typer(no_args_is_help=True, help="API keys (bound to one tenant).")
dlq_app = typer.Typer(no_args_is_help=True, help="The dead-letter queue.")
app.add_typer(keys_app, name="keys")
app.add_typer(dlq_app, name="dlq")

out = Console()
err = Console(stderr=True)
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON document on stdout")]


def _settings() -> Settings:
    try:
        return load_settings()
    except SettingsError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None


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
def keys_list(tenant: Annotated[str | None, typer.Option()] = None, as_json: JsonOpt = False) -> None:
    """List keys (id, tenant, prefix, created, revoked); never the keys themselves."""
    from sqlalchemy import select

    from shared.db.engine import session_scope
    from shared.db.models import ApiKey

    settings = _settings()
    with session_scope(_engine(settings)) as session:
        stmt = select(ApiKey).order_by(ApiKey.created_at)  # type: ignore[arg-type]
        if tenant:
            stmt = stmt.where(ApiKey.tenant_id == tenant)  # type: ignore[arg-type]
        rows = [r.model_dump(exclude={"key_hash"}) for r in session.scalars(stmt)]
    if as_json:
        _print_json(rows)
        return
    table = Table("id", "tenant", "prefix", "name", "read-only", "created", "revoked")
    for r in rows:
        table.add_row(r["id"], r["tenant_id"], r["prefix"] + "…", r["name"] or "", str(r["read_only"]),
                      str(r["created_at"])[:19], str(r["revoked_at"] or "")[:19])
    out.print(table)


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
        data = {"user_id": user, "session_id": session, "content": content or "", "role": role,
                "type": event_type}
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
) -> None:
    """Counts by status; with --user/--session/--status, the latest events."""
    from sqlalchemy import func, select

    from shared.db.engine import session_scope
    from shared.db.models import Event

    settings = _settings()
    with session_scope(_engine(settings)) as db:
        filters = []
        if tenant:
            filters.append(Event.tenant_id == tenant)
        if user:
            filters.append(Event.user_id == user)
        if session:
            filters.append(Event.session_id == session)
        if status:
            filters.append(Event.status == status)
        if not (user or session or status):
            counts = dict(db.execute(select(Event.status, func.count()).where(*filters).group_by(Event.status)).all())  # type: ignore[arg-type]
            if as_json:
                _print_json({"by_status": counts, "total": sum(counts.values())})
                return
            table = Table("status", "events")
            for k, v in sorted(counts.items()):
                table.add_row(k, str(v))
            table.add_row("[bold]total[/]", str(sum(counts.values())))
            out.print(table)
            return
        rows = db.scalars(select(Event).where(*filters).order_by(Event.event_time.desc()).limit(limit))  # type: ignore[attr-defined]
        data = [r.model_dump() for r in rows]
    if as_json:
        _print_json(data)
        return
    table = Table("time", "tenant", "user", "session", "role", "status", "content")
    for r in data:
        table.add_row(str(r["event_time"])[:19], r["tenant_id"], r["user_id"], r["session_id"], r["role"],
                      r["status"], (r["content"][:60] + "…") if len(r["content"]) > 60 else r["content"])
    out.print(table)


@dlq_app.command("list")
def dlq_list(limit: Annotated[int, typer.Option(min=1)] = 50, as_json: JsonOpt = False) -> None:
    """Dead letters, newest first: id, reason, count, first and last seen."""
    from sqlalchemy import select

    from shared.db.engine import session_scope
    from shared.db.models import DeadLetter

    settings = _settings()
    with session_scope(_engine(settings)) as db:
        rows = [r.model_dump() for r in db.scalars(
            select(DeadLetter).order_by(DeadLetter.last_seen.desc()).limit(limit))]  # type: ignore[union-attr]
    if as_json:
        _print_json(rows)
        return
    table = Table("id", "tenant", "event", "count", "last seen", "replayed", "reason")
    for r in rows:
        table.add_row(str(r["id"]), r["tenant_id"] or "", r["event_id"] or "", str(r["count"]),
                      str(r["last_seen"])[:19], str(r["replayed_at"] or "")[:19], r["reason"][:100])
    out.print(table)


@dlq_app.command("replay")
def dlq_replay(
    dead_letter_id: Annotated[int | None, typer.Argument(help="the id from `dlq list`")] = None,
    all_: Annotated[bool, typer.Option("--all", help="replay every dead letter not yet replayed")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Re-enqueue dead letters (after a fix); each is marked replayed, and comes back if it fails again."""
    from sqlalchemy import select

    from shared import tasknames
    from shared.contract import utcnow
    from shared.db.engine import resolve_redis_url, session_scope
    from shared.db.models import DeadLetter
    from shared.publisher import RedisPublisher

    if dead_letter_id is None and not all_:
        _fail("give a dead letter id or --all", 2)
    settings = _settings()
    publisher = RedisPublisher(resolve_redis_url(settings), queue=settings.queue, timeout_s=2.0)
    replayed: list[int] = []
    with session_scope(_engine(settings)) as db:
        stmt = select(DeadLetter).where(DeadLetter.task_name == tasknames.INGEST)
        stmt = stmt.where(DeadLetter.id == dead_letter_id) if dead_letter_id is not None else stmt.where(
            DeadLetter.replayed_at.is_(None))  # type: ignore[union-attr]
        rows = list(db.scalars(stmt.with_for_update(skip_locked=True)))
        if dead_letter_id is not None and not rows:
            _fail(f"no dead letter {dead_letter_id}")
        now = utcnow()
        for row in rows:
            publisher.publish(tasknames.INGEST, [replay_envelope(row.payload, row.tenant_id)])
            row.replayed_at = now
            db.add(row)
            replayed.append(int(row.id or 0))
    if as_json:
        _print_json({"replayed": replayed})
    else:
        out.print(f"replayed {len(replayed)} dead letter(s)")


def replay_envelope(payload: Any, tenant_id: str | None) -> Any:
    """A dead letter holds either a whole envelope or one event of one: rebuild an envelope."""
    if isinstance(payload, dict) and "events" in payload:
        return payload
    return {"tenant_id": tenant_id, "events": [payload]}


def main() -> None:
    app()


if __name__ == "__main__":
    main()
