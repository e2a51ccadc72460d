"""The LoCoMo development conversations (`../shared/bench-data/locomo-dev.json`, CC BY-NC: read in place,
never copied into the repository), as the LoCoMo and extraction benchmarks replay them.

Contract: `load_conversations(path, conversations=N, sessions=M)` reads the first N conversations, each cut
to its first M sessions; a turn's `content` is "<speaker>: <text>" plus " [image: <caption>]" when the turn
shares an image (`said` is without the caption); its event time is the session's date plus its index in
seconds. Questions citing a session that is not replayed are dropped (and counted). A missing file raises
`DataMissing`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.lib import scorer
from bench.lib.paths import BENCH_DATA

DATA_FILE = BENCH_DATA / "locomo-dev.json"


class DataMissing(RuntimeError):
    """The LoCoMo data file is not where the benchmarks read it."""


@dataclass(frozen=True)
class Turn:
    dia_id: str
    content: str
    event_time: datetime
    said: str = ""  # "<speaker>: <text>", without the image caption


@dataclass(frozen=True)
class Session:
    number: int
    started: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    dropped_questions: int = 0  # evidence outside the replayed sessions (`--sessions`)

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]


def data_path() -> Path:
    return DATA_FILE


def parse_session_time(value: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an aware UTC datetime."""
    return datetime.strptime(" ".join(value.split()), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_content(turn: dict[str, Any]) -> str:
    content = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        content += f" [image: {turn['blip_caption']}]"
    return content


def load_conversations(
    path: Path | None = None, *, conversations: int | None = None, sessions: int | None = None
) -> list[Conversation]:
    """The data file's conversations (the first `conversations`), each cut to its first `sessions`
    sessions; questions citing a session that is not replayed are dropped (and counted). An evidence id
    that names no turn of a replayed session (the data has one, "D27:23" in conv-42) is kept: every system
    misses it alike."""
    path = path or data_path()
    if not path.is_file():
        raise DataMissing(f"the LoCoMo data file is not at {path} (see ../shared/bench-data/README.md)")
    samples = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for sample in samples[:conversations]:
        conv = sample["conversation"]
        numbers = sorted(
            int(key.split("_")[1])
            for key in conv
            if key.startswith("session_") and not key.endswith("date_time") and conv[key]
        )
        kept = []
        for n in numbers[:sessions]:
            started = parse_session_time(conv[f"session_{n}_date_time"])
            turns = tuple(
                Turn(
                    t["dia_id"],
                    turn_content(t),
                    started + timedelta(seconds=i),
                    f"{t['speaker']}: {t['text']}",
                )
                for i, t in enumerate(conv[f"session_{n}"])
            )
            kept.append(Session(n, started, turns))
        replayed = {s.number for s in kept}
        questions, dropped = [], 0
        for qa in sample["qa"]:
            evidence = scorer.parse_evidence(qa.get("evidence") or [])
            if any(int(e[1:].split(":")[0]) not in replayed for e in evidence):
                dropped += 1
                continue
            questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
        out.append(Conversation(sample["sample_id"], tuple(kept), tuple(questions), dropped))
    return out
