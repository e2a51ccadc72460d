"""The extraction-quality corpus and its scoring (`bench/lib/quality.py`): term matching, the per-case scores,
the tally's figures, the loader's errors, and the shape issue #12 asks of the real corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.lib.quality import (
    CORPUS_DIR,
    Tally,
    load_cases,
    matches,
    parse_case,
    score_single,
    score_update,
    split_of,
)


def _single(**over: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": "en-x-001",
        "type": "single",
        "lang": "en",
        "form": "in_passing",
        "turns": [{"role": "user", "text": "we switched to pnpm because npm broke the lockfile"}],
        "expect": [{"tier": "worth", "terms": [["pnpm"]], "slot": "project.package_manager"}],
        "forbid": [],
        "allow": [],
    }
    return {**case, **over}


def _update(**over: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": "en-x-u-01",
        "type": "update",
        "lang": "en",
        "form": "explicit",
        "events": [
            {"session": 1, "at": "2026-02-01T09:00:00Z", "role": "user", "text": "we use npm"},
            {"session": 2, "at": "2026-04-01T09:00:00Z", "role": "user", "text": "we switched to pnpm"},
        ],
        "deliver": [1, 0],
        "query": "which package manager does the project use",
        "new": [["pnpm"]],
        "old": [[["npm"]]],
        "explicit": True,
    }
    return {**case, **over}


def _case(raw: dict[str, Any], split: str = "dev") -> Any:
    return parse_case(raw, split=split, source=f"{split}_en.jsonl", locomo=None)


def _write(directory: Path, name: str, cases: list[dict[str, Any]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n"
    (directory / name).write_text(text, encoding="utf-8")


# --- term matching ----------------------------------------------------------------------------------------------


def test_an_ascii_term_matches_whole_words_only() -> None:
    assert matches((("npm",),), "The project uses npm.")
    assert matches((("npm",),), "NPM, sadly")  # case-folded, punctuation is a word bound
    assert not matches((("npm",),), "The project uses pnpm.")
    assert not matches((("npm",),), "npm2 is not a thing")
    assert not matches((("go",),), "the user goes home")
    assert matches((("go 1.22",),), "this service is on Go 1.22 now")


def test_a_chinese_term_matches_as_a_substring_and_an_ascii_term_next_to_han_characters_matches() -> None:
    assert matches((("数据组",),), "用户现在在数据组工作")
    assert not matches((("数据组",),), "用户在设计组")
    assert matches((("pnpm",),), "项目用pnpm管理依赖")  # Han characters are word bounds for an ASCII term


def test_every_group_needs_one_of_its_terms() -> None:
    groups = (("orm", "orms"), ("not", "never", "不要"))
    assert matches(groups, "Never suggest ORMs.")
    assert matches(groups, "不要用 ORM")
    assert not matches(groups, "The user likes ORMs.")
    assert not matches((), "anything")


# --- single cases -------------------------------------------------------------------------------------------------


def test_a_stored_memory_matching_neither_expected_nor_allowed_is_wrong() -> None:
    case = _case(_single(allow=[[["lockfile"]]]))
    score = score_single(case, ["The project uses pnpm.", "npm broke the lockfile.", "The user likes tea."])
    assert score.expected == (("worth", True),)
    assert (score.stored, score.wrong, score.forbidden) == (3, 1, 0)
    tally = Tally()
    tally.add_single(case, score)
    figures = tally.figures()
    assert figures["precision"] == round(2 / 3, 3)
    assert figures["worth_recall"] == 1.0
    assert figures["must_recall"] is None  # nothing expected of that tier
    assert tally.misses == ["en-x-001"]  # a wrong memory makes the case a miss


def test_an_allowed_memory_is_neither_wrong_nor_counted_for_recall() -> None:
    case = _case(_single(expect=[], allow=[[["lockfile"]]]))
    score = score_single(case, ["npm broke the lockfile."])
    assert (score.wrong, score.nothing_case) == (0, False)  # with an allow it is not a nothing case
    tally = Tally()
    tally.add_single(case, score)
    assert tally.figures()["precision"] == 1.0
    assert tally.figures()["nothing_when_nothing"] is None
    assert tally.misses == []


def test_forbidden_memories_are_counted_even_when_they_also_match_an_expected_one() -> None:
    case = _case(
        _single(
            turns=[
                {"role": "user", "text": "if I moved to Lisbon, would the tz stuff break? I live in Porto"}
            ],
            expect=[{"tier": "worth", "terms": [["porto"]]}],
            forbid=[[["lisbon"]]],
        )
    )
    score = score_single(case, ["The user lives in Porto.", "The user moved to Lisbon.", "Porto or Lisbon"])
    assert (score.forbidden, score.wrong) == (2, 1)
    tally = Tally()
    tally.add_single(case, score)
    assert tally.figures()["forbidden_stored"] == 2
    assert tally.figures("en")["forbidden_stored"] == 2


def test_a_nothing_case_scores_nothing_when_nothing_per_language_and_form() -> None:
    quiet = _case(_single(id="zh-x-001", lang="zh", form="nothing", expect=[]))
    noisy = _case(_single(id="zh-x-002", lang="zh", form="nothing", expect=[]))
    tally = Tally()
    tally.add_single(quiet, score_single(quiet, []))
    tally.add_single(noisy, score_single(noisy, ["用户说谢谢"]))
    assert tally.figures()["nothing_when_nothing"] == 0.5
    assert tally.figures("zh")["nothing_when_nothing"] == 0.5
    assert tally.figures("form:nothing")["nothing_cases"] == 2
    assert tally.figures()["precision"] == 0.0
    assert tally.misses == ["zh-x-002"]


def test_figures_only_read_the_tally() -> None:
    tally = Tally()
    case = _case(_single())
    tally.add_single(case, score_single(case, ["uses pnpm"]))
    before = list(tally.keys())
    tally.figures("mixed")
    tally.figures("form:nope")
    assert list(tally.keys()) == before == ["all", "en", "form:in_passing"]


# --- update scenarios ---------------------------------------------------------------------------------------------


def test_an_old_value_still_current_is_stale_unless_it_also_states_the_new_one() -> None:
    case = _case(_update())
    stale = score_update(case, "The project uses npm.", ["The project uses npm.", "The project uses pnpm."])
    assert (stale.newest_top, stale.stale_current) == (False, True)
    fine = score_update(case, "Switched from npm to pnpm.", ["Switched from npm to pnpm."])
    assert (fine.newest_top, fine.stale_current) == (True, False)
    nothing = score_update(case, None, [])
    assert (nothing.newest_top, nothing.stale_current) == (False, False)


def test_updates_are_tallied_overall_per_language_and_for_explicit_ones() -> None:
    explicit = _case(_update())
    implied = _case(_update(id="zh-x-u-01", lang="zh", explicit=False))
    tally = Tally()
    tally.add_update(explicit, score_update(explicit, "uses pnpm", ["uses pnpm"]))
    tally.add_update(implied, score_update(implied, "uses npm", ["uses npm"]))
    figures = tally.figures()
    assert (figures["newest_wins_at_1"], figures["newest_wins_at_1_explicit"]) == (0.5, 1.0)
    assert (figures["stale_current"], figures["updates"]) == (1, 2)
    assert tally.figures("zh")["stale_current"] == 1
    assert tally.figures("zh")["newest_wins_at_1_explicit"] is None
    assert tally.misses == ["zh-x-u-01"]


# --- loading ------------------------------------------------------------------------------------------------------


def test_the_loader_reads_each_split_from_its_files(tmp_path: Path) -> None:
    _write(tmp_path, "dev_en.jsonl", [_single(), _update()])
    _write(tmp_path, "test_zh.jsonl", [_single(id="zh-t-001", lang="zh")])
    _write(tmp_path, "notes_en.jsonl", [_single(id="ignored")])  # not a split: not read
    assert [c.id for c in load_cases(directory=tmp_path).cases] == ["en-x-001", "en-x-u-01", "zh-t-001"]
    dev = load_cases("dev", directory=tmp_path).cases
    assert [(c.id, c.split, c.type) for c in dev] == [
        ("en-x-001", "dev", "single"),
        ("en-x-u-01", "dev", "update"),
    ]
    assert dev[1].deliver == (1, 0)
    assert [c.id for c in load_cases(lang="zh", directory=tmp_path).cases] == ["zh-t-001"]


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (_single(expect=[{"tier": "nice", "terms": [["pnpm"]]}]), "tier must be must or worth"),
        (_single(expect=[{"terms": [["pnpm"]]}]), "tier"),  # a missing key is an error, not missing data
        (_single(expect=[{"tier": "must", "terms": []}]), "term groups"),
        (_single(lang="fr"), "lang must be one of"),
        (_single(id="en x 1"), "an id is 1-100 characters"),
        (_single(turns=[{"role": "boss", "text": "hi"}]), "role must be user or assistant"),
        (_single(turns=[{"role": "user", "text": "  "}]), "a turn without text"),
        (_update(deliver=[1, 1]), "deliver must be a permutation"),
        (_update(deliver=[0, 1, 2]), "deliver must be a permutation"),
        (_update(query=""), "needs a query"),
        ({k: v for k, v in _update().items() if k != "new"}, "new"),
        (_update(events=[{"session": 1, "at": "2026-01-01T00:00:00Z", "text": "a"}] * 2), "two sessions"),
    ],
)
def test_a_broken_case_names_its_file_and_line(tmp_path: Path, case: dict[str, Any], message: str) -> None:
    _write(tmp_path, "dev_en.jsonl", [_single(id="ok-001"), case])
    with pytest.raises(ValueError, match=message) as err:
        load_cases(directory=tmp_path)
    assert "dev_en.jsonl:2" in str(err.value)


def test_an_id_is_unique_across_the_whole_corpus(tmp_path: Path) -> None:
    _write(tmp_path, "dev_en.jsonl", [_single()])
    _write(tmp_path, "test_en.jsonl", [_single()])
    with pytest.raises(ValueError, match="duplicate id en-x-001"):
        load_cases(directory=tmp_path)


def test_a_locomo_case_is_left_out_only_when_the_locomo_data_is_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.lib import quality

    ref = _single(id="loc-001", turns=[{"role": "user", "locomo": {"sample_id": "conv-1", "dia_id": "D1:1"}}])
    _write(tmp_path, "dev_locomo.jsonl", [ref])
    monkeypatch.setattr(quality, "LOCOMO_FILE", tmp_path / "absent.json")
    corpus = load_cases(directory=tmp_path)
    assert (corpus.cases, corpus.locomo_missing) == ([], True)
    data = [
        {
            "sample_id": "conv-1",
            "conversation": {"session_1": [{"dia_id": "D1:1", "speaker": "Ann", "text": "I use pnpm"}]},
        }
    ]
    (tmp_path / "locomo.json").write_text(json.dumps(data))
    monkeypatch.setattr(quality, "LOCOMO_FILE", tmp_path / "locomo.json")
    corpus = load_cases(directory=tmp_path)
    assert [t.text for t in corpus.cases[0].turns] == ["Ann: I use pnpm"]
    assert not corpus.locomo_missing
    _write(
        tmp_path,
        "dev_locomo.jsonl",
        [_single(id="loc-002", turns=[{"role": "user", "locomo": {"dia_id": "D1:1"}}])],
    )
    with pytest.raises(ValueError, match="sample_id and dia_id"):
        load_cases(directory=tmp_path)


# --- the real corpus ----------------------------------------------------------------------------------------------


def _raw_cases(directory: Path) -> list[dict[str, Any]]:
    """Every case line of the split files as written (LoCoMo references unresolved: the shape does not depend
    on whether the LoCoMo data is on this machine)."""
    out = []
    for path in sorted(directory.glob("*.jsonl")):
        split = split_of(path)
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append({**json.loads(line), "_split": split})
    return out


def test_the_corpus_has_the_shape_issue_12_asks_for() -> None:
    files = sorted(CORPUS_DIR.glob("*.jsonl"))
    if len(files) < 4:
        pytest.skip(f"the corpus is being written: {len(files)} of its files in {CORPUS_DIR.name}/ so far")
    load_cases(directory=CORPUS_DIR)  # every line valid, ids unique
    cases = _raw_cases(CORPUS_DIR)
    total = len(cases)
    chinese = sum(c.get("lang", "en") in ("zh", "mixed") for c in cases)
    nothing = sum(
        c.get("type", "single") == "single" and not c.get("expect") and not c.get("allow") for c in cases
    )
    updates = sum(c.get("type") == "update" for c in cases)
    splits = {c["_split"] for c in cases}
    shape = {
        "cases": total,
        "chinese": chinese,
        "nothing": nothing,
        "updates": updates,
        "splits": sorted(splits),
    }
    assert total >= 600, shape
    assert 2 * chinese >= total, shape  # half Chinese (zh or mixed)
    assert 4 * nothing >= total, shape  # a quarter must yield nothing
    assert updates >= 100, shape
    # between rounds the corpus has no test split: a scored test split moves to dev, and the next round's
    # test split is added when its independent author is done (the corpus README)
    assert "dev" in splits and splits <= {"dev", "test"}, shape
