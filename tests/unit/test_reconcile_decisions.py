"""Reconciliation decisions (pure): the same fact reinforces, a new slot value supersedes, late events
become history, unclear similarity is judged, forget requests forget; thresholds hold on labelled pairs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from core.distill import cosine
from core.reconcile import (
    Decision,
    Existing,
    Op,
    PendingCandidate,
    Policy,
    calibrated_policy,
    content_key,
    decide,
    judged,
)
from store.embeddings import HashingEmbedder

T = datetime(2026, 3, 1, tzinfo=UTC)
DAY = timedelta(days=1)


def cand(
    content: str,
    *,
    when: datetime = T,
    slot: str | None = None,
    value: str | None = None,
    op: str = "remember",
    kind: str = "semantic",
    events: tuple[str, ...] = ("e-new",),
) -> PendingCandidate:
    return PendingCandidate(
        content=content, kind=kind, op=op, event_time=when, source_event_ids=events, slot=slot, value=value
    )


def row(
    mid: str,
    content: str,
    *,
    status: str = "active",
    since: datetime = T,
    until: datetime | None = None,
    slot: str | None = None,
    value: str | None = None,
    sim: float = 0.0,
    kind: str = "semantic",
    events: tuple[str, ...] = ("e-old",),
) -> Existing:
    return Existing(
        id=mid,
        content=content,
        kind=kind,
        status=status,
        valid_from=since,
        valid_to=until,
        slot=slot,
        value=value,
        similarity=sim,
        source_event_ids=events,
    )


def test_the_first_value_of_a_slot_is_added():
    assert decide(cand("Uses Vite.", slot="project.bundler", value="vite"), neighbours=[]).op == Op.ADD


def test_the_same_slot_value_reinforces_and_a_replay_changes_nothing():
    current = row("m1", "Uses Vite.", slot="project.bundler", value="vite")
    assert (
        decide(
            cand("We use vite", slot="project.bundler", value="Vite"), neighbours=[], slot_rows=[current]
        ).op
        == Op.REINFORCE
    )
    replay = cand("We use vite", slot="project.bundler", value="vite", events=("e-old",))
    assert decide(replay, neighbours=[], slot_rows=[current]).op == Op.NOOP


def test_a_newer_different_value_supersedes_the_current_one():
    current = row("m1", "Uses Vite.", slot="project.bundler", value="vite", since=T)
    d = decide(
        cand("Uses webpack.", slot="project.bundler", value="webpack", when=T + DAY),
        neighbours=[],
        slot_rows=[current],
    )
    assert d.op == Op.SUPERSEDE and d.target_ids == ("m1",)


def test_an_older_different_value_becomes_history_before_its_successor():
    old = row(
        "m1",
        "Lives in Paris.",
        slot="user.location",
        value="Paris",
        status="superseded",
        since=T,
        until=T + 10 * DAY,
    )
    current = row("m2", "Lives in Rome.", slot="user.location", value="Rome", since=T + 10 * DAY)
    d = decide(
        cand("Lives in Oslo.", slot="user.location", value="Oslo", when=T + 5 * DAY),
        neighbours=[],
        slot_rows=[old, current],
    )
    assert d.op == Op.HISTORY and d.valid_to == T + 10 * DAY and d.superseded_by == "m2"
    late_same = decide(
        cand("Lives in Paris.", slot="user.location", value="paris", when=T + 2 * DAY),
        neighbours=[],
        slot_rows=[old, current],
    )
    assert late_same.op == Op.REINFORCE and late_same.target_ids == ("m1",)


def test_unslotted_facts_reinforce_only_when_close_and_sharing_their_words():
    base = "The user prefers concise answers."
    same = decide(cand("The user prefers concise answers!"), neighbours=[row("m1", base, sim=0.97)])
    assert same.op == Op.REINFORCE
    # MiniLM scores different Chinese sentences ~1.0: without shared words this is not the same fact
    zh = decide(
        cand("用户喜欢详细的解释。"),
        neighbours=[row("m1", "用户喜欢简洁的回复。", sim=1.0)],
        policy=calibrated_policy("local"),
    )
    assert zh.op != Op.REINFORCE
    other_kind = decide(cand(base, kind="procedural"), neighbours=[row("m1", base, sim=1.0)])
    assert other_kind.op == Op.ADD


def test_the_similar_band_is_judged_with_an_llm_and_added_without_one():
    neighbours = [row("m1", "The user prefers concise answers.", sim=0.6)]
    c = cand("The user prefers detailed answers with examples.")
    assert decide(c, neighbours=neighbours, llm_available=True).op == Op.JUDGE
    assert decide(c, neighbours=neighbours, llm_available=False).op == Op.ADD
    d = Decision(Op.JUDGE, "band", ("m1",))
    assert judged(d, "duplicate").op == Op.REINFORCE
    assert judged(d, "update").op == Op.SUPERSEDE and judged(d, "contradiction").op == Op.SUPERSEDE
    assert judged(d, "complement").op == Op.ADD


def test_forget_requests_target_the_slot_and_close_memories_and_noop_otherwise():
    current = row("m1", "Lives in Berlin.", slot="user.location", value="Berlin")
    note = row("m2", "The user's address is Hauptstrasse 5, Berlin.", sim=0.7)
    d = decide(
        cand("Forget my address.", op="forget", slot="user.location"), neighbours=[note], slot_rows=[current]
    )
    assert d.op == Op.FORGET and set(d.target_ids) == {"m1", "m2"}
    assert (
        decide(cand("Forget my cat.", op="forget"), neighbours=[row("m3", "Likes tea.", sim=0.1)]).op
        == Op.NOOP
    )


def test_content_keys_ignore_case_width_and_punctuation():
    assert content_key("The user prefers CONCISE answers!") == content_key("the user prefers concise answers")
    assert content_key("用户喜欢简洁的回复。") == content_key("用户喜欢简洁的回复")


PAIRS = [
    json.loads(line)
    for line in (Path(__file__).parent.parent / "data" / "reconcile_pairs.jsonl").read_text().splitlines()
    if line
]


@pytest.mark.parametrize("embedder", ["hashing"])
def test_calibrated_thresholds_never_reinforce_related_or_unrelated_pairs(embedder):
    policy: Policy = calibrated_policy(embedder)
    emb = HashingEmbedder(384)
    wrong, caught, duplicates = [], 0, 0
    for pair in PAIRS:
        if pair["label"] == "crosslingual":
            continue
        sim = cosine(*emb.embed([pair["a"], pair["b"]]))
        d = decide(cand(pair["b"]), neighbours=[row("m", pair["a"], sim=sim)], policy=policy)
        if pair["label"] == "duplicate":
            duplicates += 1
            caught += d.op == Op.REINFORCE
        elif d.op == Op.REINFORCE:
            wrong.append(pair)
    assert wrong == []
    assert caught / duplicates >= 0.8


def test_an_unsure_new_slot_value_is_judged_with_an_llm_and_held_without_one() -> None:
    """A slotted candidate under UNSURE_CONFIDENCE never replaces the current value on its own word."""
    from datetime import UTC, datetime

    from core.reconcile import UNSURE_CONFIDENCE, Decision, Existing, Op, PendingCandidate, decide, judged

    then, now = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)
    current = Existing("m1", "The user's project uses npm.", "semantic", "active", then,
                       slot="project.package_manager", value="npm")  # fmt: skip
    unsure = PendingCandidate("The user's project uses pnpm.", "semantic", "remember", now, ("e2",),
                              slot="project.package_manager", value="pnpm",
                              confidence=UNSURE_CONFIDENCE - 0.1)  # fmt: skip
    held = decide(unsure, neighbours=[], slot_rows=[current], llm_available=False)
    assert held.op is Op.HOLD and held.target_ids == ("m1",)
    judge = decide(unsure, neighbours=[], slot_rows=[current], llm_available=True)
    assert judge.op is Op.JUDGE and judge.target_ids == ("m1",)
    assert judged(judge, "update").op is Op.SUPERSEDE
    assert judged(judge, "complement").op is Op.HOLD  # never a second current value in the slot
    sure = decide(
        PendingCandidate(unsure.content, "semantic", "remember", now, ("e2",), slot=unsure.slot, value="pnpm",
                         confidence=0.85),
        neighbours=[], slot_rows=[current],
    )  # fmt: skip
    assert sure == Decision(Op.SUPERSEDE, "slot project.package_manager: 'npm' -> 'pnpm'", ("m1",))


# A change in no slot (issue #12): the rule's mark and the topic words decide, in both languages and orders.
CHANGE = "en.statement.change"


def change(content: str, *, when: datetime, rule: str = CHANGE, kind: str = "semantic") -> PendingCandidate:
    return PendingCandidate(
        content=content, kind=kind, op="remember", event_time=when, source_event_ids=("e-new",), rule=rule
    )


@pytest.mark.parametrize(
    ("old", "new", "rule"),
    [
        (
            "Standup is at 9:30 every day.",
            "The user's team moved standup to 10:15 starting this year.",
            CHANGE,
        ),
        ("The user's alarm is set for 6:30.", "The user's alarm is 5:45 now.", "en.statement.now"),
        ("The user works four days a week.", "The user is back to five days a week since March.", CHANGE),
        (
            "Secrets live in a dotenv file per service.",
            "The user's team has since moved all secrets into Vault.",
            CHANGE,
        ),
        ("注释用 Javadoc 风格。", "注释风格改成 Google 风格了。", "zh.statement.change"),
        ("部署用的是 Shell 脚本。", "部署现在走 Argo CD 了。", "zh.statement.now"),
        (
            "The user runs in the mornings.",
            "Moved the user's runs to the evenings.",
            "remember_that+en.statement.change",
        ),
        (
            "The user's Kafka cluster has 3 brokers.",
            "On the Kafka thing: it's 5 brokers now.",
            "en.correction.statement",
        ),
        ("用户团队 Kafka 集群 3 个 broker。", "是 5 个 broker，上个月扩容了。", "zh.correction.statement"),
    ],
)
def test_a_change_in_no_slot_supersedes_the_older_memories_on_its_topic(old: str, new: str, rule: str):
    before = row("m1", old, since=T)
    unrelated = row("m2", "The user's project uses Rust.", since=T)
    d = decide(change(new, when=T + DAY, rule=rule), neighbours=[before, unrelated])
    assert d.op == Op.SUPERSEDE and d.target_ids == ("m1",)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user is on the Growth team.", "The user's team switched to 1-week sprints."),  # "team" says who
        ("The user's project uses Rust.", "The user's project moved to 2-week releases."),
        ("用户用 Vim 写代码。", "用户现在用 MacBook Air。"),  # "用户 ... 用" is everyone's
        (
            "The user has a meeting every week.",
            "The user moved the gym sessions to twice a week.",
        ),  # one time word
    ],
)
def test_a_change_leaves_memories_on_other_topics_alone(old: str, new: str):
    d = decide(change(new, when=T + DAY), neighbours=[row("m1", old, since=T)])
    assert d.op == Op.ADD


def test_only_a_change_rule_supersedes_and_only_memories_of_its_kind():
    old = row("m1", "Standup is at 9:30 every day.", since=T)
    plain = change("Standup notes go in the wiki.", when=T + DAY, rule="en.statement.fact")
    assert decide(plain, neighbours=[old]).op == Op.ADD
    rule = row("m2", "Never book anything during standup.", since=T, kind="procedural")
    moved = change("The user's team moved standup to 10:15.", when=T + DAY)
    assert decide(moved, neighbours=[rule]).op == Op.ADD
    # statements from one turn (one event time) stand together
    assert decide(change("Moved standup to 10:15.", when=T), neighbours=[old]).op == Op.ADD


def test_a_change_supersedes_the_closest_older_memory_on_its_topic_and_is_history_before_a_newer_one():
    sound = row("m1", "The user's alarm plays birdsong.", since=T, sim=0.4)
    time = row("m2", "The user's alarm is set for 6:30.", since=T + DAY, sim=0.7)
    d = decide(change("The user's alarm is 5:45 now.", when=T + 3 * DAY), neighbours=[sound, time])
    assert d.op == Op.SUPERSEDE and d.target_ids == ("m2",)
    # more of the topic outweighs closeness
    morning = row("m3", "The user's alarm rings on weekday mornings.", since=T, sim=0.1)
    d = decide(
        change("Moved the user's weekday alarm to 6:00.", when=T + 3 * DAY), neighbours=[time, morning]
    )
    assert d.target_ids == ("m3",)
    # delivered late: the newer statement on the topic stays current, the late change ends where it begins
    newer = row("m4", "The user's budget got cut back to $650 a month.", since=T + 3 * DAY)
    late = decide(change("The user's budget got bumped to $800 a month.", when=T + DAY), neighbours=[newer])
    assert late.op == Op.HISTORY and late.superseded_by == "m4" and late.valid_to == T + 3 * DAY


def test_a_kept_sentence_that_tells_a_change_supersedes_like_a_change_rule_and_a_plain_one_does_not():
    """The residual filter keeps a sentence verbatim (origin `residual`); when its words tell a change ("now",
    "已经", "bump 到") it replaces the older memory on its topic as a change rule's statement does."""
    from dataclasses import replace

    old = row("m1", "我们 API 的 rate limit 是 100 rps", since=T)
    kept = replace(change("rate limit 已经 bump 到 500 rps", when=T + DAY, rule="residual_model"), origin="residual")
    d = decide(kept, neighbours=[old])
    assert d.op == Op.SUPERSEDE and d.target_ids == ("m1",)
    coffee = row("m2", "I drink like 3 coffees a day", since=T)
    down = replace(change("down to one coffee a day now, doctor's orders", when=T + DAY, rule="residual_model"),
                   origin="residual")  # fmt: skip
    assert decide(down, neighbours=[coffee]).target_ids == ("m2",)
    # no change told: a second statement on the topic is added beside the first
    plain = replace(change("rate limit 按 key 计算", when=T + DAY, rule="residual_model"), origin="residual")
    assert decide(plain, neighbours=[old]).op == Op.ADD
    # the same words from a rule that reads no change: added
    assert decide(change("rate limit 已经 bump 到 500 rps", when=T + DAY, rule="zh.statement.fact"),
                  neighbours=[old]).op == Op.ADD  # fmt: skip


def test_a_plain_statement_older_than_a_current_change_on_its_topic_is_history():
    now_current = row("m1", "The user's team switched to 1-week sprints.", since=T + 30 * DAY)
    late = cand("The user's sprints are 2 weeks.", when=T)
    d = decide(late, neighbours=[now_current])
    assert d.op == Op.HISTORY and d.superseded_by == "m1"
    # newer than the change, or on another topic, or against a memory that tells no change: added
    assert (
        decide(cand("The user's sprints are 2 weeks.", when=T + 40 * DAY), neighbours=[now_current]).op
        == Op.ADD
    )
    assert decide(cand("The user's standup is at 9:30.", when=T), neighbours=[now_current]).op == Op.ADD
    plain = row("m2", "The user's sprints have a demo on Fridays.", since=T + 30 * DAY)
    assert decide(late, neighbours=[plain]).op == Op.ADD


# What the user left (issue #12): an `end` names it; the memories naming it stop being current.
def ending(name: str, *, when: datetime) -> PendingCandidate:
    return PendingCandidate(
        content=f"The user's team ripped out {name}.",
        kind="semantic",
        op="end",
        event_time=when,
        source_event_ids=("e-end",),
        value=name,
        rule="en.left",
    )


def test_an_end_ends_the_older_current_memories_that_name_it_as_written():
    uses = row("m1", "The user's project uses Datadog for metrics.", since=T, slot="project.monitoring")
    apm = row("m2", "Datadog APM traces every request.", since=T)
    other = row("m3", "The user's dog is named Datadoggo.", since=T)  # not the word
    later = row("m4", "The user's team is back on Datadog.", since=T + 9 * DAY)  # said after: stands
    d = decide(ending("Datadog", when=T + 5 * DAY), neighbours=[uses, apm, other, later])
    assert d.op == Op.END and set(d.target_ids) == {"m1", "m2"}
    assert decide(ending("Datadog", when=T + 5 * DAY), neighbours=[other]).op == Op.NOOP
    zh = row("m5", "用户的项目使用 Jenkins。", since=T)
    assert decide(ending("jenkins", when=T + DAY), neighbours=[zh]).target_ids == ("m5",)


def test_a_statement_older_than_an_end_that_names_it_arrives_as_history():
    left = [("Datadog", T + 5 * DAY)]
    late = cand("The user's project uses Datadog.", when=T, slot="project.monitoring", value="datadog")
    d = decide(late, neighbours=[], slot_rows=[], ended=left)
    assert d.op == Op.HISTORY and d.valid_to == T + 5 * DAY
    # said after the end, or about something else: decided as ever
    again = cand(
        "The user's project uses Datadog.", when=T + 6 * DAY, slot="project.monitoring", value="datadog"
    )
    assert decide(again, neighbours=[], slot_rows=[], ended=left).op == Op.ADD
    assert decide(cand("The user's project uses Grafana.", when=T), neighbours=[], ended=left).op == Op.ADD
    # a replay of a row already stored is not a second, past copy
    stored = row("m1", "The user's project uses Datadog.", status="superseded", slot="project.monitoring",
                 value="datadog", events=("e-new",))  # fmt: skip
    assert decide(late, neighbours=[], slot_rows=[stored], ended=left).op != Op.HISTORY


def test_a_change_that_gives_a_value_of_the_same_specific_kind_replaces_the_memory_with_the_older_value():
    """A version, a cloud region, a dose in mg or a team's size in people is a topic of its own: "upgraded the
    cluster to 1.29" shares no word with "The user's project uses Kubernetes 1.27" but replaces it."""
    from core.topic_change import value_kinds

    k8s = row("m1", "The user's project uses Kubernetes 1.27.", since=T)
    d = decide(change("The user upgraded the cluster to 1.29 over the weekend.", when=T + DAY), neighbours=[k8s])
    assert d.op == Op.SUPERSEDE and d.target_ids == ("m1",)
    py = row("m2", "服务跑在 Python 3.8 上。", since=T)
    assert decide(change("终于升级到 3.11 了。", when=T + DAY), neighbours=[py]).target_ids == ("m2",)
    region = row("m3", "Everything is in us-east-1.", since=T)
    assert decide(change("We moved everything to eu-central-1.", when=T + DAY), neighbours=[region]).op == (
        Op.SUPERSEDE
    )
    dose = row("m4", "The user takes 50mg sertraline in the morning.", since=T)
    assert decide(change("The user's dose went up to 100mg.", when=T + DAY), neighbours=[dose]).op == Op.SUPERSEDE
    # delivered late: the plain older statement is history under the change that is current
    upgraded = row("m5", "The user upgraded the cluster to 1.29 over the weekend.", since=T + 2 * DAY)
    late = decide(cand("The user's project uses Kubernetes 1.27.", when=T), neighbours=[upgraded])
    assert late.op == Op.HISTORY and late.superseded_by == "m5"
    # kinds a user holds many facts of are no topic: money, sizes, durations, percentages, bare numbers, and
    # numbers that only look like versions (an address, a size, a multiplier, a date)
    budget = row("m6", "The user's budget is $500 a month.", since=T)
    assert decide(change("Rent went up to $1,400 a month.", when=T + DAY), neighbours=[budget]).op == Op.ADD
    java = row("m7", "The user's project uses Java 17.", since=T)
    assert decide(change("The user's team is on 21 now.", when=T + DAY), neighbours=[java]).op == Op.ADD
    for text in ("server at 10.0.0.12 now", "3.8 GB of RAM", "2.5x faster", "1.5 hours", "$4.99", "5.13 号"):
        assert "version" not in value_kinds(text), text
    assert value_kinds("v2.3 is out") == {"version"}
    assert value_kinds("裁员之后剩 9 个人") == {"unit:people"}


def test_a_late_value_for_an_empty_slot_is_history_under_a_newer_change_in_no_slot_on_its_topic():
    """Delivered out of order: "现在统一 3.12 了" (no slot, a change) is current; the older "我们升到 Python 3.10 了"
    fills the project's language slot, empty since 3.12 replaced 3.8 in no slot: it is past, not a second current
    value."""
    newer = row("m1", "现在统一 3.12 了,可以放心用新语法", since=T + 30 * DAY)
    late = cand("用户的项目使用 Python 3.10。", when=T, slot="project.language", value="python 3.10")
    d = decide(late, neighbours=[newer], slot_rows=[])
    assert d.op == Op.HISTORY and d.superseded_by == "m1"
    # newer than the change, or with nothing on its topic: the slot's first value
    fresh = cand("用户的项目使用 Python 3.10。", when=T + 40 * DAY, slot="project.language", value="python 3.10")
    assert decide(fresh, neighbours=[newer], slot_rows=[]).op == Op.ADD
    other = row("m2", "The user's alarm is 5:45 now.", since=T + 30 * DAY)
    assert decide(late, neighbours=[other], slot_rows=[]).op == Op.ADD
