"""Every prompt the worker sends, built by `core.prompts`, is byte-for-byte the request the code sent before
the prompts were gathered there (hashes taken from that code, its inline builders copied verbatim), and the
parsers read the answers as the stages did. Prompt text is part of the benchmark figures and of what the
fake OpenAI server recognises: changing it means a new prompt version."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from core.distill import Fragment
from core.episodes import EpisodeText
from core.extraction.candidates import Candidate, Category, Kind, Tier, Turn
from core.prompts import distill, episode, extraction, judge, summary, working_memory

TURNS = [
    Turn(
        event_id=f"e{i}",
        role="user" if i % 2 else "assistant",
        content=f"turn {i} 记住\nline two",
        source_turn_id=f"t{i}",
    )
    for i in range(1, 70)
]
RULE = Candidate(
    content="Never suggest an ORM.",
    kind=Kind.PROCEDURAL,
    category=Category.FEEDBACK,
    tier=Tier.MUST,
    confidence=0.95,
    source_event_ids=("e2",),
    slot="project.orm",
    value="none",
)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, ensure_ascii=False).encode()).hexdigest()


def fragment(i: int, kind: str = "semantic", category: str = "fact") -> Fragment:
    return Fragment(
        id=f"id-{i}",
        kind=kind,
        category=category,
        content=f"fragment {i}",
        evidence_count=1,
        importance=0.6,
        last_confirmed_at=NOW,
        recorded_at=NOW,
        embedding=(),
        source_event_ids=(f"e{i}",),
        source_turn_ids=(),
        slot=None,
        valid_from=NOW,
    )


EMPTY_WINDOW = extraction.build_extraction_messages(
    turns=TURNS[:3], summary="", existing_memories=[], rule_candidates=[]
)
CLUSTERS = [[fragment(1), fragment(2)], [fragment(3, "procedural", "feedback"), fragment(4), fragment(5)]]
BUILT = {
    "extraction_system": lambda: extraction.EXTRACTION_SYSTEM_PROMPT,
    "summary_system": lambda: summary.SUMMARY_SYSTEM_PROMPT,
    "extraction_messages": lambda: extraction.build_extraction_messages(
        turns=TURNS[:12],
        summary="## Decisions\n- pnpm",
        existing_memories=["The user lives in Berlin.", "用户住在柏林。"],
        rule_candidates=[RULE],
    ),
    "extraction_messages_empty": lambda: EMPTY_WINDOW,
    "repair_messages": lambda: extraction.build_repair_messages(
        EMPTY_WINDOW, bad_reply="{oops", error="memories.0.kind: bad"
    ),
    "summary_messages": lambda: summary.build_summary_messages(
        previous_summary="## Decisions\n- none", turns=TURNS[:5]
    ),
    "summary_messages_empty": lambda: summary.build_summary_messages(previous_summary="", turns=TURNS[:2]),
    "format_structured": lambda: extraction.extraction_response_format(structured=True),
    "format_object": lambda: extraction.extraction_response_format(structured=False),
    "episode_messages": lambda: episode.build_episode_messages(summary="## Decisions\n- x", turns=TURNS),
    "episode_messages_nosummary": lambda: episode.build_episode_messages(summary=None, turns=TURNS),
    "episode_messages_long": lambda: episode.build_episode_messages(
        summary="", turns=[Turn(event_id="x", role="user", content="y" * 1000, source_turn_id=None)]
    ),
    "wm_messages": lambda: working_memory.build_working_memory_messages(
        "## Constraints\n- a\n\n## Decisions\n- b"
    ),
    "judge_messages": lambda: judge.build_judge_messages(
        [("The user lives in Berlin.", "The user moved to Paris."), ("用户喜欢茶", "用户喜欢咖啡")]
    ),
    "distill_messages": lambda: distill.build_distill_messages(CLUSTERS),
}
EXPECTED = {
    "extraction_system": "7308b5f69bde956b67cb969c9dad50c37cfe2544e2e2dd40b582f9325d7af5c1",
    "summary_system": "ab5eebec34e7e95cb201d6fdda261d03614f308abe76d101948f50f61a342ea8",
    "extraction_messages": "398761d0ede7729340ab6c0e526e81a16d0d7524db80f9faa47be2bfacdcdf99",
    "extraction_messages_empty": "c3bee399d7565dda76a02e6958f4bb0485b44384b1942f0e0dff055aaa5286ac",
    "repair_messages": "6d707989ad3258bb262399ab49fabac145efac6fb12de497f3a394559f09bc77",
    "summary_messages": "25f66ce056e32c3afbec6e049e8a6ac5dd749f2e4a1e20a70add350418508a72",
    "summary_messages_empty": "86e4df2199fe887d6c2c59717ace4707b221883aad920a29c62861fdf56cee56",
    "format_structured": "8b190e5d154a65ca6f4e42241c2afe2fd3ba705c62e4a5f73f66ba16ccc7ec53",
    "format_object": "9e0e56f7ae15121c5d8b9569010f94a86f0132f131145e8f13a5174e3c79d23b",
    "episode_messages": "9c3cc666c2d6b1d19645067b1f56b2153017fc6ebe2fef5a4e1ef9d30375882a",
    "episode_messages_nosummary": "21683c292ca3adf6fae4f5705f2a822ed4fe1eea5f7f3ac9596500abae9482a1",
    "episode_messages_long": "504a3abfc3bfa24bac72777dac96c539fbc44b7c6433749ea068ff38dc2a21f6",
    "wm_messages": "262a8cbe90c10081749cb222d14952174194f7f139a6dbbcc79d8c84bbb6e99c",
    "judge_messages": "b8e9406c57a30b124c2c302a5faea7fe37b7ccf099acf2a4915a393fee058d62",
    "distill_messages": "53e52f98f984ba45502602505183b61571469bcdc2048e44c7ad47c8be754713",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_prompt_request_is_byte_identical_to_the_one_sent_before(name: str) -> None:
    assert sha(BUILT[name]()) == EXPECTED[name]


def test_the_distill_token_estimate_reads_the_same_text_as_before() -> None:
    system, user = (m["content"] for m in distill.build_distill_messages(CLUSTERS))

    assert sha(system + user) == "4dcf7bab6165105453126941e0da007bf6edc596183ef69990bc81a169c6d803"


def test_the_prompt_versions_are_unchanged() -> None:
    assert extraction.PROMPT_VERSION == "extract-v2"
    assert summary.SUMMARY_PROMPT_VERSION == "summary-v1"
    assert distill.DISTILL_PROMPT_VERSION == "distill-v1"


def test_the_strict_response_format_wraps_the_schema_format_the_client_is_given() -> None:
    assert extraction.extraction_response_format(structured=True) == {
        "type": "json_schema",
        "json_schema": extraction.extraction_json_schema_format(),
    }


# parsers ---------------------------------------------------------------------------------------------------


def test_an_empty_or_invalid_extraction_reply_is_summarised_without_its_content() -> None:
    assert extraction.validate_extraction_reply(None) == (None, "empty response")
    answer, problem = extraction.validate_extraction_reply('{"memories": [{"content": "secret"}]}')
    assert answer is None and problem is not None
    assert "memories.0.kind" in problem and "secret" not in problem


def test_an_answer_citing_no_turn_of_the_window_gives_no_candidate() -> None:
    answer = extraction.parse_extraction_answer(
        json.dumps(
            {
                "memories": [
                    {
                        "content": "用户住在柏林。",
                        "kind": "semantic",
                        "category": "profile",
                        "tier": "worth",
                        "slot": " ",
                        "value": None,
                        "op": "remember",
                        "confidence": 0.9,
                        "source_event_ids": ids,
                    }
                    for ids in (["e1", "zz", "e1"], ["zz"])
                ]
            }
        )
    )

    [candidate] = extraction.answer_to_candidates(answer, turns=TURNS[:2])

    assert candidate.source_event_ids == ("e1",) and candidate.source_turn_ids == ("t1",)
    assert candidate.lang == "zh" and candidate.slot is None and candidate.origin == "llm"


def test_a_summary_answer_is_stripped_and_an_empty_one_is_none() -> None:
    assert summary.parse_summary_answer("\n## Decisions\n- pnpm\n") == "## Decisions\n- pnpm"
    assert summary.parse_summary_answer("  ") is None
    assert summary.parse_summary_answer(None) is None


def test_judge_verdicts_outside_the_pairs_asked_about_are_dropped_and_garbage_gives_none() -> None:
    content = json.dumps({"verdicts": [{"id": 0, "verdict": "update"}, {"id": 5, "verdict": "duplicate"}]})

    assert judge.parse_judge_answer(content, pairs=2) == {0: "update"}
    assert judge.parse_judge_answer('{"verdicts": [{"id": 0, "verdict": "maybe"}]}', pairs=2) == {}
    assert judge.parse_judge_answer(None, pairs=2) == {}


def test_an_episode_answer_is_stripped_and_an_invalid_one_is_none() -> None:
    content = json.dumps({"what_happened": " Fixed the build. ", "outcome": "green ", "lesson": ""})

    assert episode.parse_episode_answer(content) == EpisodeText("Fixed the build.", "green", "")
    assert episode.parse_episode_answer('{"what_happened": ""}') is None
    assert episode.parse_episode_answer("") is None


def test_a_working_memory_answer_needs_the_four_sections_in_order() -> None:
    good = "\n".join(f"{h}\n- x" for h in working_memory.WM_SECTIONS)

    assert working_memory.parse_working_memory_answer(f"\n{good}\n") == good
    assert working_memory.parse_working_memory_answer(good.replace("## Lessons", "## Later")) is None
    swapped = "## Decisions\n## Constraints\n## Current progress\n## Lessons"
    assert working_memory.parse_working_memory_answer(swapped) is None


def test_distilled_memories_must_merge_two_fragments_no_earlier_output_took() -> None:
    answer = distill.parse_distill_answer(
        json.dumps(
            {
                "memories": [
                    {
                        "content": " merged ",
                        "kind": "semantic",
                        "category": "fact",
                        "covers": ["id-1", "id-2"],
                    },
                    {"content": "again", "kind": "semantic", "category": "fact", "covers": ["id-2", "id-3"]},
                    {
                        "content": "unknown",
                        "kind": "semantic",
                        "category": "fact",
                        "covers": ["id-9", "id-4"],
                    },
                ]
            }
        )
    )

    [rewrite] = distill.answer_to_rewrites(answer, CLUSTERS)

    assert rewrite.content == "merged" and set(rewrite.consolidated_from) == {"id-1", "id-2"}
