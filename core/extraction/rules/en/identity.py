"""English facts about who the user is: name and form of address, where they live and come from, job and
employer. Pure: no I/O.

`name_hits` / `place_hits` / `job_hits` take one normalised sentence and return slotted WORTH `Hit`s:
`user.name`, `user.address_as`; `user.location`, `user.hometown`; `user.job`, `user.employer`.
"""

from __future__ import annotations

import re

from core.extraction.candidates import Category, Kind, Tier
from core.extraction.rules.en.grammar import ADV, I_AM, I_WORD, blocked
from core.extraction.rules.hits import Hit, fact, make
from core.extraction.rules.vocab import find_tools, is_tool

_NAME_STOP = frozenset(
    "i a an the not just here back sorry fine good ok okay sure done ready new also so very really "
    "still now currently actually trying using working going looking confused tired happy glad "
    "stuck aware afraid interested curious wondering thinking building learning writing planning "
    "from in at on your my his her their our what who how why when where called named sick busy "
    "excited late free available home out off away there that this it is and but or with for to of "
    "me you he she they we us them no yes yeah hi hello hey thanks thank please well bot assistant "
    "ai user human developer engineer admin american canadian chinese japanese german french "
    "british english indian italian spanish korean russian brazilian mexican australian dutch "
    "swedish polish irish scottish vietnamese thai turkish greek portuguese swiss austrian "
    "norwegian danish finnish israeli egyptian nigerian kenyan pakistani asian european african "
    "christian muslim jewish catholic buddhist hindu atheist vegan vegetarian lost bored hungry "
    "early great well cold hot sad mad angry fine okay alone single married retired remote online "
    "offline".split()
)
_NAME_FOLLOW = frozenset("and but so btw by from here though too please thanks a an - nice i i'm".split())
_NAME_RAW = r"(?P<name>(?:(?:dr|mr|mrs|ms|prof)\.?\s+)?[^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*){0,3})"


def _is_han(token: str) -> bool:
    return all("\u3400" <= ch <= "\u9fff" for ch in token)


def take_name(raw: str, *, allow_lower: bool, strong: bool = True) -> str | None:
    """The leading capitalised tokens of `raw` as a name, or None when it does not read as one.

    `allow_lower`: a single lower-case token is a name too ("my name's jordan btw"). `strong`: the cue leaves
    no doubt ("call me"), so any word may follow; after a weak cue ("I'm X") only a boundary word.
    """
    tokens = raw.split()
    name: list[str] = []
    for token in tokens[:4]:
        if token.lower() in _NAME_STOP or not (token[0].isupper() or _is_han(token)):
            break
        name.append(token)
    follower = tokens[len(name)].lower() if len(name) < len(tokens) else None
    if not name:
        first = tokens[0] if tokens else ""
        follower = tokens[1].lower() if len(tokens) > 1 else None
        if (
            allow_lower
            and first.isalpha()
            and first.lower() not in _NAME_STOP
            and follower in (None, *_NAME_FOLLOW)
        ):
            return first.capitalize()
        return None
    if follower is not None and not strong and follower not in _NAME_FOLLOW:
        return None
    return " ".join(name)


# fmt: off
_NAME_RES = tuple((re.compile(pattern + _NAME_RAW, re.I), slot, rule, allow_lower, conf)
                  for pattern, slot, rule, allow_lower, conf in (
    (r"\bmy\s+(?:full\s+|first\s+|real\s+|actual\s+)?name(?:'s|\s+is)\s+", "user.name", "en.name.my_name",
     True, 0.9),
    (r"\bthe\s+name's\s+", "user.name", "en.name.the_name", False, 0.8),
    (r"\bmy\s+(?:sur|last\s+|family\s+)name(?:'s|\s+is)\s+(?:spelled\s+|spelt\s+|written\s+)?", "user.surname",
     "en.name.surname", False, 0.9),
    (I_AM + r"\s+called\s+", "user.name", "en.name.called", False, 0.85),
    (r"\bcall\s+me\s+", "user.address_as", "en.address.call_me", False, 0.9),
    (r"\b(?:address|refer\s+to)\s+me\s+as\s+", "user.address_as", "en.address.as", False, 0.9),
    (I_WORD + r"\s+(?:usually\s+|mostly\s+)?go\s+by\s+", "user.address_as", "en.address.go_by", False, 0.85),
    (r"\bmy\s+nick\s?name\s+is\s+", "user.address_as", "en.address.nickname", False, 0.8),
    (r"^(?:(?:hi|hello|hey|hiya|greetings|good\s+(?:morning|afternoon|evening))(?:\s+(?:there|all|everyone|folks|"
     r"guys))?[\s,!.-]*)?(?:i'm|i\s+am|this\s+is)\s+", "user.name", "en.name.intro", False, 0.75),
))
# fmt: on
_NAME_NEGATED = re.compile(r"\b(?:don't|do\s+not|never|not|stop|no\s+longer)\s+(?:\w+\s+)?$", re.I)
_NAME_CONTENT = {
    "user.name": "The user's name is {}.",
    "user.address_as": "The user wants to be called {}.",
    "user.surname": "The user's surname is {}.",
}


def name_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for pattern, slot, rule, allow_lower, conf in _NAME_RES:
        match = pattern.search(sentence)
        if (
            match is None
            or blocked(sentence, match.start())
            or _NAME_NEGATED.search(sentence[: match.start()])
        ):
            continue
        intro = rule == "en.name.intro"
        if intro and match.group("name").split()[0].lower().endswith(("ing", "ed", "ly")):  # "I'm Feeling..."
            continue
        name = take_name(match.group("name"), allow_lower=allow_lower, strong=not intro)
        if name is None or is_tool(name):
            continue
        cand = fact(_NAME_CONTENT[slot].format(name), slot, name, rule=rule, lang="en", conf=conf)
        hits.append((cand, match.start(), match.start("name") + len(name)))
    return hits


_PLACE_RAW = r"(?P<loc>(?:the\s+)?[^\W\d_][\w.'-]*(?:\s+[^\W\d_][\w.'-]*){0,3}(?:\s*,\s*[^\W\d_][\w.'-]*)?)"
_PLACE_CONNECT = frozenset("de da del la le am on upon sur of".split())
# Lower-case place names accepted without a capital ("i live in berlin"); capitalised ones need no list.
_KNOWN_PLACES = frozenset(
    "berlin paris london munich hamburg vienna zurich amsterdam madrid barcelona rome milan lisbon "
    "dublin tokyo osaka seoul beijing shanghai shenzhen hangzhou guangzhou singapore sydney "
    "melbourne toronto vancouver montreal boston chicago seattle austin denver portland dallas "
    "houston atlanta miami germany france spain italy japan china canada australia india brazil "
    "mexico uk usa england stockholm oslo copenhagen helsinki prague warsaw budapest taipei "
    "bangalore mumbai delhi".split()
)
_PLACE_STOP = frozenset("i it here there home town the a an my our this that".split())


def take_place(raw: str) -> str | None:
    """The place named at the start of `raw` ("Berlin" from "Berlin, Germany now"), or None."""
    tokens = raw.replace(",", " , ").split()
    if tokens and tokens[0].lower() == "the" and len(tokens) > 1 and tokens[1][:1].isupper():
        tokens = tokens[1:]
    place: list[str] = []
    for index, token in enumerate(tokens[:4]):
        word = token.rstrip("'").removesuffix(".") if index == len(tokens) - 1 else token.rstrip("'")
        connects = (
            place and word in _PLACE_CONNECT and index + 1 < len(tokens) and tokens[index + 1][:1].isupper()
        )
        if place and word in ("I", "I'm", "I've", "I'd", "I'll"):
            break  # "since moving back to Leeds I sleep better": the pronoun opens the next clause
        if word[:1].isupper() or _is_han(word) or connects:  # "Frankfurt am Main", "上海"
            place.append(word)
        else:
            break
    if not place and tokens and tokens[0].rstrip(".").lower() in _KNOWN_PLACES:
        place = [tokens[0].rstrip(".").capitalize()]
    value = " ".join(place)
    return value if value and value.lower() not in _PLACE_STOP and not is_tool(value) else None


# fmt: off
_LOCATION_RES = tuple((re.compile(pattern + _PLACE_RAW, re.I), slot, rule) for pattern, slot, rule in (
    (r"(?<![\w'])(?:i|we)\s*" + ADV + r"(?:live|reside|am\s+living|'m\s+living|have\s+lived|'ve\s+lived|"
     r"have\s+been\s+living|'ve\s+been\s+living|are\s+living|'re\s+living)\s+in\s+", "user.location",
     "en.location.live"),
    (I_AM + r"\s+" + ADV + r"(?:based|located|living|settled|residing)\s+(?:in|out\s+of)\s+", "user.location",
     "en.location.based"),
    (I_AM + r"\s+(?:now\s+|finally\s+|back\s+)?in\s+(?=(?-i:[A-Z])[a-z]+\b(?!\s+(?:this|next\s+(?:week|few)|until|"
     r"till|today|tomorrow|tonight|over\s+the|for\s+(?:a|the|two|three|few|some|one)\s+(?:days?|weeks?|weekend|"
     r"conference|trip|meeting|holiday|vacation|wedding))\b))", "user.location", "en.location.in"),
    (r"(?<![\w'])(?:i|we)(?:\s+have|'ve)?\s+" + ADV + r"(?:moved|relocated)\s+"
     r"(?:(?:back|up|down|over|out|across)\s+)?(?:to|into)\s+",  # "moved up to Leeds": a particle of direction
     "user.location", "en.location.moved"),
    # "I relocated again, Madrid this time": the new place after the move, told as this time's
    (r"(?<![\w'])(?:i|we)(?:\s+have|'ve)?\s+(?:moved|relocated)\s+(?:again|once\s+more)\s*,\s*(?!(?:mon|tues|wednes|thurs|fri|satur|sun)day\b)"
     r"(?=(?-i:[A-Z])[a-z]+"
     r"(?:\s+(?-i:[A-Z])[a-z]+)?\s+(?:this\s+time|now)\b)", "user.location", "en.location.moved"),
    # the move as the ground of what follows, its subject the user: "since moving to Glasgow in December ...",
    # "after relocating to Porto, ..."
    (r"(?:^|[,;]\s*|\b(?:ever\s+)?since\s+|\bafter\s+)(?:moving|relocating)\s+(?:back\s+)?(?:over\s+)?to\s+",
     "user.location", "en.location.moving"),
    (r"\bmy\s+(?:flat|apartment|house|home|place)\s+is\s+in\s+", "user.location", "en.location.my_home"),
    (r"\bmy\s+(?:current\s+)?(?:city|location|home\s+base)\s+is\s+(?:in\s+)?", "user.location",
     "en.location.my_city"),
    # subjectless after a label or a comma: "Context: data engineer, based in Nairobi"
    (r"(?:^|[,:;]\s*)based\s+(?:in|out\s+of)\s+", "user.location", "en.location.based_bare"),
    (I_AM + r"\s+(?:originally\s+)?from\s+", "user.hometown", "en.hometown.from"),
    (I_WORD + r"\s+(?:was\s+born|grew\s+up)\s+in\s+", "user.hometown", "en.hometown.born"),
    (r"\bmy\s+home\s*town\s+is\s+", "user.hometown", "en.hometown.my"),
))
# fmt: on
_PLACE_CONTENT = {"user.location": "The user lives in {}.", "user.hometown": "The user is from {}."}
_FROM_NOT_PLACE = re.compile(r"^\s*(?:team|company|group|department|side|support|office|org)\b", re.I)


def place_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for pattern, slot, rule in _LOCATION_RES:
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        place = take_place(match.group("loc"))
        if place is None:
            continue
        end = sentence.find(place.split()[-1], match.start("loc")) + len(place.split()[-1])
        if slot == "user.hometown" and _FROM_NOT_PLACE.match(sentence[end:]):  # "I'm from the data team"
            continue
        cand = fact(_PLACE_CONTENT[slot].format(place), slot, place, rule=rule, lang="en")
        hits.append((cand, match.start(), max(end, match.start("loc"))))
    return hits


# fmt: off
_ROLE = (
    r"(?:engineer|developer|dev|programmer|coder|designer|manager|scientist|analyst|student|teacher|professor|"
    r"researcher|consultant|architect|writer|doctor|nurse|lawyer|accountant|founder|co-founder|cofounder|cto|ceo|"
    r"cfo|coo|vp|pm|intern|freelancer|contractor|tester|administrator|sysadmin|sre|editor|journalist|marketer|"
    r"recruiter|lead|product\s+owner|translator|photographer|artist|musician|chef|entrepreneur|postdoc|lecturer|"
    r"technician|specialist|director|maintainer|instructor|tutor|mathematician|physicist|economist|"
    r"statistician|pharmacist|dentist|therapist|veterinarian|pilot|officer|strategist|owner)s?"
)
_ORG_WORD = r"(?-i:[A-Z\u4e00-\u9fff])[\w&.'-]*"  # organisations are capitalised words, also under re.I
# "at Acme", and "at a logistics startup called Fretly": an organisation described, then named
# (the described form is only tried when "called" / "named" is there: it costs every other sentence a search)
_ORG_DESCRIBED = r"(?:(?:a|an|the|this)\s+(?:[\w-]+\s+){0,4}?(?:called|named)\s+)?"
_JOB = r"(?P<job>(?:[\w+#./-]+\s+){0,3}?" + _ROLE + r")\b"


def _job_patterns(named: str) -> tuple[tuple[re.Pattern[str], str], ...]:
    """The job and employer patterns; `named`: how an organisation may be described before its name."""
    org_raw = r"(?:\s+(?:at|for|with)\s+" + named + r"(?P<org>" + _ORG_WORD + r"(?:\s+" + _ORG_WORD + r"){0,2}))?"
    return tuple((re.compile(pattern, re.I), rule) for pattern, rule in (
    (I_AM + r"\s+(?:[A-Z][\w'-]*\s*,\s*)?" + ADV + r"(?:a|an)\s+" + _JOB + org_raw, "en.job.i_am"),
    (I_WORD + r"\s+" + ADV + r"(?:work|am\s+working|'m\s+working)\s+as\s+(?:a|an|the)\s+(?P<job>(?:[\w+#./-]+"
     r"\s+){0,3}?[\w+#./-]+?)(?=\s+(?:at|for|with|in|and|but|since|because|on)\b|\s*[,.;!?]|$)" + org_raw,
     "en.job.work_as"),
    (r"\bmy\s+(?:job|role|title|job\s+title|position|profession|occupation)\s+is\s+(?:(?:a|an|the)\s+)?"
     + _JOB + org_raw, "en.job.my_job"),
    (I_WORD + r"(?:\s+have|'ve)?\s+" + ADV + r"(?:work|am\s+working|'m\s+working|been\s+working|intern|joined|"
     r"started\s+at)(?:\s+(?:at|for))?\s+" + named + r"(?P<org>" + _ORG_WORD + r"(?:\s+" + _ORG_WORD
     + r"){0,2})(?:(?:\s+"
     r"(?:for|since)(?:\s+[\w-]+){1,3}?)?\s+as\s+(?:(?:a|an|the)\s+)?(?P<job>(?:[\w+#./-]+\s+){0,2}?" + _ROLE
     + r")\b)?", "en.employer.work_at"),
    # "As a night-shift nurse I sleep during the day": the user's role in apposition
    # "as a postdoc in marine ecology I ...": the field goes with the role
    (r"^as\s+(?:a|an)\s+(?P<job>(?:[\w+#./-]+\s+){0,3}?" + _ROLE + r"(?:\s+(?:in|of|for)\s+(?:[\w-]+\s+){0,2}?"
     r"[\w-]+)?)(?=\s*,?\s+i\b)" + org_raw, "en.job.as_a"),
    # "I'll be a PM at Lumen Health": a job about to start, at a named organisation
    (r"(?<![\w'])(?:i'll|i\s+will)\s+be\s+(?:a|an|the)\s+" + _JOB + r"\s+(?:at|for|with)\s+" + named
     + r"(?P<org>" + _ORG_WORD + r"(?:\s+" + _ORG_WORD + r"){0,2})", "en.job.will_be"),
    # "Context: data engineer, based in Nairobi": a role under a label about the user
    (r"^(?:context|about\s+me|background|bio|quick\s+intro|intro|me|role)\s*[:-]\s*(?:i'm\s+|i\s+am\s+)?(?:a\s+|an\s+)?"
     + _JOB + org_raw, "en.job.labelled"),
    # "started at Quillstream on Monday 🎉": chat drops the "I" before a job change
    (r"^(?:just\s+|finally\s+|officially\s+)?(?:started|joined)\s+(?:at\s+|with\s+)?(?P<org>" + _ORG_WORD
     + r"(?:\s+" + _ORG_WORD + r"){0,2})(?P<job>)", "en.employer.started"),
    # "first week as a full-time employee at Orbitly", "my first day at Kestrel": the start of a job, the employer
    (r"^(?:(?:so|and|ok|today|this\s+is)\s+)*(?:my\s+|the\s+)?first\s+(?:day|week|month)\s+(?:as\s+(?:a|an)\s+"
     r"(?:[\w-]+\s+){0,3}?)?(?:at|with)\s+" + named + r"(?P<org>" + _ORG_WORD + r"(?:\s+" + _ORG_WORD
     + r"){0,2})(?P<job>)", "en.employer.first_days"),
    # "I left Shopify in May and joined Wise": the second verb shares the subject
    (I_WORD + r"\s+(?:left|quit|resigned\s+from)\s+(?!(?:[^.;!?]*?\b(?:who|that|which)\b))[^.;!?]{1,50}?\s+and\s+"
     r"(?:then\s+)?(?:joined|started\s+(?:at|with)|moved\s+to|went\s+to)\s+(?P<org>" + _ORG_WORD + r"(?:\s+"
     + _ORG_WORD + r"){0,2})(?P<job>)", "en.employer.left_joined"),
    # "I'm Tomasz, backend dev at Allegro": a role in apposition after the name
    (I_AM + r"\s+(?-i:[A-Z])[\w'-]+\s*,\s*(?:a\s+|an\s+|the\s+)?" + _JOB + org_raw, "en.job.apposition"),
    # "got promoted — engineering manager now": the new role after the promotion, the "I" dropped
    (r"^(?:(?:just|finally|officially)\s+)?(?:got\s+|been\s+)?promoted(?:\s+to|\s*[,:\u2014\u2013-])\s*"
     r"(?:(?:i'm|i\s+am)\s+)?(?:a\s+|an\s+|the\s+)?" + _JOB + org_raw, "en.job.promoted"),
    # "I took over as tech lead", "got promoted to staff engineer", "I became an engineering manager"
    (I_WORD + r"(?:'ve|\s+have)?\s+" + ADV + r"(?:took\s+over\s+as|got\s+promoted\s+to|was\s+promoted\s+to|been\s+"
     r"promoted\s+to|became|stepped\s+(?:up|in)\s+as|moved\s+into\s+(?:a|an|the)?\s*|switched\s+to\s+(?:being\s+)?)"
     r"\s*(?:a\s+|an\s+|the\s+)?" + _JOB + org_raw, "en.job.became"),
))


_JOB_RES = _job_patterns("")
_JOB_RES_NAMED = _job_patterns(_ORG_DESCRIBED)
# fmt: on
_JOB_STOP = frozenset(  # a pronoun is a new clause's subject ("I'm Ana, I lead ..."), never a role word
    "not no big huge bit little fan total complete real i we you he she they it".split()
)


def _article(word: str) -> str:
    if word.isupper() and len(word) <= 5:  # acronyms are spelled out: "an ML engineer", "a QA lead"
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    return "an" if word[:1].lower() in "aeiou" else "a"


def _org(raw: str | None) -> str | None:
    tokens: list[str] = []
    for token in (raw or "").split():
        if not (token[0].isupper() or _is_han(token)) or token.lower() in _NAME_STOP:
            break
        tokens.append(token.rstrip("."))
    value = " ".join(tokens)
    # a company can share a product's name ("Datadog", "GitLab"); a language or a framework cannot employ
    return value if value and not _names_tech(value) else None


_TECH_SLOTS = ("project.language", "project.framework", "project.package_manager", "project.orm",
               "project.test_framework", "project.bundler", "project.runtime", "user.os", "user.editor")  # fmt: skip


def _names_tech(value: str) -> bool:
    tools = find_tools(value)
    return is_tool(value) and (not tools or tools[0][0].slot in _TECH_SLOTS)


# Studies the user is in: "writing my PhD thesis on soil microbiomes at Wageningen", "for my thesis (MSc
# statistics, Uppsala)", "I'm doing a master's in data science".
_STUDY_RE = re.compile(
    r"(?:(?<![\w'])(?:i'm|i\s+am)\s+)?(?:writing|doing|finishing|working\s+on|defending|studying\s+for)\s+(?:my|a)\s+"
    r"(?P<what>(?:(?:phd|ph\.d\.?|master'?s|msc|mphil|bachelor'?s|bsc|doctoral|undergrad(?:uate)?)\s+)?"
    r"(?:thesis|dissertation|phd|master'?s|msc|degree)(?:\s+(?:on|about|in)\s+[^,.;!?()—-]{2,60}?)?"
    r"(?:\s+at\s+"
    + _ORG_WORD
    + r"(?:\s+"
    + _ORG_WORD
    + r"){0,2})?)(?=\s*(?:$|[,.;!?()—-]|\s(?:and|but|so)\b))"
    r"|\bfor\s+my\s+(?P<what2>thesis|dissertation|phd|master'?s)\s*\((?P<aside>[^()]{3,60})\)",
    re.I,
)


def _study_hits(sentence: str, low: str) -> list[Hit]:
    studies = (
        "thesis" in low
        or "dissertation" in low
        or "ph" in low
        or "master" in low
        or "degree" in low
        or ("msc" in low or "bachelor" in low or "bsc" in low or "doctoral" in low or "mphil" in low)
    )  # the words the pattern needs, checked first: it costs every other sentence a search
    match = _STUDY_RE.search(sentence) if studies else None
    if match is None or blocked(sentence, match.start()):
        return []
    if match.group("what"):
        content = f"The user is working on a {match.group('what').strip()}."
    else:
        content = f"The user is working on a {match.group('what2')} ({match.group('aside').strip()})."
    cand = make(content, Kind.SEMANTIC, Category.PROFILE, Tier.WORTH, rule="en.profile.studies", confidence=0.8,
                lang="en")  # fmt: skip
    return [(cand, match.start(), match.end())]


def job_hits(sentence: str) -> list[Hit]:
    """The user's job and employer, and the studies they are in."""
    low = sentence.lower()
    hits: list[Hit] = _study_hits(sentence, low)
    for pattern, rule in _JOB_RES_NAMED if "called" in low or "named" in low else _JOB_RES:
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        said = (match.group("job") or "").strip()
        job = said.lower()
        if job and not (set(job.split()) & _JOB_STOP) and len(job.split()) <= 4:
            content = f"The user works as {_article(said.split()[0])} {said}."
            hits.append(
                (fact(content, "user.job", job, rule=rule, lang="en"), match.start(), match.end("job"))
            )
        org = _org(match.group("org"))
        if org:
            employer_rule = rule.replace("job", "employer")
            cand = fact(
                f"The user works at {org}.", "user.employer", org, rule=employer_rule, lang="en", conf=0.8
            )
            hits.append((cand, match.start(), match.start("org") + len(org)))
    return hits
