"""The column limits of what a model may write, and the fitting of an LLM-proposed candidate to them. Pure.

A model's answer is validated for shape by its prompt's parser; this module holds it to the columns it will
be written into (`candidates` and `memories`: `slot varchar(128)`; `content` bounded like the API's
`PATCH /v1/memories/{id}`), so one odd field never fails the insert, and with it the whole window. What does
not fit is dropped or cut, never the memory: the caller logs each note.

- a slot longer than `SLOT_MAX` (or blank) is dropped with its value: the statement is kept unslotted, since
  a cut slot name would be a made-up attribute that no later value could supersede;
- a value longer than `VALUE_MAX` is dropped with its slot, for the same reason;
- content longer than `CONTENT_MAX` characters is cut at the last space before the limit (or at it).
"""

from __future__ import annotations

import dataclasses

from core.extraction.candidates import Candidate

SLOT_MAX = 128  # candidates.slot, memories.slot: varchar(128)
VALUE_MAX = 512  # a slot's value is one short name ("pnpm", "Berlin"); longer is a statement, not a value
CONTENT_MAX = 4000  # what the API accepts for a memory's content


def fit_candidate(candidate: Candidate) -> tuple[Candidate, list[str]]:
    """The candidate fitted to the column limits, and one note per field that was dropped or cut (no
    content in the notes: they go to the logs)."""
    notes: list[str] = []
    changes: dict[str, object] = {}
    slot, value = candidate.slot, candidate.value
    if slot is not None and len(slot) > SLOT_MAX:
        notes.append(f"slot of {len(slot)} characters (at most {SLOT_MAX}): dropped with its value")
        changes.update(slot=None, value=None)
    elif value is not None and len(value) > VALUE_MAX:
        notes.append(f"value of {len(value)} characters (at most {VALUE_MAX}): dropped with its slot")
        changes.update(slot=None, value=None)
    if len(candidate.content) > CONTENT_MAX:
        cut = candidate.content[:CONTENT_MAX]
        space = cut.rfind(" ")
        if space > CONTENT_MAX // 2:
            cut = cut[:space]
        notes.append(f"content of {len(candidate.content)} characters (at most {CONTENT_MAX}): cut")
        changes["content"] = cut.rstrip()
    if not changes:
        return candidate, notes
    return dataclasses.replace(candidate, **changes), notes  # type: ignore[arg-type]
