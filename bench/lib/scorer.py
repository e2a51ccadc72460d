"""Retrieval metrics for the LoCoMo harness (pure: no I/O, no clock, no environment).

Input, per question: the evidence turn ids (LoCoMo `dia_id`s such as "D1:3") and the ranked results, each
reduced to a `Result` (the turn ids it cites and its size in tokens, `shared.tokens.estimate_tokens`).

Definitions (k counts results, best first):
- evidence recall@k: share of the evidence turns covered by the union of `source_turn_ids` of the top k;
- recall-all@k: 1 when every evidence turn is covered in the top k, else 0; hit@k: 1 when at least one is;
- a result is *relevant* when it cites at least one evidence turn (gain 1);
- NDCG@k: DCG = sum of 1 / log2(rank + 1) over the relevant results of the top k; the ideal list puts
  `min(k, max(len(evidence), relevant results in the top k))` relevant results first (one per evidence turn
  for a plain turn index; never less than what was actually found, so NDCG stays within [0, 1] when a memory
  and a turn both cite the same evidence);
- MRR: 1 / rank of the first relevant result among all returned, 0 when none is;
- returned tokens: tokens of all returned results (and of the top k, `tokens@k`); source turns per item:
  mean `len(source_turn_ids)` over the returned results;
- recall within a token budget: results are taken in rank order while their cumulative tokens fit the
  budget; the first result that does not fit ends the list (an item is never cut, none is skipped over).

Aggregation (`aggregate`): per LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
5 adversarial) and overall, with categories 1-4 ("overall") and with 1-5 ("overall_with_adversarial").
Questions without evidence are left out of every evidence metric and counted (`no_evidence`); the token
figures cover every question.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared.tokens import estimate_tokens

RECALL_KS: tuple[int, ...] = (1, 2, 3, 5, 10, 15, 25)  # also the points of the recall/tokens curve
TOKEN_BUDGETS: tuple[int, ...] = (512, 2048)
NDCG_K = 10
RECALL_ALL_K = 10
HIT_K = 10
CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                              5: "adversarial"}
ANSWERABLE = (1, 2, 3, 4)
ADVERSARIAL = 5

_DIA_ID = re.compile(r"D:?(\d+):(\d+)")


def parse_evidence(raw: Iterable[str]) -> frozenset[str]:
    """The evidence turn ids of a LoCoMo question, normalised to "D<session>:<turn>".

    The data holds a few irregular entries ("D8:6; D9:17", "D:11:26", "D"): every well-formed id inside an
    entry is kept, anything else is dropped."""
    ids: set[str] = set()
    for entry in raw:
        for session, turn in _DIA_ID.findall(str(entry)):
            ids.add(f"D{int(session)}:{int(turn)}")
    return frozenset(ids)


@dataclass(frozen=True)
class Result:
    """One ranked result as the scorer sees it: the turns it cites and its size."""

    source_turn_ids: tuple[str, ...]
    tokens: int

    @classmethod
    def of(cls, content: str, source_turn_ids: Iterable[str]) -> Result:
        return cls(tuple(source_turn_ids), estimate_tokens(content))


@dataclass
class QuestionScore:
    """The metrics of one question; evidence metrics are None when the question has no evidence."""

    category: int
    has_evidence: bool
    returned: int
    tokens: int
    tokens_at: dict[int, int]
    source_turns_per_item: float | None
    recall_at: dict[int, float] = field(default_factory=dict)
    recall_all_at_10: float | None = None
    hit_at_10: float | None = None
    ndcg_at_10: float | None = None
    mrr: float | None = None
    recall_within: dict[int, float] = field(default_factory=dict)


def _covered(evidence: Collection[str], results: Sequence[Result]) -> set[str]:
    cited: set[str] = set()
    for r in results:
        cited.update(r.source_turn_ids)
    return cited & set(evidence)


def recall_at(evidence: Collection[str], results: Sequence[Result], k: int) -> float:
    """Share of the evidence turns cited by the top k results (0 for empty evidence)."""
    if not evidence:
        return 0.0
    return len(_covered(evidence, results[:k])) / len(set(evidence))


def recall_all_at(evidence: Collection[str], results: Sequence[Result], k: int) -> float:
    """1.0 when every evidence turn is cited within the top k, else 0.0."""
    return 1.0 if evidence and _covered(evidence, results[:k]) == set(evidence) else 0.0


def is_relevant(evidence: Collection[str], result: Result) -> bool:
    return any(t in evidence for t in result.source_turn_ids)


def hit_at(evidence: Collection[str], results: Sequence[Result], k: int) -> float:
    return 1.0 if any(is_relevant(evidence, r) for r in results[:k]) else 0.0


def ndcg_at(evidence: Collection[str], results: Sequence[Result], k: int) -> float:
    """Binary-gain NDCG@k; see the module docstring for the ideal list."""
    ev = set(evidence)
    if not ev:
        return 0.0
    rels = [is_relevant(ev, r) for r in results[:k]]
    dcg = sum(1.0 / math.log2(i + 2) for i, rel in enumerate(rels) if rel)
    ideal_n = min(k, max(len(ev), sum(rels)))
    idcg = sum(1.0 / math.log2(i + 2) for i in range(ideal_n))
    return dcg / idcg


def reciprocal_rank(evidence: Collection[str], results: Sequence[Result]) -> float:
    ev = set(evidence)
    for i, r in enumerate(results, 1):
        if is_relevant(ev, r):
            return 1.0 / i
    return 0.0


def within_budget(results: Sequence[Result], budget_tokens: int) -> list[Result]:
    """The leading results whose cumulative tokens fit `budget_tokens`; stops at the first that does not."""
    taken: list[Result] = []
    used = 0
    for r in results:
        if used + r.tokens > budget_tokens:
            break
        taken.append(r)
        used += r.tokens
    return taken


def recall_within_budget(evidence: Collection[str], results: Sequence[Result], budget_tokens: int) -> float:
    taken = within_budget(results, budget_tokens)
    return recall_at(evidence, taken, len(taken)) if taken else 0.0


def score_question(evidence: Collection[str], results: Sequence[Result], *, category: int,
                   ks: Sequence[int] = RECALL_KS, budgets: Sequence[int] = TOKEN_BUDGETS) -> QuestionScore:
    """Every metric of one question's ranked results."""
    ev = set(evidence)
    tokens_at = {k: sum(r.tokens for r in results[:k]) for k in ks}
    per_item = sum(len(r.source_turn_ids) for r in results) / len(results) if results else None
    score = QuestionScore(
        category=category,
        has_evidence=bool(ev),
        returned=len(results),
        tokens=sum(r.tokens for r in results),
        tokens_at=tokens_at,
        source_turns_per_item=per_item,
    )
    if ev:
        score.recall_at = {k: recall_at(ev, results, k) for k in ks}
        score.recall_all_at_10 = recall_all_at(ev, results, RECALL_ALL_K)
        score.hit_at_10 = hit_at(ev, results, HIT_K)
        score.ndcg_at_10 = ndcg_at(ev, results, NDCG_K)
        score.mrr = reciprocal_rank(ev, results)
        score.recall_within = {b: recall_within_budget(ev, results, b) for b in budgets}
    return score


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(scores: Sequence[QuestionScore]) -> dict[str, Any]:
    """Means over a group of questions (evidence metrics over the questions that have evidence)."""
    scored = [s for s in scores if s.has_evidence]
    ks = sorted({k for s in scores for k in s.tokens_at})
    budgets = sorted({b for s in scored for b in s.recall_within})
    per_item = [s.source_turns_per_item for s in scores if s.source_turns_per_item is not None]
    out: dict[str, Any] = {
        "questions": len(scores),
        "scored": len(scored),
        "no_evidence": len(scores) - len(scored),
        "recall_at": {k: _mean([s.recall_at[k] for s in scored]) for k in ks},
        "recall_all_at_10": _mean([s.recall_all_at_10 for s in scored if s.recall_all_at_10 is not None]),
        "hit_at_10": _mean([s.hit_at_10 for s in scored if s.hit_at_10 is not None]),
        "ndcg_at_10": _mean([s.ndcg_at_10 for s in scored if s.ndcg_at_10 is not None]),
        "mrr": _mean([s.mrr for s in scored if s.mrr is not None]),
        "recall_within": {b: _mean([s.recall_within[b] for s in scored]) for b in budgets},
        "tokens_per_query": _mean([float(s.tokens) for s in scores]),
        "tokens_at": {k: _mean([float(s.tokens_at[k]) for s in scores]) for k in ks},
        "returned_per_query": _mean([float(s.returned) for s in scores]),
        "source_turns_per_item": _mean(per_item),
    }
    return out


def aggregate(scores: Sequence[QuestionScore],
              categories: Mapping[int, str] = CATEGORIES) -> dict[str, Any]:
    """Summaries per category, overall (categories 1-4) and overall with the adversarial category."""
    out: dict[str, Any] = {"by_category": {}}
    for cat, name in categories.items():
        group = [s for s in scores if s.category == cat]
        if group:
            out["by_category"][str(cat)] = {"name": name, **summarize(group)}
    out["overall"] = summarize([s for s in scores if s.category in ANSWERABLE])
    out["overall_with_adversarial"] = summarize(list(scores))
    return out
