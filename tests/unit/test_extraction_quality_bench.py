"""The pure parts of `bench/extraction_quality.py`: how a case becomes events, which value each event of an
update scenario states, the scripted model's answers to the worker's real prompts, and the section."""

from __future__ import annotations

import json
from typing import Any

from bench import extraction_quality as eq
from bench.lib.quality import Tally, parse_case, score_single, score_update
from core.extraction.candidates import Candidate, Category, Kind, Tier, Turn
from core.prompts.extraction import answer_to_candidates, build_extraction_messages, parse_extraction_answer
from core.prompts.judge import build_judge_messages, parse_judge_answer

SINGLE = {
    "id": "en-x-001",
    "type": "single",
    "lang": "en",
    "form": "in_passing",
    "turns": [
        {"role": "user", "text": "hi! quick one"},
        {"role": "assistant", "text": "Sure, what is it?"},
        {"role": "user", "text": "this service is on Go 1.22 and we never use cgo, why does the build fail?"},
    ],
    "expect": [
        {"tier": "worth", "terms": [["go", "golang"]], "slot": "project.language"},
        {"tier": "must", "terms": [["cgo"], ["never", "not"]]},
    ],
}
UPDATE = {
    "id": "en-x-u-01",
    "type": "update",
    "lang": "en",
    "form": "interleaved",
    "events": [
        {"session": 1, "at": "2026-01-10T09:00:00Z", "role": "user", "text": "I use vim as my editor."},
        {"session": 2, "at": "2026-02-10T09:00:00Z", "role": "user", "text": "random regex question"},
        {"session": 1, "at": "2026-01-10T09:05:00Z", "role": "user", "text": "ok thanks"},
        {"session": 3, "at": "2026-06-10T09:00:00Z", "role": "user", "text": "I've since moved to Helix."},
    ],
    "deliver": [3, 0, 1, 2],
    "query": "which editor does the user use",
    "new": [["helix"]],
    "old": [[["vim"]]],
    "explicit": False,
}


def _case(raw: dict[str, Any]) -> Any:
    return parse_case(raw, split="dev", source="dev_en.jsonl", locomo=None)


def test_a_single_case_is_one_batch_with_its_session_end_after_its_turns() -> None:
    (batch,) = eq.case_steps(_case(SINGLE))
    assert [e["event_id"] for e in batch] == ["en-x-001-e0", "en-x-001-e1", "en-x-001-e2", "en-x-001-s1-end"]
    assert [e["role"] for e in batch] == ["user", "assistant", "user", "user"]
    assert batch[-1]["type"] == "session_end"
    assert batch[2]["event_time"] == eq.BASE_TIME.replace(second=2)  # no `at`: the base time plus the index
    assert batch[-1]["event_time"] > batch[2]["event_time"]
    assert {e["user_id"] for e in batch} == {"en-x-001"} and batch[0]["session_id"] == "en-x-001-s1"


def test_an_update_is_sent_in_delivery_order_each_session_ended_after_its_last_delivered_event() -> None:
    steps = eq.case_steps(_case(UPDATE))
    assert [[e["event_id"] for e in s] for s in steps] == [
        ["en-x-u-01-e3", "en-x-u-01-s3-end"],
        ["en-x-u-01-e0"],  # session 1 has another event still to come
        ["en-x-u-01-e1", "en-x-u-01-s2-end"],
        ["en-x-u-01-e2", "en-x-u-01-s1-end"],
    ]
    assert str(steps[3][1]["event_time"]) == "2026-01-10 09:05:01+00:00"


def test_each_event_of_an_update_states_the_value_its_text_names() -> None:
    assert eq.update_values(_case(UPDATE)) == {3: (("helix",),), 0: (("vim",),)}
    # one event per older value and no term in the text: by rank
    raw = {
        **UPDATE,
        "events": [UPDATE["events"][0], UPDATE["events"][3]],
        "deliver": [0, 1],
        "old": [[["nano"]]],
    }
    assert eq.update_values(_case(raw)) == {1: (("helix",),), 0: (("nano",),)}


def _turns(case: Any, indices: list[int]) -> list[Turn]:
    return [
        Turn(
            event_id=eq.event_id(case, i),
            role=case.turns[i].role,
            content=case.turns[i].text,
            source_turn_id=str(i),
        )
        for i in indices
    ]


def _extract(model: eq.ScriptedModel, turns: list[Turn], rules: list[Candidate] | None = None) -> str:
    messages = build_extraction_messages(
        turns=turns, summary="", existing_memories=[], rule_candidates=rules or []
    )
    return model({"messages": messages})


def test_the_scripted_model_answers_the_real_prompt_with_the_expected_memories_of_the_window() -> None:
    case = _case(SINGLE)
    model = eq.ScriptedModel([case, _case(UPDATE)])
    turns = _turns(case, [0, 1, 2])
    answer = parse_extraction_answer(_extract(model, turns))
    candidates = answer_to_candidates(answer, turns=turns)
    assert [(c.tier.value, c.slot, c.source_event_ids) for c in candidates] == [
        ("worth", "project.language", ("en-x-001-e2",)),
        ("must", None, ("en-x-001-e2",)),
    ]
    assert candidates[1].kind == Kind.PROCEDURAL  # a must-tier negated rule
    score = score_single(case, [c.content for c in candidates])
    assert score.expected == (("worth", True), ("must", True)) and score.wrong == 0
    # the turn that states them is not in the window: the model cannot know them
    assert json.loads(_extract(model, _turns(case, [0, 1]))) == {"memories": []}
    assert model.counts["extract"] == 2


def test_the_scripted_model_repeats_a_right_rule_candidate_and_names_its_slot() -> None:
    case = _case(UPDATE)
    model = eq.ScriptedModel([case])
    turns = _turns(case, [3])
    rule = Candidate(
        content="The user moved to Helix.",
        kind=Kind.SEMANTIC,
        category=Category.FACT,
        tier=Tier.WORTH,
        confidence=0.7,
        source_event_ids=(turns[0].event_id,),
    )
    (memory,) = json.loads(_extract(model, turns, [rule]))["memories"]
    assert memory["content"] == "The user moved to Helix."  # merges with the rule's candidate
    assert (memory["slot"], memory["value"]) == (model.slot_of[case.id], "helix")
    score = score_update(case, memory["content"], [memory["content"]])
    assert score.newest_top and not score.stale_current


def test_the_scripted_judge_answers_no_change_for_every_pair() -> None:
    model = eq.ScriptedModel([])
    answer = model({"messages": build_judge_messages([("a", "b"), ("c", "d")])})
    assert parse_judge_answer(answer, pairs=2) == {0: "complement", 1: "complement"}
    assert model.counts["judge"] == 1


def test_the_section_renders_the_targets_from_the_test_split_rules_only() -> None:
    single, update = _case(SINGLE), _case(UPDATE)
    tally = Tally()
    tally.add_single(single, score_single(single, ["The project is written in Go."]))
    tally.add_update(update, score_update(update, "The user uses Vim.", ["The user uses Vim."]))
    group = eq.Group("test", [single, update])
    scored = eq.score_group(
        group,
        {single.id: ["The project is written in Go."], update.id: ["The user uses Vim."]},
        {update.id: "The user uses Vim."},
        details=False,
    )
    assert scored["all"] == tally.figures()
    assert (scored["missed"], scored["misses"]) == (2, None)  # the test split: counted, never listed
    run = {
        **scored,
        "split": "test",
        "mode": "rules",
        "mode_name": "rules only",
        "events": 7,
        "turn_status": {"extracted": 4},
        "candidates_by_origin": {"rules": 1},
        "memories": 2,
        "drain_s": 1.0,
        "incomplete": None,
    }
    corpus = {
        "directory": "x",
        "test": {"cases": 2, "by_type": {"single": 1, "update": 1}, "by_lang": {"en": 2}},
    }
    figures = {
        "corpus": {**corpus, "test": {**corpus["test"], "locomo_missing": False}},
        "runs": [run],
        "splits": ["test"],
    }
    result = {
        "name": "extraction_quality",
        "quick": False,
        "figures": figures,
        "skipped": [],
        "targets": eq.targets(figures),
    }
    markdown = eq.render_markdown(result)
    assert "| MUST recall (test split, no LLM, 2 cases) | 0  | >= 0.9 | **no** |" in markdown
    assert "| WORTH recall (test split, no LLM, 2 cases) | 1  | >= 0.6 | yes |" in markdown
    assert (
        "| stale-current, all updates (test split, no LLM, 2 cases) | 1 scenarios | <= 0 scenarios | **no** |"
        in markdown
    )
    assert "| stale-current, explicit updates (test split, no LLM, 2 cases) |" in markdown
    assert "test, rules only: 2 of 2 cases missed (not listed)" in markdown
    assert update.id not in markdown
