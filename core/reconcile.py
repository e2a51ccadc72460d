"""Reconciliation decisions (pure): a candidate, its nearest memories and its slot's rows -> one decision.

ADD        a new memory
REINFORCE  the same fact again: bump evidence on the existing row, union the sources; never a second row
SUPERSEDE  same slot, different value (or an LLM-judged update): the old row gets valid_to/superseded_by;
           also a change the rules read in no slot ("moved standup to 10:15") against the user's older
           memory on its topic (`core.topic_change`); and a correction of a value the user gave before
           ("actually it's 8081"): the memory holding that value is replaced by its own text corrected, of its
           kind and in its slot (`core.correction`; the new text in `extra["content"]`, and `kind`, `slot`, `value`)
HISTORY    a late or replayed event for a slot whose newer value is already current: store it as a past
           value (valid_to set), the newer fact stays current; the same for a statement older than a current
           change on its topic (a change delivered before the statement it replaces)
JUDGE      similar but not clearly the same: ask the LLM (duplicate / update / contradiction / complement);
           without an LLM this becomes ADD
FORGET     an explicit request to forget: the matching memories become `deleted` (history kept)
END        a named thing the user has left ("we ripped out Datadog", "I left Shopify"): the user's older current
           memories naming it stop being current (valid_to set, status `superseded`, history kept); nothing
           is stored for the statement itself. A statement older than such an end that names the thing
           arrives as history.
HOLD       a new value for a slot the extractor was not sure of (confidence under UNSURE_CONFIDENCE) and no
           LLM to judge it: the candidate is kept (decision `hold`), no memory is written, the current value
           stays current. With an LLM the same case is a JUDGE against the slot's current value.
NOOP       nothing to do (a replay of evidence we already hold, a forget that matches nothing, a correction the
           residual filter did not keep that corrects nothing known)
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from core.correction import CORRECTION_PROBE_RULE, corrected, is_correction_rule
from core.topic_change import is_change_rule, shares_topic, tells_change, topic_weight


class Op(StrEnum):
    ADD = "add"
    REINFORCE = "reinforce"
    SUPERSEDE = "supersede"
    HISTORY = "history"
    JUDGE = "judge"
    FORGET = "forget"
    END = "end"
    HOLD = "hold"
    NOOP = "noop"


# A slotted candidate under this confidence does not replace a slot's value on its own word.
UNSURE_CONFIDENCE = 0.7


@dataclass(frozen=True)
class Policy:
    reinforce_cosine: float = 0.80  # at or above (and enough shared words): the same fact (same kind)
    similar_cosine: float = 0.45  # [similar, reinforce): ask the LLM when there is one
    min_overlap: float = 0.8  # share of the shorter statement's keywords the longer one must contain
    forget_cosine: float = 0.55  # a forget request matches memories at least this close


# Calibrated on tests/data/reconcile_pairs.jsonl (13 duplicates, 10 related-but-different, 8 unrelated, EN+ZH):
# the thresholds that keep every related pair out of REINFORCE (precision 1.0) while catching 11/13
# duplicates. Cosine alone is not enough: MiniLM is English-only and scores different Chinese sentences 1.0,
# so a keyword overlap (CJK bigrams) is required as well. See CALIBRATION.md.
_CALIBRATED = {
    "hashing": Policy(reinforce_cosine=0.80, similar_cosine=0.45),
    "local": Policy(reinforce_cosine=0.88, similar_cosine=0.55),
    "openai": Policy(reinforce_cosine=0.85, similar_cosine=0.55),
    # the same data, issue 18: MiniLM int8 scores like MiniLM; e5's cosines sit high (unrelated pairs
    # 0.75 - 0.90), so its forget threshold must be far above the default 0.55 or a forget would match
    # every memory
    "onnx-minilm": Policy(reinforce_cosine=0.88, similar_cosine=0.55, forget_cosine=0.75),
    "e5-small": Policy(reinforce_cosine=0.96, similar_cosine=0.85, forget_cosine=0.93),
}


def calibrated_policy(embedder: str) -> Policy:
    return _CALIBRATED.get(embedder, Policy())


@dataclass(frozen=True)
class PendingCandidate:
    """A stored candidate (a `candidates` row with status `new`) waiting for reconciliation: what `decide`
    weighs, and what a memory added from it is made of. Extraction's own output is
    `core.extraction.candidates.Candidate`; the table is `shared.db.models.CandidateRow`."""

    content: str
    kind: str
    op: str  # remember | forget
    event_time: datetime
    source_event_ids: tuple[str, ...]
    slot: str | None = None
    value: str | None = None
    id: int = 0  # the candidates row
    category: str = "fact"
    tier: str = "worth"
    confidence: float = 0.8  # a rule or LLM candidate says how sure it is; UNSURE_CONFIDENCE is the floor
    lang: str = "en"
    agent_id: str | None = None
    source_turn_ids: tuple[str, ...] = ()
    # the extractor that proposed it (rules, llm, rules+llm, residual); kept on the memory it adds
    origin: str | None = None
    rule: str | None = None  # the rule that read it (rules only): a change in no slot is `*.statement.change`


@dataclass(frozen=True)
class Existing:
    id: str
    content: str
    kind: str
    status: str
    valid_from: datetime
    valid_to: datetime | None = None
    slot: str | None = None
    value: str | None = None
    similarity: float = 0.0  # cosine similarity to the candidate (0 when unknown)
    source_event_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Decision:
    op: Op
    reason: str
    target_ids: tuple[str, ...] = ()  # the memories acted on (reinforced, superseded, forgotten, judged)
    # for HISTORY: the validity window the late value gets, and the row that succeeded it
    valid_to: datetime | None = None
    superseded_by: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)


def content_key(text: str) -> str:
    """A normal form for exact-duplicate detection: NFKC, case-folded, punctuation and spaces removed."""
    return _PUNCT.sub("", unicodedata.normalize("NFKC", text).casefold())


def _overlap(a: str, b: str) -> float:
    """Share of the shorter statement's keywords found in the other (overlap coefficient)."""
    from core.keywords import tokens

    ta, tb = set(tokens(a)), set(tokens(b))
    ta.discard("user")
    tb.discard("user")
    ta.discard("用户")
    tb.discard("用户")
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / min(len(ta), len(tb))


def same_value(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and content_key(a) == content_key(b)


def decide(
    cand: PendingCandidate,
    *,
    neighbours: Sequence[Existing],
    slot_rows: Sequence[Existing] = (),
    policy: Policy = Policy(),
    llm_available: bool = False,
    ended: Sequence[tuple[str, datetime]] = (),
) -> Decision:
    """Decide what one candidate does to the store. `neighbours` are the user's nearest active memories
    (any slot) and, for an `end`, those naming what was left; `slot_rows` every row of the candidate's slot
    (active and past), for conflicts and time; `ended` the things the user has said they left, with when."""
    if cand.op == "forget":
        return _forget(cand, neighbours=neighbours, slot_rows=slot_rows, policy=policy)
    if cand.op == "end":
        return _end(cand, neighbours=neighbours)
    if is_correction_rule(cand.rule):
        decision = _correction(cand, neighbours=neighbours)
        if decision is not None:
            return decision
    ended_since = _ended_since(cand, ended)
    if ended_since is not None and not any(_replayed(cand, r) for r in slot_rows):
        name, when = ended_since
        return Decision(Op.HISTORY, f"{name!r} was left since", valid_to=when)
    if cand.slot:
        decision = _slotted(cand, slot_rows=slot_rows, llm_available=llm_available)
        if decision.op == Op.ADD:
            # the slot is empty, but a newer change in no slot may hold its topic ("现在统一 3.12 了" before a late
            # "我们升到 Python 3.10 了"): then the late value is past, as against the slot's own newer value
            same_kind = [n for n in neighbours if n.kind == cand.kind and n.status == "active"]
            later = _topic_changed(cand, same_kind)
            if later is not None and later.op == Op.HISTORY:
                return later
        return decision
    return _unslotted(cand, neighbours=neighbours, policy=policy, llm_available=llm_available)


def _replayed(cand: PendingCandidate, row: Existing) -> bool:
    return bool(cand.source_event_ids) and set(cand.source_event_ids) <= set(row.source_event_ids)


def _slotted(
    cand: PendingCandidate, *, slot_rows: Sequence[Existing], llm_available: bool = False
) -> Decision:
    current = next((r for r in slot_rows if r.status == "active"), None)
    if current is None:
        return Decision(Op.ADD, f"first value for slot {cand.slot}")
    if same_value(cand.value, current.value):
        if _replayed(cand, current):
            return Decision(Op.NOOP, "replayed evidence already on the current value", (current.id,))
        return Decision(Op.REINFORCE, f"same value for slot {cand.slot}", (current.id,))
    if cand.event_time >= current.valid_from:
        change = f"slot {cand.slot}: {current.value!r} -> {cand.value!r}"
        if cand.confidence < UNSURE_CONFIDENCE:
            if llm_available:
                return Decision(Op.JUDGE, f"{change}, extractor unsure", (current.id,), extra={"slot": "1"})
            return Decision(Op.HOLD, f"{change}, extractor unsure and no LLM to judge", (current.id,))
        return Decision(Op.SUPERSEDE, change, (current.id,))
    # A late event: it was true before the current value. Find the row that followed it in time.
    past = [r for r in slot_rows if r.status != "deleted"]
    for r in past:
        if (
            same_value(cand.value, r.value)
            and r.valid_from <= cand.event_time
            and (r.valid_to is None or cand.event_time < r.valid_to)
        ):
            return Decision(
                Op.REINFORCE if not _replayed(cand, r) else Op.NOOP,
                "late evidence for the value that was current then",
                (r.id,),
            )
    successor = min((r for r in past if r.valid_from > cand.event_time), key=lambda r: r.valid_from)
    return Decision(
        Op.HISTORY,
        f"late event for slot {cand.slot}: a newer value is current",
        (current.id,),
        valid_to=successor.valid_from,
        superseded_by=successor.id,
    )


def _unslotted(
    cand: PendingCandidate, *, neighbours: Sequence[Existing], policy: Policy, llm_available: bool
) -> Decision:
    key = content_key(cand.content)
    same_kind = [n for n in neighbours if n.kind == cand.kind and n.status == "active"]
    for n in same_kind:
        if content_key(n.content) == key:
            if _replayed(cand, n):
                return Decision(Op.NOOP, "replayed evidence already on this memory", (n.id,))
            return Decision(Op.REINFORCE, "same normalized content", (n.id,))
    best = max(same_kind, key=lambda n: n.similarity, default=None)
    shared = _overlap(cand.content, best.content) if best is not None else 0.0
    if best is not None and best.similarity >= policy.reinforce_cosine and shared >= policy.min_overlap:
        if _replayed(cand, best):
            return Decision(Op.NOOP, "replayed evidence already on this memory", (best.id,))
        reason = f"cosine {best.similarity:.3f} >= {policy.reinforce_cosine}"
        return Decision(Op.REINFORCE, reason, (best.id,))
    changed = _topic_changed(cand, same_kind)
    if changed is not None:
        return changed
    if best is not None and (best.similarity >= policy.similar_cosine or shared >= 0.5):
        if llm_available:
            return Decision(Op.JUDGE, f"cosine {best.similarity:.3f} in the similar band", (best.id,))
        return Decision(Op.ADD, f"cosine {best.similarity:.3f} in the similar band; no LLM to judge")
    return Decision(Op.ADD, "no similar memory")


def _topic_changed(cand: PendingCandidate, same_kind: Sequence[Existing]) -> Decision | None:
    """A change in no slot against the user's memories on its topic (`core.topic_change`): it replaces the
    older one closest to it; it is itself past when a newer one is current. A plain statement older than a
    current change on its topic is past too (the change was delivered first). None when no memory shares its
    topic."""
    # a kept sentence (residual filter, verbatim) that tells a change ("down to one coffee a day now",
    # "rate limit 已经 bump 到 500 rps") is a change on its topic as well
    change = is_change_rule(cand.rule) or (cand.origin == "residual" and tells_change(cand.content))
    on_topic = [
        n
        for n in same_kind
        if (change and shares_topic(cand.content, n.content))
        or (not change and tells_change(n.content) and shares_topic(n.content, cand.content))
    ]
    newer = [n for n in on_topic if n.valid_from > cand.event_time]
    if newer:
        successor = min(newer, key=lambda n: n.valid_from)
        return Decision(
            Op.HISTORY,
            f"a newer statement on its topic is current: {successor.content!r}",
            (successor.id,),
            valid_to=successor.valid_from,
            superseded_by=successor.id,
        )
    older = [n for n in on_topic if n.valid_from < cand.event_time]  # one turn's statements stand together
    if not change or not older:
        return None
    # the one it replaces: the most words of its topic, then the closest ("alarm is 5:45 now" replaces "alarm
    # set for 6:30", not "alarm plays birdsong" beside it); a chain of changes ends one value at a time
    replaced = max(older, key=lambda n: (topic_weight(cand.content, n.content), n.similarity, n.valid_from))
    return Decision(Op.SUPERSEDE, f"a change on the topic of {replaced.content!r}", (replaced.id,))


def _correction(cand: PendingCandidate, *, neighbours: Sequence[Existing]) -> Decision | None:
    """A correction of a value the user gave before (`core.correction`): the older memory that holds the value
    it takes back is replaced by its own text with the value corrected (`extra["content"]`); the memory closest to
    the correction may be matched by the shape of its value alone. A correction of nothing known stores nothing
    when the residual filter did not keep it (a probe), else it goes on as any kept sentence (None)."""
    older = sorted(
        (n for n in neighbours if n.status == "active" and n.valid_from < cand.event_time),
        key=lambda n: -n.similarity,
    )
    tries = [(n, False) for n in older] + [(n, True) for n in older[:1] if n.similarity > 0]
    for n, loose in tries:
        text = corrected(n.content, cand.content, loose=loose)
        if text is not None and content_key(text) != content_key(n.content):
            # the corrected memory is of the old one's kind, and in its slot when its value is what was corrected
            extra = {"content": text, "kind": n.kind}
            value = corrected(n.value, cand.content, loose=loose) if n.slot and n.value else None
            if n.slot and value is not None:
                extra |= {"slot": n.slot, "value": value}
            return Decision(Op.SUPERSEDE, f"corrects a value of {n.content!r}", (n.id,), extra=extra)
    if cand.rule == CORRECTION_PROBE_RULE:
        return Decision(Op.NOOP, "a correction of no value the user is known to have given")
    return None


def names(value: str, content: str) -> bool:
    """`content` names `value`: as whole words in Latin script ("Jest" is not in "Jester"), as a substring in
    Chinese; case and width folded."""
    value = unicodedata.normalize("NFKC", value).casefold().strip()
    content = unicodedata.normalize("NFKC", content).casefold()
    if not value:
        return False
    if not value.isascii():
        return value in content
    words = r"\s+".join(re.escape(word) for word in value.split())
    return re.search(rf"(?<![\w.+#-]){words}(?![\w+#-]|\.\w)", content) is not None


def _end(cand: PendingCandidate, *, neighbours: Sequence[Existing]) -> Decision:
    """The user's older current memories that name what was left stop being current."""
    value = cand.value or ""
    targets = tuple(
        n.id
        for n in neighbours
        if n.status == "active" and n.valid_from < cand.event_time and names(value, n.content)
    )
    if not targets:
        return Decision(Op.NOOP, f"nothing current names {value!r}")
    return Decision(Op.END, f"the user left {value!r}", targets)


def _ended_since(
    cand: PendingCandidate, ended: Sequence[tuple[str, datetime]]
) -> tuple[str, datetime] | None:
    """The first thing the candidate names that the user said they left after it was said, with when."""
    later = [(when, name) for name, when in ended if when > cand.event_time and names(name, cand.content)]
    if not later:
        return None
    when, name = min(later)
    return name, when


def _forget(
    cand: PendingCandidate, *, neighbours: Sequence[Existing], slot_rows: Sequence[Existing], policy: Policy
) -> Decision:
    targets: list[str] = []
    if cand.slot:
        targets += [r.id for r in slot_rows if r.status == "active"]
    key = content_key(cand.content)
    for n in neighbours:
        if n.status != "active" or n.id in targets:
            continue
        close = n.similarity >= policy.forget_cosine
        names_value = bool(cand.value) and content_key(cand.value or "") in content_key(n.content)
        if close or names_value or (key and key == content_key(n.content)):
            targets.append(n.id)
    if not targets:
        return Decision(Op.NOOP, "forget request matched no memory")
    return Decision(Op.FORGET, "explicit forget request", tuple(targets))


def judged(decision: Decision, verdict: str) -> Decision:
    """Turn an LLM verdict on a JUDGE decision into the final one."""
    target = decision.target_ids
    if verdict == "duplicate":
        return Decision(Op.REINFORCE, "LLM: duplicate", target)
    if verdict in ("update", "contradiction"):
        return Decision(Op.SUPERSEDE, f"LLM: {verdict}", target)
    if decision.extra.get("slot"):  # a slot holds one value: an unsure new value that is not an update waits
        return Decision(Op.HOLD, f"LLM: {verdict or 'complement'}; the slot keeps its value", target)
    return Decision(Op.ADD, f"LLM: {verdict or 'complement'}")
