"""English grammar the rules share. Pure: no I/O.

- Pattern pieces: `I_WORD` ("I" as a word), `I_AM` ("I'm" / "I am" / "im"), `ADV` (adverbs between subject
  and verb), `SPAN` (a clause, inner dots included), `LEAD` (fillers before a request: "ok so btw ...").
- `blocked(sentence, start)`: the text before `start` makes the statement not the user's own current fact
  (a quotation, a hypothetical, an unsure clause, reported speech).
- `is_question`, `third_person` ("I always deploy" -> "the user always deploys"), `sentence_case`.
- `with_subject(clause)`: the clause with the "I" chat drops before a verb of state or change put back
  ("been on Zed for a month now" -> "I've been on Zed for a month now").
"""

from __future__ import annotations

import functools
import re

# fmt: off
ADV = (
    r"(?:(?:currently|now|still|also|actually|really|just|recently|mostly|mainly|primarily|usually|generally|"
    r"normally|basically|definitely|always|honestly|personally|typically|only|all|both|already|finally|"
    r"officially|permanently|much|strongly|totally|fully|completely|entirely|exclusively|very\s+much|kind\s+of|kinda|"
    r"pretty\s+much)\s+)*"
)
I_WORD = r"(?<![\w'])i"
I_AM = r"(?<![\w'])(?:i'm|i\s+am|im)"
SPAN = r"(?:[^.;!?]|\.(?=\w))"  # a clause: up to the sentence's end, inner dots ("Next.js") included
_HYPOTHETICAL = re.compile(  # anywhere before the statement: "if ...", "for example, ..."
    r"\b(?:if|suppose|supposing|imagine|assuming|assume|what\s+if|in\s+case|hypothetically|let's\s+say|"
    r"lets\s+say|pretend|unless|whether|wish|for\s+example|for\s+instance|e\.g|such\s+as)\b"
    # an imperative "say" opening a clause sets up a supposition: "Say we moved to Bun, would ...?"
    r"|(?:^|(?<=[,;:(\u2014]))\s*say\b(?=\s+(?:we|i|you|they|our|my|the|that)\b|\s*$)", re.I)
_UNSURE = re.compile(  # in the statement's own clause: "maybe I'll ...", "before I moved to ..."
    r"\b(?:would|might|maybe|perhaps|probably|when|whenever|once|before|after|until|thinking\s+(?:about|of)|"
    r"considering|planning|plan\s+to|want\s+to|wanted\s+to|going\s+to|gonna|hope|hoping|not\s+sure|"
    r"wondering)\b", re.I)
_CLAUSE_START = re.compile(r".*(?:[,;:]|\s-\s|\b(?:and|but|so)\b)", re.I | re.S)
_REPORTED = re.compile(
    r"\b(?:said|says|saying|told|tells|telling|thinks|thought|believes|believed|claims?|claimed|mentioned|"
    r"heard|according\s+to|asked|asks|wrote|writes|complained|insists?|reckons?|suggested)\b", re.I)
_SELF_BEFORE = re.compile(r"(?:^|\W)(?:i|i've|i\s+have|i've\s+already|i\s+already|i\s+just)\s+$", re.I)
# fmt: on


# Hearsay anywhere in the sentence: "our competitor runs on Elixir apparently" is not the user's own fact.
_HEARSAY = re.compile(
    r"\b(?:apparently|reportedly|supposedly|allegedly|rumou?r\s+(?:is|has\s+it)|word\s+is|i\s+(?:hear|heard|read)\s+"
    r"(?:that\s+)?(?:they|he|she|it)|i\s+(?:hear|heard|read)\s+that)\b",
    re.I,
)


# A frame that puts the whole sentence in someone else's mouth or world: a story ("In the novel I'm reading the
# detective drinks absinthe"), or a quotation said to come from elsewhere ("'we never deploy on Fridays' is from
# a blog post")
_FRAMED = re.compile(
    r"^\W{0,3}in\s+(?:the|a|this|that|my|an)\s+(?:[\w-]+\s+)?(?:novel|book|movie|film|show|series|game|story|podcast|"
    r"episode|article|video|comic|manga|anime|play|sitcom)\b(?!\s+(?:club|shop|store|fair|group|team|company))"
    r"|^\s*['\"\u201c\u2018][^'\"\u201d\u2019]{3,120}['\"\u201d\u2019]\s+(?:is|was|comes|came)\s+(?:from|a\s+(?:quote|line|saying)|"
    r"what\s+(?:someone|somebody|they|he|she|my\s+\w+)|in\s+(?:a|the|this|that))\b",
    re.I,
)


def hearsay(sentence: str) -> bool:
    low = sentence.lower()
    opens = low.lstrip("\"'\u201c\u2018 ").startswith("in ") or sentence.lstrip()[:1] in "'\"\u201c\u2018"
    if opens and _FRAMED.search(sentence):
        return True
    if not ("apparently" in low or "reportedly" in low or "supposedly" in low or "allegedly" in low) and not (
        "rumo" in low or "word is" in low or "i hear" in low or "i read" in low
    ):
        return False  # the words the pattern needs, checked first
    return _HEARSAY.search(sentence) is not None


def blocked(sentence: str, start: int, *, hypothetical: bool = True) -> bool:
    """True when the text before `start` makes the statement not the user's own current fact (hearsay, "our
    competitor runs on Elixir apparently", is ruled out for the whole sentence: `hearsay`)."""
    prefix = sentence[:start]
    if not prefix:
        return False
    if prefix.count('"') % 2 == 1:  # inside a quotation
        return True
    if hypothetical:
        clause = _CLAUSE_START.match(prefix)
        if _HYPOTHETICAL.search(prefix) or _UNSURE.search(prefix[clause.end() if clause else 0 :]):
            return True
    # "my boss said we use ..." is reported; "as I said, we use ..." is the user's own word.
    return any(not _SELF_BEFORE.search(prefix[: m.start()]) for m in _REPORTED.finditer(prefix))


_UNCHANGED_VERBS = frozenset(  # modals and past forms keep their shape after "the user"
    "can could will would should must might may shall did didn't can't won't wouldn't couldn't "
    "shouldn't was had used told said went made got knew thought took came saw gave found left felt "
    "kept began wrote ran bought brought built sent spent taught meant met paid put read set sold "
    "stood understood won lost chose forgot grew heard held led let quit shut split spread".split()
)
_VERB_MAP = {"am": "is", "have": "has", "do": "does", "don't": "doesn't", "were": "was", "'m": "is"}
_ADVERBS = (
    r"(?:(?:always|never|usually|often|really|just|still|only|mostly|actually|now|currently|already|sometimes|"
    r"rarely|generally|also|typically|normally|mainly|recently|all|both|each|deliberately|finally|since|even|"
    r"no\s+longer|hardly|barely|seldom|probably|definitely|literally|basically|primarily|exclusively|"
    r"personally|officially|honestly)\s+)*"
)
_SUBJECT_VERB_RE = re.compile(rf"\b(i|we)\s+({_ADVERBS})([a-z']+)\b", re.I)
_CONTRACTION_RE = re.compile(r"\b(?:i'm|i\s+am|i've|i'd|i'll|we're|we\s+are|we've|we'd|we'll)\b", re.I)
# a pronoun is a word of its own: inside a name ("us-east-1", "my-app", "i.e.") it is no pronoun
_PRONOUN_RE = re.compile(r"(?<![\w.-])(?:myself|ourselves|mine|ours|my|our|me|us|i|we)\b(?!-\w|\.\w)", re.I)
# fmt: off
_PRONOUN_MAP = {
    "i'm": "the user is", "i am": "the user is", "i've": "the user has", "i'd": "the user would",
    "i'll": "the user will", "we're": "the user's team is", "we are": "the user's team is",
    "we've": "the user's team has", "we'd": "the user's team would", "we'll": "the user's team will",
    "myself": "themselves", "ourselves": "themselves", "mine": "the user's", "ours": "the user's team's",
    "my": "the user's", "our": "the user's", "me": "the user", "us": "the user's team", "i": "the user",
    "we": "the user's team",
}
# fmt: on


def _conjugate(verb: str) -> str:
    low = verb.lower()
    if low in _VERB_MAP:
        return _VERB_MAP[low]
    if (
        low in _UNCHANGED_VERBS
        or (low.endswith("ed") and not low.endswith("eed"))
        or low.endswith("n't")
        or "'" in low
    ):
        return verb
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + ("es" if low.endswith(("s", "sh", "ch", "x", "z", "o")) else "s")


# A "we" at home is the user's family, not a team: "we finally have a dog", "we're a family of four", "we bought a
# flat in Leith" (a household word in the same statement)
_HOUSEHOLD_RE = re.compile(
    r"\b(?:famil(?:y|ies)|kids?|children|son|sons|daughters?|bab(?:y|ies)|toddler|dogs?|cats?|pets?|puppy|kitten|"
    r"house|flat|apartment|garden|partner|wife|husband|spouse|married|wedding|honeymoon|vacation|holiday)\b",
    re.I,
)


def third_person(text: str) -> str:
    """'I always deploy on Fridays' -> 'the user always deploys on Fridays' (pronouns, simple agreement)."""
    team = "the user's family" if _HOUSEHOLD_RE.search(text) else "the user's team"

    def pronoun(word: str) -> str:
        return _PRONOUN_MAP[word].replace("the user's team", team)

    def subject_verb(match: re.Match[str]) -> str:
        verb = match.group(3)
        if verb.lower() in ("'m", "am", "are", "'re") or verb.lower() in _PRONOUN_MAP:
            return match.group()
        subject = "the user" if match.group(1).lower() == "i" else team
        return f"{subject} {match.group(2)}{_conjugate(verb)}"

    text = _CONTRACTION_RE.sub(lambda m: pronoun(" ".join(m.group().lower().split())), text)
    text = _SUBJECT_VERB_RE.sub(subject_verb, text)
    # "US" / "UK" spelled in capitals is a country, not "us"
    return _PRONOUN_RE.sub(lambda m: m.group() if m.group() == "US" else pronoun(m.group().lower()), text)


def sentence_case(text: str) -> str:
    text = text.strip().rstrip(".!?;,: ")
    return text[0].upper() + text[1:] + "." if text else text


# fmt: off
LEAD = (  # fillers before a request; a short non-Latin chunk too ("好的，remember ...")
    r"^(?:[^\x00-\x7f]{1,12}(?:\s*[,:;!.]\s*|\s+))?(?:(?:and|also|oh|ok|okay|so|btw|by\s+the\s+way|plus|but|"
    r"hey|hi|hello|well|alright|anyway|one\s+more\s+thing|one\s+last\s+thing|last\s+thing|great|cool|thanks|"
    r"thank\s+you|fyi|ps|just\s+so\s+you\s+know|for\s+the\s+record|important|"
    # "kindly note that ...", "please be advised that ...": a formal lead; "nice but ...": praise before the rule
    r"(?:kindly\s+|please\s+)?note(?:\s+that)?|please\s+be\s+(?:advised|aware)\s+that|nice|looks\s+good|lgtm|"
    r"ugh|argh|hmm|look|listen|"
    r"honestly|seriously|yeah|right|sorry|for\s+the\s+(?:last|\w+th)\s+time|"
    r"(?:i\s+)?(?:said|told\s+you)\s+(?:this\s+)?(?:before|already|twice)|once\s+again|again)\b[\s,:;!.-]*)*"
)
_QUESTION_START = re.compile(
    r"^(?:(?:and|so|but|also|oh|hey|ok|okay|btw|well)\b[\s,]*)*(?:do(?!\s+not\b)|does|did|can|could|would|will|"
    r"is|are|was|were|should|shall|have|has|am|what|what's|whats|where|where's|who|who's|whom|whose|why|how|"
    r"which(?!\s+(?:is\s+why|means|is\s+how|is\s+what)\b))\b", re.I)  # "which is why ...": a relative clause
_POLITE_RE = re.compile(  # "could you remember ...?" asks for something: not a question about a fact
    LEAD + r"(?:please\s+)?(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|also\s+|just\s+)*(?:remember|note|"
    r"keep\s+in\s+mind|make\s+a\s+note|forget|stop\s+remembering|delete|erase|remove|call\s+me|address\s+me|"
    r"always|never|not|stop|keep|use|reply|respond|answer|write|be|avoid|save|store|commit|"
    r"mind\s+(?:not|always|never|remembering\s+that|keeping\s+in\s+mind)|refrain)\b", re.I)
# fmt: on


@functools.lru_cache(maxsize=4096)
def is_question(sentence: str) -> bool:
    if _POLITE_RE.match(sentence):
        return False
    return sentence.rstrip().endswith("?") or _QUESTION_START.match(sentence) is not None


# Chat drops the first person before a verb of state or change: "been on Zed for a month now", "moved to Lyon
# in May", "started at Acme last week", "switched teams, ...". A verb in its base form ("use pnpm") is an
# imperative, and a verb with its own subject needs nothing put back.
_DROPPED_I_RE = re.compile(
    LEAD
    + r"(?:(?:just|recently|finally|also|now|already|officially|actually)\s+)*(?P<verb>been|moved|relocated|"
    r"switched|started|joined|transferred|left|quit|became|got\s+(?:promoted|transferred|moved|hired)|went|"
    r"(?P<now>now|currently|these\s+days)\s+(?:on|at|in|with|based|using|running)\b)",
    re.I,
)


_DROPPED_WORDS = frozenset(
    "been moved relocated switched started joined transferred left quit became got went now currently days as".split()
)
_AS_SOMEONE_WHO_RE = re.compile(
    r"^as\s+(?:someone|somebody|a\s+person|a\s+guy|a\s+dev|a\s+developer|one)\s+who\s+", re.I
)


def with_subject(clause: str) -> tuple[str, int, int] | None:
    """The clause with the dropped "I" put back, where it went and how long it is; None when nothing was
    dropped. "as someone who writes mostly Kotlin" is said of the user, as "I write mostly Kotlin"."""
    if _DROPPED_WORDS.isdisjoint(clause[:48].lower().split()):
        return None  # none of the verbs (or "as") in its first words: nothing was dropped
    who = _AS_SOMEONE_WHO_RE.match(clause)
    if who:
        return "I " + clause[who.end() :], 0, 2 - who.end()
    match = _DROPPED_I_RE.match(clause)
    if match is None:
        return None
    at = match.start("verb")
    verb = match.group("verb").lower()
    added = "I've " if verb == "been" else "I'm " if match.group("now") else "I "  # "now at Stripe"
    return clause[:at] + added + clause[at:], at, len(added)
