"""The distillation prompt: clusters of a user's fragments rewritten into consolidated memories. Pure.

Versioned: change `DISTILL_PROMPT_VERSION` whenever the prompt or the answer's shape changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from core.distill import Consolidated, Fragment, consolidate

DISTILL_PROMPT_VERSION = "distill-v1"
DISTILL_PROMPT = (
    "You consolidate an assistant's long-term memory about one user. You get clusters of related memory "
    "fragments, each with an id. For each cluster write one (or, if it mixes separate topics, a few) clear, "
    "standalone third-person memories in the language of the fragments, keeping every concrete fact "
    "(names, versions, dates, outcomes, lessons) and dropping repetition. Every output must list in "
    "`covers` the ids of the fragments it replaces; leave out fragments you cannot merge faithfully. "
    'Reply with JSON only: {"memories": [{"content": str, "kind": "semantic"|"episodic"|"procedural", '
    '"category": "profile"|"preference"|"constraint"|"decision"|"lesson"|"feedback"|"fact", "covers": [id]}]}'
)


class DistilledMemory(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=4000)
    kind: str = Field(pattern="^(semantic|episodic|procedural)$")
    category: str = Field(pattern="^(profile|preference|constraint|decision|lesson|feedback|fact)$")
    covers: list[str] = Field(min_length=1)


class DistillAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    memories: list[DistilledMemory]


def build_distill_messages(clusters: Sequence[Sequence[Fragment]]) -> list[dict[str, str]]:
    """The system prompt and one user message listing every cluster's fragments with their ids."""
    lines = []
    for n, members in enumerate(clusters, 1):
        lines.append(f"## Cluster {n}")
        lines += [f"[{m.id}] ({m.kind}/{m.category}) {m.content}" for m in members]
    return [{"role": "system", "content": DISTILL_PROMPT}, {"role": "user", "content": "\n".join(lines)}]


def parse_distill_answer(content: str) -> DistillAnswer:
    """Validate a raw reply (raises `pydantic.ValidationError`)."""
    return DistillAnswer.model_validate_json(content)


def answer_to_rewrites(answer: DistillAnswer, clusters: Sequence[Sequence[Fragment]]) -> list[Consolidated]:
    """The rewrites of a validated answer, each covering 2+ fragments of `clusters` no earlier output took;
    lineage, importance and evidence come from the fragments (`consolidate`), the text from the answer."""
    by_id = {m.id: m for members in clusters for m in members}
    used: set[str] = set()
    out = []
    for item in answer.memories:
        covered = [by_id[i] for i in dict.fromkeys(item.covers) if i in by_id and i not in used]
        if len(covered) < 2:
            continue  # an output that merges nothing (or names unknown ids) changes nothing
        used.update(m.id for m in covered)
        base = consolidate(covered)
        out.append(
            Consolidated(
                content=item.content.strip(),
                kind=item.kind,
                category=item.category,
                importance=base.importance,
                evidence_count=base.evidence_count,
                consolidated_from=base.consolidated_from,
                source_event_ids=base.source_event_ids,
                source_turn_ids=base.source_turn_ids,
                valid_from=base.valid_from,
            )
        )
    return out
