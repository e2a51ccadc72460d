"""The LLM's part of extraction: one chat call for a whole window of turns, at most one repair.

`extract_candidates` never raises for LLM trouble: `ok=False` with a short `error` tells the caller to keep
the rule candidates and mark the events `llm_pending`. The answer is validated strictly
(`validate_extraction_reply`); source ids outside the window are dropped, and a memory left with none is
dropped; an answer whose memories all cite none is invalid. Invalid output gets one repair request, then
`ok=False` (`invalid_output: ...`); a refusal (or any answer that is no answer: cut off, empty, no choice)
is `ok=False` with the client's reason, without a repair.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from core.extraction.candidates import Candidate, Turn
from core.limits import fit_candidate
from core.prompts.extraction import (
    answer_to_candidates,
    build_extraction_messages,
    build_repair_messages,
    extraction_json_schema_format,
    validate_extraction_reply,
)
from worker.llm import LLMClient, LLMUsage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LLMResult:
    candidates: list[Candidate]
    usage: LLMUsage
    ok: bool  # False -> the caller falls back to rules and marks the events llm_pending
    error: str | None


def extract_candidates(
    llm: LLMClient,
    *,
    turns: Sequence[Turn],
    summary: str,
    existing_memories: Sequence[str],
    rule_candidates: Sequence[Candidate],
) -> LLMResult:
    """Ask the LLM for the memories of `turns`, shown the session summary, what is known already and the
    rule candidates; usage covers both calls when a repair was needed."""
    messages = build_extraction_messages(
        turns=turns, summary=summary, existing_memories=existing_memories, rule_candidates=rule_candidates
    )
    schema = extraction_json_schema_format()
    content, usage, error = llm.complete_json(messages, json_schema=schema)
    candidates: list[Candidate] | None = None
    if error is None:
        candidates, problem = _read_answer(content, turns=turns)
        if candidates is None:
            log.info("llm extraction answer invalid, asking once for a repair: %s", problem)
            repair = build_repair_messages(messages, bad_reply=content or "", error=str(problem))
            content, repair_usage, error = llm.complete_json(repair, json_schema=schema)
            usage += repair_usage
            if error is None:
                candidates, problem = _read_answer(content, turns=turns)
                if candidates is None:
                    error = f"invalid_output: {problem}"
    if candidates is None:
        log.warning("llm extraction failed: %s (calls=%d)", error, usage.calls)
        return LLMResult(candidates=[], usage=usage, ok=False, error=error)
    return LLMResult(candidates=candidates, usage=usage, ok=True, error=None)


def _read_answer(content: str | None, *, turns: Sequence[Turn]) -> tuple[list[Candidate] | None, str | None]:
    """The answer's candidates, or what is wrong with it. An answer whose memories all cite turns outside
    the window stores nothing: that is a wrong answer (said, and repaired once), not an empty one."""
    answer, problem = validate_extraction_reply(content)
    if answer is None:
        return None, problem
    candidates = answer_to_candidates(answer, turns=turns)
    if answer.memories and not candidates:
        return None, "source_event_ids: no memory cites a bracketed turn id of the window"
    return _fitted(candidates), None


def _fitted(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Every candidate held to the column limits before anything is written (`core.limits`): a field that
    does not fit is dropped or cut with a log line, and the window goes on."""
    out: list[Candidate] = []
    for candidate in candidates:
        fitted, notes = fit_candidate(candidate)
        for note in notes:
            log.warning(
                "llm extraction answer field does not fit its column: %s (events %s)",
                note,
                ",".join(candidate.source_event_ids),
            )
        out.append(fitted)
    return out
