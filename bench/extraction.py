"""The extraction benchmark: LoCoMo development conversations through the real worker, the LLM counted.

Contract: `run(budget_s, quick) -> dict` measures, never asserts, and returns
`{"name", "quick", "figures", "targets", "skipped", "markdown"}` like the other bench modules.

- data: `<repo>/../shared/bench-data/locomo-dev.json` (`bench.lib.locomo_data`), read in place (never
  copied); absent -> skipped with a message. Quick mode: the first conversation only.
- replay: each turn is one event through `MemoryClient.emit` -> Redis -> a real `celery worker -c 2` ->
  PostgreSQL: user_id = sample_id, session_id = "<sample_id>-s<N>", content = "<speaker>: <text>", role
  "user", source_turn_id = dia_id, event time = the session's date plus the turn's index in seconds; a
  `session_end` event after each session. The worker's default debounce (12 turns / 1,500 tokens / 20 s
  idle) decides the windows, and its default LLM batching (a call once 24 turns / 3,000 tokens are owed to
  the LLM, or on session end / idle) decides which windows make the LLM call.
- LLM: `OPENAI_API_KEY` / `OPENAI_BASE_URL` of the worker point at the tests' fake OpenAI-compatible
  server (`tests.fakes.openai_server`), which counts every call and its tokens (one token per four
  characters). Extraction calls are answered `{"memories": []}`; rolling-summary calls get a short
  sectioned summary (as a model would write), so later prompts carry a summary of realistic size.
- drained: every event stored, none pending or llm_pending, no candidate new, and no new LLM call for
  QUIET_S seconds.
- figures: LLM calls per 1,000 turns, prompt tokens per turn (by stage and by prompt section), the share
  of turns the gate skips (from the events' final status), and the rule extractor's throughput in-process
  on one core (`extract_rules` and `gate_window` over every session's turns, median of ROUNDS).
- a failing model (issue #13): the same paced replay with extraction answered by valid JSON of the wrong
  shape (`{"facts": [...]}`, summaries as before) and the worker's default bounds (attempt cap, retry
  backoff, circuit breaker); drained once nothing is pending and nothing changes for QUIET_S (its turns
  stay `llm_pending` by design). Its calls and prompt tokens per 1,000 turns next to the cooperative run's:
  the target is within FAILING_RATIO_TARGET of them.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bench.lib import report
from bench.lib.capture import top_own_time
from bench.lib.db import raw_connection
from bench.lib.locomo_data import DATA_FILE, load_conversations
from bench.lib.paths import REPO
from bench.lib.processes import BenchWorker
from bench.lib.progress import progress
from bench.lib.report import Column, Facts, Section, Table, Target, Text, fmt
from bench.lib.services import Services, drop_queue, services, unique_name, worker_env

ROUNDS = 5
PACED_CHUNK = 12  # the default debounce: a window is due at 12 pending turns
QUIET_S = 5.0
STALL_S = 120.0
OWN_LIMIT_S = {True: 300.0, False: 900.0}

TARGET_CALLS_PER_1000 = 100.0
TARGET_PROMPT_TOKENS_PER_TURN = 150.0
TARGET_RULE_PASS_TURNS_PER_S = 1500.0  # issue #12: the worker's rule pass on one core
FAILING_RATIO_TARGET = 1.5  # issue #13: a model that always fails costs at most 1.5x a cooperative one
ANCHORS = (
    "mem0's paper design: 2 LLM calls per add (2,000 per 1,000 turns); Memobase: about 200 calls per "
    "1,000 turns and about 244 prompt tokens per turn"
)


@dataclass(frozen=True)
class Session:
    sample_id: str
    number: int
    started: datetime
    turns: tuple[tuple[str, str], ...]  # (dia_id, content)

    @property
    def session_id(self) -> str:
        return f"{self.sample_id}-s{self.number}"


def load_sessions(*, conversations: int | None) -> list[Session]:
    """Every session of the first `conversations`, each turn as "<speaker>: <text>" (no image caption)."""
    return [
        Session(conv.sample_id, s.number, s.started, tuple((t.dia_id, t.said) for t in s.turns))
        for conv in load_conversations(DATA_FILE, conversations=conversations)
        for s in conv.sessions
    ]


# --- the fake LLM's answers ---------------------------------------------------------------------------------


def responder(body: dict[str, Any]) -> str:
    """`{"memories": []}` for extraction; for a rolling-summary request, a short summary in the requested
    sections built from the new turns (about what a model writes: well under the prompt's 250 words)."""
    system = next((m.get("content", "") for m in body.get("messages", []) if m.get("role") == "system"), "")
    if not system.startswith("You maintain the rolling summary"):
        return '{"memories": []}'
    user = next((m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"), "")
    new = user.split("## New turns", 1)[-1].strip().splitlines()
    points = [" ".join(line.split(": ", 1)[-1].split()[:14]) for line in new[-6:] if line.strip()]
    bullets = "\n".join(f"- {p}" for p in points) or "- none"
    return (
        f"## Decisions\n- none\n## Key files\n- none\n## Problems\n- none\n## Preferences\n- none\n"
        f"## Open tasks\n{bullets}"
    )


def failing_responder(body: dict[str, Any]) -> str:
    """A model the prompts were not written for: extraction answered with valid JSON of the wrong shape
    (repairs too), summaries as `responder` writes them."""
    if call_kind(body) == "extract":
        return '{"facts": [{"text": "The user talked about their week.", "importance": "medium"}]}'
    return responder(body)


def call_kind(body: dict[str, Any]) -> str:
    """The worker stage that sent a chat request, from the sections of its prompt (robust to rewording)."""
    user = "\n".join(m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user")
    if "## Conversation window" in user:
        return "extract"
    if "## New turns" in user:
        return "summarize"
    system = next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "system"), "")
    return "reconcile (judge)" if "NEW" in system else "other"


def prompt_sections(body: dict[str, Any]) -> dict[str, int]:
    """Approximate tokens (the fake's count: chars / 4) of each part of one request's prompt."""
    from tests.fakes.openai_server import approx_tokens

    out: Counter[str] = Counter()
    for m in body.get("messages", []):
        content = m.get("content") or ""
        if m.get("role") == "system":
            out["system prompt"] += approx_tokens(content)
            continue
        for part in content.split("\n\n"):
            head = part.split("\n", 1)[0]
            name = {
                "## Session summary so far": "session summary",
                "## Existing memories": "existing memories",
                "## Rule candidates": "rule candidates",
                "## Conversation window": "conversation window",
                "## Previous summary": "previous summary",
                "## New turns": "new turns",
            }.get(head, "other")
            out[name] += approx_tokens(part)
    return dict(out)


# --- replay through the worker ------------------------------------------------------------------------------


def _events(s: Session) -> list[dict[str, Any]]:
    """The session's turns as `emit` keywords, then its `session_end`."""
    out: list[dict[str, Any]] = [
        {
            "user_id": s.sample_id,
            "session_id": s.session_id,
            "content": content,
            "role": "user",
            "event_time": s.started + timedelta(seconds=i),
            "source_turn_id": dia_id,
            "event_id": f"{s.sample_id}-{dia_id}",
        }
        for i, (dia_id, content) in enumerate(s.turns)
    ]
    out.append(
        {
            "user_id": s.sample_id,
            "session_id": s.session_id,
            "type": "session_end",
            "role": "user",
            "event_time": s.started + timedelta(seconds=len(s.turns)),
            "event_id": f"{s.session_id}-end",
        }
    )
    return out


def paced_rounds(sessions: list[Session], chunk: int) -> list[list[list[dict[str, Any]]]]:
    """Rounds of chunks: each conversation sends its next `chunk` turns per round (a session's last chunk
    carries its `session_end`), as agents sending turns one by one would fill the debounce window."""
    per_conv: dict[str, list[list[dict[str, Any]]]] = {}
    for s in sessions:
        events = _events(s)
        turns, end = events[:-1], events[-1]
        chunks = [turns[i : i + chunk] for i in range(0, len(turns), chunk)] or [[]]
        chunks[-1] = [*chunks[-1], end]
        per_conv.setdefault(s.sample_id, []).extend(chunks)
    longest = max(len(c) for c in per_conv.values())
    return [[c[r] for c in per_conv.values() if r < len(c)] for r in range(longest)]


def replay(svc: Services, sessions: list[Session], *, tenant: str, queue: str, paced: bool = False) -> int:
    """Emit every event; `paced`: in rounds of PACED_CHUNK turns per conversation, each round sent once
    the worker has processed the previous one (no event left pending)."""
    from shared.client import MemoryClient

    client = MemoryClient(
        tenant,
        broker_url=svc.redis_url,
        queue=queue,
        publish_timeout_s=5.0,
        flush_at_exit=False,
        spool_path=svc.tmp / f"{queue}.spool.jsonl",
    )
    sent = 0
    try:
        if not paced:
            for s in sessions:
                for e in _events(s):
                    client.emit(**e)
                    sent += 1
        else:
            rounds = paced_rounds(sessions, PACED_CHUNK)
            with raw_connection(svc.database_url) as conn:
                for i, chunks in enumerate(rounds):
                    for c in chunks:
                        for e in c:
                            client.emit(**e)
                            sent += 1
                    client.flush()
                    progress(f"extraction (paced): round {i + 1}/{len(rounds)}", i + 1, len(rounds))
                    deadline = time.monotonic() + STALL_S
                    while time.monotonic() < deadline:
                        st = _state(conn, tenant)
                        if st["stored"] >= sent and st["pending"] == 0:
                            break
                        time.sleep(0.1)
        client.flush()
    finally:
        client.close()
    if client.spooled:
        raise RuntimeError(f"{client.spooled} events were spooled instead of queued")
    return sent


def _state(conn: Any, tenant: str) -> dict[str, int]:
    row = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE status = 'pending'), "
        "(SELECT count(*) FROM candidates WHERE tenant_id = %(t)s AND status = 'new'), "
        "count(*) FILTER (WHERE status = 'llm_pending') "
        "FROM events WHERE tenant_id = %(t)s",
        {"t": tenant},
    ).fetchone()
    return {
        "stored": int(row[0]),
        "pending": int(row[1]),
        "new_candidates": int(row[2]),
        "llm_pending": int(row[3]),
    }


def measure_worker(
    svc: Services,
    sessions: list[Session],
    *,
    deadline: float,
    paced: bool = False,
    failing: bool = False,
) -> dict[str, Any]:
    """One replay; `failing`: extraction answered by `failing_responder`, and drained with turns left
    `llm_pending` (what a failing model leaves, by design)."""
    from tests.fakes.openai_server import FakeOpenAI

    tenant, queue = unique_name("t-extract"), unique_name("bench-extract")
    turns = sum(len(s.turns) for s in sessions)
    out: dict[str, Any] = {
        "conversations": len({s.sample_id for s in sessions}),
        "sessions": len(sessions),
        "turns": turns,
        "paced": paced,
        "failing": failing,
    }
    with FakeOpenAI() as fake:
        fake.default_responder = failing_responder if failing else responder
        env = worker_env(svc, queue, OPENAI_API_KEY="bench-fake", OPENAI_BASE_URL=fake.base_url)
        progress("extraction: starting a worker (-c 2) with the fake LLM")
        worker = BenchWorker(env, queue, svc.tmp / f"{queue}.log", 2).start()
        try:
            t0 = time.monotonic()
            out["events"] = replay(svc, sessions, tenant=tenant, queue=queue, paced=paced)
            out["emit_s"] = round(time.monotonic() - t0, 2)
            last_sig: Any = None
            last_change = time.monotonic()
            with raw_connection(svc.database_url) as conn:
                while True:
                    st = _state(conn, tenant)
                    sig = (
                        st["stored"],
                        st["pending"],
                        st["new_candidates"],
                        st["llm_pending"],
                        len(fake.calls),
                    )
                    now = time.monotonic()
                    if sig != last_sig:
                        last_sig, last_change = sig, now
                    progress(
                        f"extraction: {st['stored']:,}/{out['events']:,} stored, {st['pending']:,} pending, "
                        f"{len(fake.calls):,} LLM calls",
                        st["stored"],
                        out["events"],
                    )
                    drained = (
                        st["stored"] >= out["events"]
                        and st["pending"] == 0
                        and (failing or st["llm_pending"] == 0)
                        and st["new_candidates"] == 0
                    )
                    if drained and now - last_change >= QUIET_S:
                        out["drain_s"] = round(last_change - t0, 2)
                        break
                    if now > deadline or now - last_change > STALL_S or not worker.alive():
                        out["incomplete"] = (
                            "budget" if now > deadline else ("stalled" if worker.alive() else "died")
                        )
                        out["worker_log_tail"] = worker.log_tail()
                        break
                    time.sleep(0.5)
                statuses = dict(
                    conn.execute(
                        "SELECT status, count(*) FROM events WHERE tenant_id = %s AND type = 'turn' "
                        "GROUP BY status",
                        (tenant,),
                    ).fetchall()
                )
                usage = conn.execute(
                    "SELECT stage, sum(calls), sum(prompt_tokens), sum(completion_tokens) FROM llm_usage "
                    "WHERE tenant_id = %s GROUP BY stage ORDER BY stage",
                    (tenant,),
                ).fetchall()
                candidates = dict(
                    conn.execute(
                        "SELECT origin, count(*) FROM candidates WHERE tenant_id = %s GROUP BY origin",
                        (tenant,),
                    ).fetchall()
                )
                llm_failures = conn.execute(
                    "SELECT llm_error, status, count(*) FROM events WHERE tenant_id = %s AND llm_error IS NOT "
                    "NULL GROUP BY 1, 2 ORDER BY 3 DESC",
                    (tenant,),
                ).fetchall()
                memories = int(
                    conn.execute("SELECT count(*) FROM memories WHERE tenant_id = %s", (tenant,)).fetchone()[
                        0
                    ]
                )
        finally:
            worker.stop()
            drop_queue(svc.redis_url, queue, tenant=tenant)
        calls = list(fake.calls)
        prompt_tokens, completion_tokens = fake.prompt_tokens, fake.completion_tokens
    sections: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    window_turns: list[int] = []
    for body in calls:
        sec = prompt_sections(body)
        kind = call_kind(body)
        by_kind[kind] += 1
        sections.update({f"{kind}: {k}": v for k, v in sec.items()})
        if kind == "extract":
            window = next((m["content"] for m in body["messages"] if m.get("role") == "user"), "")
            window_turns.append(window.split("## Conversation window", 1)[-1].count("\n["))
    out.update(
        llm_calls=len(calls),
        calls_by_kind=dict(by_kind),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        llm_calls_per_1000_turns=round(len(calls) * 1000 / turns, 1),
        prompt_tokens_per_turn=round(prompt_tokens / turns, 1),
        prompt_tokens_per_turn_by_section={k: round(v / turns, 1) for k, v in sections.most_common()},
        turns_per_extract_call=round(statistics.mean(window_turns), 1) if window_turns else None,
        turn_status={str(k): int(v) for k, v in statuses.items()},
        skipped_share=round(int(statuses.get("skipped", 0)) / turns, 4),
        usage_by_stage=[
            {"stage": r[0], "calls": int(r[1]), "prompt_tokens": int(r[2]), "completion_tokens": int(r[3])}
            for r in usage
        ],
        candidates_by_origin={str(k): int(v) for k, v in candidates.items()},
        memories=memories,
        llm_failures={f"{r[0]} ({r[1]})": int(r[2]) for r in llm_failures},
    )
    return out


# --- the rule extractor in-process -----------------------------------------------------------------------


def measure_rules(sessions: list[Session]) -> dict[str, Any]:
    """`gate_window` and `extract_rules` over every session's turns, in one process pinned to one core."""
    from bench.lib.project import Turn, extract_rules, gate_window

    windows = [
        [Turn(event_id=f"{s.sample_id}-{d}", role="user", content=c, source_turn_id=d) for d, c in s.turns]
        for s in sessions
    ]
    turns = sum(len(w) for w in windows)
    pinned = None
    if hasattr(os, "sched_setaffinity"):
        pinned = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {min(pinned)})
    try:
        decisions: Counter[str] = Counter()
        reasons: Counter[str] = Counter()
        for w in windows:  # warm-up, and the decisions of the pure gate
            for r in gate_window(w):
                decisions[str(r.decision)] += 1
                reasons[r.reason] += 1
            extract_rules(w)
        times: dict[str, list[float]] = {"gate_window": [], "extract_rules": [], "both": []}
        candidates = 0
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            for w in windows:
                gate_window(w)
            t1 = time.perf_counter()
            candidates = 0
            for w in windows:
                candidates += len(extract_rules(w))
            t2 = time.perf_counter()
            times["gate_window"].append(t1 - t0)
            times["extract_rules"].append(t2 - t1)
            times["both"].append(t2 - t0)
    finally:
        if pinned is not None:
            os.sched_setaffinity(0, pinned)
    med = {k: statistics.median(v) for k, v in times.items()}
    # the same windows without the "<speaker>: " prefix the replay puts on every turn
    bare: Counter[str] = Counter()
    for w in windows:
        stripped = [
            Turn(
                event_id=t.event_id,
                role=t.role,
                content=t.content.split(": ", 1)[-1],
                source_turn_id=t.source_turn_id,
            )
            for t in w
        ]
        bare.update(str(r.decision) for r in gate_window(stripped))
    return {
        "turns": turns,
        "rounds": ROUNDS,
        "candidates": candidates,
        "turns_per_s": {k: round(turns / v) for k, v in med.items()},
        "us_per_turn": {k: round(v * 1e6 / turns, 1) for k, v in med.items()},
        "gate_decisions": dict(decisions),
        "gate_reasons": dict(reasons.most_common()),
        "gate_decisions_without_speaker_prefix": dict(bare),
        "profile_top_tottime_us_per_turn": _profile_rules(windows, turns),
    }


def _profile_rules(windows: list[list[Any]], turns: int) -> list[dict[str, Any]]:
    import cProfile

    from bench.lib.project import extract_rules, gate_window

    profiler = cProfile.Profile()
    profiler.enable()
    for w in windows:
        gate_window(w)
        extract_rules(w)
    profiler.disable()
    return [
        {"function": function, "us": round(own_s * 1e6 / turns, 1), "calls": calls}
        for function, own_s, calls in top_own_time(profiler)
    ]


# --- the benchmark ----------------------------------------------------------------------------------------


def run(budget_s: float, quick: bool) -> dict[str, Any]:
    budget_s = min(budget_s, OWN_LIMIT_S[quick])
    started = time.monotonic()
    if not DATA_FILE.is_file():
        msg = f"the LoCoMo development data is not at {DATA_FILE} (see ../shared/bench-data/README.md)"
        progress(f"extraction: skipped: {msg}")
        return report.skipped_result("extraction", quick, msg)
    sessions = load_sessions(conversations=1 if quick else None)
    figures: dict[str, Any] = {"data": str(DATA_FILE.relative_to(REPO.parent))}
    progress("extraction: rule extractor and gate in-process")
    figures["rules"] = measure_rules(sessions)
    with services() as svc:
        figures["services"] = svc.description
        # burst: everything emitted at once (windows hold whatever arrived before the task ran); paced: the
        # next 12 turns of each conversation only once the worker is done with the previous ones (live-like)
        figures["burst"] = measure_worker(svc, sessions, deadline=started + budget_s / 2)
        figures["worker"] = measure_worker(svc, sessions, deadline=started + budget_s * 0.75, paced=True)
        figures["failing"] = measure_worker(
            svc, sessions, deadline=started + budget_s, paced=True, failing=True
        )
    figures["failing"].update(_ratios(figures["failing"], figures["worker"]))
    return report.result(
        "extraction", quick, figures, [], started=started, targets=declared_targets, blocks=SECTION
    )


def _ratios(failing: dict[str, Any], cooperative: dict[str, Any]) -> dict[str, float | None]:
    """The failing model's calls and prompt tokens per turn over the cooperative run's."""

    def ratio(key: str) -> float | None:
        base = cooperative.get(key)
        return round(failing[key] / base, 2) if base else None

    return {
        "calls_ratio": ratio("llm_calls_per_1000_turns"),
        "prompt_tokens_ratio": ratio("prompt_tokens_per_turn"),
    }


# --- targets and the report -------------------------------------------------------------------------------


def _note(f: dict[str, Any]) -> str:
    w = f["worker"]
    note = f"{w['turns']:,} turns, {w['conversations']} conversations"
    return note + (f"; incomplete: {w['incomplete']}" if w.get("incomplete") else "")


TARGETS = (
    Target(
        "LLM calls per 1,000 turns",
        "worker.llm_calls_per_1000_turns",
        "<=",
        TARGET_CALLS_PER_1000,
        "calls",
        _note,
    ),
    Target(
        "prompt tokens per turn",
        "worker.prompt_tokens_per_turn",
        "<=",
        TARGET_PROMPT_TOKENS_PER_TURN,
        "tokens",
        _note,
    ),
    Target(
        "the worker's rule pass (`gate_window`: gate and rules), one core",
        "rules.turns_per_s.gate_window",
        ">=",
        TARGET_RULE_PASS_TURNS_PER_S,
        "turns/s",
        lambda f: "median of the rounds, pinned to one core",
    ),
)


def _failing_note(f: dict[str, Any]) -> str:
    w, c = f["failing"], f["worker"]
    note = (
        f"{w['llm_calls_per_1000_turns']} calls per 1,000 turns and {w['prompt_tokens_per_turn']} prompt "
        f"tokens per turn, against {c['llm_calls_per_1000_turns']} and {c['prompt_tokens_per_turn']}"
    )
    return note + (f"; incomplete: {w['incomplete']}" if w.get("incomplete") else "")


FAILING_TARGETS = (
    Target(
        "a model that always fails: LLM calls per 1,000 turns / a cooperative one's",
        "failing.calls_ratio",
        "<=",
        FAILING_RATIO_TARGET,
        "x",
        _failing_note,
    ),
    Target(
        "a model that always fails: prompt tokens per turn / a cooperative one's",
        "failing.prompt_tokens_ratio",
        "<=",
        FAILING_RATIO_TARGET,
        "x",
        _failing_note,
    ),
)


def declared_targets(figures: dict[str, Any]) -> tuple[Target, ...]:
    """The targets; those of the failing model when it was measured (figures from before it have none)."""
    return TARGETS + (FAILING_TARGETS if "failing" in figures else ())


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    return report.evaluate(declared_targets(figures), figures)


def _default(name: str) -> Any:
    from shared.settings import Settings

    return Settings.model_fields[name].default


def _pairs(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in d.items())


def _setup(f: dict[str, Any]) -> str:
    w = f["worker"]
    return f"""Anchors: {ANCHORS}. Data: `{f["data"]}` (read in place), {w["conversations"]} conversations,
        {w["sessions"]} sessions, {w["turns"]:,} turns, replayed as {w["events"]:,} events (a `session_end`
        after each session) through `MemoryClient.emit` to a real `celery worker -c 2` with the default
        debounce (12 turns / 1,500 tokens / 20 s idle) and LLM batching (a window makes the LLM call once
        {_default("llm_batch_turns")} turns or {_default("llm_batch_tokens"):,} tokens are owed to it, or on
        session end or idle; smaller windows apply their rules and leave their turns `llm_pending` for the
        next one); {f["services"]}. The worker's LLM is the tests' fake OpenAI-compatible server: extraction
        answered `{{"memories": []}}`, rolling summaries with a short sectioned summary; tokens as it counts
        them (characters / 4). Emitted in {w["emit_s"]} s, drained {fmt(w.get("drain_s"))} s after the first
        emit."""


def _replays(f: dict[str, Any]) -> str:
    b = f.get("burst")
    burst = (
        f""" (burst: {b["llm_calls_per_1000_turns"]} calls per 1,000 turns, {b["prompt_tokens_per_turn"]}
        prompt tokens per turn, {fmt(b["turns_per_extract_call"])} turns per extraction call, drained in
        {fmt(b.get("drain_s"))} s)."""
        if b
        else "."
    )
    return f"""Two replays, each on a fresh worker and tenant. Paced (the figures below and the targets):
        each conversation sends its next {PACED_CHUNK} turns (a session's last chunk with its `session_end`)
        once the worker has left no event pending, as agents sending one turn at a time would fill the
        debounce window. Burst: every event emitted at once, so a window holds whatever arrived before its
        task ran{burst}"""


def _rules_text(f: dict[str, Any]) -> str:
    r = f["rules"]
    top = ", ".join(f"`{x['function']}` {x['us']}" for x in r["profile_top_tottime_us_per_turn"][:6])
    return f"""Rule throughput: in-process, pinned to one core, every session's turns as one window (as the
        worker calls them), median of {r["rounds"]} rounds after a warm-up. Gate decisions of the pure gate
        over the same windows: {_pairs(r["gate_decisions"])}; reasons: {_pairs(r["gate_reasons"])}. The
        same windows without the `<speaker>: ` prefix the replay puts on every turn:
        {_pairs(r["gate_decisions_without_speaker_prefix"])}. Top own time (cProfile, one pass of both, µs per
        turn, profiler overhead included): {top}."""


def _skipped_turns(f: dict[str, Any]) -> str:
    w = f["worker"]
    return f"{w['turn_status'].get('skipped', 0):,} ({100 * w['skipped_share']:.1f} %)"


FIGURES = Facts(
    (
        Column(
            "LLM calls (all stages)",
            lambda f: f"{f['worker']['llm_calls']:,} ({_pairs(f['worker']['calls_by_kind'])})",
        ),
        Column("LLM calls per 1,000 turns", "worker.llm_calls_per_1000_turns"),
        Column("turns per extraction call (mean window sent)", "worker.turns_per_extract_call"),
        Column("prompt tokens (all calls)", "worker.prompt_tokens", ","),
        Column("prompt tokens per turn", "worker.prompt_tokens_per_turn"),
        Column("completion tokens (all calls)", "worker.completion_tokens", ","),
        Column("turns the gate skipped (final status `skipped`)", _skipped_turns),
        Column("turn statuses", lambda f: _pairs(dict(sorted(f["worker"]["turn_status"].items())))),
        Column(
            "candidates by origin / memories",
            lambda f: (
                f"{_pairs(f['worker']['candidates_by_origin']) or 'none'} / {f['worker']['memories']:,}"
            ),
        ),
        Column(
            "`gate_window` then `extract_rules` again (the rules run twice; the worker runs the first only)",
            lambda f: (
                f"{f['rules']['turns_per_s']['both']:,} turns/s ({f['rules']['us_per_turn']['both']} µs/turn)"
            ),
        ),
        Column(
            "`gate_window` alone (the worker's whole rule pass: the plan reuses the gate's candidates)",
            lambda f: f"{f['rules']['turns_per_s']['gate_window']:,} turns/s",
        ),
        Column(
            "`extract_rules` alone",
            lambda f: (
                f"{f['rules']['turns_per_s']['extract_rules']:,} turns/s "
                f"({f['rules']['candidates']:,} candidates)"
            ),
        ),
    )
)


def _usage(w: dict[str, Any]) -> str | None:
    if not w["usage_by_stage"]:
        return None
    return "As the worker recorded them (`llm_usage`): " + "; ".join(
        f"{u['stage']}: {u['calls']:,} calls, {u['prompt_tokens']:,} prompt / {u['completion_tokens']:,} "
        "completion tokens"
        for u in w["usage_by_stage"]
    )


def _failing_text(f: dict[str, Any]) -> str | None:
    w = f.get("failing")
    if not w:
        return None
    return f"""A model that always fails (issue #13): the same paced replay on a fresh worker and tenant, with
        every extraction answer (and repair) valid JSON of the wrong shape and the worker's default bounds: a
        turn is part of at most {_default("llm_max_attempts")} failed calls, waits {_default("llm_retry_s"):g}
        s (doubling) before any window sends it again, and {_default("llm_breaker_failures")} failures in a
        row open the endpoint's breaker for {_default("llm_breaker_base_s"):g} s (doubling, up to
        {_default("llm_breaker_max_s"):g} s). {w["llm_calls"]:,} calls ({_pairs(w["calls_by_kind"])}),
        {w["llm_calls_per_1000_turns"]} per 1,000 turns ({fmt(w.get("calls_ratio"))}x the cooperative run),
        {w["prompt_tokens_per_turn"]} prompt tokens per turn ({fmt(w.get("prompt_tokens_ratio"))}x); turn
        statuses {_pairs(dict(sorted(w["turn_status"].items())))}; the reasons the turns keep:
        {_pairs(w.get("llm_failures", {})) or "none"}."""


SECTION = (
    Text(_setup),
    Text(
        lambda f: (
            f"**The replay did not drain ({f['worker']['incomplete']}): figures are partial.**"
            if f["worker"].get("incomplete")
            else None
        )
    ),
    Text(_replays),
    FIGURES,
    Text(_rules_text),
    Text(_failing_text),
    Section(
        "Where the prompt tokens go",
        (
            Text("Prompt tokens per turn (all prompt tokens / turns replayed), by stage and prompt section:"),
            Table(
                (Column("stage: section", lambda kv: kv[0]), Column("tokens per turn", lambda kv: kv[1])),
                lambda w: list(w["prompt_tokens_per_turn_by_section"].items()),
            ),
            Text(_usage),
        ),
        data="worker",
    ),
)


def render_markdown(result: dict[str, Any]) -> str:
    return report.render(result, SECTION)


if __name__ == "__main__":
    import sys

    result = run(float(os.environ.get("BENCH_BUDGET_S", "600")), "--quick" in sys.argv)
    print(result["markdown"])
