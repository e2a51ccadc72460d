"""English statements by grammatical class, for what the slot rules do not name. Pure: no I/O.

Each class is a subject, a predicate and what the clause says, not a sentence seen in a test:

- `prohibition_hits`: a thing forbidden in the user's work, whatever the phrasing: "X is banned / not
  allowed / off-limits", "no X in this repo", "we don't do X here", "I'd rather you didn't X", a labelled
  rule ("Rule for this repo: ..."), and modal rules on a thing ("exports must always stream") -> MUST.
- `team_hits`: the team the user is on ("I'm on the payments team", "I moved to the infra team") ->
  `user.team`; a family member or pet with a name ("my dog Biscuit") -> a WORTH fact.
- `statement_hits`: a first-person or project statement that holds beyond the moment: a stative predicate
  ("we deploy with ArgoCD", "our data is far too relational"), a decision with or without its reason ("we
  picked SQLite because ...", "we ruled out Kafka"), a lesson ("lesson learned: ...", "got burned by ..."),
  a standing policy (backups, schedules, retention) -> WORTH; the content is the clause in the third person.
  A clause about the moment ("I'm trying to ...", "today", "this error"), a request, a question, a
  hypothetical or someone else's fact says nothing lasting and yields nothing.
"""

from __future__ import annotations

import re

from core.extraction.candidates import Category, Kind, Tier
from core.extraction.rules.en.facts import OBJ_PRONOUN
from core.extraction.rules.en.grammar import I_AM, LEAD, blocked, is_question, sentence_case, third_person
from core.extraction.rules.hits import Hit, fact, make
from core.extraction.rules.vocab import find_tools, only_left

_LEAD_RE = re.compile(LEAD, re.I)
# fmt: off
_THING = r"(?P<obj>(?!(?:and|or|but|is|are)\b)[\w@#.+/`'-]+(?:\s+(?!(?:and|or|but|is|are)\b)[\w@#.+/`'-]+){0,3}?)"
_PEOPLE = frozenset(
    "we i you they he she people users devs developers engineers everyone nobody team staff employees "
    "contractors interns".split()
)
_BANNED_RE = re.compile(
    r"(?:^|(?<=[\s,:]))" + _THING + r"\s+(?:is|are)\s+(?:(?:strictly|completely|totally|basically|now|also)\s+)?"
    r"(?:banned|forbidden|prohibited|not\s+allowed|disallowed|off[- ]limits|a\s+no[- ]go|not\s+permitted|"
    r"not\s+an\s+option|verboten|deprecated\s+here)\b", re.I)
# What the agent may only read or must keep out of: "prod DB is read-only for you", "the billing repo is
# hands-off for you": a permission stated to the agent, MUST.
_FOR_YOU_RE = re.compile(
    r"^" + _THING + r"\s+(?:is|are)\s+(?:strictly\s+)?(?:read[- ]only|hands[- ]off|look[- ]but[- ]don't[- ]touch|"
    r"off[- ]limits)\s+(?:for|to)\s+(?:you|the\s+agent|the\s+assistant)\b", re.I)
_BANNED_WORDS = ("banned", "forbidden", "prohibited", "allowed", "limits", "no-go", "no go", "permitted", "option",
                 "verboten", "deprecated")  # one is in every match of _BANNED_RE: a cheap test before it
_NO_X_IN_RE = re.compile(
    r"^(?:and\s+)?(?:please\s+|pls\s+|plz\s+)?no\s+(?P<obj>(?!worries|problem|idea|luck|way|need|clue|thanks|rush|"
    r"pressure)[\w.+#-]+(?:\s+[\w.+#-]+){0,3}?)(?:\s+(?:in|on|for|to|inside|anywhere\s+in)\s+(?:(?:this|our|the|my|any|"
    r"all)\s+)?[\w-]+(?:\s+[\w-]+)?|"
    r"\s*,?\s*(?:ever|period|no\s+exceptions|full\s+stop|please|pls)|\s+without\s+[^,.;]{2,40}|"
    r"\s+(?:that|which)\s+[^,.;]{3,60})", re.I)
# A list of bans: "no microservices, no k8s", "no ORMs and no raw string SQL" (two or more, each short).
_NO_ITEM = (
    r"no\s+(?!worries|problem|idea|luck|way|need|clue|thanks|rush|pressure|one|matter)[\w.+#/-]+"
    r"(?:\s+[\w.+#/-]+){0,2}?"
)
_NO_LIST_RE = re.compile(
    r"(?:^|[\u2014\u2013:;,(-]\s*)(?P<list>" + _NO_ITEM + r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)"
    + _NO_ITEM + r"(?:(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)" + _NO_ITEM + r")*)"
    r"(?:\s*,?\s*(?:ever|period|please|pls|no\s+exceptions|full\s+stop))?\s*[.!)]*$",
    re.I,
)
_NO_MORE_FOR_ME = re.compile(r"^(?:and\s+|so\s+)?no\s+more\b[^.;!?]*\bfor\s+(?:me|us)\b", re.I)
_PLEASE_NO_RE = re.compile(
    r"^(?:please|pls|plz)\s+no\s+(?P<obj>(?!worries|problem|rush|pressure|need)[\w.+#-]+(?:\s+[\w.+#-]+){0,4}?)"
    r"(?:\s+(?:lol|thanks|thx|ty|haha|ok|okay|thank\s+you))?[\s.!]*$",
    re.I,
)
_WE_DONT_RE = re.compile(
    r"^we\s+(?:don't|do\s+not|dont|never)\s+(?!know|think|have|need|want|care|see|get|understand|mind|"
    r"like|remember|usually|really|use\b|live|work|own|speak|go|agree|eat|drink|do\s+that|do\s+this|do\s+it)(?P<rest>[a-z][\w\s.'/-]{2,80}?)(?:\s+(?:here|in\s+this\s+\w+|on\s+"
    r"this\s+\w+|at\s+all|ever))?[.!]*$", re.I)
_RATHER_YOU_RE = re.compile(
    r"\bi(?:'d|\s+would)\s+(?:rather|prefer(?:\s+it\s+if)?)\s+you\s+(?:didn't|did\s+not|not|never|don't|stop)\s+"
    r"(?P<rest>[a-z][^.;!?]{2,80})", re.I)
_RULE_LABEL_RE = re.compile(
    r"^(?:(?:our|the|a|team|house|company|repo|project)\s+)?(?:(?:ground|house|hard|team|golden|one|general|standing|"
    r"coding|code|naming|style)\s+)?(?:rules?\s+of\s+thumb|rules?|conventions?|polic(?:y|ies)|standards?|style\s+guide|norms?|"
    r"guidelines?)(?:\s+(?:for|in|on)\s+[^:]{1,30}|\s+here)?\s*(?:[:-]|\s+(?:is|are)\s+(?:that\s+|to\s+)?)\s*"
    r"(?P<rest>.{4,200})$", re.I)
# An obligation stated of a thing ("code review is mandatory for every PR", "tests are a must"): MUST.
_REQUIRED_RE = re.compile(
    r"(?:^|(?<=[\s,:]))" + _THING + r"\s+(?:is|are)\s+(?:(?:absolutely|strictly|always|now|also)\s+)?"
    r"(?:mandatory|required|compulsory|obligatory|non-negotiable|a\s+hard\s+requirement)\b(?!-)", re.I)
# A practice held as a rule, in the passive: "secrets are never committed", "PRs always get squashed".
_PASSIVE_RULE_RE = re.compile(
    r"^(?:all\s+|every\s+|any\s+|our\s+|the\s+)?" + _THING + r"\s+(?:is|are|get|gets)\s+(?:never|always)\s+"
    r"(?:[a-z]+ed|[a-z]+en|built|run|kept|put|sent|made|done|set|written|shown|read)\b", re.I)
# A requirement on every thing of a kind: "every migration needs a down()", "all endpoints require auth",
# "each PR must have two approvals" (a quantified subject, a verb of need and what is needed): MUST.
_EVERY_NEEDS_RE = re.compile(
    r"(?:^|(?<=[,:;]\s)|(?<=\u2014\s)|(?<=-\s))(?:every|each|all|any)\s+(?!(?:time|times|day|days|week|now|of|one|other|"
    r"the\s+time|these|those|this|that|my|your)\b)(?P<obj>[\w.+#/-]+(?:\s+[\w.+#/-]+){0,2}?)\s+(?:needs?|requires?|must\s+have|"
    r"has\s+to\s+have|have\s+to\s+have|should\s+(?:always\s+)?have)\s+(?:a|an|its|their|at\s+least|two|three|one|\d+|"
    r"(?-i:[A-Z])|[\w-]+\(\))", re.I)
_MODAL_RULE_RE = re.compile(
    r"^(?:all\s+|every\s+|any\s+|each\s+)?(?P<subj>(?!(?:i|we|you|it|this|that|he|she|they|because|since|as|so|"
    r"and|but|if|when|until|which|who|there|here|what|how|why|where|then|also|just)\b)"
    r"[a-z][\w/.-]*(?:\s+[\w/.-]+){0,3}?)\s+(?P<mod>must|have\s+to|has\s+to|need\s+to|needs\s+to|should\s+always|"
    r"should\s+never|must\s+never|must\s+always|are\s+required\s+to|is\s+required\s+to|(?:is|are)\s+to(?=\s+be\s))\s+"
    r"(?P<rest>[a-z][^?]{2,160})$", re.I)
# fmt: on
FILLER = re.compile(  # ", under any circumstances,": a parenthetical a rule reads through
    r",\s*(?:under\s+any\s+circumstances|ever|please|ok|okay|seriously|again)\s*,", re.I
)


def _rule(content: str, rule: str, *, end: int, category: Category = Category.CONSTRAINT) -> Hit:
    cand = make(
        sentence_case(content), Kind.PROCEDURAL, category, Tier.MUST, rule=rule, confidence=0.85, lang="en"
    )
    return cand, 0, end


_KEEP_DOING_RE = re.compile(
    r"\byou(?:'re|\s+are)?\s+(?:keep|kept|always|still|again|constantly|repeatedly)\s+(?:on\s+)?(?:keep\s+)?"
    r"(?P<verb>[a-z]+ing)\s+(?P<obj>[^.;!?,]{1,60}?)(?:\s+(?:again|every\s+time|in\s+(?:these|your|the)\s+\w+))?"
    r"[\s.!]*$",
    re.I,
)
_ING_BASE = {"writing": "write", "using": "use", "adding": "add", "putting": "put", "suggesting": "suggest",
             "forgetting": "forget", "making": "make", "giving": "give", "leaving": "leave", "changing": "change",
             "removing": "remove", "including": "include", "ignoring": "ignore", "doing": "do", "getting": "get",
             "mixing": "mix", "renaming": "rename", "dropping": "drop", "hardcoding": "hardcode"}  # fmt: skip


_COMPLAINT = re.compile(
    r"\b(?:ugh|argh|sigh|seriously|again|stop|annoying|frustrat\w*|come\s+on|why\s+do\s+you|i\s+told\s+you|i\s+said|"
    r"please\s+don't|no\s+more|still|wrong|broken|everywhere|all\s+the\s+time|every\s+time|constantly)\b|!{2,}",
    re.I,
)


def feedback_hits(sentence: str) -> list[Hit]:
    """ "you keep writing `var` in these snippets": feedback, the rule not to."""
    match = _KEEP_DOING_RE.search(sentence)
    if match is None or is_question(sentence) or not _COMPLAINT.search(sentence):
        return []  # "you keep dreaming up ways to help": praise, not a complaint
    verb = match.group("verb").lower()
    base = _ING_BASE.get(verb, verb[:-3])
    obj = third_person(match.group("obj").strip(" `'\""))
    cand = make(sentence_case(f"do not {base} {obj}"), Kind.PROCEDURAL, Category.FEEDBACK, Tier.MUST,
                rule="en.rule.keep_doing", confidence=0.85, lang="en")  # fmt: skip
    return [(cand, match.start(), match.end())]


def prohibition_hits(sentence: str) -> list[Hit]:
    """Things forbidden in the user's work, however phrased (see the module docstring)."""
    keep = feedback_hits(sentence)
    if keep:
        return keep
    text = FILLER.sub(" ", sentence).strip()
    body = _LEAD_RE.sub("", text, count=1).strip()
    if not body or is_question(body):
        return []
    label = _RULE_LABEL_RE.match(body)
    if label and (":" in body[: label.start("rest")] or len(label.group("rest").split()) >= 3):
        # "Rule for this repo: ..." keeps what follows; "our convention is ..." the whole statement
        said = label.group("rest") if re.match(r"(?:\w+\s+)?rules?\b", body, re.I) else body
        return [_rule(third_person(said), "en.rule.labelled", end=len(sentence))]
    low = body.lower()
    obliged = (
        "mandatory" in low
        or "required" in low
        or "compulsory" in low
        or "obligatory" in low
        or ("non-negotiable" in low or "requirement" in low)
    )
    required = (obliged and _REQUIRED_RE.search(body)) or (
        (" never " in low or " always " in low) and _PASSIVE_RULE_RE.match(body)
    )
    if required and not blocked(body, required.start()) and required.group("obj").lower() not in OBJ_PRONOUN:
        return [_rule(third_person(body), "en.rule.required", end=len(sentence))]
    needs = "need" in low or "require" in low or " have " in low  # a word of every match: spares the pattern
    every = _EVERY_NEEDS_RE.search(body) if needs else None
    if every and not blocked(body, every.start()) and not _MOMENT.search(body) and not is_question(body):
        said = body[every.start() :].split(" \u2014 ")[0].split(" - ")[0]
        return [_rule(third_person(said), "en.rule.every_needs", end=len(sentence))]
    to_agent = " for you" in low or " to you" in low or "agent" in low or "assistant" in low
    for_you = _FOR_YOU_RE.match(body) if to_agent else None
    if for_you and not blocked(body, for_you.start()) and not _MOMENT.search(body):
        return [_rule(third_person(body.replace("for you", "for the agent").replace("to you", "to the agent")),
                      "en.rule.for_you", end=len(sentence))]  # fmt: skip
    banned = _BANNED_RE.search(body) if any(word in low for word in _BANNED_WORDS) else None
    if banned and not blocked(body, banned.start()):
        obj = banned.group("obj").strip("`'\" ")
        # "We are NOT allowed to use any cloud service that ...": the people are the subject, what follows the
        # ban is what it bans
        allowed_to = re.match(r"\s+to\s+(?P<rest>[^,;.\u2014]+)", body[banned.end() :])
        if re.sub(r"^(?:(?:our|my|the|all|all\s+the|any)\s+)+", "", obj.lower()) in _PEOPLE:
            if allowed_to is not None:
                return [_rule(f"Do not {allowed_to.group('rest').strip()}.", "en.rule.banned", end=len(sentence))]
        elif obj.lower() not in ("it", "that", "this", "which", "what", "everything", "nothing"):
            return [_rule(f"Do not use {obj} ({banned.group().split(obj, 1)[-1].strip()})",
                          "en.rule.banned", end=len(sentence))]  # fmt: skip
    rather = _RATHER_YOU_RE.search(body)
    if rather and not blocked(body, rather.start(), hypothetical=False):
        return [
            _rule(f"Do not {third_person(rather.group('rest'))}", "en.rule.rather_not", end=len(sentence))
        ]
    listed = _NO_LIST_RE.search(body)
    if listed and not blocked(body, listed.start()):  # "keep it simple — no microservices, no k8s"
        return [_rule(sentence_case(listed.group("list")), "en.rule.no_list", end=len(sentence))]
    no_x = _NO_X_IN_RE.match(body)
    if no_x and _NO_MORE_FOR_ME.search(body) and "please" not in low:
        no_x = None  # "no more invoicing for me": what the user no longer has to do, not a rule for the agent
    if no_x:
        return [_rule(third_person(body), "en.rule.no_x", end=len(sentence))]
    asked_no = _PLEASE_NO_RE.match(body)
    if asked_no:  # "pls no apt-get commands lol": asked for, so no qualifier is needed
        return [_rule(f"No {third_person(asked_no.group('obj'))}", "en.rule.no_x", end=len(sentence))]
    we_dont = _WE_DONT_RE.match(body)
    if we_dont and not re.search(r"\b(?:anymore|any\s+more|no\s+longer|yet)\b", body, re.I):
        return [_rule(f"Do not {third_person(we_dont.group('rest'))}", "en.rule.we_dont", end=len(sentence))]
    modal = _MODAL_RULE_RE.match(body)
    # "must have been great", "must be nice": a guess; "must be reviewed by Legal", "are to be pulled from Vault":
    # an obligation in the passive
    epistemic = modal and re.match(
        r"(?:have|'ve)\b|be\b(?!\s+(?:[a-z]+ed|[a-z]+en|built|run|kept|put|sent|made|done|set|shown|read|paid|held|"
        r"bought|brought|taught|told|sold|signed\s+off)\b)",
        modal.group("rest"),
        re.I,
    )
    if modal and not epistemic and not blocked(body, modal.start()) and not _MOMENT.search(body):
        return [_rule(third_person(body), "en.rule.modal", end=len(sentence))]
    return []


# fmt: off
_TEAM_RE = re.compile(
    r"(?<![\w'])(?:i'm\s+(?:now\s+|currently\s+)?(?:leading|running|managing|heading)|i\s+(?:now\s+)?head|i'm|i\s+am|"
    r"i've\s+been|i\s+work|i'm\s+working|i\s+joined|i\s+moved|i\s+switched|"
    r"i\s+transferred|i\s+got\s+moved|i\s+got\s+transferred|i'm\s+now|i\s+sit|i\s+lead|i\s+run|i\s+manage|"
    r"i\s+(?:just|recently)\s+joined|i\s+(?:just\s+|recently\s+|officially\s+)?took\s+over|i've\s+taken\s+over|"
    r"i\s+inherited|"
    r"^(?:ever\s+)?(?:since|after)\s+(?:joining|moving\s+(?:over\s+)?to|transferring\s+to|switching\s+to))\s+"
    r"(?:now\s+|currently\s+|still\s+|officially\s+)?(?:on|in|with|to|into|over\s+to)?\s*(?:the\s+)?"
    r"(?P<team>(?-i:[A-Za-z][\w&/-]*)(?:\s+[\w&/-]+){0,2}?)\s+(?:team|squad|group|org|department|dept)\b",
    re.I)
# "swapped teams, I'm with infra these days": after a change of team, where the user is now names the team
_TEAM_SWAP_RE = re.compile(
    r"\b(?:swapped|switched|changed|moved|transferred)\s+teams\b[^.;!?]{0,20}?\bi(?:'m|\s+am)\s+(?:now\s+)?"
    r"(?:with|on|in|at)\s+(?:the\s+)?(?!(?:you|him|her|them|it|that|this|a|an)\b)(?P<team>(?-i:[A-Za-z])[\w&/-]*)"
    r"(?=\s+(?:now|these\s+days|nowadays)\b|\s*[,.;!?]|\s*$)",
    re.I)
_TEAM_LEAD_RE = re.compile(
    r"i(?:'m|\s+am)?\s+(?:now\s+|currently\s+)?(?:lead|run|manage|head)"
    r"|i\s+(?:just\s+|recently\s+|officially\s+)?took\s+over|i've\s+taken\s+over|i\s+inherited",
    re.I,
)
_FAMILY = (
    r"wife|husband|partner|girlfriend|boyfriend|fiancee?|son|daughter|kid|child|baby|mom|mother|mum|dad|father|"
    r"brother|sister|dog|cat|puppy|pup|kitten|kitty|pet|parrot|rabbit|bunny|hamster|horse|turtle|bird|guinea\s+pig"
)
_FAMILY_RE = re.compile(
    r"\b(?:my|our)\s+(?:\w+\s+)?(?P<who>" + _FAMILY + r")(?:'s\s+name\s+is|\s+is\s+(?:named|called)|\s+"
    r"(?:named|called)|,)?\s+(?P<name>(?-i:[A-Z][a-z]+(?:\s[A-Z][a-z]+)?))\b"
    r"|\b(?:my|our)\s+(?:new\s+|little\s+|old\s+)?(?P<who2>" + _FAMILY + r")\b[^.;!?]{0,40}?\b(?:her|his|its)\s+"
    r"name\s+is\s+(?P<name2>(?-i:[A-Z][a-z]+))"
    r"|\b(?:we|i)(?:'ve|\s+have)?\s+(?:just\s+)?(?:adopted|got|have|rescued|bought|welcomed)\s+"
    r"(?:a|an|another|our|my)\s+(?:new\s+|little\s+)?(?:[\w-]+\s+)?(?P<who3>" + _FAMILY + r")\b[^.;!?]{0,40}?\b"
    r"(?:(?:her|his|its|their)\s+name\s+is|named|called)\s+(?P<name3>(?-i:[A-Z][a-z]+))"
    r"|\b(?P<name4>(?-i:[A-Z][a-z]+)),\s+(?:my|our)\s+(?P<who4>" + _FAMILY + r")\b", re.I)
_FAMILY_ROLE_RE = re.compile(
    # the household: a partner, the children (a sibling's or a parent's diet is theirs, not the user's)
    r"^(?:(?:and|also|btw|oh)\s+)*(?:my|our)\s+(?:\w+\s+)?(?:wife|husband|partner|girlfriend|boyfriend|fiancee?|son|"
    r"daughter|kid|child|children|baby|toddler|twins)s?\s+(?:is|are|works|work|lives|live|has|"
    r"teaches|studies|runs|goes|go|can't|won't|doesn't|don't)\s+(?P<rest>[^.;!?]{3,80}?)(?=\s*(?:,?\s*(?:so|but|can|"
    r"could|please|pls)\b|$|[.;!?]))",
    re.I,
)
# What the user's own life must allow for in a family member's facts (their job alone is theirs: "my wife is
# a nurse" stores nothing)
_FAMILY_NEEDS_RE = re.compile(
    r"\b(?:allerg\w*|eat|eats|food|spicy|dairy|gluten|(?:pea)?nuts?|meat|pork|vegetarian|vegan|celiac|diabetic|school|"
    r"kindergarten|daycare|wheelchair|night\s+shifts?|shifts?|lives\s+with\s+(?:me|us))\b",
    re.I,
)
# What a sentence says of a family member after naming them, up to a request or a new clause of its own.
_FAMILY_MORE_RE = re.compile(
    r"\s*,?\s*(?:who\s+)?(?:is|has|won't|can't|doesn't|does\s+not|loves|hates|likes|goes|eats|refuses|"
    r"needs|gets|was\s+born)\b[^.;!?]*?(?=\s*(?:,\s*(?:so|can|could|please|and\s+i)\b|\s-\s|—|$|[.;!?]))",
    re.I,
)
_NOT_NAMES = frozenset("I The A An And But So Just Also Now Today Is Was Has Had Who".split())
# fmt: on


_CHILDREN_RE = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have)?\s+(?:got\s+)?(?:two|three|four|five|\d)\s+(?:kids|children|sons|daughters|boys|girls|"
    r"cats|dogs)\b[^.;!?]*?(?-i:[A-Z])[a-z]+",
    re.I,
)
_CONDITION_RE = re.compile(
    I_AM
    + r"\s+(?:also\s+)?(?:(?:red-green\s+)?colou?r\s*-?blind|dyslexic|deaf|hard\s+of\s+hearing|partially\s+sighted|"
    r"epileptic|asthmatic|left-handed|autistic|pregnant|(?:type\s*[12]\s+)?diabetic|on\s+the\s+autism\s+spectrum)\b",
    re.I,
)


def team_hits(sentence: str) -> list[Hit]:
    """The user's team (`user.team`), a family member or pet named, a lasting condition."""
    hits: list[Hit] = []
    children = _CHILDREN_RE.search(sentence)
    if children and not blocked(
        sentence, children.start()
    ):  # "I've got two kids, Oskar who's 9 and Wren ..."
        cand = make(sentence_case(third_person(sentence)), Kind.SEMANTIC, Category.PROFILE, Tier.WORTH,
                    rule="en.family.children", confidence=0.8, lang="en")  # fmt: skip
        return [(cand, 0, len(sentence))]
    condition = _CONDITION_RE.search(sentence)
    if condition and not blocked(sentence, condition.start()):  # "I'm colorblind (deuteranopia)": lasting
        close = sentence.find(")", condition.end())
        end = close + 1 if 0 <= close - condition.end() <= 30 else condition.end()
        cand = make(sentence_case(third_person(sentence[condition.start() : end])), Kind.SEMANTIC,
                    Category.PROFILE, Tier.WORTH, rule="en.profile.condition", confidence=0.8,
                    lang="en")  # fmt: skip
        hits.append((cand, condition.start(), end))
    swap = _TEAM_SWAP_RE.search(sentence) if "teams" in sentence.lower() else None
    if swap and not blocked(sentence, swap.start()):
        value = f"{swap.group('team')} team"
        cand = fact(
            f"The user is on the {value}.", "user.team", value.lower(), rule="en.team.swap", lang="en"
        )
        hits.append((cand, swap.start(), swap.end()))
    team = None if swap else _TEAM_RE.search(sentence)
    if team and not blocked(sentence, team.start()):
        name = team.group("team").strip()
        first = name.split()[0].lower()
        if first not in (
            "a",
            "an",
            "my",
            "our",
            "this",
            "that",
            "same",
            "other",
            "new",
            "whole",
            "one",
            "the",
            "your",
        ):
            value = f"{name} team"
            # "I run / lead / manage / head the X team": the user leads it, not only sits in it
            leads = _TEAM_LEAD_RE.match(sentence, team.start()) is not None
            told = f"The user leads the {value}." if leads else f"The user is on the {value}."
            cand = fact(told, "user.team", value.lower(), rule="en.team", lang="en")
            hits.append((cand, team.start(), team.end()))
    family = _FAMILY_RE.search(sentence)
    if family and not blocked(sentence, family.start()):
        who = next(g for g in (family.group(k) for k in ("who", "who2", "who3", "who4")) if g).lower()
        name = next(g for g in (family.group(k) for k in ("name", "name2", "name3", "name4")) if g)
        if name not in _NOT_NAMES and not name.endswith("ly"):  # "Thankfully, my son ...": no name
            content = f"The user's {who} is named {name}."
            said = _FAMILY_MORE_RE.match(sentence, family.end())
            if said:  # "my daughter Ines is 7 and won't eat anything spicy": what is said of them too
                content = sentence_case(third_person(sentence[family.start() : said.end()]))
            slot = family_slot(who, sentence)
            cand = make(content, Kind.SEMANTIC, Category.PROFILE, Tier.WORTH, rule="en.family", confidence=0.8,
                        lang="en", slot=slot, value=name if slot else None)  # fmt: skip
            hits.append((cand, family.start(), family.end()))
    role = None if family else _FAMILY_ROLE_RE.match(sentence)
    if (
        role
        and _FAMILY_NEEDS_RE.search(role.group())
        and not blocked(sentence, role.start())
        and not (_MOMENT.search(role.group()))
    ):
        # "my partner is a nurse and works night shifts": what the user's household is, in their words
        end = role.end()
        cand = make(sentence_case(third_person(sentence[:end])), Kind.SEMANTIC, Category.PROFILE, Tier.WORTH,
                    rule="en.family.said", confidence=0.75, lang="en")  # fmt: skip
        hits.append((cand, 0, end))
    manager = _MANAGER_RE.search(sentence)
    if manager and not blocked(sentence, manager.start()):  # "Ruth — my new manager", "my manager Dana"
        name = (
            manager.group("name")
            or manager.group("name2")
            or manager.group("name3")
            or manager.group("name4")
            or manager.group("name5")
        )
        if name not in _NOT_NAMES:
            cand = fact(f"The user's manager is {name}.", "user.manager", name, rule="en.manager", lang="en")
            hits.append((cand, manager.start(), manager.end()))
    supervisor = _SUPERVISOR_RE.search(sentence)
    if supervisor and not blocked(sentence, supervisor.start()):  # "my thesis supervisor is Dr. Halvorsen"
        name = supervisor.group("name")
        cand = fact(
            f"The user's supervisor is {name}.", "user.supervisor", name, rule="en.supervisor", lang="en"
        )
        hits.append((cand, supervisor.start(), supervisor.end()))
    renamed = _RENAMED_RE.search(sentence)
    if renamed and not hits and not blocked(sentence, renamed.start()):  # "we renamed the puppy to Miso"
        who, name = renamed.group("who").lower(), renamed.group("name")
        slot = family_slot(who, sentence)
        cand = make(f"The user's {who} is named {name}.", Kind.SEMANTIC, Category.PROFILE, Tier.WORTH,
                    rule="en.family.renamed", confidence=0.8, lang="en", slot=slot,
                    value=name if slot else None)  # fmt: skip
        hits.append((cand, renamed.start(), renamed.end()))
    return hits


# One of these at a time: a new name for the user's dog or partner replaces the old one. Children and a
# second pet ("another cat") are not single-valued.
_ONE_OF = {
    "dog": "dog", "puppy": "dog", "pup": "dog", "cat": "cat", "kitten": "cat", "kitty": "cat", "rabbit": "rabbit",
    "bunny": "rabbit", "parrot": "parrot", "hamster": "hamster", "horse": "horse", "turtle": "turtle",
    "guinea pig": "guinea_pig", "wife": "partner", "husband": "partner", "partner": "partner",
    "girlfriend": "partner", "boyfriend": "partner", "fiance": "partner", "fiancee": "partner",
    "猫": "cat", "猫咪": "cat", "狗": "dog", "狗狗": "dog", "兔子": "rabbit", "鹦鹉": "parrot", "仓鼠": "hamster",
    "老婆": "partner", "老公": "partner", "媳妇": "partner", "妻子": "partner", "丈夫": "partner",
    "男朋友": "partner", "女朋友": "partner", "对象": "partner",
}  # fmt: skip
_BOSS = r"(?:manager|boss|team\s+lead|tech\s+lead|line\s+manager|lead|(?-i:TL|EM))"
_MANAGER_RE = re.compile(
    r"\b(?P<name>(?-i:[A-Z][a-z]+))\s*(?:—|-|,|\()\s*my\s+(?:new\s+)?" + _BOSS + r"\b"
    r"|\bmy\s+(?:new\s+)?" + _BOSS + r"(?:\s+is(?:\s+now)?|,)?\s+(?P<name2>(?-i:[A-Z][a-z]+))\b"
    r"|\b(?P<name3>(?-i:[A-Z][a-z]+))\s+is\s+(?:now\s+)?my\s+(?:new\s+)?" + _BOSS + r"\b"
    # "I report to Ines now", "reporting to Ines since the reorg"
    r"|\b(?:i\s+(?:now\s+)?report|i'm\s+(?:now\s+)?reporting|reporting)\s+(?:directly\s+)?to\s+(?P<name4>(?-i:[A-Z][a-z]+))\b"
    # "Tom handed me over to Grace, she's my manager going forward": the pronoun names the last name before it
    r"|\b(?P<name5>(?-i:[A-Z][a-z]+))\b(?!\s+(?:said|says|thinks|told|claims)\b)(?:(?-i:(?![A-Z]))[^.;!?]){1,40}?"
    r"\b(?:she|he|they)(?:'s|\s+is|\s+are|'re)\s+"
    r"(?:now\s+)?(?:my|our)\s+(?:new\s+)?" + _BOSS + r"\b(?!'s|\u2019s)",
    re.I,
)
_SUPERVISOR_RE = re.compile(
    r"\bmy\s+(?:new\s+)?(?:thesis\s+|phd\s+|research\s+|doctoral\s+)?(?:supervisor|advisor|adviser|mentor)\s+(?:is\s+(?:now\s+)?|"
    r"changed\s*[—,-]?\s*it's\s+)(?P<name>(?:(?-i:Dr|Prof)\.?\s+)?(?-i:[A-Z])[a-z]+)",
    re.I,
)
_RENAMED_RE = re.compile(
    r"\b(?:we|i)(?:'ve|\s+have)?\s+(?:just\s+)?renamed\s+(?:the|our|my)\s+(?P<who>"
    + _FAMILY
    + r")\s+(?:to|as)\s+"
    r"(?P<name>(?-i:[A-Z][a-z]+))",
    re.I,
)


def family_slot(who: str, sentence: str) -> str | None:
    """`user.family.<role>` for a pet or a partner (one at a time), None for children or a second pet."""
    role = _ONE_OF.get(" ".join(who.split()))
    if role is None or re.search(r"\b(?:another|second|other|two|both)\b|另一只|又一只|两只", sentence, re.I):
        return None
    return f"user.family.{role}"


# fmt: off
_SUBJECT = (
    r"(?:i|i'm|i've|im|we|we're|we've|our\s+(?:whole\s+|entire\s+)?[\w-]+(?:\s+[\w-]+)?|my\s+(?:team|company|"
    r"project|setup|stack|startup|org|day\s+job|workplace|side\s+project|home\s+lab|homelab|[\w-]+\s+(?:team|"
    r"project|app))|this\s+(?:repo|project|service|app|codebase|team|monorepo|product|company|package|library)|"
    r"the\s+(?:main\s+|core\s+|whole\s+|entire\s+)?(?:team|project|repo|app|service|codebase|stack|product|"
    r"company|backend|frontend|api|infra|cluster|database|db|[\w-]+\s+service|[\w-]+\s+app)|everything|prod|"
    r"production|staging|ci|backups?|deploys?|releases?|(?:most|all|half|much)\s+of\s+our\s+[\w-]+)"
)
_STATEMENT_RE = re.compile(
    r"^(?P<subj>" + _SUBJECT + r")(?:'s|'re|'m|'ve)?\s+(?:(?:all|mostly|mainly|also|still|now|currently|"
    r"always|usually|only|just|basically|really|actually|deliberately|intentionally|finally|officially|since|"
    r"recently|already|never)\s+)*(?P<pred>[a-z][\w'-]*)\b(?P<rest>.*)$", re.I)
_STATIVE = frozenset(
    "use uses run runs host hosts deploy deploys ship ships build builds write writes store stores keep keeps "
    "back backs own owns maintain maintains target targets support supports rely relies depend depends live "
    "lives work works speak speaks follow follows release releases sit sits serve serves handle handles "
    "have has is are am lives on in based from part a an the standardize standardized "
    "require requires need needs cover covers go goes page pages alert alerts mirror mirrors replicate "
    "replicates sync syncs pin pins vendor vendors test tests review reviews squash squashes rebase "
    "rebases merge merges do does sign signs encrypt encrypts rotate rotates get gets comes take takes "
    "self-host self-hosts commute commutes drive drives cycle cycles bike bikes walk walks teach teaches "
    "talk talks".split()
)
_BARE_DECISION_RE = re.compile(  # "not going with Kubernetes, too much ops", "Chose Hetzner over AWS"
    r"^(?:the\s+reason\s+(?:why\s+)?(?:we|i)\s+(?:use|chose|picked|went\s+with|switched\s+to|moved\s+to)\b|"
    r"(?:(?:we|i)\s+)?(?:not\s+going\s+with|decided\s+against|decided\s+on|ruled\s+out|passed\s+on|chose|picked|"
    r"went\s+with|looked\s+at\s+[^,]{1,40},\s*decided|considered|sticking\s+with|settled\s+on|standardi[sz]ed\s+on|"
    r"dropped|ditched))\b", re.I)
_PASSIVE_DECISION_RE = re.compile(  # "MongoDB was considered and rejected"
    r"^(?P<obj>[\w.+#-]+(?:\s+[\w.+#-]+){0,2})\s+(?:was|were|got|has\s+been|have\s+been)\s+(?:considered\s+and\s+|"
    r"evaluated\s+and\s+|tried\s+and\s+)?(?:rejected|ruled\s+out|dropped|abandoned|replaced|retired|chosen|picked|"
    r"selected|approved)\b", re.I)
_HOBBY = frozenset(
    "play plays practice practise paint paints volunteer volunteers teach teaches coach coaches study studies "
    "collect collects cook cooks knit knits garden dance dances sing sings climb climbs swim swims hike hikes "
    "write learning playing volunteering painting training".split()
)
_DECISION = frozenset(
    "picked chose chosen went settled decided adopted switched moved migrated replaced ruled rejected "
    "dropped ditched abandoned backed gave stopped tried considered evaluated opted standardized "
    "standardised bumped upgraded downgraded retired deprecated killed sunset".split()
)
_DECIDED_RE = re.compile(  # decided whenever it was: "we gave up on microservices last year"
    r"(?:gave\s+up\s+on|ruled\s+out|decided|abandoned|ditched|dropped|switched|migrated|stopped\s+using|"
    r"moved\s+(?:away\s+from|off|to\s+a)|standardi[sz]ed)\b",
    re.I,
)
_STATEMENT_SHORT_RE = re.compile(_STATEMENT_RE.pattern.replace(r"[\w-]+(?:\s+[\w-]+)?|my", r"[\w-]+|my", 1), re.I)
_KNOWN_PREDICATES = _STATIVE | _DECISION | _HOBBY
_LESSON_RE = re.compile(
    r"\b(?:lessons?\s+(?:learned|learnt)|(?:the|a|one|big|key|main|our)\s+lesson\b|lessons?\b(?=[^.:]{0,40}:)|learned\s+(?:that|the\s+"
    r"hard\s+way)|learnt\s+(?:that|the\s+hard\s+way)|the\s+hard\s+way|post-?mortem|takeaway|got\s+burned|got\s+bitten|"
    r"burned\s+us|bit\s+us|root\s+cause|outage|(?:prod|production|security|p[01])\s+incident|incident\s+(?:report|review))\b",
    re.I)
_POLICY_RE = re.compile(
    r"\b(?:backups?|backed\s+up|retention|retained|kept\s+(?:for\s+)?\d+|nightly|daily|weekly|monthly|hourly|"
    r"every\s+(?:day|night|morning|week|month|hour|sprint|release|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|\d+\s+\w+)|on\s+(?:mondays|tuesdays|wednesdays|thursdays|fridays|weekends)|on-?call|"
    r"\d+-day|sla|rpo|rto)\b", re.I)
_MOMENT = re.compile(
    r"\b(?:today|tonight|right\s+now|at\s+the\s+moment|this\s+(?:morning|afternoon|evening|error|bug|issue|"
    r"warning|test|file|function|line|one|time|pr|ticket)|just\s+now|trying|stuck|confused|wondering|"
    r"debugging|looking\s+(?:at|into|for)|working\s+on|figure\s+out|figuring|getting\s+(?:an?|this|the)|"
    r"seeing|in\s+a\s+(?:meeting|hurry|rush)|on\s+a\s+call|need\s+help|help\s+me|can\s+you|could\s+you|"
    r"would\s+you|will\s+you|please|let\s+me\s+know|tomorrow|yesterday|later|soon|next\s+(?:week|month)|"
    r"below|above|attached|here's|here\s+is|pasted|back\s+(?:on|to|in|at|from|home)|this\s+(?:week|weekend|month)|"
    r"for\s+a\s+(?:conference|meeting|trip|wedding|week|few\s+days)|on\s+(?:vacation|holiday|a\s+trip)|"
    r"travel(?:l)?ing)\b", re.I)
_TOPIC_LABEL_RE = re.compile(
    r"^(?:our\s+|the\s+)?(?:backups?|deploys?|deployments?|hosting|(?:tech\s+)?stack|ci|cd|ci/cd|monitoring|alerting|logging|"
    r"on-?call|releases?|auth|database|db|infra(?:structure)?|testing|tests|retention|security|secrets|branching|"
    r"code\s+review|reviews)(?:\s+(?:for|of|on)\s+[^:]{1,30})?\s*:\s*\S", re.I)
_PRONOUN_OBJECT_REST = re.compile(r"^[a-z]+ing\s+(?:it|this|that|them|those|these)(?:\s+again)?[\s.!]*$", re.I)
_PRONOUN_REST = re.compile(r"^(?:it|that|this|them|those|these|so|too|one|out)?[\s.!]*$", re.I)
_LESSON_LABEL = re.compile(
    r"^(?:(?:a|the|one|big|key|main|our|my)\s+)?(?:lessons?|takeaways?|post-?mortem(?:\s+takeaways?)?)"
    r"(?:\s+(?:learned|learnt))?(?:\s+(?:the\s+hard\s+way|from\s+[^:]{1,40}|for\s+[^:]{1,30}|last\s+\w+))*"
    r"\s*(?::|-|,)?\s*", re.I)
_FEELING = re.compile(  # how the speaker feels or rates something: a mood, not a lasting fact
    r"^(?:is|are|am|has\s+been|have\s+been|'s|'re|'m)?\s*(?:so\s+|really\s+|very\s+|super\s+|pretty\s+|totally\s+|"
    r"just\s+|too\s+|kinda\s+|kind\s+of\s+|a\s+bit\s+|feeling\s+)*(?:happy|thankful|grateful|excited|glad|proud|sad|"
    r"sorry|tired|stoked|blessed|lucky|nervous|scared|worried|amazing|awesome|great|cool|fun|nice|good|bad|hard|tough|"
    r"rough|busy|bored|thrilled|pumped|psyched|curious|confused|stuck|impressed|inspired|relieved|upset|"
    r"frustrated|annoyed|keen|eager|fine|ok|okay|sure|ready|done|back|here|there|in\s+love|broken|down|slow|failing|"
    r"flaky|red|green|dead|offline|wrong|missing|empty|full|corrupted|out\s+of|cold|hot|timing\s+out|crashing)\b",
    re.I,
)
_EVALUATIVE = re.compile(
    r"(?:a|an|some|such\s+a)?\s*(?:really\s+|very\s+|pretty\s+|kinda\s+|bit\s+of\s+a\s+)?(?:weird|strange|messy|bad|broken|"
    r"slow|ugly|nice|great|terrible|awful|annoying|confusing|odd|funny|crazy|horrible|lovely|cool|bug|problem|issue)\b",
    re.I)
_NOT_STATEMENT = re.compile(  # the verb says the clause is about thinking, wanting or this conversation
    r"^(?:think|thought|guess|feel|felt|wonder|wondered|hope|need|needed|want|wanted|like|would|'d|'ll|will|"
    r"can|could|should|might|may|must|wrote|added|changed|found|noticed|saw|see|got|get|tried\s+to|ran|"
    r"did|discussed|talked|had\s+a|mean|meant|know|knew|forgot|remember|asked|said|told|agree|agreed)\b"
    # "we have a rule here:", "I've got two requests": what comes next is the content, this only announces it
    r"|^(?:have|has|got)\s+(?:a|one|two|three|some|a\s+few|few|a\s+couple\s+of)\s+(?:rules?|conventions?|things?|"
    r"requests?|questions?|notes?|favou?rs?)\b(?:\s+(?:here|for\s+you|to\s+share))?\s*$", re.I)
_PERSON_OWNER = re.compile(  # someone else's fact: "our designer uses Figma", "my colleague ..."
    r"^(?:our|my)\s+(?:\w+\s+)?(?:colleague|coworker|co-worker|boss|manager|friend|designer|intern|pm|cto|ceo|"
    r"client|customer|users?|neighbou?r|teammate|contractor|lead|cousin|uncle|aunt|competitor|rival|vendor|partner|"
    r"supplier|landlord|sister|brother|mom|dad|wife|husband|roommate|flatmate|kid|son|daughter|girlfriend|"
    r"boyfriend|nephew|niece|grandma|grandpa|mum|parent)s?\b", re.I)
# fmt: on


def _statement(body: str) -> re.Match[str] | None:
    """The subject-predicate split of a clause: "our CI pipeline runs on ..." and "our team decided ..." both,
    by taking the longer subject only when its predicate is a known one."""
    long = _STATEMENT_RE.match(body)
    if long is None or long.group("pred").lower() in _KNOWN_PREDICATES:
        return long
    short = _STATEMENT_SHORT_RE.match(body)
    return short if short is not None and short.group("pred").lower() in _KNOWN_PREDICATES else long


def _generic(content: str, category: Category, kind: Kind, rule: str, end: int) -> Hit:
    cand = make(sentence_case(third_person(content)), kind, category, Tier.WORTH, rule=rule, confidence=0.7,
                lang="en")  # fmt: skip
    return cand, 0, end


def lesson_hits(sentence: str) -> list[Hit]:
    """A lesson told in one sentence ("Lesson learned: ...", "got burned by X, so we pin Y now"): one
    memory of the whole sentence, its label dropped."""
    if not _LESSON_RE.search(sentence) or is_question(sentence) or sentence.rstrip().endswith("?"):
        return []
    body = _LESSON_LABEL.sub("", _LEAD_RE.sub("", sentence, count=1).strip(" ,;:-"), count=1)
    if len(body.split()) < 5 or _MOMENT.search(body) or blocked(sentence, 0):
        return []
    return [_generic(body, Category.LESSON, Kind.EPISODIC, "en.statement.lesson", len(sentence))]


def statement_hits(clause: str, sentence: str = "", whole: bool = False) -> list[Hit]:
    """A lasting first-person or project statement of one clause (see the module docstring); called with
    the whole sentence as `clause` first, where only a lesson counts."""
    if whole:
        body = _LEAD_RE.sub("", sentence, count=1).strip(" ,;:-")
        label = _TOPIC_LABEL_RE.match(body)
        if label and not is_question(body) and not _MOMENT.search(body):  # "Backups: nightly pg_dump to S3"
            return [_generic(body, Category.FACT, Kind.SEMANTIC, "en.statement.labelled", len(sentence))]
        if _BARE_DECISION_RE.match(body) and find_tools(body) and not is_question(body):
            return [_generic(body, Category.DECISION, Kind.SEMANTIC, "en.statement.decision", len(sentence))]
        return lesson_hits(sentence)
    body = _LEAD_RE.sub("", clause, count=1).strip(" ,;:-")
    if len(body) < 8 or is_question(body) or body.endswith("?") or _LESSON_LABEL.fullmatch(body + ":"):
        return []
    if only_left(body):
        return []  # "the Mongo cluster was retired in June": the value left, replaced by the one told with it
    if ((_BARE_DECISION_RE.match(body) or _PASSIVE_DECISION_RE.match(body)) and find_tools(body)) or (
        _PASSIVE_DECISION_RE.match(body) and not _MOMENT.search(body)
    ):
        return [_generic(body, Category.DECISION, Kind.SEMANTIC, "en.statement.decision", len(clause))]
    match = _statement(body)
    if match is None:
        if _POLICY_RE.search(body) and re.match(r"^[A-Za-z][\w -]{1,20}:", clause.strip()):
            return [_generic(body, Category.FACT, Kind.SEMANTIC, "en.statement.policy", len(clause))]
        return []
    if _PERSON_OWNER.match(body) or blocked(body, match.end("subj")) or _MOMENT.search(body):
        return []
    pred = match.group("pred").lower()
    rest = match.group("rest").strip()
    if _NOT_STATEMENT.match(f"{pred} {rest}") or len(rest.split()) < 1 or _PRONOUN_REST.match(rest):
        return []
    if _PRONOUN_OBJECT_REST.match(rest):
        return []  # "I keep blowing it", "we keep breaking this": what "it" is was said elsewhere
    too = re.match(r"(?:far\s+|way\s+|much\s+|a\s+bit\s+|so\s+|really\s+)?too\s+\w+", rest, re.I)
    if pred in ("is", "are", "am", "has", "have", "been") and (_FEELING.match(rest) or too):
        return []  # "I'm so happy", "we're stoked": a mood, not a lasting fact
    if (pred == "tried" and not find_tools(body)) or re.match(r"(?:your|the\s+agent's)\b", rest, re.I):
        return []  # "I tried your fix": this conversation, not a decision
    if pred in ("has", "have") and _EVALUATIVE.match(rest):
        return []  # "this repo has a weird folder structure": an opinion of the moment
    if pred == "went" and not re.match(r"(?:with|for|over\s+to)\b", rest, re.I):
        return []  # "we went to the beach": an outing; "we went with Postgres": a decision
    past = re.search(
        r"\b(?:last\s+(?:week|weekend|night|month|year|time)|yesterday|ago|earlier)\b", body, re.I
    )
    if pred in _DECISION and past and not find_tools(body) and not _DECIDED_RE.match(f"{pred} {rest}"):
        return []  # "we adopted a cat last weekend": an event; a tool change or a decision keeps its time
    if pred in _DECISION and not re.match(
        r"(?:somewhere|away|on|out|in|back|here|there|house)\b", rest, re.I
    ):
        return [_generic(body, Category.DECISION, Kind.SEMANTIC, "en.statement.decision", len(clause))]
    habit = re.match(
        r"(?:always|usually|normally|typically|never|mostly)\b", body[match.end("subj") :].strip(), re.I
    )
    if (
        habit
        and match.group("subj").lower() in ("i", "we")
        and len(body.split()) >= 4
        and pred not in _DECISION
    ):
        return [_generic(body, Category.PREFERENCE, Kind.SEMANTIC, "en.statement.habit", len(clause))]
    if (
        pred in _HOBBY
        and match.group("subj").lower() in ("i", "i'm", "im", "i've")
        and len(body.split()) >= 3
    ):
        return [_generic(body, Category.PROFILE, Kind.SEMANTIC, "en.statement.hobby", len(clause))]
    if pred in _STATIVE and len(body.split()) >= 4:
        category = Category.FACT
        if _POLICY_RE.search(body):
            return [_generic(body, category, Kind.SEMANTIC, "en.statement.policy", len(clause))]
        return [_generic(body, category, Kind.SEMANTIC, "en.statement.fact", len(clause))]
    return []
