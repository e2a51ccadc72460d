"""The rule extractor: bilingual (English + Chinese), deterministic, pure (no I/O, no clock, no environment).

Contract:
- `extract_rules(turns, *, roles=("user",))` -> candidates for a window of turns, in turn order. Only user
  turns produce candidates by default (the assistant does not state the user's facts). Within the window a
  candidate is deduplicated by (op, slot, value) when it has a slot, else by (op, kind, category, content):
  duplicates fold into one candidate with the union of sources, the higher tier and confidence, placed where
  it last appeared (so "npm ... pnpm ... npm" still ends on npm for reconciliation).
- `analyze_turn(turn)` -> `TurnAnalysis`: that turn's candidates plus the text the rules did not account for
  (`residual`); the gate uses it to decide whether a turn still needs the LLM.
- Each candidate carries `source_event_ids=(turn.event_id,)`, `source_turn_ids=(turn.source_turn_id,)` when
  present, `origin="rules"`, `rule` = the rule id, `lang` = the language of the sentence it came from.
- Turns are cleaned first: fenced code blocks, indented code and "> quoted" lines are dropped (pasted code and
  quoted text are not the user's statements); inline `code` keeps its text. Every sentence is matched in its
  own language ("zh" when Han characters outweigh Latin words), then in the other when it mixes scripts.
- Never raises on any text; time is linear in the text length (over-long sentences are skipped: they are
  pasted content, not statements about the user).

- Rules are grammatical classes (ARCHITECTURE.md, "Rules by grammar"): requests about memory, corrections,
  standing rules and prohibitions, facts in a slot, changes already made, and statements (decisions,
  lessons, policies, hobbies, stative facts) in the user's own words. A named thing the user has left ("we
  ripped out Datadog", "switched from npm to pnpm") is a candidate with op `end`: it stores nothing, and ends
  the memories naming it. A
  sentence is matched whole, then clause by clause where a clause can open a rule or the sentence was a
  question.

Modules: `extract` (these entry points and `dedupe`), `passes` (a sentence's rule passes, in order),
`sentences` (cleaning, sentences and clauses),
`dispatch` (one language's rule pipeline, and the script-neutral classes: tool pairs, changes, stacks),
`en` and `zh` (the two rule sets, each with `statements` for the classes the slot rules do not name),
`hits` (what a rule returns and the builders both sets share), `vocab` (the shared vocabulary: tools in
their slots with versions, topics with one current value, the names of languages).
"""

from core.extraction.rules.extract import (
    MAX_SENTENCE_CHARS,
    TurnAnalysis,
    analyze_turn,
    dedupe,
    extract_rules,
    extract_turn,
)
from core.extraction.rules.sentences import clean_text, split_clauses, split_sentences

__all__ = [
    "MAX_SENTENCE_CHARS",
    "TurnAnalysis",
    "analyze_turn",
    "clean_text",
    "dedupe",
    "extract_rules",
    "extract_turn",
    "split_clauses",
    "split_sentences",
]
