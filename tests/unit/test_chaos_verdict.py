"""The fault run's counting and verdict: a lost, duplicated or doubly-current result fails it."""

from bench.chaos import Tally, event_fields, missing_ids, verdict


def _tally(**kw):
    base = dict(accepted=10, stored=10, rows=10, dead_lettered=0, dead_letter_total=0, double_current=[])
    base.update(kw)
    return Tally(**base)


def test_a_clean_run_passes_even_with_dead_letters():
    assert verdict(_tally(dead_lettered=2, dead_letter_total=5)) == []


def test_a_lost_event_fails_and_is_named():
    t = _tally(stored=9, rows=9, missing_sample=["chaos-7"])
    assert t.lost == 1
    assert verdict(t) == ["1 accepted event(s) not stored (e.g. chaos-7)"]


def test_rows_beyond_one_per_event_id_count_as_duplicated():
    t = _tally(rows=12)
    assert t.duplicated == 2
    assert verdict(t) == ["2 event row(s) stored more than once"]


def test_a_slot_with_two_current_values_fails():
    t = _tally(double_current=[("t", "u", None, "user.editor", 2)])
    assert verdict(t) == ["1 slot(s) with two or more current values"]


def test_missing_ids_keep_the_emit_order():
    assert missing_ids(["a", "b", "c", "d"], {"a", "c"}) == ["b", "d"]


def test_the_stream_has_unique_event_ids_and_changing_slot_values():
    events = [event_fields(n) for n in range(2_000)]
    assert len({e["event_id"] for e in events}) == len(events)
    editor = {e["content"] for e in events if e["user_id"] == "user-2" and "editor" in e["content"]}
    assert len(editor) > 1


def test_the_summary_counts_the_worker_restarts_the_run_had_to_make_besides_its_sigkills():
    from bench.chaos import Fault, render

    info = {
        "events": 10,
        "rate": 5.0,
        "fault_every": 12.0,
        "faults": [Fault("worker (SIGKILL)", 12, 3, 1.5), Fault("redis", 27, 3, 0.0)],
        "stream_s": 30.0,
        "spooled": 0,
        "emit_errors": [],
        "drain_s": 4.0,
        "drained": True,
        "worker_starts": 3,
        "sigkills": 1,
        "found_dead": ["after redis: Unrecoverable error: AttributeError(...)"],
    }
    text = render(_tally(), info)
    assert "Worker started 3 times (once at the start, 1 after its SIGKILL, 1 after it was found dead" in text
    assert "Worker found dead and restarted: after redis: Unrecoverable error" in text
    info.update(worker_starts=2, found_dead=[])
    assert "0 after it was found dead otherwise" in render(_tally(), info)
