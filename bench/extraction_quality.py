"""Extraction quality: the labelled corpus (`tests/data/extraction_quality/`) through the real stack, scored.

Contract: `run(budget_s, quick) -> dict` measures, never asserts, and returns
`{"name", "quick", "figures", "targets", "skipped", "markdown"}` like the other bench modules. On its own:

    python -m bench.extraction_quality --split dev --mode rules [--quick] [--corpus DIR] [--json PATH]

prints the figures and, for the dev split, every missed case (what was expected, what was stored).

- corpus: `bench.lib.quality.load_cases` (format: the corpus README); the dev and the test split are run and
  reported separately, the test split only ever for its figures (its misses are counted, never listed).
- modes: `rules`: a real `celery worker -c 2` with no `OPENAI_API_KEY` (extraction without an LLM: the rules,
  and the residual sentence filter on the sentences no rule touched; turns the gate routes to the LLM stay
  `llm_pending`). `llm`: the same worker with `OPENAI_BASE_URL` on the tests'
  fake OpenAI-compatible server answering as a scripted oracle (`ScriptedModel`): each extraction request
  gets, for every corpus case whose turns are in its conversation window, that case's expected memories.
  The oracle sees only what the worker sends it, so the gap between the two modes is what the rules miss
  and the gap between `llm` and 1.0 is what routing loses (a turn the gate keeps from the LLM).
  Embeddings: the hashing embedder (the default) in both.
- replay: one tenant per split and mode, one user per case (user_id = case id), sessions "<case>-s<N>",
  events through `MemoryClient.emit_many` with the case's event times (a fixed base time plus the turn's
  index when a case gives none) and a `session_end` after each session. Single cases are emitted all at
  once; update scenarios event by event in their `deliver` order, each sent only once the previous one is
  stored, extracted and reconciled (concurrently across users), so out-of-order delivery is real.
- drained: every event stored, none `pending` (nor `llm_pending` with the LLM), no candidate `new`, and
  nothing changed for QUIET_S seconds.
- read back: each user's current memories (status active, valid_to null) from PostgreSQL, and for each
  update scenario the top hit of `POST /v1/search` for its `query` through the real API (uvicorn, a key of
  the run's tenant).
- scored by `bench.lib.quality` (`score_single`, `score_update`, `Tally`): MUST / WORTH recall, precision,
  nothing-when-nothing, forbidden stored, newest-wins@1 (all and explicit), stale-current; per language and
  per form. Targets (issue #12) on the test split, without an LLM.
- quick mode: the dev split only, without an LLM, QUICK_CASES cases (the first of each file and type, in turn).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.lib import report
from bench.lib.db import raw_connection
from bench.lib.paths import REPO
from bench.lib.processes import BenchWorker
from bench.lib.progress import progress
from bench.lib.quality import (
    CORPUS_DIR,
    LANGS,
    SPLITS,
    Case,
    Groups,
    Tally,
    load_cases,
    matches,
    score_single,
    score_update,
)
from bench.lib.report import Column, Lines, Section, Table, Target, Text, fmt
from bench.lib.services import Services, drop_queue, services, unique_name, worker_env

MODES = ("rules", "llm")
MODE_NAMES = {"rules": "no LLM (rules + residual filter)", "llm": "rules + scripted LLM"}
QUICK_CASES = 60
BASE_TIME = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # event time of a turn without `at`: base + index s
QUIET_S = 1.0
STALL_S = 90.0  # nothing changed for this long: give up (an idle debounce legitimately waits 20 s)
POLL_S = 0.2
REPORT_S = 1.0  # progress at most this often
OWN_LIMIT_S = {True: 300.0, False: 900.0}
SEARCH_K = 5
WORKER_CONCURRENCY = 2

# issue #12 acceptance, on the test split, without an LLM
TARGET_MUST = 0.90
TARGET_WORTH = 0.60
TARGET_PRECISION = 0.95
TARGET_NOTHING = 0.95
TARGET_NEWEST_EXPLICIT = 0.85


# --- events of a case ----------------------------------------------------------------------------------------


def event_id(case: Case, index: int) -> str:
    return f"{case.id}-e{index}"


def session_id(case: Case, session: int) -> str:
    return f"{case.id}-s{session}"


def event_time(case: Case, index: int) -> datetime:
    at = case.turns[index].at
    return datetime.fromisoformat(at) if at else BASE_TIME + timedelta(seconds=index)


def _turn_event(case: Case, index: int) -> dict[str, Any]:
    turn = case.turns[index]
    return {
        "user_id": case.id,
        "session_id": session_id(case, turn.session),
        "content": turn.text,
        "role": turn.role,
        "event_time": event_time(case, index),
        "source_turn_id": str(index),
        "event_id": event_id(case, index),
    }


def _end_event(case: Case, session: int, after: datetime) -> dict[str, Any]:
    return {
        "user_id": case.id,
        "session_id": session_id(case, session),
        "type": "session_end",
        "role": "user",
        "event_time": after + timedelta(seconds=1),
        "event_id": f"{session_id(case, session)}-end",
    }


def case_steps(case: Case) -> list[list[dict[str, Any]]]:
    """The case's events as `emit_many` batches: a single case in one batch (each session's turns, then its
    `session_end`); an update scenario one event per batch in `deliver` order, each followed by its
    session's `session_end` once the session's last delivered event is sent."""
    order = list(case.deliver) if case.type == "update" else list(range(len(case.turns)))
    last_of: dict[int, int] = {}
    for position, index in enumerate(order):
        last_of[case.turns[index].session] = position
    latest: dict[int, datetime] = {}
    steps: list[list[dict[str, Any]]] = []
    for position, index in enumerate(order):
        session = case.turns[index].session
        ev = _turn_event(case, index)
        latest[session] = max(latest.get(session, ev["event_time"]), ev["event_time"])
        batch = [ev]
        if last_of[session] == position:
            batch.append(_end_event(case, session, latest[session]))
        steps.append(batch)
    if case.type == "single":
        return [[e for step in steps for e in step]]
    return steps


# --- the scripted model ---------------------------------------------------------------------------------------

_WINDOW_LINE = re.compile(r"^\[([^\]\s]+)\] (\w+): ", re.M)
_RULE_LINE = re.compile(
    r"^- \[(?P<tier>must|worth)\] (?P<op>\w+) (?P<kind>\w+)/(?P<category>\w+)"
    r"(?: slot=(?P<slot>\S+) value=(?P<value>.*?))?: (?P<content>.*) \(events: (?P<events>[^()]*)\)$",
    re.M,
)
_RULE_WORDS = ("rule", "negat", "prohibit", "request", "style")
_NEGATIONS = ("not", "never", "don't", "no", "avoid", "stop", "不要", "不用", "禁", "别", "不")


def mentions(groups: Groups, text: str) -> bool:
    """Some group has one of its terms in `text` (a looser `matches`: where a statement is about this)."""
    return any(matches((group,), text) for group in groups)


def _first_terms(groups: Groups) -> list[str]:
    return [group[0] for group in groups]


def _value(groups: Groups) -> str:
    """A slot's value: the first term of every group ("node 22", not "node": 18 and 22 must differ)."""
    return " ".join(_first_terms(groups))


def _content(case: Case, groups: Groups) -> str:
    """A statement written from the first term of each group, in the case's language."""
    terms = _first_terms(groups)
    return f"Memo: {'; '.join(terms)}." if case.lang == "en" else f"备忘：{'，'.join(terms)}。"


def _kind_category(case: Case, tier: str, groups: Groups, slot: str | None) -> tuple[str, str]:
    negated = any(t.casefold() in _NEGATIONS for group in groups for t in group)
    if tier == "must" and (negated or any(w in case.form for w in _RULE_WORDS)):
        return "procedural", "feedback"
    if "prefer" in case.form:
        return "semantic", "preference"
    if "lesson" in case.form:
        return "episodic", "lesson"
    return "semantic", "profile" if (slot or "").startswith("user.") else "fact"


def update_values(case: Case) -> dict[int, Groups]:
    """Which value each event of an update scenario states: the newest value for the latest event that
    mentions it (by event time; the latest event when none does), an older value for an earlier event
    that states it (matched by its terms, else by rank when there is one event per older value)."""
    order = sorted(range(len(case.turns)), key=lambda i: (event_time(case, i), i))
    users = [i for i in order if case.turns[i].role == "user"] or order
    newest = next(
        (i for i in reversed(users) if matches(case.new, case.turns[i].text)),
        next((i for i in reversed(users) if mentions(case.new, case.turns[i].text)), users[-1]),
    )
    out: dict[int, Groups] = {newest: case.new}
    earlier = [i for i in users if order.index(i) < order.index(newest)]
    for rank, i in enumerate(earlier):
        text = case.turns[i].text
        value = next((old for old in case.old if matches(old, text)), None)
        value = value or next((old for old in case.old if mentions(old, text)), None)
        if value is None and len(case.old) == len(earlier):
            value = case.old[rank]
        if value is not None:
            out[i] = value
    return out


@dataclass
class _Item:
    """One memory the oracle may state, and the events it is about."""

    case: Case
    tier: str
    groups: Groups
    slot: str | None
    about: tuple[str, ...]  # event ids whose turns state it (all the case's turns when none mentions it)


def _items(case: Case, slot_of: dict[str, str]) -> list[_Item]:
    if case.type == "update":
        slot = slot_of.get(case.id)
        return [
            _Item(case, "worth", groups, slot, (event_id(case, i),))
            for i, groups in update_values(case).items()
        ]
    out: list[_Item] = []
    slots_used: set[str] = set()
    everything = tuple(event_id(case, i) for i in range(len(case.turns)))
    for e in case.expect:
        about = tuple(event_id(case, i) for i, t in enumerate(case.turns) if mentions(e.terms, t.text))
        slot = e.slot if e.slot and e.slot not in slots_used else None  # one value per slot and case
        if slot:
            slots_used.add(slot)
        out.append(_Item(case, e.tier, e.terms, slot, about or everything))
    return out


class ScriptedModel:
    """The fake LLM's answers: extraction requests get the expected memories of the corpus cases whose turns
    are in the request's conversation window (found by the event ids the worker prints before each turn);
    a memory is stated only when a turn that mentions it is in the window (the model sees nothing else). A
    right rule candidate shown in the prompt is repeated as it is, as the prompt asks (with the item's slot
    when the rule has none); otherwise the memory is written from the first term of each group, with the
    slot the corpus names (for an update scenario: the one the rules give its statements, else one per
    scenario) and the first term of every group as its value. The reconcile judge gets "complement" for
    every pair (no change: the new one is added); rolling summaries and other prompts are answered as
    `bench.extraction.responder` does."""

    def __init__(self, cases: Sequence[Case]):
        from bench.lib.project import Turn, extract_rules

        self.slot_of: dict[str, str] = {}
        for case in cases:
            if case.type != "update":
                continue
            values = update_values(case)
            for i, groups in values.items():
                turn = Turn(event_id=event_id(case, i), role="user", content=case.turns[i].text)
                slot = next(
                    (c.slot for c in extract_rules([turn]) if c.slot and matches(groups, c.content)), None
                )
                if slot:
                    self.slot_of[case.id] = slot
                    break
            self.slot_of.setdefault(case.id, f"attr.{case.id}")
        self.items_of: dict[str, list[_Item]] = {}
        self.case_of: dict[str, str] = {}
        for case in cases:
            self.items_of[case.id] = _items(case, self.slot_of)
            for i in range(len(case.turns)):
                self.case_of[event_id(case, i)] = case.id
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        from bench.extraction import responder
        from core.prompts.judge import JUDGE_PROMPT

        messages = body.get("messages", [])
        system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
        user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        try:
            if "## Conversation window" in user:
                answer = self.extract(user)
                self._count("extract")
                return answer
            if system == JUDGE_PROMPT:
                pairs = len(re.findall(r"^\d+\. EXISTING: ", user, re.M))
                self._count("judge")
                return json.dumps({"verdicts": [{"id": n, "verdict": "complement"} for n in range(pairs)]})
        except Exception:  # never fail the server thread: an error answer is counted and reported
            self._count("oracle_error")
            return '{"memories": []}'
        self._count("summary" if system.startswith("You maintain the rolling summary") else "other")
        return responder(body)

    def _count(self, kind: str) -> None:
        with self._lock:
            self.counts[kind] += 1

    def extract(self, prompt: str) -> str:
        window = prompt.split("## Conversation window\n", 1)[1].split("\n\nExtract the memories", 1)[0]
        rules_part = prompt.split("## Rule candidates\n", 1)[-1].split("\n\n## Conversation window", 1)[0]
        rule_candidates = [m.groupdict() for m in _RULE_LINE.finditer(rules_part)]
        for rc in rule_candidates:  # a slot without a value is printed "value=None"
            rc["value"] = None if rc["value"] in (None, "None") else rc["value"]
        in_window = [m.group(1) for m in _WINDOW_LINE.finditer(window)]
        seen = set(in_window)
        memories: list[dict[str, Any]] = []
        for case_id in dict.fromkeys(self.case_of[i] for i in in_window if i in self.case_of):
            for item in self.items_of[case_id]:
                sources = [i for i in item.about if i in seen]
                if sources:
                    memories.append(self._memory(item, sources, rule_candidates))
        return json.dumps({"memories": memories}, ensure_ascii=False)

    def _memory(
        self, item: _Item, sources: list[str], rule_candidates: list[dict[str, Any]]
    ) -> dict[str, Any]:
        for rc in rule_candidates:
            events = {e.strip() for e in rc["events"].split(",")}
            if rc["op"] == "remember" and events & set(sources) and matches(item.groups, rc["content"]):
                return {
                    "content": rc["content"],
                    "kind": rc["kind"],
                    "category": rc["category"],
                    "tier": "must" if "must" in (item.tier, rc["tier"]) else "worth",
                    # the rule's slot when it has one (merging keeps it), else the item's: the model names
                    # the attribute the rule left unnamed, so a newer value supersedes the older one
                    "slot": rc["slot"] or item.slot,
                    "value": rc["value"] if rc["slot"] else (_value(item.groups) if item.slot else None),
                    "op": "remember",
                    "confidence": 0.9,
                    "source_event_ids": sources,
                }
        kind, category = _kind_category(item.case, item.tier, item.groups, item.slot)
        return {
            "content": _content(item.case, item.groups),
            "kind": kind,
            "category": category,
            "tier": item.tier,
            "slot": item.slot,
            "value": _value(item.groups) if item.slot else None,
            "op": "remember",
            "confidence": 0.9,
            "source_event_ids": sources,
        }


# --- replay through the worker ------------------------------------------------------------------------------


@dataclass
class Group:
    """The cases of one split in one run: their own tenant."""

    split: str
    cases: list[Case]
    tenant: str = field(default_factory=lambda: unique_name("t-quality"))
    events: int = 0


def _user_state(conn: Any, tenant: str, open_statuses: Sequence[str]) -> dict[str, tuple[int, int, int]]:
    """Per user: events stored, events not yet done, candidates still new."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for user, stored, open_ in conn.execute(
        "SELECT user_id, count(*), count(*) FILTER (WHERE status = ANY(%s)) FROM events WHERE tenant_id = %s "
        "GROUP BY user_id",
        (list(open_statuses), tenant),
    ).fetchall():
        out[user][0], out[user][1] = int(stored), int(open_)
    for user, new in conn.execute(
        "SELECT user_id, count(*) FROM candidates WHERE tenant_id = %s AND status = 'new' GROUP BY user_id",
        (tenant,),
    ).fetchall():
        out[user][2] = int(new)
    return {u: (v[0], v[1], v[2]) for u, v in out.items()}


def replay(
    svc: Services, groups: list[Group], *, queue: str, llm: bool, deadline: float, calls: Any = None
) -> dict[str, Any]:
    """Emit every group's events (update scenarios step by step) and wait until the worker drained them."""
    from shared.client import MemoryClient

    open_statuses = ("pending", "llm_pending") if llm else ("pending",)
    clients = {
        g.tenant: MemoryClient(
            g.tenant,
            broker_url=svc.redis_url,
            queue=queue,
            publish_timeout_s=5.0,
            flush_at_exit=False,
            spool_path=svc.tmp / f"{g.tenant}.spool.jsonl",
        )
        for g in groups
    }
    sent: Counter[tuple[str, str]] = Counter()
    waiting: dict[tuple[str, str], list[list[dict[str, Any]]]] = {}
    out: dict[str, Any] = {"incomplete": None}

    def send(tenant: str, user: str, batch: list[dict[str, Any]]) -> None:
        clients[tenant].emit_many(batch)
        sent[(tenant, user)] += len(batch)

    t0 = time.monotonic()
    try:
        for g in groups:
            g.events = 0
            for case in g.cases:
                steps = case_steps(case)
                g.events += sum(len(s) for s in steps)
                send(g.tenant, case.id, steps[0])
                if len(steps) > 1:
                    waiting[(g.tenant, case.id)] = steps[1:]
        out["emit_s"] = round(time.monotonic() - t0, 2)
        total = sum(g.events for g in groups)
        last_sig: Any = None
        last_change = last_report = time.monotonic()
        with raw_connection(svc.database_url) as conn:
            while True:
                state = {g.tenant: _user_state(conn, g.tenant, open_statuses) for g in groups}
                for key in list(waiting):
                    stored, open_, new = state[key[0]].get(key[1], (0, 0, 0))
                    if stored >= sent[key] and open_ == 0 and new == 0:
                        send(key[0], key[1], waiting[key].pop(0))
                        if not waiting[key]:
                            del waiting[key]
                stored = sum(v[0] for s in state.values() for v in s.values())
                open_ = sum(v[1] for s in state.values() for v in s.values())
                new = sum(v[2] for s in state.values() for v in s.values())
                now = time.monotonic()
                sig = (stored, open_, new, sum(sent.values()), len(calls) if calls is not None else 0)
                if sig != last_sig:
                    last_sig, last_change = sig, now
                if now - last_report >= REPORT_S:
                    last_report = now
                    progress(
                        f"{stored:,}/{total:,} events stored, {open_:,} open, {new:,} candidates new, "
                        f"{len(waiting):,} update scenarios sending",
                        stored,
                        total,
                    )
                drained = not waiting and stored >= sum(sent.values()) and open_ == 0 and new == 0
                if drained and now - last_change >= QUIET_S:
                    out["drain_s"] = round(last_change - t0, 2)
                    break
                if now > deadline or now - last_change > STALL_S:
                    out["incomplete"] = "budget" if now > deadline else "stalled"
                    break
                time.sleep(POLL_S)
    finally:
        for client in clients.values():
            client.close()
    spooled = sum(c.spooled for c in clients.values())
    if spooled:
        raise RuntimeError(f"{spooled} events were spooled instead of queued")
    out["events"] = sum(sent.values())
    return out


def read_back(svc: Services, group: Group) -> dict[str, Any]:
    """The group's current memories per user, its turns' final statuses and its candidates by origin."""
    with raw_connection(svc.database_url) as conn:
        memories: dict[str, list[str]] = defaultdict(list)
        for user, content in conn.execute(
            "SELECT user_id, content FROM memories WHERE tenant_id = %s AND status = 'active' "
            "AND valid_to IS NULL ORDER BY user_id, recorded_at, id",
            (group.tenant,),
        ).fetchall():
            memories[str(user)].append(str(content))
        statuses = conn.execute(
            "SELECT status, count(*) FROM events WHERE tenant_id = %s AND type = 'turn' GROUP BY status",
            (group.tenant,),
        ).fetchall()
        origins = conn.execute(
            "SELECT origin, count(*) FROM candidates WHERE tenant_id = %s GROUP BY origin", (group.tenant,)
        ).fetchall()
    return {
        "memories": memories,
        "turn_status": {str(k): int(v) for k, v in sorted(statuses)},
        "candidates_by_origin": {str(k): int(v) for k, v in sorted(origins)},
    }


def top_hits(api_url: str, key: str, cases: Sequence[Case]) -> dict[str, str | None]:
    """The top hit of `POST /v1/search` for each update scenario's query (None: no result)."""
    import httpx

    out: dict[str, str | None] = {}
    with httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        for case in cases:
            if case.type != "update":
                continue
            r = http.post("/v1/search", json={"user_id": case.id, "query": case.query, "k": SEARCH_K})
            if r.status_code == 404:  # a user the API never saw
                out[case.id] = None
                continue
            r.raise_for_status()
            results = [h for h in r.json()["results"] if h["type"] == "memory"]
            out[case.id] = results[0]["content"] if results else None
    return out


# --- scoring -----------------------------------------------------------------------------------------------


def _terms(groups: Groups) -> str:
    return " + ".join("|".join(g) for g in groups)


def score_group(
    group: Group, memories: dict[str, list[str]], tops: dict[str, str | None], *, details: bool
) -> dict[str, Any]:
    """The group's figures: overall, per language, per form; the misses (with what was expected and what was
    stored when `details`, else only their number)."""
    tally = Tally()
    misses: list[dict[str, Any]] = []
    for case in group.cases:
        current = memories.get(case.id, [])
        if case.type == "single":
            s = score_single(case, current)
            tally.add_single(case, s)
            missing = [
                f"{e.tier}: {_terms(e.terms)}"
                for e, (_tier, found) in zip(case.expect, s.expected, strict=True)
                if not found
            ]
            if missing or s.wrong or s.forbidden:
                misses.append(
                    {
                        "id": case.id,
                        "lang": case.lang,
                        "form": case.form,
                        "turns": [f"{t.role}: {t.text}" for t in case.turns],
                        "missing": missing,
                        "forbidden": [c for c in current if any(matches(f, c) for f in case.forbid)],
                        "wrong": [
                            c
                            for c in current
                            if not any(matches(e.terms, c) for e in case.expect)
                            and not any(matches(a, c) for a in case.allow)
                        ],
                        "stored": current,
                    }
                )
        else:
            u = score_update(case, tops.get(case.id), current)
            tally.add_update(case, u)
            if not u.newest_top or u.stale_current:
                misses.append(
                    {
                        "id": case.id,
                        "lang": case.lang,
                        "form": case.form,
                        "turns": [f"{t.at} s{t.session} {t.role}: {t.text}" for t in case.turns],
                        "deliver": list(case.deliver),
                        "query": case.query,
                        "new": _terms(case.new),
                        "top_hit": tops.get(case.id),
                        "stale": [
                            c
                            for c in current
                            if any(matches(o, c) for o in case.old) and not matches(case.new, c)
                        ],
                        "stored": current,
                    }
                )
    keys = list(tally.keys())
    missed_ids = {m["id"] for m in misses}
    passed: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # per form: [cases without a miss, cases]
    for case in group.cases:
        passed[case.form][0] += case.id not in missed_ids
        passed[case.form][1] += 1
    return {
        "cases": len(group.cases),
        "singles": sum(c.type == "single" for c in group.cases),
        "updates": sum(c.type == "update" for c in group.cases),
        "all": tally.figures(),
        "by_lang": {k: tally.figures(k) for k in LANGS if k in keys},
        "by_form": {k.split(":", 1)[1]: tally.figures(k) for k in keys if k.startswith("form:")},
        "passed_by_form": {k: v for k, v in sorted(passed.items())},
        "missed": len(misses),
        "misses": misses if details else None,
    }


# --- one run: one mode, the splits side by side -----------------------------------------------------------------


def run_mode(
    svc: Services,
    api: Any,
    mode: str,
    cases_by_split: dict[str, list[Case]],
    *,
    deadline: float,
) -> list[dict[str, Any]]:
    """Replay every split's cases on one fresh worker (one tenant per split) and score each split."""
    from bench.lib.project import create_key, get_engine, session_scope
    from tests.fakes.openai_server import FakeOpenAI

    groups = [Group(split, cases) for split, cases in cases_by_split.items() if cases]
    queue = unique_name("bench-quality")
    fake = None
    oracle = None
    extra = {"MEMORY_EMBEDDER": "hashing"}
    if mode == "llm":
        oracle = ScriptedModel([c for g in groups for c in g.cases])
        fake = FakeOpenAI().start()
        fake.default_responder = oracle
        # one tenant holds a whole split: the dev split's LLM traffic (about 2,800 extraction calls) passes
        # the default daily token budget of 2,000,000 and would leave turns llm_pending (budget_exhausted),
        # which is the budget working, not what this benchmark measures
        extra.update(
            OPENAI_API_KEY="bench-fake", OPENAI_BASE_URL=fake.base_url, MEMORY_DAILY_TOKEN_BUDGET="1000000000"
        )
    try:
        progress(f"{MODE_NAMES[mode]}: starting a worker (-c {WORKER_CONCURRENCY})")
        worker = BenchWorker(
            worker_env(svc, queue, **extra), queue, svc.tmp / f"{queue}.log", WORKER_CONCURRENCY
        ).start()
        try:
            replayed = replay(
                svc,
                groups,
                queue=queue,
                llm=mode == "llm",
                deadline=deadline,
                calls=fake.calls if fake else None,
            )
            if replayed["incomplete"] and not worker.alive():
                replayed["incomplete"] = "died"
            if replayed["incomplete"]:
                replayed["worker_log_tail"] = worker.log_tail()
        finally:
            worker.stop()
            for g in groups:
                drop_queue(svc.redis_url, queue, tenant=g.tenant)
        llm_calls = dict(oracle.counts) if oracle else {}
    finally:
        if fake is not None:
            fake.stop()
    out = []
    for g in groups:
        progress(f"{MODE_NAMES[mode]}: reading back and searching ({g.split})")
        back = read_back(svc, g)
        with session_scope(get_engine(svc.database_url)) as session:
            key, _ = create_key(session, g.tenant, name="bench-extraction-quality")
        tops = top_hits(api.url, key, g.cases)
        scored = score_group(g, back["memories"], tops, details=g.split != "test")
        out.append(
            {
                "split": g.split,
                "mode": mode,
                "mode_name": MODE_NAMES[mode],
                **scored,
                "events": g.events,
                "turn_status": back["turn_status"],
                "candidates_by_origin": back["candidates_by_origin"],
                "memories": sum(len(v) for v in back["memories"].values()),
                "emit_s": replayed.get("emit_s"),
                "drain_s": replayed.get("drain_s"),
                "incomplete": replayed["incomplete"],
                "worker_log_tail": replayed.get("worker_log_tail"),
                "llm_requests": llm_calls or None,
            }
        )
    return out


def _shown(directory: Path) -> str:
    """A folder as the report names it: relative to the repository when inside it."""
    return str(directory.relative_to(REPO)) if directory.is_relative_to(REPO) else str(directory)


def select_cases(
    splits: Sequence[str], *, quick: bool, directory: Path = CORPUS_DIR, limit: int | None = None
) -> tuple[dict[str, list[Case]], dict[str, Any]]:
    """The cases of each split (quick / `limit`: the first ones of each file and type, in turn)."""
    by_split: dict[str, list[Case]] = {}
    info: dict[str, Any] = {"directory": _shown(directory)}
    for split in splits:
        corpus = load_cases(split, directory=directory)
        cases = corpus.cases
        info[split] = {
            "cases": len(cases),
            "files": sorted({c.source for c in cases}),
            "by_type": dict(Counter(c.type for c in cases)),
            "by_lang": dict(Counter(c.lang for c in cases)),
            "locomo_missing": corpus.locomo_missing,
        }
        n = limit if limit is not None else (QUICK_CASES if quick else None)
        if n is not None and n < len(cases):
            # round-robin over (file, type): a short run still has every file's single cases and updates
            strata: dict[tuple[str, str], list[Case]] = defaultdict(list)
            for c in cases:
                strata[(c.source, c.type)].append(c)
            picked: list[Case] = []
            while len(picked) < n:
                for key in sorted(strata):
                    if strata[key] and len(picked) < n:
                        picked.append(strata[key].pop(0))
            cases = sorted(picked, key=cases.index)
            info[split]["selected"] = len(cases)
        by_split[split] = cases
    return by_split, info


def measure(
    splits: Sequence[str],
    modes: Sequence[str],
    *,
    quick: bool,
    budget_s: float,
    directory: Path = CORPUS_DIR,
    limit: int | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The runs (each mode on a fresh worker, the splits side by side) and what was skipped."""
    from bench.api_load import ApiServer

    started = time.monotonic()
    deadline = started + budget_s
    cases_by_split, corpus = select_cases(splits, quick=quick, directory=directory, limit=limit)
    figures: dict[str, Any] = {"corpus": corpus, "runs": [], "modes": list(modes), "splits": list(splits)}
    skipped: list[str] = []
    missing = [s for s in splits if not cases_by_split.get(s)]
    skipped += [f"the {s} split: no cases in {corpus['directory']}" for s in missing]
    if all(not v for v in cases_by_split.values()):
        return figures, skipped
    with services() as svc:
        figures["services"] = svc.description
        queue = unique_name("bench-quality-api")
        progress("starting the API (uvicorn, 1 worker)")
        api = ApiServer(worker_env(svc, queue, MEMORY_EMBEDDER="hashing"), 1, svc.tmp / "uvicorn.log").start()
        try:
            for i, mode in enumerate(modes):
                left = deadline - time.monotonic()
                if left < 30:
                    skipped.append(f"{MODE_NAMES[mode]}: budget")
                    continue
                share = left / (len(modes) - i)
                figures["runs"] += run_mode(svc, api, mode, cases_by_split, deadline=time.monotonic() + share)
        finally:
            api.stop()
    return figures, skipped


# --- the benchmark ----------------------------------------------------------------------------------------


def _acceptance(figures: dict[str, Any]) -> dict[str, Any] | None:
    """The run the targets are read from: the test split, without an LLM (quick mode: the dev split)."""
    runs = {(r["split"], r["mode"]): r for r in figures.get("runs", [])}
    return runs.get(("test", "rules")) or runs.get(("dev", "rules"))


def _target_note(f: dict[str, Any]) -> str:
    r = _acceptance(f)
    if r is None:
        return "not run"
    note = f"{r['split']} split, no LLM, {r['cases']} cases"
    if r["split"] != "test":
        note += "; the targets are on the test split"
    return note + (f"; incomplete: {r['incomplete']}" if r.get("incomplete") else "")


def _fig(name: str) -> Any:
    def value(f: dict[str, Any]) -> Any:
        r = _acceptance(f)
        return None if r is None else r["all"].get(name)

    return value


TARGETS = (
    Target("MUST recall", _fig("must_recall"), ">=", TARGET_MUST, "", _target_note),
    Target("WORTH recall", _fig("worth_recall"), ">=", TARGET_WORTH, "", _target_note),
    Target("precision", _fig("precision"), ">=", TARGET_PRECISION, "", _target_note),
    Target("nothing-when-nothing", _fig("nothing_when_nothing"), ">=", TARGET_NOTHING, "", _target_note),
    Target(
        "newest-wins@1, explicit updates",
        _fig("newest_wins_at_1_explicit"),
        ">=",
        TARGET_NEWEST_EXPLICIT,
        "",
        _target_note,
    ),
    Target("stale-current, all updates", _fig("stale_current"), "<=", 0, "scenarios", _target_note),
    Target("stale-current, explicit updates", _fig("stale_current_explicit"), "<=", 0, "scenarios", _target_note),
    Target("forbidden stored", _fig("forbidden_stored"), "<=", 0, "memories", _target_note),
)


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    return report.evaluate(TARGETS, figures)


def run(budget_s: float, quick: bool, *, directory: Path = CORPUS_DIR) -> dict[str, Any]:
    budget_s = min(budget_s, OWN_LIMIT_S[quick])
    started = time.monotonic()
    splits = ("dev",) if quick else SPLITS
    modes = ("rules",) if quick else MODES
    if not any(directory.glob(f"{s}_*.jsonl") for s in splits):
        msg = f"no corpus files in {_shown(directory)} (see its README.md)"
        progress(f"extraction_quality: skipped: {msg}")
        return report.skipped_result("extraction_quality", quick, msg)
    figures, skipped = measure(splits, modes, quick=quick, budget_s=budget_s, directory=directory)
    return report.result(
        "extraction_quality", quick, figures, skipped, started=started, targets=TARGETS, blocks=SECTION
    )


# --- the report ---------------------------------------------------------------------------------------------


def _ratio(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _cols(first: Sequence[Column]) -> list[Column]:
    return [
        *first,
        Column("MUST recall", lambda r: f"{_ratio(r['f']['must_recall'])} ({r['f']['expected']['must']})"),
        Column("WORTH recall", lambda r: f"{_ratio(r['f']['worth_recall'])} ({r['f']['expected']['worth']})"),
        Column("precision", lambda r: f"{_ratio(r['f']['precision'])} ({r['f']['stored']})"),
        Column(
            "nothing-when-nothing",
            lambda r: f"{_ratio(r['f']['nothing_when_nothing'])} ({r['f']['nothing_cases']})",
        ),
        Column("forbidden stored", lambda r: r["f"]["forbidden_stored"]),
        Column("newest-wins@1", lambda r: f"{_ratio(r['f']['newest_wins_at_1'])} ({r['f']['updates']})"),
        Column("stale-current", lambda r: r["f"]["stale_current"]),
    ]


def _rows(f: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**r, "f": r["all"]} for r in f.get("runs", [])]


def _lang_rows(f: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**r, "lang": lang, "f": v} for r in f.get("runs", []) for lang, v in r["by_lang"].items()]


def _form_columns(f: dict[str, Any]) -> list[Column]:
    runs = f.get("runs", [])
    return [
        Column("form", "form"),
        *(
            Column(f"{r['split']}, {r['mode_name']}", lambda row, i=i: row["cells"][i])
            for i, r in enumerate(runs)
        ),
    ]


def _form_rows(f: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per form (most cases first): cases scored right / cases, per run."""
    runs = f.get("runs", [])
    forms: Counter[str] = Counter()
    for r in runs:
        for form, (_ok, n) in r["passed_by_form"].items():
            forms[form] = max(forms[form], n)
    rows = []
    for form, _n in sorted(forms.items(), key=lambda kv: (-kv[1], kv[0])):
        cells = []
        for r in runs:
            ok, n = r["passed_by_form"].get(form, (0, 0))
            cells.append(f"{ok}/{n}" if n else "-")
        rows.append({"form": form, "cells": cells})
    return rows


RUN_COLS = [Column("split", "split"), Column("mode", "mode_name")]


def _setup(f: dict[str, Any]) -> str:
    c = f["corpus"]
    sizes = "; ".join(
        f"{s}: {c[s]['cases']} cases ({', '.join(f'{k} {v}' for k, v in c[s]['by_type'].items())}; "
        f"{', '.join(f'{k} {v}' for k, v in c[s]['by_lang'].items())})"
        + (f", {c[s]['selected']} run" if c[s].get("selected") else "")
        + ("; LoCoMo cases left out: the data is absent" if c[s]["locomo_missing"] else "")
        for s in f["splits"]
        if s in c
    )
    return f"""Corpus: `{c["directory"]}` ({sizes}), loaded and scored by `bench/lib/quality.py`. Each split
        and mode on its own tenant, one user per case, events through `MemoryClient.emit_many` (the case's
        event times, a `session_end` after each session; update scenarios one event at a time in `deliver`
        order, each sent once the previous one is extracted and reconciled) to a real `celery worker -c
        {WORKER_CONCURRENCY}` with the default debounce and the hashing embedder; {f.get("services")}. Read
        back: each user's active memories (valid_to null) from PostgreSQL; for update scenarios the top memory
        hit of `POST /v1/search` (k={SEARCH_K}) through the real API. Modes: rules only (no `OPENAI_API_KEY`:
        turns the gate routes to the LLM stay `llm_pending`), and rules + a scripted LLM (the tests' fake
        OpenAI server answering each extraction request with the expected memories of the cases whose turns
        are in its window: an oracle, so its misses are what routing and reconciliation lose, not what a
        model would). Recall counts expected memories, precision stored memories (of single cases); counts
        in parentheses."""


def _run_note(r: dict[str, Any]) -> str | None:
    parts = [
        f"{r['split']}, {r['mode_name']}: {r['cases']} cases, {r['events']:,} events, the run drained in "
        f"{fmt(r.get('drain_s'))} s; turns: "
        + ", ".join(f"{k} {v}" for k, v in r["turn_status"].items())
        + "; candidates: "
        + (", ".join(f"{k} {v}" for k, v in r["candidates_by_origin"].items()) or "none")
        + f"; {r['memories']} memories"
    ]
    if r.get("llm_requests"):
        parts.append(
            "LLM requests (the whole mode, every split): "
            + ", ".join(f"{k} {v}" for k, v in sorted(r["llm_requests"].items()))
        )
    if r.get("incomplete"):
        parts.append(f"**incomplete ({r['incomplete']}): figures are partial**")
    return "; ".join(parts) + "."


def _misses(f: dict[str, Any]) -> list[str]:
    out = []
    for r in f.get("runs", []):
        if r["misses"] is None:
            out.append(
                f"{r['split']}, {r['mode_name']}: {r['missed']} of {r['cases']} cases missed (not listed)"
            )
        else:
            ids = ", ".join(m["id"] for m in r["misses"]) or "none"
            out.append(f"{r['split']}, {r['mode_name']}: {r['missed']} of {r['cases']} cases missed: {ids}")
    return out


SECTION = (
    Text(_setup),
    Table(_cols(RUN_COLS), _rows),
    Text(
        lambda f: (
            "newest-wins@1 on explicit updates: "
            + "; ".join(
                f"{r['split']}, {r['mode_name']}: {_ratio(r['all']['newest_wins_at_1_explicit'])}"
                for r in f.get("runs", [])
            )
            if f.get("runs")
            else None
        )
    ),
    Lines(lambda f: [f"- {n}" for r in f.get("runs", []) if (n := _run_note(r))]),
    Section("Per language", (Table(_cols([*RUN_COLS, Column("lang", "lang")]), ""),), data=_lang_rows),
    Section(
        "Per form",
        (
            Text(
                """Cases scored right (every expected memory found, nothing wrong or forbidden stored; for an
                update, the newest value on top and no older one current) of all cases of the form, per run.
                Every figure per form is in the run's JSON (`bench/results/extraction_quality.json`) and in
                `python -m bench.extraction_quality`'s output."""
            ),
            Table(_form_columns, _form_rows),
        ),
        data=lambda f: f if f.get("runs") else None,
    ),
    Section(
        "Missed cases",
        (Lines(lambda f: [f"- {m}" for m in _misses(f)]),),
        data=lambda f: f if f.get("runs") else None,
    ),
)


def render_markdown(result: dict[str, Any]) -> str:
    return report.render(result, SECTION)


# --- on its own: the tuning loop ------------------------------------------------------------------------------


def print_run(r: dict[str, Any], out: Any = sys.stdout) -> None:
    a = r["all"]
    print(
        f"\n== {r['split']} / {r['mode_name']}: {r['cases']} cases ({r['singles']} single, {r['updates']} update)",
        file=out,
    )
    if r.get("incomplete"):
        print(
            f"!! incomplete ({r['incomplete']}): figures are partial\n{r.get('worker_log_tail') or ''}",
            file=out,
        )
    rows = [("all", a), *r["by_lang"].items(), *((f"form:{k}", v) for k, v in sorted(r["by_form"].items()))]
    print(
        f"{'':22} {'MUST':>11} {'WORTH':>11} {'precision':>11} {'nothing':>11} {'forbid':>6} "
        f"{'newest@1':>11} {'stale':>5}",
        file=out,
    )
    for name, v in rows:
        print(
            f"{name[:22]:22} {_ratio(v['must_recall']):>5} ({v['expected']['must']:>3}) "
            f"{_ratio(v['worth_recall']):>5} ({v['expected']['worth']:>3}) "
            f"{_ratio(v['precision']):>5} ({v['stored']:>3}) "
            f"{_ratio(v['nothing_when_nothing']):>5} ({v['nothing_cases']:>3}) {v['forbidden_stored']:>6} "
            f"{_ratio(v['newest_wins_at_1']):>5} ({v['updates']:>3}) {v['stale_current']:>5}",
            file=out,
        )
    print(f"newest-wins@1, explicit updates: {_ratio(a['newest_wins_at_1_explicit'])}", file=out)
    print(_run_note(r), file=out)
    if r["misses"] is None:
        print(f"{r['missed']} cases missed (test split: not listed)", file=out)
        return
    print(f"\n{r['missed']} cases missed:", file=out)
    for m in r["misses"]:
        print(f"\n- {m['id']} [{m['lang']}, {m['form']}]", file=out)
        for t in m["turns"]:
            text = t.replace("\n", "\n          ")
            print(f"    turn: {text}", file=out)
        if "query" in m:
            print(f"    deliver {m['deliver']}; query: {m['query']!r}; newest: {m['new']}", file=out)
            print(f"    top hit: {m['top_hit']!r}", file=out)
            for c in m["stale"]:
                print(f"    STALE current: {c}", file=out)
        else:
            for e in m["missing"]:
                print(f"    MISSING {e}", file=out)
            for c in m["forbidden"]:
                print(f"    FORBIDDEN stored: {c}", file=out)
            for c in m["wrong"]:
                print(f"    WRONG stored: {c}", file=out)
        for c in m["stored"]:
            print(f"    stored: {c}", file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.extraction_quality",
        description="Extraction quality on the labelled corpus, through the real worker (issue #12).",
    )
    ap.add_argument("--split", choices=[*SPLITS, "both"], default="dev")
    ap.add_argument("--mode", choices=[*MODES, "both"], default="rules")
    ap.add_argument("--quick", action="store_true", help=f"the first {QUICK_CASES} cases of each split")
    ap.add_argument("--limit", type=int, default=None, help="the first N cases of each split")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="the corpus folder")
    ap.add_argument("--budget-s", type=float, default=900.0)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    splits = SPLITS if args.split == "both" else (args.split,)
    modes = MODES if args.mode == "both" else (args.mode,)
    started = time.monotonic()
    figures, skipped = measure(
        splits,
        modes,
        quick=args.quick,
        budget_s=args.budget_s,
        directory=args.corpus.resolve(),
        limit=args.limit,
    )
    for r in figures["runs"]:
        print_run(r)
    for s in skipped:
        print(f"skipped: {s}")
    print(f"\n{time.monotonic() - started:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False, default=str) + "\n")
    return 0 if figures["runs"] and not any(r.get("incomplete") for r in figures["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
