"""The extraction-quality corpus (`tests/data/extraction_quality/`, format in its README) and how a case is
scored against the memories a run stored. Pure: reads the corpus files, no database, no project import.

- `load_cases(split=None, lang=None)`: the cases of `dev` / `test` (None: both), LoCoMo cases resolved from
  `../shared/bench-data/locomo-dev.json` (absent -> those cases are left out and `locomo_missing` is set on
  the returned `Corpus`).
- `matches(groups, text)`: every term group has one of its terms in `text` (ASCII terms on word bounds).
- `score_single(case, contents)` -> `SingleScore` for the contents of the memories stored for one case.
- `score_update(case, top_hit, current)` -> `UpdateScore` from the top search hit and the current memories.
- `Tally` sums scores per tier, language and form; `Tally.figures()` gives the figures of the issue.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.lib.paths import BENCH_DATA, REPO

CORPUS_DIR = REPO / "tests" / "data" / "extraction_quality"
LOCOMO_FILE = BENCH_DATA / "locomo-dev.json"
SPLITS = ("dev", "test")

Groups = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Turn:
    role: str
    text: str
    session: int = 1
    at: str | None = None  # ISO event time (update scenarios)


@dataclass(frozen=True)
class Expect:
    tier: str
    terms: Groups
    slot: str | None = None


@dataclass(frozen=True)
class Case:
    id: str
    split: str
    type: str  # single | update
    lang: str
    form: str
    turns: tuple[Turn, ...]
    expect: tuple[Expect, ...] = ()
    forbid: tuple[Groups, ...] = ()
    allow: tuple[Groups, ...] = ()
    # update scenarios
    deliver: tuple[int, ...] = ()
    query: str = ""
    new: Groups = ()
    old: tuple[Groups, ...] = ()
    explicit: bool = True
    source: str = ""


@dataclass
class Corpus:
    cases: list[Case]
    locomo_missing: bool = False


LANGS = ("en", "zh", "mixed")
# a case id is the run's user id, and its session and event ids get "-s<N>" / "-e<N>" appended (128 at most)
CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,99}$")
ROLES = ("user", "assistant")


class LocomoMissing(Exception):
    """A case refers to a LoCoMo turn and the LoCoMo data is absent (the case is left out)."""


def _groups(raw: Any) -> Groups:
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"term groups must be a non-empty list of lists, got {raw!r}")
    out = []
    for group in raw:
        if isinstance(group, str):
            group = [group]
        if not group or not all(isinstance(t, str) and t.strip() for t in group):
            raise ValueError(f"a term group must be a non-empty list of terms, got {group!r}")
        out.append(tuple(t.strip() for t in group))
    return tuple(out)


def _locomo_turns() -> dict[tuple[str, str], str] | None:
    if not LOCOMO_FILE.exists():
        return None
    said: dict[tuple[str, str], str] = {}
    for conv in json.loads(LOCOMO_FILE.read_text()):
        for key, value in conv["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                for turn in value:
                    said[(conv["sample_id"], turn["dia_id"])] = f"{turn['speaker']}: {turn['text']}"
    return said


def parse_case(
    raw: dict[str, Any], *, split: str, source: str, locomo: dict[tuple[str, str], str] | None
) -> Case:
    """One corpus line -> a `Case`; raises `ValueError` naming the problem."""
    if not isinstance(raw.get("id"), str) or not CASE_ID.match(raw["id"]):
        raise ValueError(f"{raw.get('id')!r}: an id is 1-100 characters from A-Z a-z 0-9 . _ : @ -")
    kind = raw.get("type", "single")
    if kind not in ("single", "update"):
        raise ValueError(f"{raw.get('id')}: type must be single or update")
    if raw.get("lang", "en") not in LANGS:
        raise ValueError(f"{raw.get('id')}: lang must be one of {', '.join(LANGS)}")
    raw_turns = raw.get("turns") if kind == "single" else raw.get("events")
    if not raw_turns:
        raise ValueError(f"{raw.get('id')}: no turns / events")
    turns = []
    for item in raw_turns:
        text = item.get("text")
        if "locomo" in item:
            ref = item["locomo"]
            if not isinstance(ref, dict) or not {"sample_id", "dia_id"} <= set(ref):
                raise ValueError(f"{raw.get('id')}: a LoCoMo reference needs sample_id and dia_id")
            if locomo is None:
                raise LocomoMissing(raw.get("id"))
            text = locomo.get((ref["sample_id"], ref["dia_id"]))
            if text is None:
                raise ValueError(f"{raw.get('id')}: no LoCoMo turn {ref}")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{raw.get('id')}: a turn without text")
        if item.get("role", "user") not in ROLES:
            raise ValueError(f"{raw.get('id')}: role must be user or assistant")
        turns.append(Turn(item.get("role", "user"), text, int(item.get("session", 1)), item.get("at")))
    if kind == "update" and (any(t.at is None for t in turns) or len({t.session for t in turns}) < 2):
        raise ValueError(f"{raw.get('id')}: an update scenario needs event times and two sessions or more")
    if kind == "update" and not str(raw.get("query") or "").strip():
        raise ValueError(f"{raw.get('id')}: an update scenario needs a query")
    expect = tuple(Expect(e["tier"], _groups(e["terms"]), e.get("slot")) for e in raw.get("expect", []))
    if any(e.tier not in ("must", "worth") for e in expect):
        raise ValueError(f"{raw.get('id')}: tier must be must or worth")
    deliver = tuple(raw.get("deliver") or range(len(turns)))
    if sorted(deliver) != list(range(len(turns))):
        raise ValueError(f"{raw.get('id')}: deliver must be a permutation of the events")
    return Case(
        id=raw["id"], split=split, type=kind, lang=raw.get("lang", "en"), form=raw.get("form", ""),
        turns=tuple(turns), expect=expect,
        forbid=tuple(_groups(g) for g in raw.get("forbid", [])),
        allow=tuple(_groups(g) for g in raw.get("allow", [])),
        deliver=deliver, query=raw.get("query", ""),
        new=_groups(raw["new"]) if kind == "update" else (),
        old=tuple(_groups(g) for g in raw.get("old", [])) if kind == "update" else (),
        explicit=bool(raw.get("explicit", True)), source=source,
    )  # fmt: skip


def split_of(path: Path) -> str:
    """A corpus file's split: its name up to the first "_", trailing digits dropped ("test2_en" is test)."""
    return path.name.split("_", 1)[0].rstrip("0123456789")


def load_cases(split: str | None = None, lang: str | None = None, *, directory: Path = CORPUS_DIR) -> Corpus:
    """The corpus's cases of one split (None: both) and language (None: all)."""
    locomo = _locomo_turns()
    corpus = Corpus([])
    seen: set[str] = set()
    for path in sorted(directory.glob("*.jsonl")):
        file_split = split_of(path)
        if file_split not in SPLITS or (split is not None and file_split != split):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                case = parse_case(json.loads(line), split=file_split, source=path.name, locomo=locomo)
            except LocomoMissing:  # not LookupError: a KeyError is a broken case, not missing data
                corpus.locomo_missing = True
                continue
            except (ValueError, KeyError, json.JSONDecodeError) as exc:
                raise ValueError(f"{path.name}:{number}: {exc}") from exc
            if case.id in seen:
                raise ValueError(f"{path.name}:{number}: duplicate id {case.id}")
            seen.add(case.id)
            if lang is None or case.lang == lang:
                corpus.cases.append(case)
    return corpus


_ASCII_WORD = re.compile(r"[A-Za-z0-9]")


def _term_in(term: str, text: str) -> bool:
    term = term.casefold()
    if term.isascii() and _ASCII_WORD.search(term):
        return re.search(r"(?<![a-z0-9])" + re.escape(term) + r"(?![a-z0-9])", text) is not None
    return term in text


def matches(groups: Groups, text: str) -> bool:
    """Every group has one of its terms in `text` (case-folded; ASCII terms on word bounds)."""
    folded = text.casefold()
    return bool(groups) and all(any(_term_in(t, folded) for t in group) for group in groups)


@dataclass(frozen=True)
class SingleScore:
    expected: tuple[tuple[str, bool], ...]  # (tier, found) per expected memory
    stored: int  # memories stored for the case
    wrong: int  # stored memories that match nothing expected or allowed
    forbidden: int  # stored memories matching a forbidden statement
    nothing_case: bool  # the case must yield nothing


def score_single(case: Case, contents: Sequence[str]) -> SingleScore:
    expected = tuple((e.tier, any(matches(e.terms, c) for c in contents)) for e in case.expect)
    wrong = sum(
        1
        for c in contents
        if not any(matches(e.terms, c) for e in case.expect) and not any(matches(a, c) for a in case.allow)
    )
    forbidden = sum(1 for c in contents if any(matches(f, c) for f in case.forbid))
    return SingleScore(expected, len(contents), wrong, forbidden, not case.expect and not case.allow)


@dataclass(frozen=True)
class UpdateScore:
    newest_top: bool  # the top search hit matches the newest value
    stale_current: bool  # an older value is still current (matches old, not new)


def score_update(case: Case, top_hit: str | None, current: Sequence[str]) -> UpdateScore:
    newest_top = top_hit is not None and matches(case.new, top_hit)
    stale = any(any(matches(old, c) for old in case.old) and not matches(case.new, c) for c in current)
    return UpdateScore(newest_top, stale)


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


@dataclass
class Tally:
    """Sums of case scores; `figures()` gives recall per tier, precision, nothing-when-nothing, forbidden,
    newest-wins@1 and stale-current, overall and per language and form."""

    found: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    stored: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))  # [ok, all]
    nothing: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    forbidden: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    newest: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    stale: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    misses: list[str] = field(default_factory=list)

    def add_single(self, case: Case, score: SingleScore) -> None:
        for key in ("all", case.lang, f"form:{case.form}"):
            for tier, found in score.expected:
                cell = self.found[(key, tier)]
                cell[0] += found
                cell[1] += 1
            self.stored[key][0] += score.stored - score.wrong
            self.stored[key][1] += score.stored
            self.forbidden[key] += score.forbidden
            if score.nothing_case:
                self.nothing[key][0] += score.stored == 0
                self.nothing[key][1] += 1
        if not all(found for _, found in score.expected) or score.wrong or score.forbidden:
            self.misses.append(case.id)

    def add_update(self, case: Case, score: UpdateScore) -> None:
        keys = ["all", case.lang, f"form:{case.form}"] + (["explicit"] if case.explicit else [])
        for key in keys:
            self.newest[key][0] += score.newest_top
            self.newest[key][1] += 1
            self.stale[key][0] += score.stale_current
            self.stale[key][1] += 1
        if not score.newest_top or score.stale_current:
            self.misses.append(case.id)

    def figures(self, key: str = "all") -> dict[str, Any]:
        """The figures of `key` ("all", a language, "form:<form>"); reads only (no cell is created)."""
        zero = [0, 0]
        found = {t: self.found.get((key, t), zero) for t in ("must", "worth")}
        return {
            "must_recall": _ratio(*found["must"]),
            "worth_recall": _ratio(*found["worth"]),
            "precision": _ratio(*self.stored.get(key, zero)),
            "nothing_when_nothing": _ratio(*self.nothing.get(key, zero)),
            "forbidden_stored": self.forbidden.get(key, 0),
            "newest_wins_at_1": _ratio(*self.newest.get(key, zero)),
            "newest_wins_at_1_explicit": _ratio(*self.newest.get("explicit", zero)) if key == "all" else None,
            "stale_current": self.stale.get(key, zero)[0],
            "stale_current_explicit": self.stale.get("explicit", zero)[0] if key == "all" else None,
            "updates": self.newest.get(key, zero)[1],
            "expected": {t: found[t][1] for t in ("must", "worth")},
            "nothing_cases": self.nothing.get(key, zero)[1],
            "stored": self.stored.get(key, zero)[1],
        }

    def keys(self) -> Iterable[str]:
        """Every key with a figure: "all", the languages, "form:<form>" and "explicit" (updates)."""
        return sorted({k for k, _ in self.found} | set(self.newest) | set(self.nothing) | set(self.stored))
