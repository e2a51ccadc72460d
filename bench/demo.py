"""A scripted walk-through of the product (`make demo`, `python -m bench.demo`), in under a minute.

Contract:
- starts what it needs the way `memctl up` does: `DATABASE_URL` / `REDIS_URL` when set, else the embedded
  PostgreSQL + pgvector and redis-server under `MEMORY_DATA_DIR` (`.memdata/`); migrates; then a real
  Celery worker and the HTTP API as child processes (logs under `<data dir>/demo/`);
- talks to them as an agent and an operator would: a short conversation through `MemoryClient.emit`, the
  memories and the context block read back through the API, a new value that supersedes an old one, and a
  memory forgotten through `DELETE /v1/memories/{id}`;
- stops everything it started, on success, on error, on Ctrl-C or SIGTERM: the worker and the API always,
  the embedded servers when they were not already running. The demo user's earlier memories are erased
  first (so a run starts clean) and the API key it made is revoked; this run's memories stay, for
  `memctl memories alice --tenant demo --all`.
Exit status 0 when every step showed what it should, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WIDTH = 96
INDENT = "      "
WAIT_S = 60.0

SESSION_1 = (
    "Hi! I'm setting up the new frontend repo today.",
    "We use npm for every JavaScript project here.",
    "I live in Berlin and I work as a backend engineer.",
    "Please remember that I prefer short answers with code examples.",
    "Never suggest an ORM for our services; we write plain SQL.",
)
SESSION_2 = ("Quick update: we switched from npm to pnpm last week.", "ok thanks")
SLOT = "project.package_manager"
QUERY = "set up the build for the frontend repo"


class DemoFailed(RuntimeError):
    """A step did not show what it should."""


# --- output -----------------------------------------------------------------------------------------------


def say(text: str = "", *, indent: str = INDENT) -> None:
    """One paragraph, wrapped to the demo's width."""
    lines = textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent) or [""]
    print("\n".join(lines), flush=True)


_pause_s = 0.0  # --pause-s: a wait before each step of the walk-through, for a person following along


def step(number: int, title: str) -> None:
    if 2 < number < 7:
        time.sleep(_pause_s)
    print(f"\n[{number}/7] {title}", flush=True)


def show_memory(m: dict[str, Any]) -> None:
    slot = f"  {m['slot']} = {m['value']}" if m.get("slot") else ""
    say(f"{m['kind']}/{m['category']}{slot}")
    say(m["content"], indent=INDENT + "    ")


def _clock(timestamp: str) -> str:
    """The time of day of an API timestamp, to the millisecond (the sessions are seconds apart)."""
    return timestamp[11:23]


def _short(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)


# --- the stack --------------------------------------------------------------------------------------------


@dataclass
class Stack:
    """What the demo runs on; `close()` stops what it started (and only that)."""

    data_dir: Path
    database_url: str = ""
    redis_url: str = ""
    children: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    stops: list[Callable[[], None]] = field(default_factory=list)  # last started, first stopped

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "demo"

    def spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        """A child in its own process group (a terminal's Ctrl-C reaches the demo, which stops it)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"{name}.log", "wb") as log:
            proc = subprocess.Popen(
                args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.children[name] = proc
        return proc

    def log_tail(self, name: str, lines: int = 15) -> str:
        path = self.log_dir / f"{name}.log"
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        """SIGTERM to each child's process group, SIGKILL to whatever of them is left after 20 s; then
        the servers this demo started."""
        import psutil

        from bench.lib.project import dispose_engines

        tree: list[psutil.Process] = []  # taken first: a pool child outlives a leader that died
        for proc in self.children.values():
            with contextlib.suppress(psutil.Error):
                leader = psutil.Process(proc.pid)
                tree += [leader, *leader.children(recursive=True)]
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        _, alive = psutil.wait_procs(tree, timeout=20)
        for straggler in alive:
            with contextlib.suppress(psutil.Error):
                straggler.kill()
        for proc in self.children.values():
            proc.wait()  # reaped: no zombie either
        dispose_engines()  # before the database stops under them
        for stop in reversed(self.stops):
            with contextlib.suppress(Exception):  # the others must still stop
                stop()


def _postgres_running(pgdata: Path) -> bool:
    import psutil

    pidfile = pgdata / "postmaster.pid"
    try:
        return psutil.pid_exists(int(pidfile.read_text().split()[0]))
    except (OSError, ValueError, IndexError):
        return False


def start_database(stack: Stack, settings: Any) -> str:
    """`DATABASE_URL`, or the embedded PostgreSQL (stopped at the end unless it was running already)."""
    from bench.lib.project import sqlalchemy_url
    from shared.embedded import start_postgres

    if settings.database_url:
        stack.database_url = sqlalchemy_url(settings.database_url)
        return "DATABASE_URL"
    pgdata = stack.data_dir / "pg"
    if not _postgres_running(pgdata):
        # registered before the start: a Ctrl-C while it starts must not leave it behind
        stack.stops.append(
            lambda: start_postgres(stack.data_dir).stop() if _postgres_running(pgdata) else None
        )
        where = f"embedded PostgreSQL in {_short(pgdata)} (started, stopped at the end)"
    else:
        where = f"embedded PostgreSQL in {_short(pgdata)} (already running, left running)"
    stack.database_url = start_postgres(stack.data_dir).url
    return where


def start_broker(stack: Stack, settings: Any) -> str:
    """`REDIS_URL`, or the embedded redis-server (shut down at the end when this run started it)."""
    from shared.embedded import kombu_url, start_redis

    if settings.redis_url:
        stack.redis_url = kombu_url(settings.redis_url)
        return "REDIS_URL"
    redis = start_redis(stack.data_dir)
    stack.redis_url = redis.url
    if redis.started_here:
        stack.stops.append(redis.stop)
        return f"embedded Redis at {_short(redis.socket_path)} (started, stopped at the end)"
    return f"embedded Redis at {_short(redis.socket_path)} (already running, left running)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(what: str, ready: Callable[[], bool], stack: Stack, name: str, timeout_s: float = WAIT_S) -> float:
    t0 = time.monotonic()
    while not ready():
        proc = stack.children[name]
        if proc.poll() is not None:
            raise DemoFailed(f"the {what} exited with code {proc.returncode}:\n{stack.log_tail(name)}")
        if time.monotonic() - t0 > timeout_s:
            raise DemoFailed(f"the {what} was not ready after {timeout_s:.0f} s:\n{stack.log_tail(name)}")
        time.sleep(0.1)
    return time.monotonic() - t0


def start_processes(stack: Stack, settings: Any) -> str:
    """The ingest consumer, the worker (`celery -A worker.app worker`) and the API (uvicorn) in parallel;
    waits for all three."""
    import httpx

    env = dict(os.environ)
    env.update(
        DATABASE_URL=stack.database_url,
        REDIS_URL=stack.redis_url,
        MEMORY_DATA_DIR=str(stack.data_dir),
        PYTHONUNBUFFERED="1",
    )
    py = sys.executable
    worker = stack.spawn(
        "worker",
        [py, "-m", "celery", "-A", "worker.app", "worker", "-Q", settings.queue, "-c", "1", "--without-gossip",
         "--without-mingle", "--without-heartbeat", "-n", f"demo-{os.getpid()}@%h", "--loglevel", "INFO"],
        env,
    )  # fmt: skip
    consumer = stack.spawn("ingest", [py, "-m", "worker.ingest_consumer"], env)
    port = _free_port()
    api_url = f"http://127.0.0.1:{port}"
    api = stack.spawn(
        "api",
        [py, "-m", "uvicorn", "api.app:create_app", "--factory", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--log-level", "warning", "--no-access-log"],
        env,
    )  # fmt: skip
    log = stack.log_dir / "worker.log"

    def api_up() -> bool:
        try:
            return httpx.get(api_url + "/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    ingest_log = stack.log_dir / "ingest.log"
    ingest_s = _wait("ingest consumer", lambda: b"ingest.consumer_started" in ingest_log.read_bytes(), stack, "ingest")
    worker_s = _wait("worker", lambda: b" ready." in log.read_bytes(), stack, "worker")
    api_s = _wait("API", api_up, stack, "api")
    say(
        f"worker     celery worker on queue '{settings.queue}' (pid {worker.pid}), ready after {worker_s:.1f} s"
    )
    say(f"ingest     consumer of the ingest stream (pid {consumer.pid}), started after {ingest_s:.1f} s")
    say(f"api        {api_url} (pid {api.pid}), ready {api_s:.1f} s later")
    return api_url


# --- the walk-through -------------------------------------------------------------------------------------


@dataclass
class Demo:
    stack: Stack
    api_url: str
    tenant: str
    user: str
    queue: str
    key: str = ""
    key_id: str = ""
    sent: int = 0

    @contextlib.contextmanager
    def http(self) -> Iterator[Any]:
        import httpx

        headers = {"Authorization": f"Bearer {self.key}"}
        with httpx.Client(base_url=self.api_url, headers=headers, timeout=30) as client:
            yield client

    def get(self, path: str, **params: Any) -> Any:
        with self.http() as client:
            resp = client.get(path, params=params)
        resp.raise_for_status()
        return resp.json()

    def talk(self, session: str, turns: tuple[str, ...]) -> None:
        """The agent emits each turn, then the session's end (which has the worker extract now)."""
        from shared.client import MemoryClient

        client = MemoryClient(
            self.tenant,
            broker_url=self.stack.redis_url,
            queue=self.queue,
            spool_path=self.stack.log_dir / "spool.jsonl",
            publish_timeout_s=2.0,
            flush_at_exit=False,
        )
        try:
            for text in turns:
                say(f"{self.user}> {text}")
                client.emit(user_id=self.user, session_id=session, content=text)
            client.emit(user_id=self.user, session_id=session, type="session_end")
            say("(session end)")
            client.flush()
        finally:
            client.close()
        if client.spooled:
            raise DemoFailed(f"{client.spooled} events were spooled: the broker did not take them")
        self.sent += len(turns) + 1

    def wait_for_worker(self) -> float:
        """Until every event sent is stored and extracted and no candidate waits for reconciliation."""
        from sqlalchemy import text

        from bench.lib.project import get_engine

        engine = get_engine(self.stack.database_url, pool_size=1, application_name="memory-demo")
        sql = text(
            "SELECT count(*), count(*) FILTER (WHERE status = 'pending'), (SELECT count(*) FROM candidates "
            "WHERE tenant_id = :t AND user_id = :u AND status = 'new') FROM events WHERE tenant_id = :t "
            "AND user_id = :u"
        )
        t0 = time.monotonic()
        while True:
            with engine.connect() as conn:
                stored, pending, new = conn.execute(sql, {"t": self.tenant, "u": self.user}).one()
            if stored >= self.sent and not pending and not new:
                return time.monotonic() - t0
            for name, proc in self.stack.children.items():
                if proc.poll() is not None:
                    raise DemoFailed(f"the {name} exited:\n{self.stack.log_tail(name)}")
            if time.monotonic() - t0 > WAIT_S:
                raise DemoFailed(
                    f"after {WAIT_S:.0f} s: {stored}/{self.sent} events stored, {pending} pending, {new} candidates "
                    f"new\n{self.stack.log_tail('worker')}"
                )
            time.sleep(0.2)

    def memories(self, *statuses: str) -> list[dict[str, Any]]:
        page = self.get(f"/v1/users/{self.user}/memories", status=list(statuses) or ["active"], limit=100)
        return list(page["items"])


def _fresh_start(demo: Demo) -> None:
    """Erase what earlier demos left for this user; a key of the tenant for the API calls."""
    from bench.lib.project import create_key, erase_user, get_engine, session_scope

    with session_scope(get_engine(demo.stack.database_url)) as db:
        erase_user(db, demo.tenant, demo.user)
        demo.key, row = create_key(db, demo.tenant, name="demo")
        demo.key_id = str(row.id)


def _revoke(demo: Demo) -> None:
    from bench.lib.project import get_engine, revoke_key, session_scope
    from shared.contract import utcnow

    with session_scope(get_engine(demo.stack.database_url)) as db:
        revoke_key(db, demo.key_id, now=utcnow())


def walk_through(demo: Demo) -> None:
    step(2, f"{demo.user} talks to her agent (tenant '{demo.tenant}', session {demo.user}-s1)")
    demo.talk(f"{demo.user}-s1", SESSION_1)
    say(f"the worker extracted and reconciled the session in {demo.wait_for_worker():.1f} s")

    step(3, f"what the worker remembered (GET /v1/users/{demo.user}/memories)")
    before = demo.memories()
    for m in before:
        show_memory(m)
    if not any(m.get("slot") == SLOT and m.get("value") == "npm" for m in before):
        raise DemoFailed(f"no memory holds {SLOT} = npm")

    step(4, "a later session changes a value")
    demo.talk(f"{demo.user}-s2", SESSION_2)
    say(f"reconciled in {demo.wait_for_worker():.1f} s; the old value is kept as history, not overwritten:")
    rows = [m for m in demo.memories("active", "superseded") if m.get("slot") == SLOT]
    old = [m for m in rows if m["status"] == "superseded"]
    new = [m for m in rows if m["status"] == "active"]
    for m in sorted(rows, key=lambda m: m["valid_from"]):
        until = _clock(m["valid_to"]) if m["valid_to"] else "now"
        say(f"{m['status']:<11} {m['slot']} = {m['value']:<5} valid {_clock(m['valid_from'])} .. {until}")
        say(m["content"], indent=INDENT + "    ")
    if not (old and old[0]["value"] == "npm" and new and new[0]["value"] == "pnpm"):
        raise DemoFailed(f"expected npm superseded by pnpm in {SLOT}, found {rows}")

    step(5, f"the context block an agent injects (GET /v1/users/{demo.user}/context)")
    say(f'query: "{QUERY}"')
    block = demo.get(f"/v1/users/{demo.user}/context", query=QUERY, max_tokens=300)
    for line in block["context"].splitlines():
        say(line)
    say(f"({block['tokens']} tokens)")
    if "pnpm" not in block["context"]:
        raise DemoFailed("the context block does not carry the current value (pnpm)")

    step(6, "forget a memory (DELETE /v1/memories/{id})")
    active = demo.memories()
    target = next((m for m in active if m.get("slot") == "user.location"), None)
    if target is None:
        raise DemoFailed("no memory of where the user lives to forget")
    with demo.http() as client:
        client.delete(f"/v1/memories/{target['id']}").raise_for_status()
    say(f"forgot: {target['content']}")
    after = demo.memories()
    gone = all(m["id"] != target["id"] for m in after)
    status = demo.get(f"/v1/memories/{target['id']}")
    history = ", ".join(h["op"] for h in status["history"])
    say(f"active memories: {len(active)} before, {len(after)} after")
    say(f"the forgotten one is {'gone from them' if gone else 'STILL ACTIVE'}")
    say(f"its row: status '{status['status']}', history: {history}")
    if not gone or status["status"] != "deleted":
        raise DemoFailed("the forgotten memory is still active")


def run(args: argparse.Namespace) -> int:
    from shared.settings import load_settings

    settings = load_settings()
    stack = Stack(data_dir=settings.data_path)
    demo: Demo | None = None
    code = 1
    print("=" * WIDTH)
    print("memory worker demo: an agent's conversation becomes memories, kept current and forgettable")
    print("=" * WIDTH)
    try:
        step(1, "starting the stack (as `memctl up` does)")
        say(f"database   {start_database(stack, settings)}")
        say(f"broker     {start_broker(stack, settings)}")
        from bench.lib.project import migrate

        migrate(stack.database_url)
        say("migrations up to date")
        api_url = start_processes(stack, settings)
        demo = Demo(stack, api_url, args.tenant, args.user, settings.queue)
        _fresh_start(demo)
        walk_through(demo)
        code = 0
    except DemoFailed as exc:
        print(f"\ndemo failed: {exc}", file=sys.stderr)
    finally:
        # a second Ctrl-C must not cut the cleanup short (it has its own time limits)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        step(7, "stopping everything this demo started")
        if demo is not None and demo.key_id:
            with contextlib.suppress(Exception):
                _revoke(demo)
        stack.close()
        say(
            "stopped."
            + (
                f" The memories stay: memctl memories {args.user} --tenant {args.tenant} --all"
                if not code
                else ""
            )
        )
    return code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.demo", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--tenant", default="demo", help="the tenant the demo writes to (default: demo)")
    ap.add_argument("--user", default="alice", help="the user whose memories it makes (default: alice)")
    ap.add_argument(
        "--pause-s", type=float, default=0.0, help="wait this long before each step, to follow along (default: 0)"
    )
    args = ap.parse_args(argv)
    global _pause_s
    _pause_s = max(0.0, args.pause_s)
    # SIGTERM stops the demo as Ctrl-C does: through the `finally` that stops the children. Ctrl-C itself is
    # set explicitly: a process started in the background of a non-interactive shell inherits it ignored.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("\ninterrupted; everything the demo started is stopped.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
