"""English requests about the agent's memory, and corrections. Pure: no I/O.

- `remember_hits` / `forget_hits` -> None when the sentence is not such a request, else its hits (possibly
  none): a remember request is MUST, the statement inside parsed when the rules can (`statement_hits`); a
  forget request is a FORGET candidate naming its slot when it can.
- `CORRECTION_RE` ("no, I live in Munich now") and `CONTRAST_RE` ("I live in Munich, not Berlin") mark
  corrections for `dispatch`.
"""

from __future__ import annotations

import re

from core.extraction.candidates import Category, Kind, Operation, Tier
from core.extraction.rules.en.behaviour import reply_hits, rule_hits
from core.extraction.rules.en.facts import OBJ_PRONOUN, fact_hits
from core.extraction.rules.en.grammar import LEAD, sentence_case, third_person
from core.extraction.rules.hits import Hit, forget_target, make, must, shift


def statement_hits(text: str) -> list[Hit]:
    """What an English statement inside a request says ("记住：my name is Alice"): facts, rules or replies."""
    return fact_hits(text) or rule_hits(text) or reply_hits(text)


# fmt: off
_ASKING = (  # how a request to the agent may open
    r"(?:(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future)[\s,]+)?(?:please\s+|pls\s+|kindly\s+)?"
    # "can u keep in mind ...", "would you mind remembering that ...?": asked, and meant as a request
    r"(?:(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?(?:mind\s+)?|i\s+(?:want|need)\s+you\s+to\s+|i(?:'d|\s+would)\s+"
    r"like\s+you\s+to\s+|you\s+(?:should|need\s+to|must|have\s+to|can|may|could)\s+)?(?:also\s+|always\s+|"
    r"just\s+|now\s+)?"
)
_REMEMBER_RE = re.compile(
    LEAD + _ASKING + r"(?P<verb>remember(?:ing)?|keeping\s+in\s+mind|don't\s+forget|do\s+not\s+forget|"
    r"never\s+forget|keep\s+(?:this\s+|"
    r"that\s+|it\s+)?in\s+mind|bear\s+in\s+mind|for\s+future\s+reference|note\s+for\s+(?:the\s+)?future(?:\s+sessions?)?|"
    r"note\s+for\s+later|note\s+to\s+self|note\s+for\s+you|(?:a\s+)?(?:thing|something)\s+to\s+(?:remember|keep\s+in\s+"
    r"mind)|for\s+your\s+(?:notes|memory|records)|for\s+the\s+record(?=\s*[:\u2014\u2013-])|"
    r"(?P<weak>note|save|store|record)(?=\s+(?:that|this))|make\s+a\s+note|take\s+a\s+note|note\s+down|"
    r"take\s+note|memori[sz]e|(?:(?:jot|write|put|note|get)\s+(?:this|that|it)\s+down(?:\s+for\s+(?:me|us|later))?|"
    r"jot\s+down)(?=\s*[:-])|(?:save|store|put|add|commit|write)\s+(?:(?:this|that|it)\s+)?(?:to|in|into)\s+"
    r"(?:your\s+)?(?:memory|notes)|keep\s+(?:this|that|it)\s+in\s+(?:your\s+)?(?:head|memory|notes))"
    r"\b(?:\s+for\s+(?:next\s+time|the\s+future|later|future\s+sessions?))?(?:\s+(?:for|about|re|regarding)\s+"
    r"[^:,]{1,40}(?=\s*:))?(?:\s+(?:of\s+)?"
    r"(?P<det>this|that|the\s+following)\b)?(?:\s+(?:pls|please|plz))?\s*(?P<sep>[-=]>|[:,;-])?\s*(?P<p>.*)$", re.I)
_PAYLOAD_START = re.compile(
    r"^(?:i|i'm|i've|i'd|i'll|im|my|we|we're|we've|our|you|you're|your|the|this|there|it's|he|she|they|his|her|their|to|"
    r"always|never|don't|do\s+not|use|avoid|[A-Z0-9])")
# A payload opening with a noun phrase must say something about it ("the prod DB is on port 5433").
_IS_STATEMENT = re.compile(
    r"^(?!the\b|this\b|there\b)|\b(?:is|are|was|were|has|have|had|uses|runs|lives|works|needs|should|must|will|"
    r"can|goes|takes|means|belongs|costs|contains|points|expires|requires|depends|starts|ends|blocks|allows|"
    r"rejects|accepts|breaks|fails|times\s+out|does|doesn't|can't|cannot|won't|isn't|aren't|never|only|always|"
    r"expects|gets|keeps|stays|sits|lives|closes|opens|resets|caps|limits)\b", re.I)
_NEXT_REQUEST = re.compile(  # "remember X, and also explain Y": only X is to be remembered
    r"[,;]\s*(?:and\s+|but\s+|then\s+)?(?:also\s+|now\s+)?(?:can|could|would|will|please|explain|tell|show|help|"
    r"what|how|why|where|when|let's|fix|write|make|check)\b|\s+and\s+(?:also\s+)?(?:can\s+you|could\s+you|please|"
    r"explain|tell\s+me|show\s+me|help\s+me)\b", re.I)
_RULE_START = re.compile(
    r"^(?:to\s|always\b|never\b|don't\b|do\s+not\b|use\b|avoid\b|you\s+(?:should|must)\b)", re.I)
_PERSONAL = re.compile(r"\b(?:i|i'm|i've|my|me|mine|we|we're|our|us)\b", re.I)
# fmt: on


def remember_hits(sentence: str) -> list[Hit] | None:
    """None when the sentence is not a remember request; a list (possibly empty) when it is."""
    match = _REMEMBER_RE.match(sentence)
    if match is None:
        return None
    payload = match.group("p").strip(" \"'.!?")
    lowered = payload.lower()
    if (
        not payload
        or lowered in OBJ_PRONOUN
        or lowered.startswith(("when ", "what ", "how ", "where ", "me "))
    ):
        return []  # "remember when we ...", "remember me?"
    if match.group("weak") and match.group("sep") != ":" and not _PERSONAL.match(payload):
        # "note that the function returns None": task talk, not a request to remember; "kindly note that all
        # copy must be reviewed by Legal": the other rules read what it leads
        return None
    explicit = match.group("sep") or match.group("det") in ("this", "the following")
    if not explicit and not (_PAYLOAD_START.match(payload) and _IS_STATEMENT.search(payload)):
        return []  # "remember that bug", "don't forget the semicolon": a thing, not a statement
    offset = match.start("p") + match.group("p").find(payload)
    request = _NEXT_REQUEST.search(payload)
    if request:
        payload = payload[: request.start()].rstrip(" ,")
    end = offset + len(payload)
    inner = statement_hits(payload)
    if inner:
        return [must(hit, "en.remember", start=0, end=end) for hit in shift(inner, offset)]
    content = sentence_case(("remember " if lowered.startswith("to ") else "") + third_person(payload))
    if lowered.startswith("to ") or _RULE_START.match(payload):  # "remember to run the linter"
        kind, category = Kind.PROCEDURAL, Category.CONSTRAINT
    else:
        kind, category = Kind.SEMANTIC, Category.FACT
    cand = make(content, kind, category, Tier.MUST, rule="en.remember", confidence=0.95, lang="en")
    return [(cand, 0, end)]


# fmt: off
_FORGET_RE = re.compile(
    LEAD + _ASKING + r"(?P<verb>forget(?:\s+about)?|stop\s+remembering|(?:don't|do\s+not)\s+(?:remember|"
    r"store|save|keep|record)|unlearn|delete|erase|remove|drop|clear|wipe)\b\s*"
    r"(?P<all>everything\s+(?:you\s+know\s+|you\s+remember\s+|you\s+have\s+)?(?:about|on)\s+me\b)?"
    r"(?:(?:what|everything|anything|all)\s+(?:that\s+)?(?:i\s+(?:said|told\s+you|mentioned|shared)|"
    r"you\s+know|you\s+remember)\s+(?:about|regarding|on)\s+|that\s+)?(?P<p>.*)$", re.I)
_MEMORY_WORDS = re.compile(  # "delete" / "remove" are about memory only with one of these
    r"\b(?:memory|memories|what\s+you\s+(?:know|remember|stored|saved)|about\s+me)\b|\bmy\s+(?:personal\s+)?"
    r"(?:info|information|data|details|address|name|phone(?:\s+number)?|email|birthday|location|nickname)\b",
    re.I)
_VAGUE = re.compile(
    r"^(?:(?:about\s+)?(?:it|that|this|me)|(?:what|everything|all)\s+i\s+(?:just\s+)?(?:said|told\s+you|"
    r"mentioned)|i\s+(?:said|mentioned)\s+(?:that|it|this))$", re.I)
# fmt: on
_FORGET_VERBS = ("forget", "stop", "don't", "do not", "unlearn")
# "I live in Munich, not Berlin": a fact stated against another value is a correction.
CONTRAST_RE = re.compile(
    r",?\s+(?:not|rather\s+than|instead\s+of)\s+(?:in\s+|at\s+|the\s+|an?\s+)?"
    # a value, not a verb or a degree ("not going back", "not sure", "not too bad")
    r"(?!\w+ing\b|(?:sure|yet|bad|really|so|too|very|that|quite|much|ideal|great|happy|anymore|ever)\b)"
    r"[\w.+#-]+(?::\d\d)?(?:\s+[\w.+#-]+){0,2}"  # "not 03:00"
    r"(?:[.!]*$|(?=\s+[-\u2014\u2013;]\s|;))",  # the end of the sentence, or of its clause ("..., not requests - ...")
    re.I,
)


def forget_hits(sentence: str) -> list[Hit] | None:
    """None when the sentence is not a forget request; a list (possibly empty) when it is."""
    match = _FORGET_RE.match(sentence)
    if match is None:
        return None
    if match.group("all"):
        cand = make("Everything remembered about the user.", Kind.SEMANTIC, Category.PROFILE, Tier.MUST,
                    rule="en.forget.all", confidence=0.9, lang="en", op=Operation.FORGET,
                    extra={"scope": "all"})  # fmt: skip
        return [(cand, 0, len(sentence))]
    payload = match.group("p").strip(" \"'.!?")
    if not payload or _VAGUE.match(payload):
        return []  # "forget it", "forget what I said": no target the rules can name
    target = re.split(r"[,;]|\s-\s", payload, maxsplit=1)[0]  # "forget about the old API, we replaced it"
    personal = _PERSONAL.search(target) if match.group("verb").lower().startswith(_FORGET_VERBS) else None
    if not personal and not _MEMORY_WORDS.search(sentence):
        return []  # "forget the last instruction", "delete the temp files", "don't save the file"
    payload = re.sub(r"\s+(?:from\s+(?:your\s+)?memory|please)$", "", payload, flags=re.I)
    slot, value, kind, category = forget_target(payload, fact_hits(payload))
    content = sentence_case(third_person(payload))
    cand = make(content, kind, category, Tier.MUST, rule="en.forget", confidence=0.9, lang="en", slot=slot,
                value=value, op=Operation.FORGET)  # fmt: skip
    return [(cand, 0, len(sentence))]


CORRECTION_RE = re.compile(
    LEAD + r"(?:(?:small|quick|minor|one|a|just\s+a)\s+)?"
    r"(?P<marker>(?:no|nope|nah)(?:[\s,]+(?:no|nope|nah))*|wrong|incorrect|fix(?=\s*[:\u2014\u2013-])|"
    # "you keep calling it the users table — it's accounts"
    r"you\s+keep\s+(?:calling|saying|writing|spelling|naming)\b[^\u2014\u2013:;,.]{0,40}?(?=\s*[\u2014\u2013:;,-])|not\s+quite|that's\s+(?:not\s+right|wrong|incorrect|not\s+"
    r"correct)|that\s+is\s+(?:not\s+right|wrong|incorrect)|actually|"
    # "small fix to what I told you yesterday:", "an amendment to what I said earlier:"
    r"(?:fix|correction|amendment|update)\s+to\s+what\s+i\s+(?:told\s+you|said|wrote)(?:\s+(?:earlier|before|"
    r"yesterday|last\s+time|this\s+morning|last\s+week))?|correction|wait|oops|to\s+clarify|let\s+me\s+"
    r"correct\s+(?:that|myself)|i\s+meant|i\s+mean|again|(?:i\s+)?(?:already\s+)?told\s+you(?:\s+(?:already|before|"
    r"yesterday|twice|this|last\s+time|so))*|as\s+i\s+said|like\s+i\s+said|for\s+the\s+(?:\w+\s+)?time)\b"
    r"[\s,:;!.\u2014\u2013-]*(?P<rest>.+)$",
    re.I,
)
