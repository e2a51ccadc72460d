"""What a task trace row keeps is bounded (migration 0017 checks the same bounds): the task's log fields
within 8 KiB, per-turn detail within 64 KiB, whatever the task returned."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from store.trace import SUMMARY_MAX_BYTES, TURNS_MAX_BYTES, bounded_summary, bounded_turns


def _size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def test_a_huge_summary_is_cut_to_its_bound_keeping_the_small_fields():
    summary = {
        "outcome": "ok",
        "turns": 200,
        "when": datetime(2026, 12, 1, tzinfo=UTC),
        "reasons": ["x" * 300] * 200,  # a list no cap on strings can shorten
        "detail": "y" * 5000,
    }
    kept = bounded_summary(summary)
    assert _size(kept) <= SUMMARY_MAX_BYTES
    assert kept["outcome"] == "ok" and kept["turns"] == 200 and kept["when"].startswith("2026-12-01")
    assert kept["_dropped"] == ["reasons"] and len(kept["detail"]) == 500


def test_per_turn_detail_past_its_bound_is_left_out_and_counted():
    turns = {
        f"event-{i:05d}": {"gate": "partial_cover", "rules": ["en.rule"] * 8, "llm": "answered"}
        for i in range(2000)
    }
    kept = bounded_turns(turns)
    assert _size(kept) <= TURNS_MAX_BYTES
    assert kept["_left_out"] == 2000 - (len(kept) - 1) > 0
    assert kept["event-00000"]["llm"] == "answered"  # the window's first turns are kept, in order
