"""English rules for how the agent should reply and behave. Pure: no I/O.

- `reply_hits`: reply language and style ("always answer in English", "I prefer concise answers", "your
  answers are too long"), as a preference, a rule or feedback by how it was said.
- `rule_hits`: standing rules ("don't use ORMs", "never suggest jQuery", "from now on, use pnpm"), MUST;
  a rule about the task at hand ("don't change this file yet") is none.
- `when_you_hits`: "I hate it when you add emojis" -> the rule "Do not add emojis.".
- `need_hits`: "I need British spelling throughout" -> a standing requirement, MUST; `dont_want_hits`: "I don't
  want any emojis in the answers" -> the rule, MUST.
"""

from __future__ import annotations

import re

from core.extraction.candidates import Category, Kind, Tier
from core.extraction.rules.en.grammar import (
    ADV,
    I_WORD,
    LEAD,
    blocked,
    is_question,
    sentence_case,
    third_person,
)
from core.extraction.rules.hits import Hit, make, reply_hit, tool_hit
from core.extraction.rules.vocab import LANGUAGE_CODES, find_tools

# fmt: off
_PERSIST = (
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|by\s+default|"
    r"every\s+time|from\s+here\s+on|all\s+the\s+time|in\s+general|any\s+more|anymore|throughout|everywhere|"
    r"across\s+the\s+board|at\s+all\s+times|without\s+exception)\b"
)
_PERSIST_RE = re.compile(_PERSIST, re.I)
_REPLY_NOUN_RE = re.compile(
    r"\b(?:answers|responses|replies|explanations|outputs|messages|summaries|you\s+(?:answer|reply|respond|"
    r"explain|write)|your\s+(?:answers?|responses?|replies|reply|explanations?|output|messages?|writing))\b"
    r"|\b(?:answer|response|reply|explanation)\b(?=.*" + _PERSIST + ")", re.I)
_STYLE_RE = re.compile(
    r"\b(?:(?P<concise>concise|brief|short|shorter|succinct|terse|to\s+the\s+point|compact|tl;?dr|less\s+verbose|"
    r"fewer\s+words|just\s+(?:want\s+|give\s+me\s+)?the\s+code|code\s+only|skip\s+the\s+explanations?|"
    r"no\s+explanations?|without\s+(?:the\s+|any\s+)?explanations?|less\s+explanation)|(?P<long>verbose|long|longer|lengthy|wordy|rambling|long-winded|walls?\s+of\s+text)|"
    r"(?P<detailed>detailed|thorough|in-depth|in\s+depth|comprehensive|more\s+details?|elaborate)|"
    r"(?P<bullet_points>bullet\s+points?|bulleted|bullets|bullet\s+lists?))\b", re.I)
_STYLE_NEG_RE = re.compile(
    r"\b(?:(?:not|don't|dont|do\s+not|no|never|less|hate|dislike|stop|without|avoid|fewer)\s+(?:\w+\s+){0,2}"
    r"|(?:too|overly|so)\s+)$", re.I)  # "so long" is negated, "so keep it short" is not
_STYLE_VALUE = {("concise", False): "concise", ("concise", True): "detailed", ("long", False): "detailed",
                ("long", True): "concise", ("detailed", False): "detailed", ("detailed", True): "concise",
                ("bullet_points", False): "bullet_points"}
_PREF_CUE_RE = re.compile(
    I_WORD + r"\s*" + ADV + r"(?:prefer|like|love|want|need|appreciate|enjoy|hate|dislike|don't\s+like|"
    r"do\s+not\s+like|can't\s+stand|'d\s+prefer|would\s+prefer|'d\s+like|would\s+like|'d\s+rather|"
    r"would\s+rather)\b", re.I)
_FEEDBACK_CUE_RE = re.compile(
    r"\byour\s+(?:answers|responses|replies|explanations|messages)\s+(?:are|were|have\s+been|get|seem|keep)\b"
    r"|\byou(?:'re|\s+are)\s+(?:being\s+)?(?:way\s+|far\s+|a\s+bit\s+|too\s+|so\s+|really\s+)*(?:verbose|wordy)",
    re.I)
_IMPERATIVE_CUE_RE = re.compile(
    LEAD + r"(?:please\s+|pls\s+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?(?:be|keep|make|give|"
    r"write|use|answer|reply|respond|stop|don't|do\s+not|never|always|avoid|no\s+more|limit|from\s+now\s+on|"
    r"going\s+forward|in\s+(?:the\s+)?future|format|explain)\b", re.I)
_BARE_BE_RE = re.compile(LEAD + r"(?:please\s+)?(?:be|keep\s+it|keep\s+things|stay)\s+(?:\w+\s+){0,2}$",
                         re.I)
_LANG_WORDS = (
    r"(?:british|uk|american|us)\s+english|(?:simplified|traditional)\s+chinese|brazilian\s+portuguese|"
    r"english|chinese|mandarin|japanese|french|german|spanish|korean|portuguese|italian|russian"
)
_REPLY_LANG_RE = re.compile(
    r"\b(?:(?:reply|replied|respond|responded|answer|answered|write|wrote|talk|speak|communicate|chat|"
    r"explain(?:\s+things)?)\s+(?:to\s+me\s+|me\s+|back\s+)?(?:only\s+|always\s+)?|(?:answers|responses|replies|"
    r"explanations)\s+(?:to\s+be\s+)?)in\s+(?P<lang>" + _LANG_WORDS + r")\b", re.I)
# fmt: on


def _reply_mode(sentence: str) -> str | None:
    persistent = _PERSIST_RE.search(sentence) is not None
    if re.match(r"^(?:(?:new|one|a|house|hard|standing)\s+)?rules?\b[^:]{0,30}:", sentence, re.I):
        return "rule"  # "New rule for answers: keep them short"
    if _FEEDBACK_CUE_RE.search(sentence):
        return "feedback"
    if _PREF_CUE_RE.search(sentence):
        return "rule" if persistent else "pref"
    if _IMPERATIVE_CUE_RE.match(sentence):
        return "rule" if persistent else "soft_rule"
    return None


def reply_hits(sentence: str) -> list[Hit]:
    """Reply language ("always answer in English") and style ("I prefer concise answers")."""
    match = _REPLY_LANG_RE.search(sentence)
    if match and not blocked(sentence, match.start(), hypothetical=False):
        mode = _reply_mode(sentence)
        if mode is not None:
            code = LANGUAGE_CODES[" ".join(match.group("lang").lower().split())]
            return [reply_hit("user.reply_language", code, mode=mode, lang="en", rule="en.reply.language",
                              end=len(sentence))]  # fmt: skip
    style = _STYLE_RE.search(sentence)
    if style is None:
        return []
    # "long walks" is not about answers: a reply noun, "be brief" or bullet points must be there.
    about_replies = _REPLY_NOUN_RE.search(sentence) or _BARE_BE_RE.match(sentence[: style.start()])
    if not (about_replies or style.lastgroup == "bullet_points"):
        return []
    mode = _reply_mode(sentence)
    if mode is None or blocked(sentence, style.start(), hypothetical=False):
        return []
    if mode != "rule" and _ONE_OFF.search(sentence):
        return []  # "I'm on my phone at the moment, so keep replies short": for now, not a lasting preference
    negated = _STYLE_NEG_RE.search(sentence[: style.start()]) is not None
    value = _STYLE_VALUE.get((style.lastgroup or "", negated))
    if value is None:
        return []
    return [
        reply_hit(
            "user.reply_style",
            value,
            mode=mode,
            lang="en",
            rule="en.reply.style",
            end=len(sentence),
            said=sentence,
        )
    ]


# fmt: off
_RULE_RE = re.compile(
    LEAD + r"(?P<lead>(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|from\s+"
    r"here\s+on(?:\s+out)?|as\s+a\s+(?:general\s+)?rule|by\s+default|in\s+general|every\s+time|each\s+time)"
    r"\s*[,:-]?\s*)?(?P<cond>(?:when|whenever|if\s+you(?:'re|\s+are)?|if\s+(?:a|an|any|anything|something)|for|in|"
    r"while)\s[^,]{1,60}?(?:,\s*|\s+(?=(?:please|pls|"
    r"assume|reply|answer|include|stick|default|always|never|don't|do\s+not)\b)))?"
    r"(?:please\s+|pls\s+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
    r"(?:i(?:'d|\s+would)\s+like\s+you\s+to\s+|i\s+(?:want|need)\s+you\s+to\s+)?(?:you(?:'re|\s+are)?\s+)?"
    r"(?P<mod>(?:mind\s+not|(?<=you\s)not|please\s+not|mind\s+always|mind\s+never)(?=\s+\w+ing\b)|(?:kindly\s+|please\s+)?refrain\s+from|"
    r"i'd\s+appreciate\s+it\s+if\s+you\s+(?:didn't|did\s+not|wouldn't|would\s+not)|don't\s+(?:you\s+)?ever|do\s+not\s+ever|don't\s+you\s+dare|don't|do\s+not|dont|never\s+ever|never|always|"
    r"avoid|stop|quit|"
    r"should\s+never|should\s+always|must\s+always|must\s+never|shouldn't|should\s+not|must\s+not|mustn't|"
    r"make\s+sure\s+to|make\s+sure\s+you|be\s+sure\s+to|remember\s+to|no\s+more|"
    r"not\s+allowed\s+to|can't|cannot|may\s+not|must|"
    r"under\s+no\s+circumstances(?:\s+should\s+you)?|at\s+no\s+point(?:\s+should\s+you)?|only\s+ever|please)?\s*"
    r"(?P<rest>[a-z][^\n]{1,200})$", re.I)
_TAIL_PERSIST_RE = re.compile(
    r"[\s,]*(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|from\s+here\s+on(?:\s+out)?"
    r"|every\s+time|always|by\s+default)[\s.!]*$", re.I)
_MOD_CANON = {
    "don't ever": "do not ever", "do not ever": "do not ever", "don't you ever": "do not ever",
    "don't you dare": "do not", "don't": "do not", "do not": "do not",
    "dont": "do not", "shouldn't": "do not", "should not": "do not", "must not": "do not",
    "mustn't": "do not", "never ever": "never", "never": "never", "should never": "never",
    "must never": "never", "always": "always", "should always": "always", "must always": "always",
    "make sure to": "always", "make sure you": "always", "be sure to": "always", "remember to": "remember to",
    "avoid": "avoid", "stop": "stop", "quit": "stop", "please": "always", "no more": "no more", "": "always",
    "not allowed to": "do not", "can't": "do not",
    "cannot": "do not", "may not": "do not", "must": "always", "under no circumstances": "never",
    "under no circumstances should you": "never", "at no point": "never", "at no point should you": "never",
    "only ever": "only ever", "mind not": "stop", "mind always": "always", "mind never": "never",
    "not": "stop", "please not": "stop", "refrain from": "stop",
    "kindly refrain from": "stop", "please refrain from": "stop", "i'd appreciate it if you didn't": "do not",
    "i'd appreciate it if you did not": "do not", "i'd appreciate it if you wouldn't": "do not",
    "i'd appreciate it if you would not": "do not",
}
# After "don't" / "never": "don't worry", "never mind" are not rules for the agent.
_NOT_IMPERATIVE = frozenset(
    "worry bother mind hesitate panic stress feel know get care be forget remember understand think "
    "see have want need like love hate agree recall sure mean wait rush apologise thank it that "
    "this i we my the a an there you your here been had seen heard done felt met visited lose give let miss quit "
    "believe doubt underestimate settle".split()
)
# After "always" / "from now on": the verbs a standing rule starts with.
IMPERATIVE_VERBS = frozenset(
    "use write reply respond answer add put give call keep make include format explain stick run say tell "
    "flag warn admit state highlight provide "
    "test check ask show return follow mention suggest recommend start end wrap comment document "
    "type name import install commit push deploy assume default output print log send speak talk "
    "try limit cite link quote translate summarize summarise list number sort prefix indent "
    "capitalize abbreviate generate create modify change edit rename delete remove mock hardcode "
    "inline split merge lint prioritize prioritise optimize refactor rewrite repeat ramble guess "
    "speculate hallucinate lie pad sugarcoat flatter overexplain apologize apologise prefer double- "
    "check verify review read go let set leave respect stay avoid skip emit raise throw catch "
    "handle validate sign annotate declare store cache touch open close copy paste bump pin upgrade "
    "downgrade switch target support mark tag greet address refer refrain steer favor favour lean drop cut omit trim "
    "ditch spell ping notify confirm wait loop "
    # everyday verbs of errands and office work: "always cc Priya on ...", "always look for exit rows ..."
    "look find search book schedule plan remind email message cc bcc bring buy order pick choose compare consider "
    "convert calculate estimate measure round factor bake build design draft prepare attach exclude filter group "
    "hide mask redact encrypt escape sanitize sanitise normalize normalise align bold label timestamp version "
    "backup clean clear reset restart rollback retry paginate proofread source reference credit treat count note "
    "record track save archive export upload share publish post forward reserve allow block require enable "
    "disable".split()
)
_ONE_OFF = re.compile(
    r"\b(?:yet|this\s+time|for\s+now|right\s+now|today|tonight|tomorrow|at\s+the\s+moment|(?:this|these)\s+(?:file|"
    r"function|one|line|test|pr|step|method|class|branch|commit|case|snippet|demo|example|script|query|component|"
    r"page|endpoint|part|section|ticket|task|run|loop|block|cell|notebook|prototype|poc|migration|change|diff|"
    r"files|functions|lines|tests|snippets)|throwaway|that\s+(?:file|function|one|line)|"
    r"in\s+this\s+case|until|(?<!in\s)here|above|below)\b|^[\w'-]+\s+(?:this|that|these|those|it)\b", re.I)
_PRONOUN_ONLY = re.compile(
    r"^[a-z'-]+(?:\s+(?:it|that|this|them|those|these|so|there|anything|again|up|on))+$", re.I)
_KEEP_IN_MIND = re.compile(r"^keep\s+(?:it|them|this|that|these|those)\s+in\s+mind\b", re.I)
_FEEDBACK_WORDS = re.compile(r"\b(?:again|anymore|any\s+more|like\s+you\s+did|as\s+you\s+did|keep)\b", re.I)
_WHEN_YOU_RE = re.compile(
    I_WORD + r"\s*" + ADV + r"(?:don't\s+like|do\s+not\s+like|hate|dislike|can't\s+stand|cannot\s+stand)\s+"
    r"(?:it\s+)?when\s+(?:you(?P<be>'re|\s+are)?|(?P<out>(?:your\s+|the\s+)?(?:answers|responses|replies|"
    r"explanations|code\s+examples|suggestions|summaries)))\s+(?P<x>[^.;!?]{2,80})", re.I)
# fmt: on


_ALL_OUTPUT_RE = re.compile(
    r"\b(?:your|all)\s+(?:future\s+)?(?:answers|responses|replies|explanations|suggestions|code\s+examples|"
    r"examples|snippets|outputs|messages|summaries|commit\s+messages|prs|pull\s+requests)\b",
    re.I,
)
_GENERAL_OUTPUT_RE = re.compile(
    r"^(?:give|keep|make|write|show|send|use)\s+(?:me\s+)?(?!(?:me|the|this|that|these|those|it|them)\b)"
    r"(?:[\w-]+\s+){0,2}?(?:answers|solutions|suggestions|examples|snippets|responses|replies|explanations|commands|"
    r"code\s+samples|scripts|queries|units|configs|instructions|steps|recipes|options)\b"
    # "keep PR descriptions under 200 words", "keep functions small": a standing property of a kind of work
    r"|^keep\s+(?!(?:the|this|that|these|those|it|them|me|your)\b)(?:[\w-]+\s+){0,2}?(?:descriptions|messages|"
    r"comments|docstrings|emails|titles|summaries|names|functions|methods|lines|commits|prs|docs)\b",
    re.I,
)
# "use British spelling in all user-facing copy", "... in every migration": a scope over all the work
_EVERY_SCOPE_RE = re.compile(
    r"\b(?:in|for|on|across)\s+(?:all|every|each|any)\s+(?!of\s+(?:this|these|them|it)\b)[\w-]+"
    # "use uv for anything Python", "use pnpm for everything", "2-space indentation everywhere"
    r"|\b(?:for|with|in)\s+(?:everything|anything)\b|\beverywhere\b|\bacross\s+the\s+board\b",
    re.I,
)
# "I don't want any emojis in the answers", "I never want you to touch prod": what the user does not want,
# a rule for the agent.
_DONT_WANT_RE = re.compile(
    I_WORD + r"\s*" + ADV + r"(?:don't|do\s+not|never)\s+want\s+(?:(?P<you>you\s+(?:to\s+)?)|(?=any\b|more\b|"
    r"to\s+see\b|(?:\w+\s+)?(?:emojis|comments|explanations|caveats|disclaimers|apologies)\b))"
    # a dot inside a name stays in it (".format()", "os.path")
    r"(?P<rest>[a-z](?:[^.;!?]|\.(?=[\w(])){2,80})",
    re.I,
)


# "I prefer you ask before guessing", "I'd rather you wrote tests first": what the user prefers the agent to do,
# a standing rule for it (the verb after "you" is one an instruction starts with).
_PREFER_YOU_RE = re.compile(
    I_WORD
    + r"\s*"
    + ADV
    + r"(?:'d\s+|\s+would\s+)?(?:prefer|rather)\s+(?:it\s+)?(?:if\s+|that\s+|when\s+)?you\s+"
    r"(?:to\s+)?(?:always\s+)?(?P<verb>[a-z]+)\b(?P<rest>[^.;!?]{2,100})",
    re.I,
)


# A rule said as a bare noun phrase with its scope ("plain text commits only please", "metric units for all
# recipes pls", "tabs everywhere"): no verb, no subject, the scope over all the work makes it standing.
_NP_RULE_RE = re.compile(
    LEAD + r"(?P<np>(?!(?:thanks|thank|same|ok|okay|one|this|that|these|those|it|the)\b)[a-z][\w/+#.-]*"
    r"(?:\s+(?!(?:is|are|was|were|be|i|we|you|it|they|this|that|do|does|did|have|has)\b)[\w/+#.-]+){0,3}?)\s+"
    r"(?P<scope>only|for\s+(?:all|every|each|any)\s+(?!the\b)[\w-]+(?:\s+(?!please|pls|plz)[\w-]+)?|in\s+(?:all|every|"
    r"each)\s+(?!the\b)[\w-]+(?:\s+(?!please|pls|plz)[\w-]+)?|everywhere|throughout|from\s+now\s+on|going\s+forward)(?P<please>\s*,?\s*(?:please|pls|"
    r"plz|thanks|thx|ty))?[\s.!]*$",
    re.I,
)


# "dark theme for anything visual you generate for me": a noun phrase made standing by its scope over what the
# agent makes; "In this repo, tests live next to their file, not in tests/": a repo's way, told against another
_NP_SCOPE_RE = re.compile(
    r"^(?P<np>(?!i\b|we\b|you\b|it\b|this\b|that\b|good\s+luck|thanks|thank\s+you|congrats|cheers|kudos|props|credit|"
    r"respect|love)[a-z][\w -]{1,30}?)\s+for\s+(?:anything|everything|all|any|every)\b"
    r"(?:\s+\w+){0,3}?\s+(?:that\s+)?you\s+(?:generate|make|write|produce|create|draw|output|give\s+me|build|render)\b",
    re.I,
)
_REPO_WAY_RE = re.compile(
    r"^(?:in|for|across)\s+(?:this|our|the)\s+(?:repo|repository|project|codebase|monorepo|service|team)\s*,\s*"
    r"(?P<rest>(?!(?:i|you)\b)[^?]{8,160}?(?:,\s*not\s+|\b(?:always|never|only)\b)[^?]*)$",
    re.I,
)


def scoped_rule_hits(sentence: str) -> list[Hit]:
    """A noun phrase over all the agent makes, or a repository's way told against another: the rule, MUST."""
    scope = _NP_SCOPE_RE.match(sentence) if " you " in sentence else None
    if scope is not None and not is_question(sentence) and not _ONE_OFF.search(sentence):
        content = sentence_case(f"use {third_person(sentence.rstrip(' .!'))}")
        content = content.split(",")[0].rstrip(" .") + "."
        cand = make(content, Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule="en.rule.scoped_np",
                    confidence=0.8, lang="en")  # fmt: skip
        return [(cand, 0, len(sentence))]
    way = _REPO_WAY_RE.match(sentence) if sentence[:3].lower() in ("in ", "for", "acr") else None
    if way is None or is_question(sentence) or blocked(sentence, way.start("rest")):
        return []
    content = sentence_case(third_person(sentence.rstrip(" .!")))
    cand = make(content, Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule="en.rule.repo_way", confidence=0.8,
                lang="en")  # fmt: skip
    return [(cand, 0, len(sentence))]


def np_rule_hits(sentence: str) -> list[Hit]:
    """ "plain text commits only please": the rule, MUST."""
    said = sentence.rstrip(" .!").lower()
    standing = said.endswith(("from now on", "going forward"))
    if not standing and not said.endswith(("please", "pls", "plz", "thanks", "thx", "ty")):
        return _scoped_np_hits(sentence)  # asked for or not a rule: the test spares the pattern most sentences
    match = _NP_RULE_RE.match(sentence)
    if match is None or is_question(sentence) or _ONE_OFF.search(sentence):
        return _scoped_np_hits(sentence)
    scope = match.group("scope").lower()
    if not match.group("please") and not standing:
        return []  # "weekends only", "good luck for all exams": a fact or a wish, unless asked for or standing
    content = sentence_case(f"use {third_person(match.group('np'))} {scope}")
    cand = make(content, Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule="en.rule.noun_phrase",
                confidence=0.8, lang="en")  # fmt: skip
    return [(cand, 0, len(sentence))]


# A noun phrase asked for over a kind of output: "For recipes, metric units please.", "any dates you write for me:
# DD/MM/YYYY please". The scope is plural or every kind ("for dinner, pizza please" is an order, not a rule).
_FOR_KIND_NP_RE = re.compile(
    r"^(?:for|in)\s+(?:(?:all|any|every|my|our)\s+)?(?P<kind>[a-z][\w-]*s|code|everything|anything)\s*,\s*"
    r"(?P<np>[a-z][\w/+#.-]*(?:\s+(?!(?:is|are|was|were|be|i|we|you|it|they|do|does|did)\b)[\w/+#.-]+){0,3}?)"
    r"\s*,?\s*(?:please|pls|plz)[\s.!]*$"
    r"|^(?P<all>any|all|every)\s+(?P<kind2>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+you\s+(?:write|give|make|draft|send|"
    r"generate|create|produce|suggest)(?:\s+(?:for|to)\s+(?:me|us))?\s*[:-]\s*(?P<np2>[^,.;!?]{2,40}?)"
    r"\s*,?\s*(?:please|pls|plz)?\s*(?:[,;.!]|$)",
    re.I,
)


def _scoped_np_hits(sentence: str) -> list[Hit]:
    match = _FOR_KIND_NP_RE.match(sentence) if ("please" in sentence.lower() or " you " in sentence) else None
    if match is None or is_question(sentence) or _ONE_OFF.search(sentence):
        return []
    if match.group("np"):
        content = sentence_case(f"for {match.group('kind')}, {third_person(match.group('np'))}")
    else:
        content = sentence_case(f"{match.group('all')} {match.group('kind2')} the agent writes: {match.group('np2')}")
    cand = make(content, Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule="en.rule.noun_phrase_for",
                confidence=0.8, lang="en")  # fmt: skip
    return [(cand, 0, len(sentence))]


def prefer_you_hits(sentence: str) -> list[Hit]:
    """ "I prefer you ask clarifying questions rather than guess": the rule, MUST."""
    match = _PREFER_YOU_RE.search(sentence) if ("prefer" in sentence or "rather" in sentence) else None
    if (
        match is None
        or blocked(sentence, match.start(), hypothetical=True)
        or _ONE_OFF.search(match.group("rest"))
    ):
        return []
    verb = match.group("verb").lower()
    verb = {"asked": "ask", "wrote": "write", "used": "use", "gave": "give", "kept": "keep"}.get(verb, verb)
    if verb not in IMPERATIVE_VERBS:
        return []  # "I'd rather you didn't" is a prohibition (`prohibition_hits`)
    rest = match.group("rest")
    if "rather" in match.group().lower() and " rather than " not in rest:
        rest = rest.replace(" than ", " rather than ", 1)  # "I'd rather you use X than Y"
    content = sentence_case(f"{verb}{third_person(rest)}")
    cand = make(content, Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule="en.rule.prefer_you",
                confidence=0.85, lang="en")  # fmt: skip
    return [(cand, match.start(), match.end())]


def dont_want_hits(sentence: str) -> list[Hit]:
    """ "I don't want any emojis in the answers": the rule, MUST."""
    match = _DONT_WANT_RE.search(sentence) if "want" in sentence else None
    if (
        match is None
        or blocked(sentence, match.start(), hypothetical=True)
        or _ONE_OFF.search(match.group("rest"))
    ):
        return []
    rest = third_person(match.group("rest").strip(" ,"))
    you = match.group("you") or ""
    agent = ("the agent to " if "to" in you else "the agent ") if you else ""
    content = sentence_case(f"the user does not want {agent}{rest}")
    cand = make(content, Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule="en.rule.dont_want",
                confidence=0.85, lang="en")  # fmt: skip
    return [(cand, match.start(), match.end())]


# Verbs that say "as a rule" by themselves, with no "always" or "from now on" around them.
_STANDING_VERB_RE = re.compile(
    r"(?:prefer|favou?r|stick\s+(?:to|with)|default\s+to|refrain\s+from|stay\s+away\s+from|keep\s+away\s+from|"
    r"steer\s+clear\s+of|lean\s+towards?)\b",
    re.I,
)
# A condition on what the agent writes ("when you write SQL for me, ..."), and a specification after it: a
# noun phrase or a list of them, no subject and no finite verb ("uppercase keywords, one column per line").
_OUTPUT_COND_RE = re.compile(
    r"(?:when|whenever|if)\s+you(?:'re|\s+are)?\s+(?:\w+\s+)?(?:write|writing|give|giving|suggest|suggesting|"
    r"generate|generating|draft|drafting|answer|answering|reply|replying|explain|explaining|show|showing|create|"
    r"creating|name|naming|format|formatting|comment|commenting|recommend|send|summari[sz]e|translate|"
    r"translating|code|coding|review|reviewing|make|making|produce|output|propose|add|adding)\b",
    re.I,
)
_SPEC_RE = re.compile(
    r"^(?!(?:i|we|you|it|they|he|she|this|that|there|the\s+\w+\s+(?:is|are|was|were))\b)"
    r"(?![^,.;]*\b(?:is|are|was|were|has|have|had|did|does|will|can|could|would)\b)[a-z0-9]",
    re.I,
)


def base_verb(word: str) -> str:
    """An -ing form's base verb among the imperative verbs ("putting" -> "put", "using" -> "use")."""
    stem = word.lower()[:-3]
    for guess in (stem, stem + "e", stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else stem):
        if guess in IMPERATIVE_VERBS:
            return guess
    return stem


# A verb of the exchange itself, alone or about "it": "dont ask", "don't argue with me about it", "don't judge lol"
_CHAT_ONLY = re.compile(
    r"(?:ask|argue|judge|laugh|lecture|comment|question|bother|panic|freak\s+out|overthink|fight\s+me|@\s*me|"
    r"be\s+mad|be\s+weird|be\s+like\s+that)(?:\s+(?:with|at)\s+(?:me|us))?(?:\s+(?:about|on|over)\s+(?:it|this|that))?"
    r"(?:\s+(?:please|pls|lol|haha|though|ok|okay))*[\s.!😅😂🙏🙈]*$",
    re.I,
)


def rule_hits(sentence: str) -> list[Hit]:
    """Standing rules for the agent: "don't use ORMs", "never suggest jQuery", "from now on, use pnpm"."""
    body = sentence.rstrip(" .!")
    tail = _TAIL_PERSIST_RE.search(body)
    if tail and tail.start() > 0:
        body = body[: tail.start()]
    match = _RULE_RE.match(body)
    if match is None:
        return []
    mod = " ".join((match.group("mod") or "").lower().split())
    cond = (match.group("cond") or "").lower()
    standing = cond.startswith(
        (
            "when",
            "whenever",
            "if you",
            "if a ",
            "if an ",
            "if any",
            "if something",
            "for anything",
            "for any ",
            "for every",
            "for all ",
        )
    )  # also "if you're unsure, say so"  # "whenever you give me recipes, include ..."
    persistent = bool(match.group("lead") or tail or standing)
    standing_verb = False
    if not mod and not persistent:
        # "skip the preamble in your answers": about all the agent's output, not this one
        rest_said = match.group("rest")
        persistent = ("your" in rest_said or "all" in rest_said) and _ALL_OUTPUT_RE.search(
            rest_said
        ) is not None
        standing_verb = _STANDING_VERB_RE.match(match.group("rest")) is not None and not re.search(
            r"我|\bi\b", body[: match.start("rest")], re.I
        )  # "我 prefer X" / "I prefer X": the user's preference, not an instruction
        # "give me vim keybinding answers, not VS Code menus", "keep solutions simple": about a kind of output
        # in general (a plural noun for what the agent gives), not about the piece of work at hand
        persistent = persistent or (
            (
                _GENERAL_OUTPUT_RE.search(rest_said) is not None
                or _EVERY_SCOPE_RE.search(rest_said) is not None
            )
            and _ONE_OFF.search(rest_said) is None
        )
        if not persistent and not standing_verb:
            return []
    rest = match.group("rest").strip(" ,")
    if rest[:1].isupper() and rest[1:2].islower():  # "Use British spelling ...": the verb after "always"
        rest = rest[0].lower() + rest[1:]
    first, canon = rest.split()[0].lower(), _MOD_CANON[mod]
    if mod in ("mind always", "mind never") and first.endswith(
        "ing"
    ):  # "mind always putting X": "always put X"
        first = base_verb(first)
        rest = " ".join([first, *rest.split(None, 1)[1:]])
    if first == "keep" and re.search(r"\byou\s*$", body[: match.start("rest")], re.I):
        return []  # "you keep giving me X": what the agent does (feedback, `feedback_hits`), not "always keep"
    if "-" in first and first.rsplit("-", 1)[-1] in IMPERATIVE_VERBS:
        first = first.rsplit("-", 1)[-1]  # "double-check", "re-run": the verb is the last part
    if not mod and standing_verb:
        canon = ""  # "prefer composition over inheritance", "stick to the standard library": standing as said
    if canon == "no more":  # "No more emojis please": a noun, not a verb
        mine = re.search(r"\bfor\s+(?:me|us)\b(?![^.;!?]*\bplease\b)", rest, re.I)
        if mine and not re.search(r"\byou\s+\w+\s*$", rest[: mine.start()], re.I):
            return []  # "no more invoicing for me": what the user no longer has to do, not a rule for the agent
        rest = re.sub(r"[\s,]*please$", "", rest, flags=re.I)
    elif canon == "always" and standing and first not in IMPERATIVE_VERBS:
        # "when you write commit messages, conventional commits, lowercase": a specification of the output
        if not (_OUTPUT_COND_RE.match(cond) and _SPEC_RE.match(rest)):
            return []
        canon = ""
    elif canon in ("always", "remember to"):
        if first not in IMPERATIVE_VERBS:
            return []
    elif (first in _NOT_IMPERATIVE and not re.match(r"give\s+(?:me|us)\b", rest, re.I)) or not first.replace(
        "-", ""
    ).isalpha():
        return []  # "don't give up", "never mind"; "don't give me pip commands" is a rule
    if canon in ("do not", "never", "stop") and _CHAT_ONLY.match(rest):
        return []  # "dont ask", "please don't argue with me about it": about this exchange, not a standing rule
    if (_ONE_OFF.search(rest) and not persistent) or _PRONOUN_ONLY.match(rest) or _KEEP_IN_MIND.match(rest):
        return []  # "don't change this file yet", "don't do that": about the task at hand
    if re.match(r"(?:just\s+)?(?:let|tell)\s+(?:me|us)\s+know\b", rest, re.I) and re.match(
        r"\W*if\s+(?:you|u)\b", match.group("cond") or body, re.I
    ):
        return []  # "if you need any help, let me know!": an offer, not a rule for the agent
    if len(rest.split()) == 1 and first not in IMPERATIVE_VERBS and canon != "no more":
        return []
    tools = find_tools(rest)
    uses = canon in ("always", "remember to") and first in ("use", "stick", "switch", "prefer")
    if uses and tools and tools[0][0].slot is not None and len(rest[: tools[0][1]].split()) <= 2:
        # "always use pnpm": the choice goes in the tool's slot
        return [tool_hit(tools[0][0], 0, len(sentence), rule="en.rule.use_tool", lang="en", tier=Tier.MUST,
                         confidence=0.9)]  # fmt: skip
    content = sentence_case(f"{match.group('cond') or ''}{canon} {third_person(rest)}".replace("  ", " "))
    category = Category.FEEDBACK if canon == "stop" or _FEEDBACK_WORDS.search(rest) else Category.CONSTRAINT
    rule = f"en.rule.{canon.replace(' ', '_') or ('standing' if mod or not standing else 'spec')}"
    cand = make(content, Kind.PROCEDURAL, category, Tier.MUST, rule=rule, confidence=0.9, lang="en")
    return [(cand, 0, len(sentence))]


# "I need British spelling throughout", "I want type hints everywhere": a requirement on all the agent's work,
# the need said by the user and made standing by its scope.
_NEED_RE = re.compile(
    I_WORD
    + r"\s*"
    + ADV
    + r"(?:need|want|require|expect|'d\s+like|would\s+like)\s+(?P<what>(?!to\b|you\b|it\b|"
    r"this\b|that\b|help\b)[a-z][^,.;!?]{2,60}?)\s+(?P<scope>throughout|everywhere|across\s+the\s+board|at\s+all\s+"
    r"times|in\s+(?:all|every|each)\s+(?:[\w-]+\s+)?[\w-]+|from\s+now\s+on|going\s+forward|always)\b",
    re.I,
)


# "I want all timestamps in UTC", "I'd like every date as YYYY-MM-DD": a requirement over a whole kind
_WANT_ALL_RE = re.compile(
    I_WORD + r"\s*" + ADV + r"(?:need|want|'d\s+like|would\s+like|prefer)\s+(?:all|every|each)\s+(?:of\s+the\s+)?"
    r"[a-z][\w-]*(?:\s+[\w-]+){0,2}?\s+(?:in|as|to\s+be|formatted\s+as|written\s+in)\s+[^,.;!?]{2,40}",
    re.I,
)
_NEED_CUE = re.compile(
    r"throughout|everywhere|across\s+the|at\s+all|\b(?:all|every|each)\b|from\s+now|forward|always", re.I
)


def need_hits(sentence: str) -> list[Hit]:
    """ "I need metric units throughout": a standing requirement, MUST."""
    wants = (
        "need" in sentence
        or "want" in sentence
        or "require" in sentence
        or "expect" in sentence
        or ("like" in sentence)
    )
    wants = wants and _NEED_CUE.search(sentence) is not None
    match = (_NEED_RE.search(sentence) or _WANT_ALL_RE.search(sentence)) if wants else None
    if match is None or blocked(sentence, match.start(), hypothetical=True):
        return []
    said = re.sub(r"[\s,]*(?:please|pls|plz)$", "", sentence[match.start() : match.end()], flags=re.I)
    content = sentence_case(third_person(said))
    cand = make(content, Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule="en.rule.need", confidence=0.85,
                lang="en")  # fmt: skip
    return [(cand, match.start(), match.end())]


def when_you_hits(sentence: str) -> list[Hit]:
    """ "I hate it when you add emojis": feedback on the agent, the rule "Do not add emojis."."""
    match = _WHEN_YOU_RE.search(sentence)
    if match is None or blocked(sentence, match.start(), hypothetical=False):
        return []
    action = third_person(match.group("x").strip(" ,"))
    if match.group("out"):  # "I dislike it when answers open with 'Great question!'": said of the output
        content = sentence_case(f"the user dislikes it when {match.group('out').lower()} {action}")
    else:
        content = sentence_case(f"do not {'be ' if match.group('be') else ''}{action}")
    rule = "en.rule.when_you"
    cand = make(content, Kind.PROCEDURAL, Category.FEEDBACK, Tier.MUST, rule=rule, confidence=0.85, lang="en")
    return [(cand, match.start(), match.end())]
