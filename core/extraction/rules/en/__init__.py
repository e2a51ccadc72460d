"""English memory rules. Pure: no I/O.

Contract:
- `sentence_hits(sentence)` takes ONE normalised English sentence (`rules.sentences` splits turns, drops code
  and quoted lines) and returns `Hit`s: a `Candidate` with empty sources (the caller fills them) and the span
  of the sentence it accounts for (the gate uses spans to tell "fully covered" turns from substantive ones).
- Precision first: a rule fires only on a first-person statement ("I ...", "my ...", "we ...") or an
  imperative addressed to the agent; questions, hypotheticals ("if I moved to ..."), reported speech
  ("my boss says we use ...") and negated facts ("I don't live in Berlin anymore") yield nothing.
- Tiers: explicit "remember ..." requests, corrections ("no, it's pnpm, not npm"), standing rules
  ("don't/never/always ...") and forget requests are MUST; other stable facts and preferences are WORTH.
- `statement_hits(text)`: what an English statement says (facts, else rules, else replies); the Chinese
  rules use it for an English request inside a Chinese one ("请记住：my name is Alice").
"""

from __future__ import annotations

from core.extraction.rules.dispatch import LanguageRules, dispatch
from core.extraction.rules.en.behaviour import (
    dont_want_hits,
    need_hits,
    np_rule_hits,
    prefer_you_hits,
    reply_hits,
    rule_hits,
    scoped_rule_hits,
    when_you_hits,
)
from core.extraction.rules.en.facts import CORRECTION_CUE, NEGATING, fact_hits
from core.extraction.rules.en.grammar import is_question, third_person, with_subject
from core.extraction.rules.en.requests import (
    CONTRAST_RE,
    CORRECTION_RE,
    forget_hits,
    remember_hits,
    statement_hits,
)
from core.extraction.rules.en.statements import FILLER, prohibition_hits, team_hits
from core.extraction.rules.en.statements import statement_hits as generic_hits
from core.extraction.rules.hits import Hit

__all__ = ["ENGLISH", "sentence_hits", "statement_hits"]

ENGLISH = LanguageRules(
    lang="en",
    is_question=is_question,
    forget=forget_hits,
    remember=remember_hits,
    negating=NEGATING,
    correction_cue=CORRECTION_CUE,
    correction=CORRECTION_RE,  # "no, I live in Munich now"
    contrast=CONTRAST_RE,
    correction_facts=fact_hits,
    reply=reply_hits,
    facts=lambda sentence: when_you_hits(sentence) or fact_hits(sentence) + team_hits(sentence),
    rules=lambda sentence: (
        rule_hits(FILLER.sub(" ", sentence))
        or prohibition_hits(sentence)
        or need_hits(sentence)
        or dont_want_hits(sentence)
        or prefer_you_hits(sentence)
        or np_rule_hits(sentence)
        or scoped_rule_hits(sentence)
    ),
    generic=generic_hits,
    restate=third_person,
    with_subject=with_subject,
)


def sentence_hits(sentence: str) -> list[Hit]:
    """All English rule hits for one normalised sentence (see the module docstring)."""
    return dispatch(sentence, ENGLISH)
