"""Chinese memory rules. Pure: no I/O.

Contract: `sentence_hits(sentence)` takes ONE normalised Chinese sentence (NFKC: "，" is already ",") and
returns `Hit`s exactly like `en.sentence_hits`, with content in Chinese ("用户叫小王。").
- The first person is "我" as a subject: "给我叫个车" / "他叫我去开会" (我 as an object) and "我朋友住在东京"
  (someone else) do not match. A clause without a subject after a "我..." clause inherits it
  ("我叫小王，在字节做产品经理" gives the job too).
- Questions ("你记得我叫什么吗？"), hypotheticals ("如果我搬到深圳…"), reported speech ("他说我…") and negated
  facts ("我不住在北京了") yield nothing. Tiers follow the English rules.
"""

from __future__ import annotations

from core.extraction.rules.dispatch import LanguageRules, dispatch
from core.extraction.rules.hits import Hit
from core.extraction.rules.zh.behaviour import dont_want_hits, reply_hits, rule_hits
from core.extraction.rules.zh.facts import CORRECTION_CUE, NEGATING, fact_hits, inherited_hits
from core.extraction.rules.zh.grammar import is_question, with_subject, zh_content
from core.extraction.rules.zh.requests import CONTRAST_RE, CORRECTION_RE, forget_hits, remember_hits
from core.extraction.rules.zh.statements import (
    all_do_hits,
    banned_hits,
    labelled_rule_hits,
    prohibition_hits,
    team_hits,
)
from core.extraction.rules.zh.statements import statement_hits as generic_hits

__all__ = ["CHINESE", "sentence_hits"]

CHINESE = LanguageRules(
    lang="zh",
    is_question=is_question,
    forget=forget_hits,
    remember=remember_hits,
    negating=NEGATING,
    correction_cue=CORRECTION_CUE,
    correction=CORRECTION_RE,  # "纠正一下，我住在杭州"
    contrast=CONTRAST_RE,  # "我住在杭州，不是苏州"
    correction_facts=fact_hits,
    reply=reply_hits,
    facts=lambda sentence: fact_hits(sentence) + inherited_hits(sentence) + team_hits(sentence),
    rules=lambda sentence: (
        banned_hits(sentence)
        or rule_hits(sentence)
        or prohibition_hits(sentence)
        or labelled_rule_hits(sentence)
        or dont_want_hits(sentence)
        or all_do_hits(sentence)
    ),
    generic=generic_hits,
    restate=lambda text: zh_content(text).rstrip("。"),
    with_subject=with_subject,
)


def sentence_hits(sentence: str) -> list[Hit]:
    """All Chinese rule hits for one normalised sentence (see the module docstring)."""
    return dispatch(sentence, CHINESE)
