"""memctl's tables in 80 columns (issue 17, item 3): content first and given the room, ids short, empty
columns dropped, the rest named and left to --wide; cells are text, never markup."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from memctl.tables import Col, layout, print_table
from memctl.trace_view import render_trace, render_why

MEMORY_COLS = [
    Col("content", "content"),
    Col("id", "id"),
    Col("status"),
    Col("kind"),
    Col("slot"),
    Col("valid from", "time"),
    Col("valid to", "time"),
    Col("category"),
    Col("ev", "number"),
]
LONG_ID = "9b56b995-72e1-4554-a727-0e6156e007c0"
ROWS = [
    ["The user's project uses pnpm.", LONG_ID, "active", "semantic", None, "2026-10-04 00:21:41+00:00", None,
     "preference", 1],
    ["Never use npm in this repository; the team agreed on pnpm after the lockfile incident [2025].",
     "26ecd2d6-47c1-4082-a098-1177bd1bc7ad", "active", "procedural", None, "2026-10-04 00:21:41+00:00", None,
     "constraint", 3],
]  # fmt: skip


def _render(rows, *, wide=False, width=80):
    buf, note = StringIO(), StringIO()
    print_table(
        Console(file=buf, width=width), MEMORY_COLS, rows, wide=wide, err=Console(file=note, width=width)
    )
    return buf.getvalue(), note.getvalue()


def test_at_80_columns_content_comes_first_whole_and_ids_are_short():
    shown, note = _render(ROWS)
    lines = shown.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[0].split()[:2] == ["content", "id"]
    assert "The user's project uses pnpm." in shown  # one piece, not "The / user's / project"
    assert "[2025]" in shown  # text, not markup
    assert LONG_ID[:8] in shown and LONG_ID not in shown
    # the columns empty in every row are gone without a word; those left out for room are named
    assert "slot" not in lines[0] and "valid to" not in lines[0]
    assert "--wide" in note and "ev" in note


def test_wide_shows_every_column_and_full_values():
    shown, note = _render(ROWS, wide=True)
    assert LONG_ID in shown and "valid to" in shown and "2026-10-04 00:21:41" in shown
    assert note == ""
    assert any(len(line) > 80 for line in shown.splitlines())


def test_the_content_column_is_never_squeezed_while_others_can_give_way():
    plan = layout(MEMORY_COLS, ROWS, wide=False, width=80)
    assert plan.content_width is not None and plan.content_width >= 30
    narrow = layout(MEMORY_COLS, ROWS, wide=False, width=50)
    assert narrow.content_width is not None and narrow.content_width >= 29
    assert narrow.cols[0].header == "content"


def test_trace_and_why_text_fit_80_columns_and_say_purged():
    trace = {
        "event_id": "ev-1",
        "stored": {"received_at": "2026-12-01T10:02:00+00:00", "ingested_by": "consumer:vm-1", "user_id": "u",
                   "session_id": "s", "type": "turn", "role": "user", "status": "extracted",
                   "redactions": {"api_key": 1}, "content": None, "content_purged": True,
                   "content_purged_at": "2026-12-02T00:00:00+00:00", "content_sha256": "ab" * 32},
        "windows": [{"task_id": "0d3f07ee-e864", "task_name": "memory.extract_session", "finished_at": None,
                     "turn": {"gate": "must_candidate", "coverage": 1.0, "rule_candidates": 1,
                              "rules": ["en.remember"], "llm": "not_needed", "status": "extracted"},
                     "summary": {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0}}],
        "candidates": [], "decisions": [], "later": [], "memories": [], "dead_letters": [],
        "tasks": [{"actor": "task:x", "task_id": "x", "name": "memory.extract_session", "stage": "extract",
                   "finished_at": None, "outcome": "ok", "summary": {"gate": {"must_candidate": 1}, "turns": 2}}],
    }  # fmt: skip
    lines = render_trace(trace, tenant="t", width=80)
    assert all(len(line) <= 80 for line in lines)
    text = "\n".join(lines)
    assert "text purged by retention" in text and "api_key x1" in text and "consumer:vm-1" in text
    assert "gate must_candidate" in text and "gate=must_candidate:1" in text
    why = {"memory_id": LONG_ID, "memory": None, "history": [], "truncated": False,
           "lineage": [{"memory_id": LONG_ID, "depth": 0, "relation": "self", "via": None, "exists": False,
                        "status": "purged", "content": None, "source_event_ids": ["ev-1"]}],
           "turns": [{"event_id": "ev-1", "found": False, "memory_ids": [LONG_ID]}]}  # fmt: skip
    text = "\n".join(render_why(why, tenant="t", width=80))
    assert "purged (its history remains)" in text and "no such event" in text
