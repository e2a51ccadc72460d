"""`memctl trace` and `memctl why` as text for a terminal: a label column and wrapped lines, 80 columns
friendly (`width`). Pure functions over the dicts of `store.trace` (their shapes are documented there)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

LABEL = 12  # the label column ("stored", "window", ...) and the indent of continuation lines


def _short(value: Any, n: int = 8) -> str:
    return str(value)[:n] if value else "-"


def _time(value: Any) -> str:
    return str(value).replace("T", " ")[:19] if value else "-"


def _quote(text: str | None) -> str:
    return f'"{" ".join(text.split())}"' if text else ""


def _fields(summary: Mapping[str, Any], skip: Iterable[str] = ()) -> str:
    """A task's log fields as `key=value` pairs (nested ones compact), the zeros left out."""
    parts = []
    for k, v in summary.items():
        if k in skip or v in (0, None, "", {}, []):
            continue
        if isinstance(v, dict):
            v = ",".join(f"{a}:{b}" for a, b in v.items())
        parts.append(f"{k}={v}")
    return " ".join(parts)


class _Out:
    def __init__(self, width: int) -> None:
        self.width = max(40, width)
        self.lines: list[str] = []

    def add(self, label: str, *texts: str) -> None:
        """One entry: the label, then each text on its own wrapped line(s) under the same indent."""
        first = True
        for text in texts:
            if not text:
                continue
            lead = label.ljust(LABEL) if first else " " * LABEL
            wrapped = textwrap.wrap(
                text,
                width=self.width,
                initial_indent=lead,
                subsequent_indent=" " * LABEL,
                break_long_words=True,
                break_on_hyphens=False,
            )
            self.lines.extend(wrapped or [lead.rstrip()])
            first = False
        if first:
            self.lines.append(label)


def _turn_text(turn: Mapping[str, Any]) -> str:
    if turn.get("content_purged"):
        sha = turn.get("content_sha256") or ""
        return f"[text purged by retention {_time(turn.get('content_purged_at'))}; sha256 {sha[:12]}…]"
    return _quote(turn.get("content")) or "[no text]"


def _history_line(h: Mapping[str, Any]) -> list[str]:
    who = f"task {_short(h['task_id'])}" if h.get("task_id") else h.get("actor") or "-"
    head = f"{h['op']} {_short(h['memory_id'])} by {who} at {_time(h['at'])}"
    events = h.get("event_ids") or []
    if events:
        head += f" (events {', '.join(events[:3])}{'…' if len(events) > 3 else ''})"
    return [head, h.get("reason") or "", _quote(h.get("content"))]


def render_trace(trace: Mapping[str, Any], *, tenant: str, width: int = 80) -> list[str]:
    out = _Out(width)
    out.add("event", f"{trace['event_id']}  (tenant {tenant})")
    stored = trace.get("stored")
    if stored is None:
        out.add("stored", "never stored: the event was refused (see the dead letters below)")
    else:
        red = stored.get("redactions") or {}
        redactions = ", ".join(f"{k} x{v}" for k, v in sorted(red.items())) or "none"
        llm = ""
        if stored.get("llm_error"):
            llm = f" · LLM {stored['llm_error']} after {stored.get('llm_attempts', 0)} attempt(s)"
        out.add(
            "stored",
            f"{_time(stored.get('received_at'))} by {stored.get('ingested_by') or 'an unrecorded path'}",
            f"event time {_time(stored.get('event_time'))} · user {stored.get('user_id')} · "
            f"session {stored.get('session_id')} · {stored.get('type')} by {stored.get('role')}",
            f"status {stored.get('status')} (processed {_time(stored.get('processed_at'))}){llm}",
            f"redactions: {redactions}",
        )
        out.add("text", _turn_text(stored))
    for w in trace.get("windows") or []:
        turn = w.get("turn") or {}
        summary = w.get("summary") or {}
        rules = turn.get("rules") or []
        coverage = f" (coverage {turn['coverage']})" if turn.get("coverage") is not None else ""
        tokens = f"{summary.get('prompt_tokens', 0)}+{summary.get('completion_tokens', 0)}"
        out.add(
            "window",
            f"task {_short(w.get('task_id'))} {w.get('task_name')} at {_time(w.get('finished_at'))}",
            f"gate {turn.get('gate', '-')}{coverage} · {turn.get('rule_candidates', 0)} rule candidate(s)"
            + (f" ({', '.join(rules)})" if rules else ""),
            f"LLM {turn.get('llm', '-')} · {summary.get('llm_calls', 0)} call(s), tokens {tokens} · "
            f"became {turn.get('status', '-')}",
        )
    for c in trace.get("candidates") or []:
        decided = f"→ {c.get('decision') or c.get('status')} {_short(c.get('memory_id'))}"
        out.add(
            "candidate",
            f"#{c['id']} {c.get('origin')} {c.get('rule') or ''} {c.get('kind')} {decided}".replace(
                "  ", " "
            ),
            _quote(c.get("content")),
        )
    if stored is not None and not trace.get("candidates") and not trace.get("decisions"):
        out.add("candidate", "none (nothing in this turn was kept, or the candidates are past retention)")
    for h in trace.get("decisions") or []:
        out.add("decision", *_history_line(h))
    for h in trace.get("later") or []:
        out.add("later", *_history_line(h))
    for m in trace.get("memories") or []:
        arrow = f" → {_short(m['superseded_by'])}" if m.get("superseded_by") else ""
        out.add(
            "memory",
            f"{_short(m['id'])} {m.get('status')}{arrow} ({m.get('relation')})",
            _quote(m.get("content")),
        )
    for d in trace.get("dead_letters") or []:
        replayed = f", replayed {_time(d['replayed_at'])}" if d.get("replayed_at") else ""
        out.add(
            "dead letter",
            f"#{d['id']} {d.get('task_name')} x{d.get('count')} first {_time(d.get('first_seen'))}{replayed}",
            d.get("reason") or "",
        )
    for t in trace.get("tasks") or []:
        out.add(
            "task",
            f"{_short(t.get('task_id')) if t.get('task_id') else t.get('actor')} {t.get('stage') or '?'} "
            f"({t.get('name') or 'no record'}) {t.get('outcome') or ''} at {_time(t.get('finished_at'))}",
            _fields(t.get("summary") or {}, skip=("outcome",)),
        )
    return out.lines


# how a lineage node stands to the memory one level up (`via`)
_RELATION = {"self": "(this memory)", "supersedes": "superseded by", "consolidated_from": "consolidated into"}


def render_why(why: Mapping[str, Any], *, tenant: str, width: int = 80) -> list[str]:
    out = _Out(width)
    out.add("memory", f"{why['memory_id']}  (tenant {tenant})")
    m = why.get("memory")
    if m is None:
        out.add("now", "purged (its history remains)")
    else:
        slot = f" · slot {m['slot']}={m.get('value')}" if m.get("slot") else ""
        out.add(
            "now",
            f"{m.get('status')} {m.get('kind')}/{m.get('category')} · user {m.get('user_id')}{slot}",
            _quote(m.get("content")),
        )
    for h in why.get("history") or []:
        out.add("history", *_history_line(h))
    for n in why.get("lineage") or []:
        phrase = _RELATION.get(n.get("relation") or "", n.get("relation") or "")
        via = f" {_short(n['via'])}" if n.get("via") else ""
        out.add(
            "lineage",
            f"{'  ' * n.get('depth', 0)}{_short(n['memory_id'])} {phrase}{via} · {n.get('status')}",
            _quote(n.get("content")),
        )
    for t in why.get("turns") or []:
        if not t.get("found"):
            out.add("turn", f"{t['event_id']}: no such event (erased, or never stored)")
            continue
        cites = ", ".join(_short(i) for i in t.get("memory_ids") or [])
        out.add(
            "turn",
            f"{t['event_id']} {_time(t.get('event_time'))} {t.get('role')} in {t.get('session_id')} "
            f"(cited by {cites})",
            _turn_text(t),
        )
    if why.get("truncated"):
        out.add("note", "the lineage or the turns were cut at their bound")
    return out.lines
