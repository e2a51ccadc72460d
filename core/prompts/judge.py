"""The reconciliation judge's prompt: similar-but-unclear (existing, new) pairs, one verdict each. Pure.

Versioned: change `JUDGE_PROMPT_VERSION` whenever the prompt changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

JUDGE_PROMPT_VERSION = "judge-v1"
JUDGE_PROMPT = (
    "You maintain an assistant's long-term memory about one user. For each numbered pair, compare the NEW "
    "statement with the EXISTING memory and answer one verdict: duplicate (same fact), update (the new one "
    "replaces the old, e.g. a changed value), contradiction (they cannot both be true; the new one wins), or "
    'complement (both stay true). Reply with JSON only: {"verdicts": [{"id": int, "verdict": str}]}'
)


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    verdict: Literal["duplicate", "update", "contradiction", "complement"]


class Verdicts(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdicts: list[Verdict]


def build_judge_messages(pairs: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The system prompt and one user message listing the (existing, new) pairs, numbered from 0."""
    lines = [f"{n}. EXISTING: {old}\n   NEW: {new}" for n, (old, new) in enumerate(pairs)]
    return [{"role": "system", "content": JUDGE_PROMPT}, {"role": "user", "content": "\n".join(lines)}]


def parse_judge_answer(content: str | None, *, pairs: int) -> dict[int, str]:
    """Verdict by pair number, for the numbers of the `pairs` asked about; {} for an invalid answer."""
    if not content:
        return {}
    try:
        answer = Verdicts.model_validate_json(content)
    except ValidationError:
        return {}
    return {v.id: v.verdict for v in answer.verdicts if 0 <= v.id < pairs}
