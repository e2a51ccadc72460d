"""English facts about what the user works with, likes and is: tools (in their slots, or "we don't use
X"), likes and dislikes, diet, allergies, timezone and birthday. Pure: no I/O.

- `fact_hits(sentence)` -> every English fact rule's hits, identity (`en.identity`) included.
- `NEGATING` / `CORRECTION_CUE`: what negates a tool and what makes a tool pair a correction (for
  `dispatch.tool_pair_hits`); `OBJ_PRONOUN`: objects that name nothing ("it", "that").
"""

from __future__ import annotations

import re

from core.extraction.candidates import Category, Kind, Tier
from core.extraction.rules.en.grammar import (
    ADV,
    I_AM,
    I_WORD,
    SPAN,
    blocked,
    is_question,
    sentence_case,
    third_person,
)
from core.extraction.rules.en.identity import job_hits, name_hits, place_hits
from core.extraction.rules.hits import Hit, fact, make, statements, tool_hit
from core.extraction.rules.vocab import find_tools, named_as_left

# fmt: off
_TOOL_STMT_RE = re.compile(
    r"(?<![\w'])(?P<subj>i|we|my\s+team|our\s+team|our\s+company|my\s+company|(?P<device>my\s+(?:own\s+|work\s+|"
    r"personal\s+|main\s+|dev\s+|new\s+)?(?:laptop|machine|computer|desktop|workstation|pc|dev\s+box|rig|phone|"
    r"daily\s+driver))|(?:our|my|the|this)\s+(?:project|"
    r"app|backend|frontend|codebase|code\s+base|repo|stack|service|services|api|monorepo|product|startup|infra|"
    r"platform|site|website|server|side\s+project|setup|ci|pipeline|database|db|cluster|deployment))"
    r"(?P<be>'re|'m|'s|\s+are|\s+am|\s+is|\s+have|\s+has|'ve)?\s+" + ADV + r"(?:been\s+)?"
    r"(?P<verb>use|uses|using|rely\s+on|relies\s+on|run\s+on|runs\s+on|work\s+with|works\s+with|(?:code|write|"
    r"program|develop)\s+(?:mostly\s+|mainly\s+|only\s+)?in|built\s+(?:with|on|in)|written\s+in|based\s+on|"
    r"standardi[sz]ed\s+on|switched\s+to|moved\s+to|migrated\s+to|settled\s+on|went\s+with|go\s+with|"
    r"stick\s+with|write|writes|deploys?\s+(?:on|to)|host\s+on|hosted\s+on|runs|running|on|in|an?)\b(?P<span>" + SPAN
    + r"{1,120})",
    re.I)
_TOOL_NOUN_RE = re.compile(
    r"\b(?:my|our)\s+(?:main\s+|primary\s+|preferred\s+|default\s+|go-to\s+)?(?P<noun>package\s+manager|"
    r"database|db|tech\s+stack|stack|programming\s+language|language|framework|editor|ide|os|operating\s+system|"
    r"orm|test\s+runner|testing\s+framework|cloud|backend|frontend)\s+(?:is|are|=)\s+(?P<span>" + SPAN
    + r"{1,80})", re.I)
_NOUN_SLOT = {
    "package manager": "project.package_manager", "database": "project.database", "db": "project.database",
    "programming language": "project.language", "language": "project.language",
    "framework": "project.framework", "editor": "user.editor", "ide": "user.editor", "os": "user.os",
    "operating system": "user.os", "orm": "project.orm", "test runner": "project.test_framework",
    "testing framework": "project.test_framework", "cloud": "project.cloud",
}
_SPAN_CUT = re.compile(
    r"\b(?:because|since|but|although|though|instead|rather|not|except|which|when|whenever|where|if|unless|so|"
    r"to|until|while|whereas|than|over|at\s+work|anymore|any\s+more|now\s+that)\b|\s-\s", re.I)
_NO_USE_RE = re.compile(
    r"(?<![\w'])(?P<subj>i|we)\s+" + ADV + r"(?:deliberately\s+|intentionally\s+|consciously\s+)?"
    r"(?:don't|do\s+not|dont|never|no\s+longer|won't|don't\s+ever)\s+use\s+"
    r"(?P<obj>[^.;!?,]{1,60})", re.I)
_CHANGE_OF_STATE = re.compile(r"\b(?:anymore|any\s+more|no\s+longer)\b", re.I)
NEGATING = re.compile(
    r"(?:\bnot|\binstead\s+of|\brather\s+than|\bno\s+longer|\bdon't\s+use|\bdo\s+not\s+use|\bnever\s+use|"
    r"\bstop\s+using|\bnot\s+using|\bfrom|\bover|\breplace|\breplacing|\bditch(?:ed)?|\bdrop(?:ped)?|\bswap(?:ped)?(?:\s+out)?)"
    r"\s+(?:the\s+|using\s+)?$", re.I)
CORRECTION_CUE = re.compile(
    r"^(?:no|nope|nah|wrong|actually|correction|i\s+said|i\s+meant|it's|it\s+is|its|we\s+use|i\s+use|use)\b",
    re.I)
# fmt: on
_DECISION_VERBS = ("switched", "moved", "migrated", "settled", "went")
OBJ_PRONOUN = frozenset("it that this them those these him her anything something one".split())


def _cut(span: str) -> str:
    match = _SPAN_CUT.search(span)
    return span[: match.start()] if match else span


def _tool_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    tools_named = find_tools(sentence)
    named = bool(tools_named)  # no tool named: only "we don't use X" can say something of tools
    editor_named = any(t.slot == "user.editor" for t, _, _ in tools_named)
    for match in statements(_TOOL_STMT_RE, sentence) if named else ():
        verb = match.group("verb").lower()
        if verb == "in" and not (editor_named and match.group("be")):
            continue  # "I'm in VS Code": only when an editor is named
        if (verb == "on" and not match.group("be")) or blocked(sentence, match.start()):
            continue
        subject_is_user = match.group("subj").lower() == "i" or match.group("device") is not None
        if verb in ("a", "an", "running", "runs") and not match.group("device"):
            continue  # "my laptop is a ThinkPad", "my phone runs Android": a device's, not a project's
        category = Category.DECISION if verb.startswith(_DECISION_VERBS) else None
        offset = match.start("span")
        span = _cut(match.group("span"))
        # the sentence's tools within the span: a name told by its verb ("we use bun") is found in the sentence
        in_span = [
            (t, s - offset, e - offset) for t, s, e in tools_named if s >= offset and e <= offset + len(span)
        ]
        for tool, start, end in in_span:
            if tool.slot and tool.slot.startswith("user.") and not subject_is_user:
                continue  # "we use Linux servers" says nothing about the user's own OS
            if named_as_left(span, start, end):
                continue  # "we use pnpm, never npm"
            if verb == "in" and (tool.slot != "user.editor" or start > 4 or not subject_is_user):
                continue  # "I'm in VS Code all day": only an editor one is "in", right after the verb
            hits.append(
                tool_hit(tool, match.start(), offset + end, rule="en.tool.use", lang="en", category=category)
            )
    noun = _TOOL_NOUN_RE.search(sentence) if named else None
    if noun and not blocked(sentence, noun.start()):
        wanted = _NOUN_SLOT.get(" ".join(noun.group("noun").lower().split()))
        for tool, _, end in find_tools(_cut(noun.group("span"))):
            if wanted is None or tool.slot == wanted:
                hits.append(
                    tool_hit(tool, noun.start(), noun.start("span") + end, rule="en.tool.my_noun", lang="en")
                )
    no_use = _NO_USE_RE.search(sentence)
    # "I don't use X anymore" is a change of state: left to the LLM, which sees what replaced X.
    if no_use and not blocked(sentence, no_use.start()) and not _CHANGE_OF_STATE.search(sentence):
        obj = _cut(no_use.group("obj")).strip()
        if obj and obj.split()[0].lower() not in OBJ_PRONOUN and len(obj.split()) <= 6:
            if no_use.group("subj").lower() == "i":  # a fact about the user
                kind, category, content = (
                    Kind.SEMANTIC,
                    Category.FACT,
                    f"The user does not use {third_person(obj)}.",
                )
            else:  # "we don't use ORMs": a constraint on what the agent suggests
                kind, category, content = (
                    Kind.PROCEDURAL,
                    Category.CONSTRAINT,
                    f"Do not use {third_person(obj)}.",
                )
            cand = make(
                content, kind, category, Tier.WORTH, rule="en.tool.no_use", confidence=0.75, lang="en"
            )
            hits.append((cand, no_use.start(), no_use.start("obj") + len(obj)))
    return hits


# fmt: off
_LIKE_RE = re.compile(
    I_WORD + r"\s*" + ADV + r"(?P<verb>prefer|like|love|enjoy|adore|dislike|hate|detest|loathe|can't\s+stand|"
    r"cannot\s+stand|don't\s+(?:really\s+)?like|do\s+not\s+like|don't\s+enjoy|don't\s+love|really\s+don't\s+like|"
    r"(?:'m|\s+am)\s+not\s+(?:a\s+(?:big\s+|huge\s+)?fan\s+of|into)|(?:'m|\s+am)\s+(?:a\s+(?:big\s+|huge\s+)?"
    r"fan\s+of|into))\s+(?P<obj>" + SPAN + r"{1,100})", re.I)
_OBJ_CUT = re.compile(
    r"\b(?:because|since|but|although|though|when|whenever|if|unless|so\s+that|as\s+long\s+as|except|while|"
    r"whereas|and\s+i|and\s+we|which|cause|cuz)\b|,\s*(?:so|and\s+i|which)\b", re.I)
_OBJ_REJECT = re.compile(  # liking the agent's answer or an option is feedback on this task, not a preference
    r"^(?:it|that|this|these|those|them|him|her|you|your|yours|what|how|the\s+way|where|which|who|some|any|one|not|"
    r"option|version|the\s+(?:idea|suggestion|answer|first|second|third|last|previous|new|other|latter|former)|"
    r"to\s+know|to\s+see|to\s+ask|to\s+try)\b|\b(?:your|this|that)\s+(?:answer|response|suggestion|idea|"
    r"solution|approach|code|one|version|option|plan)\b", re.I)
# fmt: on
_VERB_3RD = {"prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys", "adore": "loves"}
_POSITIVE_PREF = ("prefer", "like", "love", "enjoy", "adore", "'m a", "am a", "'m into", "am into")


# How the user works or learns best, a preference told as a comparison: "I learn better from a tiny worked
# example than from long prose", "I focus best with music off", "I understand faster by reading code"
_BETTER_RE = re.compile(
    I_WORD + r"\s*" + ADV + r"(?P<verb>learn|work|focus|think|read|understand|concentrate|remember|follow)\s+"
    r"(?:much\s+|a\s+lot\s+|way\s+|far\s+)?(?:better|best|faster|more\s+easily)\s+(?P<obj>(?:from|with|in|by|when|"
    r"through|if)\s+" + SPAN + r"{2,120})",
    re.I,
)


def _better_hits(sentence: str) -> list[Hit]:
    match = _BETTER_RE.search(sentence) if "better" in sentence or "best" in sentence or "faster" in sentence else None
    if match is None or blocked(sentence, match.start()) or is_question(sentence):
        return []
    obj = re.split(r",\s*(?:just|so|btw|fyi|and|but)\b|\s+(?:just\s+so\s+you\s+know|fyi|btw)\b", match.group("obj"))[0]
    obj = obj.strip(" ,.;:-")
    content = sentence_case(third_person(sentence[match.start() : match.start("obj")] + obj))
    cand = make(content, Kind.SEMANTIC, Category.PREFERENCE, Tier.WORTH, rule="en.pref.better", confidence=0.75,
                lang="en")  # fmt: skip
    return [(cand, match.start(), match.start("obj") + len(obj))]


def _pref_hits(sentence: str) -> list[Hit]:
    match = _LIKE_RE.search(sentence)
    if match is None:
        return _better_hits(sentence)
    if blocked(sentence, match.start()):
        return []
    cut = _OBJ_CUT.search(match.group("obj"))
    obj = (match.group("obj")[: cut.start()] if cut else match.group("obj")).strip(" ,:-\"'")
    if not obj or _OBJ_REJECT.search(obj) or len(obj.split()) > 10:
        return []
    verb = " ".join(match.group("verb").lower().split())
    positive = verb.startswith(_POSITIVE_PREF) and "not" not in verb
    end = match.start("obj") + match.group("obj").find(obj) + len(obj)
    tools = find_tools(obj)
    if (
        verb == "prefer"
        and tools
        and tools[0][0].slot
        and re.match(r"^(?:using\s+|to\s+use\s+)?$", obj[: tools[0][1]])
    ):
        tool = tools[0][0]  # "I prefer pnpm": a choice in the tool's slot
        cand = make(f"The user prefers {tool.display}.", Kind.SEMANTIC, Category.PREFERENCE, Tier.WORTH,
                    rule="en.pref.tool", confidence=0.75, lang="en", slot=tool.slot,
                    value=tool.canonical)  # fmt: skip
        return [(cand, match.start(), end)]
    verb3 = _VERB_3RD.get(verb, "likes") if positive else "dislikes"
    rule = "en.pref.like" if positive else "en.pref.dislike"
    content = f"The user {verb3} {third_person(obj)}."
    cand = make(
        content, Kind.SEMANTIC, Category.PREFERENCE, Tier.WORTH, rule=rule, confidence=0.75, lang="en"
    )
    return [(cand, match.start(), end)]


# fmt: off
_DIET_RE = re.compile(
    r"(?:" + I_AM + r"\s+" + ADV + r"|(?<![\w'])i(?:'ve|\s+have)\s+been\s+" + ADV
    + r"|(?:(?<![\w'])i\s+)?(?:went|turned|became|have\s+gone|'ve\s+gone|gone|"
    r"switched\s+to\s+being)\s+(?:fully\s+|full\s+|completely\s+)?"
    # "so pescatarian these days": a bare diet told as the state now
    r"|(?:^|[,;:]\s*)(?:so\s+|and\s+|but\s+)?(?=(?:vegetarian|vegan|pescatarian|pescetarian|keto)\s+(?:these\s+days|"
    r"now|nowadays)\b))(?:a\s+)?(?:strict\s+)?"
    r"(?P<diet>lacto[- ]ovo(?:[- ]vegetarian)?|ovo[- ]lacto(?:[- ]vegetarian)?|vegetarian|vegan|pescatarian|"
    r"pescetarian|keto|halal|kosher|lactose[- ]intolerant|gluten[- ]free|"
    r"celiac|coeliac|diabetic)\b", re.I)
_NO_LONGER_DIET_RE = re.compile(
    I_AM + r"\s+(?:no\s+longer|not)\s+(?:a\s+)?(?P<diet>vegetarian|vegan|pescatarian|keto)"
    r"(?:\s+(?:anymore|any\s+more))?"
    r"|(?<![\w'])i\s+(?:stopped|quit|gave\s+up)\s+being\s+(?:a\s+)?(?P<diet2>vegetarian|vegan|pescatarian)", re.I)
_DIET_SLOTTED = {"vegetarian": "vegetarian", "vegan": "vegan", "pescatarian": "pescatarian",
                 "lacto-ovo": "lacto_ovo", "lacto-ovo-vegetarian": "lacto_ovo", "ovo-lacto": "lacto_ovo",
                 "ovo-lacto-vegetarian": "lacto_ovo",
                 "pescetarian": "pescatarian", "keto": "keto", "halal": "halal", "kosher": "kosher"}
_PROFILE_RES = (
    (re.compile(I_AM + r"\s+" + ADV + r"(?:(?:very|severely|mildly|a\s+bit)\s+)?allergic\s+to\s+"
                r"(?P<obj>[^.;!?,]{1,40})|" + I_WORD + r"\s+have\s+(?:an?\s+|a\s+severe\s+)?"
                r"(?P<obj2>[\w -]{1,30}?)\s+allergy\b", re.I),
     "The user is allergic to {}.", "en.profile.allergy"),
    # "severe peanut allergy here", "shellfish allergy, btw": the user's own unless someone else is named
    (re.compile(r"^(?:(?:a|an|my|severe|serious|bad|mild|deadly|life-threatening)\s+)*(?P<obj>[\w-]{3,20})\s+"
                r"allerg(?:y|ies)\b(?!\s+(?:in|of|for)\b)", re.I),
     "The user is allergic to {}.", "en.profile.allergy_noun"),
    # the household eats what the user eats: "we don't eat pork at home", "my family doesn't eat spicy food"
    (re.compile(r"(?:" + I_WORD + r"|(?<![\w'])we|\b(?:my|our)\s+(?:family|household|kids))\s+" + ADV
                + r"(?:don't|doesn't|do\s+not|does\s+not|never|can't|cannot|won't)\s+(?:eat|drink)\s+"
                r"(?P<obj>[^.;!?,]{1,40})", re.I), "The user does not eat {}.", "en.profile.no_eat"),
    # how well the user speaks a language: "my English isn't great", "I'm not fluent in German"
    (re.compile(r"\bmy\s+(?P<obj>(?-i:[A-Z])[a-z]+\s+(?:is|isn't|is\s+not|'s)\s+(?:not\s+)?(?:a\s+bit\s+|pretty\s+|quite\s+|very\s+|really\s+|kinda\s+)?(?:great|good|bad|basic|limited|"
                r"rusty|fluent|weak|poor|so-so)\b)|" + I_AM + r"\s+(?:not\s+)?(?P<obj2>(?:fluent|conversational|"
                r"a\s+beginner)\s+in\s+(?-i:[A-Z])[a-z]+)", re.I),
     "{}", "en.profile.language_level"),  # the statement itself
)
_SLOTTED_PROFILE_RES = (
    (re.compile(r"(?:\bmy\s+|^)time\s?zone(?:\s+is|'s)\s+(?P<tz>[\w+:/-]+(?:\s*[+-]\s*\d{1,2})?)|" + I_AM + r"\s+"
                r"(?:in|on)\s+(?P<tz2>(?:UTC|GMT)\s?[+-]\s?\d{1,2}(?::?\d{2})?|PST|PDT|EST|EDT|CST|CET|CEST|JST|"
                r"IST|BST|AEST|MST|MDT|(?:Central|Eastern|Western)\s+European(?:\s+Summer)?|Pacific|Eastern|Central|"
                r"Mountain|Atlantic)"
                r"(?:\s+time(?:\s*zone)?)?\b", re.I),
     "user.timezone", "The user's timezone is {}.", "en.profile.timezone"),
    (re.compile(r"\bmy\s+(?:working\s+|work\s+|office\s+)?hours\s+are\s+[^.;!?]{0,30}?\b(?P<tz>(?-i:PST|PDT|EST|EDT|"
                r"CST|CET|CEST|JST|IST|BST|AEST|MST|UTC|GMT)|Pacific|Eastern|Central|Mountain)\b", re.I),
     "user.timezone", "The user's timezone is {}.", "en.profile.timezone_hours"),
    # "so SGT from now on", "CET now": a zone named as the user's own from now on
    (re.compile(r"\b(?P<tz>(?-i:SGT|HKT|JST|KST|CST|CET|CEST|EET|EEST|WET|BST|GMT|UTC|IST|AEST|AEDT|NZST|PST|PDT|EST|"
                r"EDT|MST|MDT|MSK|BRT|ART)(?:\s?[+-]\s?\d{1,2})?|(?:Pacific|Eastern|Central|Mountain)(?=\s+time\b))"
                r"(?:\s+time)?\s+(?:from\s+now\s+on|now|going\s+forward|for\s+(?:any\s+|all\s+)?"
                r"(?:scheduling|meetings|calls))\b(?!\s+(?:is|was|seems|feels|looks|sounds)\b)"),
     "user.timezone", "The user's timezone is {}.", "en.profile.timezone_now"),
    (re.compile(r"\bmy\s+birthday\s+is\s+(?:on\s+)?(?P<day>[^.;!?,]{3,25})", re.I),
     "user.birthday", "The user's birthday is {}.", "en.profile.birthday"),
    (re.compile(r"\bmy\s+(?:native|first|mother)\s+(?:language|tongue)\s+is\s+(?P<lang>(?-i:[A-Z])[a-z]+)|" + I_AM
                + r"\s+a\s+native\s+(?P<lang2>(?-i:[A-Z])[a-z]+)\s+speaker|\b(?P<lang3>(?-i:[A-Z])[a-z]+)\s+is\s+my\s+"
                r"(?:native|first|mother)\s+(?:language|tongue)", re.I),
     "user.native_language", "The user's native language is {}.", "en.profile.native_language"),
)
# fmt: on


# every diet the patterns name has one of these in it: a sentence with none is spared both (substring tests)
_DIET_WORDS = ("vegetarian", "vegan", "pescatarian", "pescetarian", "keto", "halal", "kosher", "lactose", "gluten",
               "celiac", "coeliac", "diabetic", "lacto")  # fmt: skip


_DIETS = r"vegetarian|vegan|pescatarian|pescetarian|keto"
_NEW_DIET_RE = re.compile(
    r"\b(?P<d>"
    + _DIETS
    + r")\s+(?:now|these\s+days|instead)\b|\bnow\s+(?:i'm\s+|i\s+am\s+)?(?:a\s+|mostly\s+)?(?P<d2>"
    + _DIETS
    + r")\b",
    re.I,
)


def _profile_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    low = sentence.lower()
    diet_said = any(word in low for word in _DIET_WORDS)
    stopped = _NO_LONGER_DIET_RE.search(sentence) if diet_said else None
    if stopped and not blocked(sentence, stopped.start()):  # "I'm no longer vegetarian": the slot changes
        was = (stopped.group("diet") or stopped.group("diet2")).lower()
        # "not vegan anymore, eating fish again, pescatarian now": the diet it changed to, named after it
        after = _NEW_DIET_RE.search(sentence, stopped.end())
        said = (after.group("d") or after.group("d2")).lower() if after else None
        new = said if said != was else None
        content = f"The user is no longer {was}; now {new}." if new else f"The user is no longer {was}."
        value = _DIET_SLOTTED.get(new or "", "none")
        cand = make(content, Kind.SEMANTIC, Category.PROFILE, Tier.WORTH, rule="en.profile.diet_stopped",
                    confidence=0.85, lang="en", slot="user.diet", value=value)  # fmt: skip
        return [(cand, stopped.start(), after.end() if new and after else stopped.end())]
    match = _DIET_RE.search(sentence) if diet_said else None
    if match and not blocked(sentence, match.start()):
        diet = match.group("diet").lower().replace(" ", "-")
        slot = "user.diet" if diet in _DIET_SLOTTED else None
        cand = make(f"The user is {diet}.", Kind.SEMANTIC, Category.PROFILE, Tier.WORTH,
                    rule="en.profile.diet", confidence=0.85, lang="en", slot=slot,
                    value=_DIET_SLOTTED.get(diet))  # fmt: skip
        hits.append((cand, match.start(), match.end()))
    allergy, eats = "allerg" in low, "eat" in low or "drink" in low
    language = "my " in low or "fluent" in low or "conversational" in low or "beginner" in low
    possible = {"en.profile.allergy": allergy, "en.profile.allergy_noun": allergy, "en.profile.no_eat": eats,
                "en.profile.language_level": language}  # fmt: skip
    for pattern, template, rule in _PROFILE_RES:
        if not possible[rule]:
            continue  # the pattern cannot match without one of its words: spare the search
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        obj = _cut(next(group for group in match.groups() if group)).strip()
        if obj and obj.split()[0].lower() not in OBJ_PRONOUN:
            said = sentence_case(third_person(match.group()))
            content = said if template == "{}" else template.format(third_person(obj))
            cand = make(
                content, Kind.SEMANTIC, Category.PROFILE, Tier.WORTH, rule=rule, confidence=0.8, lang="en"
            )
            hits.append((cand, match.start(), match.end()))
    for pattern, slot, template, rule in _SLOTTED_PROFILE_RES:
        match = pattern.search(sentence)
        if match and not blocked(sentence, match.start()):
            value = next(group for group in match.groups() if group).strip()
            hits.append(
                (fact(template.format(value), slot, value, rule=rule, lang="en", conf=0.8), *match.span())
            )
    return hits


# Tools named in passing in other forms: "Kafka is our message bus" (the tool, then what it is to us), "my nvim
# config broke" (the user's own editor, shell or OS, named by what the user keeps of it), "using pnpm workspaces in
# this monorepo, how do I ..." (the subject dropped, the scope this repo).
_PASSING_TOOL_RES = (
    (re.compile(r"^(?P<span>[\w.+#-]+(?:\s[\w.+#-]+)?)\s+(?:is|are)\s+(?:our|my|the\s+team's)\s+(?:main\s+|primary\s+|"
                r"only\s+)?[a-z][\w/-]*(?:\s+[a-z][\w/-]*){0,2}"
                r"(?=\s*(?:$|[,.;!?(]|\s+(?:and|but|for|here|now)\b))", re.I), None),
    # "on my new MacBook, how do I ...": the user's new machine
    (re.compile(r"\bmy\s+(?:brand\s+)?new\s+(?P<span>[\w.+#-]+)(?=\s*[,.;!?]|\s*$|\s+(?:laptop|machine|box|pro|air|is|arrived))",
                re.I), "user."),
    (re.compile(r"\bmy\s+(?P<span>[\w.+#-]+)\s+(?:config|configs|configuration|setup|dotfiles|plugins?|install|"
                r"keybindings|keymaps?|theme|box|laptop|machine|workstation|profile|prompt)\b", re.I), "user."),
    (re.compile(r"^(?:(?:been|now)\s+)?using\s+(?P<span>[\w.+#-]+)(?:\s+[a-z]+)?\s+(?:in|for|across)\s+"
                r"(?:this|our|my|the)\s+(?:repo|monorepo|project|codebase|app|service|workspace)\b", re.I), "project."),
)  # fmt: skip


def _passing_tool_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    if not find_tools(sentence):
        return hits  # every form names a tool: most sentences are spared the patterns
    for pattern, family in _PASSING_TOOL_RES:
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        tools = [t for t in find_tools(sentence) if t[1] >= match.start("span") and t[2] <= match.end("span")]
        if len(tools) != 1 or (family and not (tools[0][0].slot or "").startswith(family)):
            continue
        tool = tools[0][0]
        if family is None and match.start("span") + len(tool.said) < match.end("span") - 1:
            continue  # "Kafka topics are our ...": the tool must be the whole subject
        hits.append(tool_hit(tool, match.start(), match.end(), rule="en.tool.passing", lang="en"))
    return hits


def fact_hits(sentence: str) -> list[Hit]:
    hits = (
        name_hits(sentence) + place_hits(sentence) + job_hits(sentence) + _tool_hits(sentence)
        + _pref_hits(sentence) + _profile_hits(sentence)
    )  # fmt: skip
    if not any(
        hit[0].slot and hit[0].slot.startswith(("project.", "user.editor", "user.os", "user.shell"))
        for hit in hits
    ):
        hits += _passing_tool_hits(sentence)
    return hits
