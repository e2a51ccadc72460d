"""English memory rules, plus the script-neutral vocabulary both rule sets share. Pure: no I/O.

Contract:
- `sentence_hits(sentence)` takes ONE normalised English sentence (`rules.py` splits turns, drops code and
  quoted lines) and returns `Hit`s: a `Candidate` with empty sources (the caller fills them) and the span of
  the sentence it accounts for (the gate uses spans to tell "fully covered" turns from substantive ones).
- Precision first: a rule fires only on a first-person statement ("I ...", "my ...", "we ...") or an
  imperative addressed to the agent; questions, hypotheticals ("if I moved to ..."), reported speech
  ("my boss says we use ...") and negated facts ("I don't live in Berlin anymore") yield nothing.
- Tiers: explicit "remember ..." requests, corrections ("no, it's pnpm, not npm"), standing rules
  ("don't/never/always ...") and forget requests are MUST; other stable facts and preferences are WORTH.
- Shared with `rules_zh` (kept here so the two rule sets never import each other both ways): the tool
  lexicon (`find_tools`), slot metadata (`SLOT_KIND`), `make` (the candidate builder) and `must`.
"""

from __future__ import annotations

import dataclasses
import re
from typing import NamedTuple

from worker.extraction.candidates import Candidate, Category, Kind, Operation, Tier

Hit = tuple[Candidate, int, int]


class Tool(NamedTuple):
    canonical: str  # the slot value: lower-case, one spelling per tool ("postgresql" for "PG")
    display: str  # how content names it
    slot: str | None  # None: several can be in use at once (docker, redis, ...)


_PM, _DB, _LANG, _FW = "project.package_manager", "project.database", "project.language", "project.framework"
_TOOL_TABLE: tuple[tuple[str, str, str | None, str], ...] = (
    ("pnpm", "pnpm", _PM, "pnpm"), ("npm", "npm", _PM, "npm"), ("yarn", "Yarn", _PM, "yarn"),
    ("bun", "Bun", _PM, "bun"), ("pip", "pip", _PM, "pip|pip3"), ("poetry", "Poetry", _PM, "poetry"),
    ("uv", "uv", _PM, "uv"), ("pipenv", "Pipenv", _PM, "pipenv"), ("conda", "Conda", _PM, "conda|miniconda"),
    ("postgresql", "PostgreSQL", _DB, "postgresql|postgres|postgre|pg|pgsql"),
    ("mysql", "MySQL", _DB, "mysql"), ("mariadb", "MariaDB", _DB, "mariadb"),
    ("sqlite", "SQLite", _DB, "sqlite|sqlite3"), ("mongodb", "MongoDB", _DB, "mongodb|mongo"),
    ("sql server", "SQL Server", _DB, "sql server|sqlserver|mssql"), ("oracle", "Oracle", _DB, "oracle db"),
    ("dynamodb", "DynamoDB", _DB, "dynamodb"), ("clickhouse", "ClickHouse", _DB, "clickhouse"),
    ("cockroachdb", "CockroachDB", _DB, "cockroachdb"), ("cassandra", "Cassandra", _DB, "cassandra"),
    ("python", "Python", _LANG, "python|python3"), ("typescript", "TypeScript", _LANG, "typescript|ts"),
    ("javascript", "JavaScript", _LANG, "javascript|js"), ("go", "Go", _LANG, "golang|go"),
    ("rust", "Rust", _LANG, "rust"), ("java", "Java", _LANG, "java"), ("kotlin", "Kotlin", _LANG, "kotlin"),
    ("c#", "C#", _LANG, "c#|csharp"), ("c++", "C++", _LANG, "c\\+\\+|cpp"), ("ruby", "Ruby", _LANG, "ruby"),
    ("php", "PHP", _LANG, "php"), ("swift", "Swift", _LANG, "swift"), ("scala", "Scala", _LANG, "scala"),
    ("elixir", "Elixir", _LANG, "elixir"), ("dart", "Dart", _LANG, "dart"),
    ("react", "React", _FW, "react|reactjs|react\\.js"), ("vue", "Vue", _FW, "vue|vuejs|vue\\.js|vue3"),
    ("angular", "Angular", _FW, "angular"), ("svelte", "Svelte", _FW, "svelte|sveltekit"),
    ("next.js", "Next.js", _FW, "next\\.js|nextjs"), ("nuxt", "Nuxt", _FW, "nuxt|nuxtjs|nuxt\\.js"),
    ("django", "Django", _FW, "django"), ("flask", "Flask", _FW, "flask"), ("fastapi", "FastAPI", _FW, "fastapi"),
    ("rails", "Rails", _FW, "ruby on rails|rails"), ("spring boot", "Spring Boot", _FW, "spring boot|springboot"),
    ("express", "Express", _FW, "express\\.js|expressjs|express"), ("nestjs", "NestJS", _FW, "nestjs|nest\\.js"),
    ("laravel", "Laravel", _FW, "laravel"), ("flutter", "Flutter", _FW, "flutter"),
    ("pytest", "pytest", "project.test_framework", "pytest"), ("jest", "Jest", "project.test_framework", "jest"),
    ("vitest", "Vitest", "project.test_framework", "vitest"),
    ("sqlalchemy", "SQLAlchemy", "project.orm", "sqlalchemy"), ("prisma", "Prisma", "project.orm", "prisma"),
    ("typeorm", "TypeORM", "project.orm", "typeorm"), ("drizzle", "Drizzle", "project.orm", "drizzle"),
    ("vite", "Vite", "project.bundler", "vite"), ("webpack", "webpack", "project.bundler", "webpack"),
    ("aws", "AWS", "project.cloud", "aws"), ("gcp", "GCP", "project.cloud", "gcp|google cloud"),
    ("azure", "Azure", "project.cloud", "azure"),
    ("vim", "Vim", "user.editor", "vim"), ("neovim", "Neovim", "user.editor", "neovim|nvim"),
    ("emacs", "Emacs", "user.editor", "emacs"), ("pycharm", "PyCharm", "user.editor", "pycharm"),
    ("vscode", "VS Code", "user.editor", "vscode|vs code|visual studio code"),
    ("intellij", "IntelliJ", "user.editor", "intellij|intellij idea"),
    ("macos", "macOS", "user.os", "macos|mac|macbook|osx|os x"), ("linux", "Linux", "user.os", "linux"),
    ("windows", "Windows", "user.os", "windows"), ("ubuntu", "Ubuntu", "user.os", "ubuntu"),
    ("docker", "Docker", None, "docker"), ("kubernetes", "Kubernetes", None, "kubernetes|k8s"),
    ("terraform", "Terraform", None, "terraform"), ("redis", "Redis", None, "redis"),
    ("kafka", "Kafka", None, "kafka"), ("graphql", "GraphQL", None, "graphql"),
    ("tailwind", "Tailwind CSS", None, "tailwind|tailwindcss"), ("eslint", "ESLint", None, "eslint"),
    ("prettier", "Prettier", None, "prettier"), ("ruff", "Ruff", None, "ruff"), ("mypy", "mypy", None, "mypy"),
    ("github", "GitHub", None, "github"), ("gitlab", "GitLab", None, "gitlab"), ("jira", "Jira", None, "jira"),
    ("celery", "Celery", None, "celery"), ("nginx", "nginx", None, "nginx"), ("sentry", "Sentry", None, "sentry"),
    ("elasticsearch", "Elasticsearch", None, "elasticsearch"), ("rabbitmq", "RabbitMQ", None, "rabbitmq"),
)
_TOOL_BY_ALIAS: dict[str, Tool] = {}
for _canonical, _display, _slot, _aliases in _TOOL_TABLE:
    for _alias in _aliases.split("|"):
        _TOOL_BY_ALIAS[_alias.replace("\\", "")] = Tool(_canonical, _display, _slot)
_ALL_ALIASES = sorted((a for *_, aliases in _TOOL_TABLE for a in aliases.split("|")), key=len, reverse=True)
# Tool names glued to CJK text ("项目用PG") must match too, so the boundaries are ASCII-only.
_TOOL_RE = re.compile(r"(?<![A-Za-z0-9_.#+-])(?:" + "|".join(_ALL_ALIASES) + r")(?![A-Za-z0-9_#+]|\.[a-z])", re.I)
_CASE_SENSITIVE = {"go": ("Go", "GO"), "ts": ("TS", "ts"), "js": ("JS", "js"), "mac": ("Mac",)}


def find_tools(text: str) -> list[tuple[Tool, int, int]]:
    """Known tools named in `text`, with their spans, in order."""
    found = []
    for match in _TOOL_RE.finditer(text):
        alias = match.group().lower()
        if alias in _CASE_SENSITIVE and match.group() not in _CASE_SENSITIVE[alias]:
            continue
        found.append((_TOOL_BY_ALIAS[alias], match.start(), match.end()))
    return found


SLOT_KIND: dict[str, tuple[Kind, Category]] = {
    "user.reply_style": (Kind.SEMANTIC, Category.PREFERENCE),
    "user.reply_language": (Kind.SEMANTIC, Category.PREFERENCE),
}


def slot_kind(slot: str | None) -> tuple[Kind, Category]:
    if slot is None:
        return Kind.SEMANTIC, Category.FACT
    if slot in SLOT_KIND:
        return SLOT_KIND[slot]
    return Kind.SEMANTIC, Category.PROFILE if slot.startswith("user.") else Category.FACT


def make(
    content: str,
    kind: Kind,
    category: Category,
    tier: Tier,
    *,
    rule: str,
    confidence: float,
    lang: str,
    slot: str | None = None,
    value: str | None = None,
    op: Operation = Operation.REMEMBER,
    extra: dict[str, str] | None = None,
) -> Candidate:
    return Candidate(
        content=content, kind=kind, category=category, tier=tier, confidence=confidence,
        source_event_ids=(), slot=slot, value=value, op=op, lang=lang, origin="rules", rule=rule,
        extra=extra or {},
    )  # fmt: skip


def must(hit: Hit, prefix: str, *, start: int = 0, end: int | None = None) -> Hit:
    """The hit raised to MUST (an explicit remember / correction around it), its span widened."""
    cand, hit_start, hit_end = hit
    upgraded = dataclasses.replace(
        cand, tier=Tier.MUST, confidence=max(cand.confidence, 0.9), rule=f"{prefix}+{cand.rule}"
    )
    return upgraded, min(start, hit_start), max(end if end is not None else hit_end, hit_end)


def shift(hits: list[Hit], offset: int) -> list[Hit]:
    return [(cand, start + offset, end + offset) for cand, start, end in hits]


# ---------------------------------------------------------------- English text helpers

_ADV = (
    r"(?:(?:currently|now|still|also|actually|really|just|recently|mostly|mainly|primarily|usually|generally|"
    r"normally|basically|definitely|always|honestly|personally|typically|only|all|both|already|finally|"
    r"officially|permanently|much|strongly|totally|very much|kind of|kinda|pretty much)\s+)*"
)
_I = r"(?<![\w'])i"
_SPAN = r"(?:[^.;!?]|\.(?=\w))"  # a clause: up to the sentence's end, inner dots ("Next.js") included
_IM = r"(?<![\w'])(?:i'm|i am|im)"
_HYPOTHETICAL = re.compile(
    r"\b(?:if|suppose|supposing|imagine|assuming|assume|what if|in case|hypothetically|let's say|lets say|"
    r"pretend|unless|whether|wish|would|might|maybe|perhaps|probably|for example|for instance|e\.g|such as|"
    r"when|whenever|once|before|after|until|thinking (?:about|of)|considering|planning|plan to|want to|"
    r"wanted to|going to|gonna|hope|hoping|not sure|wondering)\b",
    re.I,
)
_REPORTED = re.compile(
    r"\b(?:said|says|saying|told|tells|telling|thinks|thought|believes|believed|claims?|claimed|mentioned|"
    r"heard|according to|asked|asks|wrote|writes|complained|insists?|reckons?|suggested)\b",
    re.I,
)
_SELF_BEFORE = re.compile(r"(?:^|\W)(?:i|i've|i have|i've already|i already|i just)\s+$", re.I)


def blocked(sentence: str, start: int, *, hypothetical: bool = True) -> bool:
    """True when the text before `start` makes the statement not the user's own current fact."""
    prefix = sentence[:start]
    if not prefix:
        return False
    if prefix.count('"') % 2 == 1:  # inside a quotation
        return True
    if hypothetical and _HYPOTHETICAL.search(prefix):
        return True
    for match in _REPORTED.finditer(prefix):
        if not _SELF_BEFORE.search(prefix[: match.start()]):
            return True
    return False


_VERB_ES = re.compile(r"(?:s|sh|ch|x|z|o)$")
_UNCHANGED_VERBS = frozenset(
    "can could will would should must might may shall did didn't can't won't wouldn't couldn't shouldn't "
    "was had used".split()
)
_VERB_MAP = {"am": "is", "have": "has", "do": "does", "don't": "doesn't", "were": "was", "'m": "is"}
_PRONOUN_ADVERBS = (
    r"(?:(?:always|never|usually|often|really|just|still|only|mostly|actually|now|currently|already|"
    r"sometimes|rarely|generally|also|typically|normally|mainly)\s+)*"
)
_SUBJECT_VERB_RE = re.compile(rf"\b(i|we)\s+({_PRONOUN_ADVERBS})([a-z']+)\b", re.I)
_PRONOUN_RE = re.compile(
    r"\b(i'm|i am|i've|i'd|i'll|we're|we are|we've|we'd|we'll|myself|ourselves|mine|ours|my|our|me|us|i|we)\b",
    re.I,
)
_PRONOUN_MAP = {
    "i'm": "the user is", "i am": "the user is", "i've": "the user has", "i'd": "the user would",
    "i'll": "the user will", "we're": "the user's team is", "we are": "the user's team is",
    "we've": "the user's team has", "we'd": "the user's team would", "we'll": "the user's team will",
    "myself": "themselves", "ourselves": "themselves", "mine": "the user's", "ours": "the user's team's",
    "my": "the user's", "our": "the user's", "me": "the user", "us": "the user's team", "i": "the user",
    "we": "the user's team",
}  # fmt: skip


def _conjugate(verb: str) -> str:
    low = verb.lower()
    if low in _VERB_MAP:
        return _VERB_MAP[low]
    if low in _UNCHANGED_VERBS or low.endswith(("ed", "n't")) or "'" in low:
        return verb
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + ("es" if _VERB_ES.search(low) else "s")


def third_person(text: str) -> str:
    """'I always deploy on Fridays' -> 'the user always deploys on Fridays' (pronouns and simple agreement)."""

    def subject_verb(match: re.Match[str]) -> str:
        subject = "the user" if match.group(1).lower() == "i" else "the user's team"
        verb = match.group(3)
        if verb.lower() in ("'m", "am", "are", "'re") or verb.lower() in _PRONOUN_MAP:
            return match.group()
        return f"{subject} {match.group(2)}{_conjugate(verb)}"

    text = _PRONOUN_RE.sub(lambda m: _PRONOUN_MAP[m.group().lower()] if m.group().lower() in (
        "i'm", "i am", "i've", "i'd", "i'll", "we're", "we are", "we've", "we'd", "we'll") else m.group(), text)
    text = _SUBJECT_VERB_RE.sub(subject_verb, text)
    return _PRONOUN_RE.sub(lambda m: _PRONOUN_MAP[m.group().lower()], text)


def sentence_case(text: str, *, end: str = ".") -> str:
    text = text.strip().rstrip(".!?;,: ")
    if not text:
        return text
    return text[0].upper() + text[1:] + end



# ---------------------------------------------------------------- sentence shape

_LEAD = (
    r"^(?:(?:and|also|oh|ok|okay|so|btw|by the way|plus|but|hey|hi|hello|well|alright|anyway|one more thing|"
    r"one last thing|last thing|great|cool|thanks|thank you|fyi|ps|just so you know|for the record|"
    r"important|note)\b[\s,:;!.-]*)*"
)
_QUESTION_START = re.compile(
    r"^(?:(?:and|so|but|also|oh|hey|ok|okay|btw|well)\b[\s,]*)*(?:do|does|did|can|could|would|will|is|are|was|"
    r"were|should|shall|have|has|am|what|what's|whats|where|where's|who|who's|whom|whose|why|how|which)\b",
    re.I,
)
_POLITE_RE = re.compile(
    _LEAD + r"(?:please\s+)?(?:can|could|would|will)\s+you\s+(?:please\s+|also\s+|just\s+)*(?:remember|note|"
    r"keep in mind|make a note|forget|stop remembering|delete|erase|remove|call me|always|never|not|stop)\b",
    re.I,
)


def is_question(sentence: str) -> bool:
    if _POLITE_RE.match(sentence):
        return False
    return sentence.rstrip().endswith("?") or _QUESTION_START.match(sentence) is not None


# ---------------------------------------------------------------- names

_NATIONALITIES = (
    "american canadian chinese japanese german french british english indian italian spanish korean russian "
    "brazilian mexican australian dutch swedish polish irish scottish vietnamese thai turkish greek portuguese "
    "swiss austrian norwegian danish finnish israeli egyptian nigerian kenyan pakistani asian european african "
    "christian muslim jewish catholic buddhist hindu atheist vegan vegetarian"
)
_NAME_STOP = frozenset(
    (
        "i a an the not just here back sorry fine good ok okay sure done ready new also so very really still now "
        "currently actually trying using working going looking confused tired happy glad stuck aware afraid "
        "interested curious wondering thinking building learning writing planning from in at on your my his her "
        "their our what who how why when where called named sick busy excited late free available home out off "
        "away there that this it is and but or from with for to of me you he she they we us them no yes yeah "
        "hi hello hey thanks thank please well bot assistant ai user human developer engineer admin "
        + _NATIONALITIES
    ).split()
)
_NAME_FOLLOW = frozenset("and but so btw by from here though too please thanks a an - and, nice i i'm".split())
_NAME_RAW = r"(?P<name>[^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*){0,3})"


def _is_han(token: str) -> bool:
    return all("\u3400" <= ch <= "\u9fff" for ch in token)


def take_name(raw: str, *, allow_lower: bool, strong: bool = True) -> str | None:
    """The leading capitalised tokens of `raw` as a name, or None when it does not read as one.

    `allow_lower`: a single lower-case token is a name too ("my name's jordan btw"). `strong`: the cue leaves
    no doubt ("call me"), so any lower-case word may follow; after a weak cue ("I'm X") only a boundary word.
    """
    tokens = raw.split()
    name: list[str] = []
    for token in tokens[:3]:
        if token.lower() in _NAME_STOP or not (token[0].isupper() or _is_han(token)):
            break
        name.append(token)
    follower = tokens[len(name)].lower() if len(name) < len(tokens) else None
    if not name:
        first = tokens[0] if tokens else ""
        follower = tokens[1].lower() if len(tokens) > 1 else None
        if allow_lower and first.isalpha() and first.lower() not in _NAME_STOP and (
            follower is None or follower in _NAME_FOLLOW
        ):
            return first.capitalize()
        return None
    if follower is not None and not strong and follower not in _NAME_FOLLOW:
        return None
    return " ".join(name)


_NAME_RES = (
    (re.compile(r"\bmy\s+(?:full\s+|first\s+|real\s+|actual\s+)?name(?:'s|\s+is)\s+" + _NAME_RAW, re.I),
     "user.name", "en.name.my_name", True, 0.9),
    (re.compile(r"\bthe\s+name's\s+" + _NAME_RAW, re.I), "user.name", "en.name.the_name", False, 0.8),
    (re.compile(_IM + r"\s+called\s+" + _NAME_RAW, re.I), "user.name", "en.name.called", False, 0.85),
    (re.compile(r"\bcall\s+me\s+" + _NAME_RAW, re.I), "user.address_as", "en.address.call_me", False, 0.9),
    (re.compile(_I + r"\s+(?:usually\s+|mostly\s+)?go\s+by\s+" + _NAME_RAW, re.I),
     "user.address_as", "en.address.go_by", False, 0.85),
    (re.compile(r"\bmy\s+nick\s?name\s+is\s+" + _NAME_RAW, re.I), "user.address_as", "en.address.nickname",
     False, 0.8),
    (re.compile(r"^(?:(?:hi|hello|hey|hiya|greetings|good\s+(?:morning|afternoon|evening))(?:\s+(?:there|all|"
                r"everyone|folks|guys))?[\s,!.-]*)?(?:i'm|i\s+am|this\s+is)\s+" + _NAME_RAW, re.I),
     "user.name", "en.name.intro", False, 0.75),
)  # fmt: skip
_NAME_NEGATED = re.compile(r"\b(?:don't|do not|never|not|stop|no longer)\s+(?:\w+\s+)?$", re.I)
_NAME_CONTENT = {"user.name": "The user's name is {}.", "user.address_as": "The user wants to be called {}."}


def _name_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for pattern, slot, rule, allow_lower, confidence in _NAME_RES:
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()) or _NAME_NEGATED.search(sentence[: match.start()]):
            continue
        if rule == "en.name.intro" and match.group("name").split()[0].lower().endswith(("ing", "ed", "ly")):
            continue
        name = take_name(match.group("name"), allow_lower=allow_lower, strong=rule != "en.name.intro")
        if name is None or name.lower() in _TOOL_BY_ALIAS:
            continue
        kind, category = slot_kind(slot)
        cand = make(_NAME_CONTENT[slot].format(name), kind, category, Tier.WORTH, rule=rule,
                    confidence=confidence, lang="en", slot=slot, value=name)  # fmt: skip
        hits.append((cand, match.start(), match.start("name") + len(name)))
    return hits


# ---------------------------------------------------------------- places

_PLACE_RAW = r"(?P<loc>(?:the\s+)?[^\W\d_][\w.'-]*(?:\s+[^\W\d_][\w.'-]*){0,3}(?:\s*,\s*[^\W\d_][\w.'-]*)?)"
_PLACE_CONNECT = frozenset("de da del la le am on upon sur of".split())
# Lower-case place names accepted without a capital ("i live in berlin"); capitalised ones need no list.
_KNOWN_PLACES = frozenset(
    "berlin paris london munich hamburg vienna zurich amsterdam madrid barcelona rome milan lisbon dublin "
    "tokyo osaka seoul beijing shanghai shenzhen hangzhou guangzhou singapore sydney melbourne toronto "
    "vancouver montreal boston chicago seattle austin denver portland dallas houston atlanta miami "
    "germany france spain italy japan china canada australia india brazil mexico uk usa england "
    "stockholm oslo copenhagen helsinki prague warsaw budapest taipei bangalore mumbai delhi".split()
)
_PLACE_STOP = frozenset("i it here there home town the a an my our this that".split())


def take_place(raw: str) -> str | None:
    """The place named at the start of `raw` ("Berlin" from "Berlin, Germany now"), or None."""
    tokens = raw.replace(",", " , ").split()
    if tokens and tokens[0].lower() == "the" and len(tokens) > 1 and tokens[1][:1].isupper():
        tokens = tokens[1:]
    place: list[str] = []
    for index, token in enumerate(tokens[:4]):
        word = token.rstrip(".'")
        if word[:1].isupper() or _is_han(word):
            place.append(word)
        elif place and word in _PLACE_CONNECT and index + 1 < len(tokens) and tokens[index + 1][:1].isupper():
            place.append(word)
        else:
            break
    if not place and tokens and tokens[0].rstrip(".").lower() in _KNOWN_PLACES:
        place = [tokens[0].rstrip(".").capitalize()]
    value = " ".join(place)
    if not value or value.lower() in _PLACE_STOP or value.lower() in _TOOL_BY_ALIAS:
        return None
    return value


_LOCATION_RES = (
    (re.compile(r"(?<![\w'])(?:i|we)\s*" + _ADV + r"(?:live|reside|am\s+living|'m\s+living|have\s+lived|'ve\s+lived|"
                r"have\s+been\s+living|'ve\s+been\s+living|are\s+living|'re\s+living)\s+in\s+" + _PLACE_RAW, re.I),
     "user.location", "en.location.live"),
    (re.compile(_IM + r"\s+" + _ADV + r"(?:based|located|living|settled|residing)\s+(?:in|out\s+of)\s+"
                + _PLACE_RAW, re.I), "user.location", "en.location.based"),
    (re.compile(r"(?<![\w'])(?:i|we)(?:\s+have|'ve)?\s+" + _ADV + r"(?:moved|relocated)\s+(?:back\s+)?(?:to|into)\s+"
                + _PLACE_RAW, re.I), "user.location", "en.location.moved"),
    (re.compile(r"\bmy\s+(?:current\s+)?(?:city|location|home\s+base)\s+is\s+(?:in\s+)?" + _PLACE_RAW, re.I),
     "user.location", "en.location.my_city"),
    (re.compile(_IM + r"\s+(?:originally\s+)?from\s+" + _PLACE_RAW, re.I), "user.hometown", "en.hometown.from"),
    (re.compile(_I + r"\s+(?:was\s+born|grew\s+up)\s+in\s+" + _PLACE_RAW, re.I), "user.hometown", "en.hometown.born"),
    (re.compile(r"\bmy\s+home\s*town\s+is\s+" + _PLACE_RAW, re.I), "user.hometown", "en.hometown.my"),
)  # fmt: skip
_PLACE_CONTENT = {"user.location": "The user lives in {}.", "user.hometown": "The user is from {}."}
# "I'm from the data team" is not a hometown.
_FROM_NOT_PLACE = re.compile(r"^\s*(?:team|company|group|department|side|support|office|org)\b", re.I)


def _place_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for pattern, slot, rule in _LOCATION_RES:
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        place = take_place(match.group("loc"))
        if place is None:
            continue
        end = sentence.find(place.split()[-1], match.start("loc")) + len(place.split()[-1])
        if slot == "user.hometown" and _FROM_NOT_PLACE.match(sentence[end:]):
            continue
        kind, category = slot_kind(slot)
        cand = make(_PLACE_CONTENT[slot].format(place), kind, category, Tier.WORTH, rule=rule, confidence=0.85,
                    lang="en", slot=slot, value=place)  # fmt: skip
        hits.append((cand, match.start(), max(end, match.start("loc"))))
    return hits


# ---------------------------------------------------------------- job and employer

_ROLE = (
    r"(?:engineer|developer|dev|programmer|coder|designer|manager|scientist|analyst|student|teacher|professor|"
    r"researcher|consultant|architect|writer|doctor|nurse|lawyer|accountant|founder|co-founder|cofounder|cto|"
    r"ceo|cfo|coo|vp|pm|intern|freelancer|contractor|tester|administrator|sysadmin|sre|editor|journalist|"
    r"marketer|recruiter|lead|product owner|translator|photographer|artist|musician|chef|entrepreneur|"
    r"postdoc|lecturer|technician|specialist|director|maintainer|instructor|tutor|mathematician|physicist|"
    r"economist|statistician|pharmacist|dentist|therapist|veterinarian|pilot|officer|strategist|owner)s?"
)
# Organisation names are capitalised words ("Acme", "ETH Zurich"), also under re.I.
_ORG_WORD = r"(?-i:[A-Z\u4e00-\u9fff])[\w&.'-]*"
_ORG_RAW = r"(?:\s+(?:at|for|with)\s+(?P<org>" + _ORG_WORD + r"(?:\s+" + _ORG_WORD + r"){0,2}))?"
_JOB_RES = (
    (re.compile(_IM + r"\s+(?:[A-Z][\w'-]*\s*,\s*)?" + _ADV + r"(?:a|an)\s+(?P<job>(?:[\w+#./-]+\s+){0,3}?"
                + _ROLE + r")\b" + _ORG_RAW, re.I), "en.job.i_am"),
    (re.compile(_I + r"\s+" + _ADV + r"(?:work|am\s+working|'m\s+working)\s+as\s+(?:a|an|the)\s+(?P<job>(?:[\w+#./-]"
                r"+\s+){0,3}?[\w+#./-]+?)(?=\s+(?:at|for|with|in|and|but|since|because|on)\b|\s*[,.;!?]|$)"
                + _ORG_RAW, re.I), "en.job.work_as"),
    (re.compile(r"\bmy\s+(?:job|role|title|job\s+title|position|profession|occupation)\s+is\s+(?:(?:a|an|the)\s+)?"
                r"(?P<job>(?:[\w+#./-]+\s+){0,3}?" + _ROLE + r")\b" + _ORG_RAW, re.I), "en.job.my_job"),
)  # fmt: skip
_EMPLOYER_RE = re.compile(
    _I + r"(?:\s+have|'ve)?\s+" + _ADV + r"(?:work|am\s+working|'m\s+working|been\s+working|intern|joined|"
    r"started\s+at)"
    r"(?:\s+(?:at|for))?\s+(?P<org>" + _ORG_WORD + r"(?:\s+" + _ORG_WORD + r"){0,2})"
    r"(?:(?:\s+(?:for|since)(?:\s+[\w-]+){1,3}?)?\s+as\s+(?:(?:a|an|the)\s+)?(?P<job>(?:[\w+#./-]+\s+){0,2}?" + _ROLE
    + r")\b)?",
    re.I,
)
_JOB_STOP = frozenset("not no big huge bit little fan total complete real".split())


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _org(raw: str | None) -> str | None:
    if not raw:
        return None
    tokens: list[str] = []
    for token in raw.split():
        if not (token[0].isupper() or _is_han(token)) or token.lower() in _NAME_STOP:
            break
        tokens.append(token.rstrip("."))
    value = " ".join(tokens)
    return value if value and value.lower() not in _TOOL_BY_ALIAS else None


def _job_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    matches = [(pattern.search(sentence), rule) for pattern, rule in _JOB_RES]
    matches.append((_EMPLOYER_RE.search(sentence), "en.employer.work_at"))
    for match, rule in matches:
        if match is None or blocked(sentence, match.start()):
            continue
        job = (match.group("job") or "").strip().lower()
        if job and (set(job.split()) & _JOB_STOP or len(job.split()) > 4):
            job = ""
        if job:
            kind, category = slot_kind("user.job")
            content = f"The user works as {_article(job)} {job}."
            cand = make(content, kind, category, Tier.WORTH, rule=rule, confidence=0.85, lang="en",
                        slot="user.job", value=job)  # fmt: skip
            hits.append((cand, match.start(), match.end("job")))
        org = _org(match.group("org"))
        if org:
            kind, category = slot_kind("user.employer")
            cand = make(f"The user works at {org}.", kind, category, Tier.WORTH, rule=rule.replace("job", "employer"),
                        confidence=0.8, lang="en", slot="user.employer", value=org)  # fmt: skip
            hits.append((cand, match.start(), match.start("org") + len(org)))
    return hits


# ---------------------------------------------------------------- tools and stack

def tool_content(tool: Tool, *, lang: str) -> str:
    user_level = tool.slot is not None and tool.slot.startswith("user.")
    if lang == "zh":
        return f"用户使用 {tool.display}。" if user_level else f"用户的项目使用 {tool.display}。"
    return f"The user uses {tool.display}." if user_level else f"The user's project uses {tool.display}."


def tool_hit(tool: Tool, start: int, end: int, *, rule: str, lang: str, category: Category | None = None,
             tier: Tier = Tier.WORTH, confidence: float = 0.85) -> Hit:  # fmt: skip
    kind, default_category = slot_kind(tool.slot)
    cand = make(tool_content(tool, lang=lang), kind, category or default_category, tier, rule=rule,
                confidence=confidence, lang=lang, slot=tool.slot, value=tool.canonical)  # fmt: skip
    return cand, start, end


_TOOL_SUBJ = (
    r"(?<![\w'])(?P<subj>i|we|my\s+team|our\s+team|our\s+company|my\s+company|(?:our|my|the|this)\s+(?:project|"
    r"app|backend|frontend|codebase|code\s+base|repo|stack|service|services|api|monorepo|product|startup|infra|"
    r"platform|site|website|server|side\s+project|setup))"
)
_TOOL_STMT_RE = re.compile(
    _TOOL_SUBJ + r"(?P<be>'re|'m|'s|\s+are|\s+am|\s+is|\s+have|\s+has|'ve)?\s+" + _ADV + r"(?:been\s+)?"
    r"(?P<verb>use|uses|using|rely\s+on|relies\s+on|run\s+on|runs\s+on|work\s+with|works\s+with|code\s+in|"
    r"write\s+in|program\s+in|develop\s+in|built\s+(?:with|on|in)|written\s+in|based\s+on|standardi[sz]ed\s+on|"
    r"switched\s+to|moved\s+to|migrated\s+to|settled\s+on|went\s+with|go\s+with|stick\s+with|on)\b"
    r"(?P<span>" + _SPAN + r"{1,120})",
    re.I,
)
_TOOL_NOUN_RE = re.compile(
    r"\b(?:my|our)\s+(?:main\s+|primary\s+|preferred\s+|default\s+|go-to\s+)?(?P<noun>package\s+manager|"
    r"database|db|tech\s+stack|stack|programming\s+language|language|framework|editor|ide|os|operating\s+system|"
    r"orm|test\s+runner|testing\s+framework|cloud|backend|frontend)\s+(?:is|are|=)\s+(?P<span>" + _SPAN + r"{1,80})",
    re.I,
)
_NOUN_SLOT = {"package manager": _PM, "database": _DB, "db": _DB, "programming language": _LANG, "language": _LANG,
              "framework": _FW, "editor": "user.editor", "ide": "user.editor", "os": "user.os",
              "operating system": "user.os", "orm": "project.orm", "test runner": "project.test_framework",
              "testing framework": "project.test_framework", "cloud": "project.cloud"}  # fmt: skip
_SPAN_CUT = re.compile(
    r"\b(?:because|since|but|although|though|instead|rather|not|except|which|when|whenever|where|if|unless|so|"
    r"to|until|while|whereas|than|over|at\s+work|anymore|any\s+more|now\s+that)\b|\s-\s",
    re.I,
)
_DECISION_VERBS = ("switched", "moved", "migrated", "settled", "went")
_NO_USE_RE = re.compile(
    r"(?<![\w'])(?P<subj>i|we)\s+(?:don't|do\s+not|dont|never|no\s+longer|won't|don't\s+ever)\s+use\s+"
    r"(?P<obj>[^.;!?,]{1,60})",
    re.I,
)
_OBJ_PRONOUN = frozenset("it that this them those these him her anything something one".split())


def _cut(span: str) -> str:
    match = _SPAN_CUT.search(span)
    return span[: match.start()] if match else span


def statements(pattern: re.Pattern[str], sentence: str) -> list[re.Match[str]]:
    """All matches of a subject-verb-span pattern, a later statement allowed inside an earlier one's span."""
    found: list[re.Match[str]] = []
    pos = 0
    while pos < len(sentence) and (match := pattern.search(sentence, pos)) is not None:
        found.append(match)
        pos = match.start("span")
    return found



def _tool_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for match in statements(_TOOL_STMT_RE, sentence):
        verb = match.group("verb").lower()
        if (verb == "on" and not match.group("be")) or blocked(sentence, match.start()):
            continue
        subj_is_user = match.group("subj").lower() == "i"
        category = Category.DECISION if verb.startswith(_DECISION_VERBS) else None
        offset = match.start("span")
        for tool, start, end in find_tools(_cut(match.group("span"))):
            if tool.slot and tool.slot.startswith("user.") and not subj_is_user:
                continue
            hits.append(tool_hit(tool, match.start(), offset + end, rule="en.tool.use", lang="en",
                                 category=category))  # fmt: skip
    match = _TOOL_NOUN_RE.search(sentence)
    if match and not blocked(sentence, match.start()):
        wanted = _NOUN_SLOT.get(" ".join(match.group("noun").lower().split()))
        offset = match.start("span")
        for tool, start, end in find_tools(_cut(match.group("span"))):
            if wanted is None or tool.slot == wanted:
                hits.append(tool_hit(tool, match.start(), offset + end, rule="en.tool.my_noun", lang="en"))
    match = _NO_USE_RE.search(sentence)
    if match and not blocked(sentence, match.start()):
        obj = _cut(match.group("obj")).strip()
        if obj and obj.split()[0].lower() not in _OBJ_PRONOUN and len(obj.split()) <= 6:
            if match.group("subj").lower() == "i":
                cand = make(f"The user does not use {third_person(obj)}.", Kind.SEMANTIC, Category.FACT,
                            Tier.WORTH, rule="en.tool.no_use", confidence=0.75, lang="en")  # fmt: skip
            else:
                cand = make(f"Do not use {third_person(obj)}.", Kind.PROCEDURAL, Category.CONSTRAINT, Tier.WORTH,
                            rule="en.tool.no_use", confidence=0.75, lang="en")  # fmt: skip
            hits.append((cand, match.start(), match.start("obj") + len(obj)))
    return hits


_NEGATING = re.compile(
    r"(?:\bnot|\binstead\s+of|\brather\s+than|\bno\s+longer|\bdon't\s+use|\bdo\s+not\s+use|\bnever\s+use|"
    r"\bstop\s+using|\bnot\s+using|\bfrom|\bover|\breplace|\breplacing|\bditch(?:ed)?|\bdrop(?:ped)?)"
    r"\s+(?:the\s+|using\s+)?$",
    re.I,
)
_CORRECTION_CUE = re.compile(
    r"^(?:no|nope|nah|wrong|actually|correction|i\s+said|i\s+meant|it's|it\s+is|its|we\s+use|i\s+use|use)\b",
    re.I,
)


def tool_pair_hits(sentence: str, *, lang: str, negating: re.Pattern[str], cue: re.Pattern[str]) -> list[Hit]:
    """"pnpm, not npm" / "switched from npm to pnpm": the one positive tool of a slot where another is negated."""
    tools = find_tools(sentence)
    if len(tools) < 2:
        return []
    positive: dict[str, list[tuple[Tool, int, int]]] = {}
    negated: dict[str, set[str]] = {}
    soft = True  # only "from"/"over" style negations: a decision or preference, not a correction
    for tool, start, end in tools:
        if tool.slot is None:
            continue
        neg = negating.search(sentence[max(0, start - 30) : start])
        if neg:
            negated.setdefault(tool.slot, set()).add(tool.canonical)
            soft = soft and neg.group().strip().lower().split()[0] in ("from", "over", "从", "把")
        else:
            positive.setdefault(tool.slot, []).append((tool, start, end))
    hits: list[Hit] = []
    for slot, found in positive.items():
        canon = {tool.canonical for tool, _, _ in found}
        if slot not in negated or len(canon) != 1 or canon & negated[slot]:
            continue
        tool = found[0][0]
        if soft and not cue.search(sentence):
            category = Category.DECISION if re.search(r"\bfrom\b|从|把", sentence) else Category.PREFERENCE
            hits.append(tool_hit(tool, 0, len(sentence), rule=f"{lang}.tool.switch", lang=lang, category=category))
        else:
            hits.append(tool_hit(tool, 0, len(sentence), rule=f"{lang}.correction.tool_pair", lang=lang,
                                 tier=Tier.MUST, confidence=0.9))  # fmt: skip
    return hits


# ---------------------------------------------------------------- preferences, diet, small profile facts

_LIKE_RE = re.compile(
    _I + r"\s*" + _ADV + r"(?P<verb>prefer|like|love|enjoy|adore|dislike|hate|detest|loathe|can't\s+stand|"
    r"cannot\s+stand|don't\s+(?:really\s+)?like|do\s+not\s+like|don't\s+enjoy|don't\s+love|really\s+don't\s+like|"
    r"(?:'m|\s+am)\s+not\s+(?:a\s+(?:big\s+|huge\s+)?fan\s+of|into)|(?:'m|\s+am)\s+(?:a\s+(?:big\s+|huge\s+)?"
    r"fan\s+of|into))\s+(?P<obj>" + _SPAN + r"{1,100})",
    re.I,
)
_OBJ_CUT = re.compile(
    r"\b(?:because|since|but|although|though|when|whenever|if|unless|so\s+that|as\s+long\s+as|except|while|"
    r"whereas|and\s+i|and\s+we|which|cause|cuz)\b|,\s*(?:so|and\s+i|which)\b",
    re.I,
)
_OBJ_REJECT = re.compile(
    r"^(?:it|that|this|these|those|them|him|her|you|your|yours|what|how|the\s+way|where|which|who|some|any|one|"
    r"option|version|the\s+(?:idea|suggestion|answer|first|second|third|last|previous|new|other|latter|former)|"
    r"to\s+know|to\s+see|to\s+ask|to\s+try)\b"
    r"|\b(?:your|this|that)\s+(?:answer|response|suggestion|idea|solution|approach|code|one|version|option|plan)\b",
    re.I,
)
_VERB_3RD = {"prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys", "adore": "loves"}
_POSITIVE_PREF = ("prefer", "like", "love", "enjoy", "adore", "'m a", "am a", "'m into", "am into")


def _pref_hits(sentence: str) -> list[Hit]:
    match = _LIKE_RE.search(sentence)
    if match is None or blocked(sentence, match.start()):
        return []
    obj = match.group("obj")
    cut = _OBJ_CUT.search(obj)
    obj = (obj[: cut.start()] if cut else obj).strip(" ,:-\"'")
    if not obj or _OBJ_REJECT.search(obj) or len(obj.split()) > 10:
        return []
    verb = " ".join(match.group("verb").lower().split())
    positive = verb.startswith(_POSITIVE_PREF) and "not" not in verb
    end = match.start("obj") + match.group("obj").find(obj) + len(obj)
    tools = find_tools(obj)
    if positive and tools and re.match(r"^(?:using\s+|to\s+use\s+)?$", obj[: tools[0][1]], re.I):
        tool = tools[0][0]
        if tool.slot is not None:
            return [tool_hit(tool, match.start(), end, rule="en.pref.tool", lang="en", category=Category.PREFERENCE)]
    verb3 = _VERB_3RD.get(verb, "likes") if positive else "dislikes"
    cand = make(f"The user {verb3} {third_person(obj)}.", Kind.SEMANTIC, Category.PREFERENCE, Tier.WORTH,
                rule="en.pref.like" if positive else "en.pref.dislike", confidence=0.75, lang="en")  # fmt: skip
    return [(cand, match.start(), end)]


_DIET_RE = re.compile(
    _IM + r"\s+" + _ADV + r"(?:a\s+)?(?:strict\s+)?(?P<diet>vegetarian|vegan|pescatarian|pescetarian|keto|halal|"
    r"kosher|lactose[- ]intolerant|gluten[- ]free|celiac|coeliac|diabetic)\b",
    re.I,
)
_DIET_SLOTTED = {"vegetarian": "vegetarian", "vegan": "vegan", "pescatarian": "pescatarian",
                 "pescetarian": "pescatarian", "keto": "keto", "halal": "halal", "kosher": "kosher"}  # fmt: skip
_ALLERGY_RE = re.compile(
    _IM + r"\s+" + _ADV + r"(?:(?:very|severely|mildly|a\s+bit)\s+)?allergic\s+to\s+(?P<obj>[^.;!?,]{1,40})"
    r"|" + _I + r"\s+have\s+(?:an?\s+|a\s+severe\s+)?(?P<obj2>[\w -]{1,30}?)\s+allergy\b",
    re.I,
)
_NO_EAT_RE = re.compile(
    _I + r"\s+" + _ADV + r"(?:don't|do\s+not|never|can't|cannot)\s+(?:eat|drink)\s+(?P<obj>[^.;!?,]{1,40})", re.I
)
_TIMEZONE_RE = re.compile(
    r"\bmy\s+time\s?zone\s+is\s+(?P<tz>[\w+:/-]+(?:\s*[+-]\s*\d{1,2})?)"
    r"|" + _IM + r"\s+(?:in|on)\s+(?P<tz2>(?:UTC|GMT)\s?[+-]\s?\d{1,2}(?::?\d{2})?|PST|PDT|EST|EDT|CST|CET|CEST|JST|"
    r"IST|BST|AEST|MST|Pacific|Eastern|Central)(?:\s+time(?:\s*zone)?)?\b",
    re.I,
)
_BIRTHDAY_RE = re.compile(r"\bmy\s+birthday\s+is\s+(?:on\s+)?(?P<day>[^.;!?,]{3,25})", re.I)


def _profile_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    match = _DIET_RE.search(sentence)
    if match and not blocked(sentence, match.start()):
        diet = match.group("diet").lower().replace(" ", "-")
        slot = "user.diet" if diet in _DIET_SLOTTED else None
        kind, category = Kind.SEMANTIC, Category.PROFILE
        cand = make(f"The user is {diet}.", kind, category, Tier.WORTH, rule="en.profile.diet", confidence=0.85,
                    lang="en", slot=slot, value=_DIET_SLOTTED.get(diet))  # fmt: skip
        hits.append((cand, match.start(), match.end()))
    for pattern, template, rule in (
        (_ALLERGY_RE, "The user is allergic to {}.", "en.profile.allergy"),
        (_NO_EAT_RE, "The user does not eat {}.", "en.profile.no_eat"),
    ):
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        obj = _cut(match.group("obj") or match.group(match.lastindex or 0) or "").strip()
        if not obj or obj.split()[0].lower() in _OBJ_PRONOUN:
            continue
        cand = make(template.format(third_person(obj)), Kind.SEMANTIC, Category.PROFILE, Tier.WORTH, rule=rule,
                    confidence=0.8, lang="en")  # fmt: skip
        hits.append((cand, match.start(), match.end()))
    for pattern, slot, template, rule in (
        (_TIMEZONE_RE, "user.timezone", "The user's timezone is {}.", "en.profile.timezone"),
        (_BIRTHDAY_RE, "user.birthday", "The user's birthday is {}.", "en.profile.birthday"),
    ):
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        value = next(group for group in match.groups() if group).strip()
        cand = make(template.format(value), Kind.SEMANTIC, Category.PROFILE, Tier.WORTH, rule=rule,
                    confidence=0.8, lang="en", slot=slot, value=value)  # fmt: skip
        hits.append((cand, match.start(), match.end()))
    return hits


# ---------------------------------------------------------------- how the agent should reply

_PERSIST = (
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|by\s+default|"
    r"every\s+time|from\s+here\s+on|all\s+the\s+time|in\s+general|any\s+more|anymore)\b"
)
_PERSIST_RE = re.compile(_PERSIST, re.I)
_REPLY_NOUN_RE = re.compile(
    r"\b(?:answers|responses|replies|explanations|outputs|messages|summaries|you\s+(?:answer|reply|respond|"
    r"explain|write)|your\s+(?:answers?|responses?|replies|reply|explanations?|output|messages?|writing))\b"
    r"|\b(?:answer|response|reply|explanation)\b(?=.*" + _PERSIST + ")",
    re.I,
)
_STYLE_RE = re.compile(
    r"\b(?:(?P<concise>concise|brief|short|shorter|succinct|terse|to\s+the\s+point|compact|tl;?dr|less\s+verbose|"
    r"fewer\s+words)|(?P<long>verbose|long|longer|lengthy|wordy|rambling|long-winded|walls?\s+of\s+text)|"
    r"(?P<detailed>detailed|thorough|in-depth|in\s+depth|comprehensive|more\s+details?|elaborate)|"
    r"(?P<bullet_points>bullet\s+points?|bulleted|bullets|bullet\s+lists?))\b",
    re.I,
)
_STYLE_NEG_RE = re.compile(
    r"\b(?:not|don't|dont|do\s+not|no|never|less|hate|dislike|stop|without|too|avoid|fewer|overly|so)\s+"
    r"(?:\w+\s+){0,2}$",
    re.I,
)
_PREF_CUE_RE = re.compile(
    _I + r"\s*" + _ADV + r"(?:prefer|like|love|want|need|appreciate|enjoy|hate|dislike|don't\s+like|do\s+not\s+like|"
    r"can't\s+stand|'d\s+prefer|would\s+prefer|'d\s+like|would\s+like|'d\s+rather|would\s+rather)\b",
    re.I,
)
_FEEDBACK_CUE_RE = re.compile(
    r"\byour\s+(?:answers|responses|replies|explanations|messages)\s+(?:are|were|have\s+been|get|seem|keep)\b"
    r"|\byou(?:'re|\s+are)\s+(?:being\s+)?(?:way\s+|far\s+|a\s+bit\s+|too\s+|so\s+|really\s+)*(?:verbose|wordy)",
    re.I,
)
_IMPERATIVE_CUE_RE = re.compile(
    _LEAD + r"(?:please\s+|pls\s+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?(?:be|keep|make|give|write|"
    r"use|answer|reply|respond|stop|don't|do\s+not|never|always|avoid|no\s+more|limit|from\s+now\s+on|"
    r"going\s+forward|in\s+(?:the\s+)?future|format|explain)\b",
    re.I,
)
_STYLE_CONTENT = {
    "concise": ("The user prefers concise answers.", "用户喜欢简洁的回复。"),
    "detailed": ("The user prefers detailed answers.", "用户喜欢详细的回复。"),
    "bullet_points": ("The user prefers answers in bullet points.", "用户喜欢分点列出的回复。"),
}
LANGUAGE_CODES = {"english": "en", "chinese": "zh", "mandarin": "zh", "japanese": "ja", "french": "fr",
              "german": "de", "spanish": "es", "korean": "ko", "portuguese": "pt", "italian": "it",
              "russian": "ru", "中文": "zh", "汉语": "zh", "普通话": "zh", "英文": "en", "英语": "en",
              "日语": "ja", "日文": "ja", "韩语": "ko", "法语": "fr", "德语": "de", "西班牙语": "es"}  # fmt: skip
_LANGUAGE_NAMES = {"en": ("English", "英文"), "zh": ("Chinese", "中文"), "ja": ("Japanese", "日语"),
                   "fr": ("French", "法语"), "de": ("German", "德语"), "es": ("Spanish", "西班牙语"),
                   "ko": ("Korean", "韩语"), "pt": ("Portuguese", "葡萄牙语"), "it": ("Italian", "意大利语"),
                   "ru": ("Russian", "俄语")}  # fmt: skip
_LANG_WORDS = r"(?P<lang>english|chinese|mandarin|japanese|french|german|spanish|korean|portuguese|italian|russian)"
_REPLY_LANG_RE = re.compile(
    r"\b(?:reply|respond|answer|write|talk|speak|communicate|chat|explain(?:\s+things)?)\s+(?:to\s+me\s+|back\s+)?"
    r"(?:only\s+|always\s+)?in\s+" + _LANG_WORDS + r"\b"
    r"|\b(?:answers|responses|replies|explanations)\s+(?:to\s+be\s+)?in\s+" + _LANG_WORDS.replace("lang", "lang2"),
    re.I,
)


def reply_hit(slot: str, value: str, *, mode: str, lang: str, rule: str, span: tuple[int, int]) -> Hit:
    """A reply-style / reply-language candidate; `mode` is "pref", "rule", "soft_rule" or "feedback"."""
    if slot == "user.reply_style":
        content = _STYLE_CONTENT[value][1 if lang == "zh" else 0]
    else:
        english, chinese = _LANGUAGE_NAMES[value]
        content = f"用户希望用{chinese}回复。" if lang == "zh" else f"The user wants replies in {english}."
    kind, category, tier = {
        "pref": (Kind.SEMANTIC, Category.PREFERENCE, Tier.WORTH),
        "soft_rule": (Kind.PROCEDURAL, Category.CONSTRAINT, Tier.WORTH),
        "rule": (Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST),
        "feedback": (Kind.PROCEDURAL, Category.FEEDBACK, Tier.MUST),
    }[mode]
    cand = make(content, kind, category, tier, rule=rule, confidence=0.85 if tier is Tier.MUST else 0.75,
                lang=lang, slot=slot, value=value)  # fmt: skip
    return cand, span[0], span[1]


def _reply_mode(sentence: str) -> str | None:
    persistent = _PERSIST_RE.search(sentence) is not None
    if _FEEDBACK_CUE_RE.search(sentence):
        return "feedback"
    if _PREF_CUE_RE.search(sentence):
        return "rule" if persistent else "pref"
    if _IMPERATIVE_CUE_RE.match(sentence):
        return "rule" if persistent else "soft_rule"
    return None


def _reply_hits(sentence: str) -> list[Hit]:
    match = _REPLY_LANG_RE.search(sentence)
    if match and not blocked(sentence, match.start(), hypothetical=False):
        mode = _reply_mode(sentence)
        if mode is not None:
            value = LANGUAGE_CODES[(match.group("lang") or match.group("lang2")).lower()]
            return [reply_hit("user.reply_language", value, mode=mode, lang="en", rule="en.reply.language",
                              span=(0, len(sentence)))]  # fmt: skip
    style = _STYLE_RE.search(sentence)
    if style is None:
        return []
    has_noun = _REPLY_NOUN_RE.search(sentence) is not None
    bare_be = re.match(_LEAD + r"(?:please\s+)?(?:be|keep\s+it|keep\s+things|stay)\s+(?:\w+\s+){0,2}$",
                       sentence[: style.start()], re.I)  # fmt: skip
    if not (has_noun or bare_be or style.lastgroup == "bullet_points"):
        return []
    mode = _reply_mode(sentence)
    if mode is None or blocked(sentence, style.start(), hypothetical=False):
        return []
    negated = _STYLE_NEG_RE.search(sentence[: style.start()]) is not None
    value = {("concise", False): "concise", ("concise", True): "detailed", ("long", False): "detailed",
             ("long", True): "concise", ("detailed", False): "detailed", ("detailed", True): "concise",
             ("bullet_points", False): "bullet_points"}.get((style.lastgroup or "", negated))  # fmt: skip
    if value is None:
        return []
    return [reply_hit("user.reply_style", value, mode=mode, lang="en", rule="en.reply.style",
                      span=(0, len(sentence)))]  # fmt: skip


# ---------------------------------------------------------------- standing rules for the agent

_RULE_RE = re.compile(
    _LEAD + r"(?P<lead>(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|from\s+here\s+on"
    r"(?:\s+out)?|as\s+a\s+(?:general\s+)?rule|by\s+default|in\s+general|every\s+time|each\s+time)\s*[,:-]?\s*)?"
    r"(?P<cond>(?:when|whenever|if\s+you|for|in|while)\s[^,]{1,60},\s*)?"
    r"(?:please\s+|pls\s+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?(?:you\s+)?"
    r"(?P<mod>don't\s+ever|do\s+not\s+ever|don't|do\s+not|dont|never\s+ever|never|always|avoid|stop|quit|"
    r"should\s+never|should\s+always|must\s+always|must\s+never|shouldn't|should\s+not|must\s+not|mustn't|"
    r"make\s+sure\s+to|make\s+sure\s+you|be\s+sure\s+to|remember\s+to|please)?\s*(?P<rest>[a-z][^\n]{1,200})$",
    re.I,
)
_TAIL_PERSIST_RE = re.compile(
    r"[\s,]*(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|from\s+here\s+on(?:\s+out)?"
    r"|every\s+time|always|by\s+default)[\s.!]*$",
    re.I,
)
_MOD_CANON = {"don't ever": "do not ever", "do not ever": "do not ever", "don't": "do not", "do not": "do not",
              "dont": "do not", "shouldn't": "do not", "should not": "do not", "must not": "do not",
              "mustn't": "do not", "never ever": "never", "never": "never", "should never": "never",
              "must never": "never", "always": "always", "should always": "always", "must always": "always",
              "make sure to": "always", "make sure you": "always", "be sure to": "always",
              "remember to": "remember to", "avoid": "avoid", "stop": "stop", "quit": "stop", "please": "always",
              "": "always"}  # fmt: skip
_NOT_IMPERATIVE = frozenset(
    "worry bother mind hesitate panic stress feel know get care be forget remember understand think see have want "
    "need like love hate agree recall sure mean wait rush apologise thank it that this i we my the a an there you "
    "your here".split()
)
_IMPERATIVE_VERBS = frozenset(
    "use write reply respond answer add put give call keep make include format explain stick run test check ask "
    "show return follow mention suggest recommend start end wrap comment document type name import install "
    "commit push deploy assume default output print log send speak talk try limit cite link quote translate "
    "summarize summarise list number sort prefix indent capitalize abbreviate generate create modify change edit "
    "rename delete remove mock hardcode inline split merge lint prioritize prioritise optimize refactor rewrite "
    "repeat ramble guess speculate hallucinate lie pad sugarcoat flatter overexplain apologize apologise prefer "
    "double-check verify review read go let set leave respect stay avoid skip emit raise throw catch handle "
    "validate sign annotate declare store cache touch open close copy paste bump pin upgrade downgrade switch "
    "target support mark tag greet address refer".split()
)
_ONE_OFF = re.compile(
    r"\b(?:yet|this\s+time|for\s+now|right\s+now|today|tonight|tomorrow|at\s+the\s+moment|this\s+(?:file|function|"
    r"one|line|test|pr|step|method|class|branch|commit|case)|that\s+(?:file|function|one|line)|in\s+this\s+case|"
    r"until|here|above|below)\b",
    re.I,
)
_PRONOUN_ONLY = re.compile(r"^[a-z'-]+(?:\s+(?:it|that|this|them|those|these|so|there|anything|again|up|on))+$",
                           re.I)  # fmt: skip
_FEEDBACK_WORDS = re.compile(r"\b(?:again|anymore|any\s+more|like\s+you\s+did|as\s+you\s+did|keep)\b", re.I)


def _rule_hits(sentence: str) -> list[Hit]:
    body = sentence.rstrip(" .!")
    tail = _TAIL_PERSIST_RE.search(body)
    if tail and tail.start() > 0:
        body = body[: tail.start()]
    match = _RULE_RE.match(body)
    if match is None:
        return []
    lead, mod = match.group("lead"), " ".join((match.group("mod") or "").lower().split())
    persistent = bool(lead or tail)
    if not mod and not persistent:
        return []
    rest = match.group("rest").strip(" ,")
    first = rest.split()[0].lower()
    canon = _MOD_CANON[mod]
    if canon in ("always", "remember to") or mod == "":
        if first not in _IMPERATIVE_VERBS:
            return []
    elif first in _NOT_IMPERATIVE or not first.replace("-", "").isalpha():
        return []
    if (_ONE_OFF.search(rest) and not persistent) or _PRONOUN_ONLY.match(rest):
        return []
    if len(rest.split()) == 1 and first not in _IMPERATIVE_VERBS:
        return []
    if canon in ("always", "remember to") and first in ("use", "stick", "switch", "prefer"):
        tools = find_tools(rest)
        if tools and tools[0][0].slot is not None and len(rest[: tools[0][1]].split()) <= 2:
            return [tool_hit(tools[0][0], 0, len(sentence), rule="en.rule.use_tool", lang="en", tier=Tier.MUST,
                             confidence=0.9)]  # fmt: skip
    cond = match.group("cond") or ""
    content = sentence_case(f"{cond}{canon} {third_person(rest)}")
    category = Category.FEEDBACK if canon == "stop" or _FEEDBACK_WORDS.search(rest) else Category.CONSTRAINT
    cand = make(content, Kind.PROCEDURAL, category, Tier.MUST, rule=f"en.rule.{canon.replace(' ', '_')}",
                confidence=0.9, lang="en")  # fmt: skip
    return [(cand, 0, len(sentence))]


_WHEN_YOU_RE = re.compile(
    _I + r"\s*" + _ADV + r"(?:don't\s+like|do\s+not\s+like|hate|dislike|can't\s+stand|cannot\s+stand)\s+(?:it\s+)?"
    r"when\s+you(?P<be>'re|\s+are)?\s+(?P<x>[^.;!?]{2,80})",
    re.I,
)


def _when_you_hits(sentence: str) -> list[Hit]:
    """"I hate it when you add emojis": feedback on the agent, the rule "Do not add emojis."."""
    match = _WHEN_YOU_RE.search(sentence)
    if match is None or blocked(sentence, match.start(), hypothetical=False):
        return []
    action = third_person(match.group("x").strip(" ,"))
    content = sentence_case(f"do not {'be ' if match.group('be') else ''}{action}")
    cand = make(content, Kind.PROCEDURAL, Category.FEEDBACK, Tier.MUST, rule="en.rule.when_you", confidence=0.85,
                lang="en")  # fmt: skip
    return [(cand, match.start(), match.end())]


# ---------------------------------------------------------------- remember / forget / corrections

_REMEMBER_RE = re.compile(
    _LEAD + r"(?:please\s+|pls\s+|kindly\s+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|i\s+(?:want|need)"
    r"\s+you\s+to\s+|you\s+(?:should|need\s+to|must|have\s+to)\s+)?(?:also\s+|always\s+|just\s+)?"
    r"(?P<verb>remember|don't\s+forget|do\s+not\s+forget|never\s+forget|keep\s+in\s+mind|bear\s+in\s+mind|"
    r"for\s+future\s+reference|note\s+for\s+(?:the\s+)?future|"
    r"make\s+a\s+note|take\s+a\s+note|note\s+down|take\s+note|memori[sz]e|save\s+(?:this|that)\s+(?:to|in)\s+"
    r"(?:your\s+)?memory|add\s+(?:this|that)\s+to\s+(?:your\s+)?memory)\b"
    r"(?:\s+(?:of\s+)?(?P<det>this|that|the\s+following)\b)?\s*(?P<sep>[:,;-])?\s*(?P<p>.*)$",
    re.I,
)
_PAYLOAD_START = re.compile(
    r"^(?:i|i'm|i've|i'd|i'll|im|my|we|we're|we've|our|you|you're|your|the|this|there|it's|he|she|they|to|"
    r"always|never|don't|do\s+not|use|avoid|[A-Z0-9])",
)
_RULE_START = re.compile(r"^(?:to\s|always\b|never\b|don't\b|do\s+not\b|use\b|avoid\b|you\s+(?:should|must)\b)",
                         re.I)  # fmt: skip


def _remember_hits(sentence: str) -> list[Hit] | None:
    """None when the sentence is not a remember request; a list (possibly empty) when it is."""
    match = _REMEMBER_RE.match(sentence)
    if match is None:
        return None
    payload = match.group("p").strip(" \"'")
    lowered = payload.lower()
    if not payload or lowered in _OBJ_PRONOUN or lowered.startswith(("when ", "what ", "how ", "where ", "me ")):
        return []
    explicit = match.group("sep") or match.group("det") in ("this", "the following")
    if not (explicit or _PAYLOAD_START.match(payload)):
        return []
    offset = match.start("p") + match.group("p").find(payload)
    inner = _fact_hits(payload) or _rule_hits(payload) or _reply_hits(payload)
    if inner:
        return [must(hit, "en.remember", start=0, end=len(sentence)) for hit in shift(inner, offset)]
    if lowered.startswith("to "):
        content = sentence_case("remember " + third_person(payload))
        kind, category = Kind.PROCEDURAL, Category.CONSTRAINT
    else:
        content = sentence_case(third_person(payload))
        kind, category = (Kind.PROCEDURAL, Category.CONSTRAINT) if _RULE_START.match(payload) else (
            Kind.SEMANTIC, Category.FACT)
    cand = make(content, kind, category, Tier.MUST, rule="en.remember", confidence=0.95, lang="en")
    return [(cand, 0, len(sentence))]


_FORGET_RE = re.compile(
    _LEAD + r"(?:please\s+|pls\s+|kindly\s+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|you\s+(?:can|should|"
    r"may|could)\s+(?:now\s+|just\s+)?|i\s+(?:want|need)\s+you\s+to\s+)?(?:also\s+|just\s+)?"
    r"(?P<verb>forget(?:\s+about)?|stop\s+remembering|don't\s+remember|do\s+not\s+remember|unlearn|delete|erase|"
    r"remove|drop|clear|wipe)\b\s*"
    r"(?P<all>everything\s+(?:you\s+know\s+|you\s+remember\s+|you\s+have\s+)?(?:about|on)\s+me\b)?"
    r"(?:what\s+(?:i\s+(?:said|told\s+you|mentioned|shared)|you\s+know|you\s+remember)\s+(?:about|regarding)\s+|"
    r"that\s+)?(?P<p>.*)$",
    re.I,
)
_PERSONAL = re.compile(r"\b(?:i|i'm|i've|my|me|mine|we|our|us)\b", re.I)
_MEMORY_WORDS = re.compile(
    r"\b(?:memory|memories|what\s+you\s+(?:know|remember|stored|saved)|about\s+me)\b|\bmy\s+(?:personal\s+)?"
    r"(?:info|information|data|details|address|name|phone(?:\s+number)?|email|birthday|location|nickname)\b",
    re.I,
)
_VAGUE = re.compile(r"^(?:(?:about\s+)?(?:it|that|this|me)|(?:what|everything|all)\s+i\s+(?:just\s+)?(?:said|told\s+"
                    r"you|mentioned)|i\s+(?:said|mentioned)\s+(?:that|it|this))$", re.I)  # fmt: skip
_FORGET_SLOTS = (
    (re.compile(r"\b(?:nick\s?name|what\s+to\s+call\s+me|call\s+me)\b", re.I), "user.address_as"),
    (re.compile(r"\bname\b", re.I), "user.name"),
    (re.compile(r"\b(?:address|where\s+i\s+live|live\s+in|location|city|moved)\b", re.I), "user.location"),
    (re.compile(r"\b(?:employer|company|where\s+i\s+work|work\s+(?:at|for))\b", re.I), "user.employer"),
    (re.compile(r"\b(?:job|role|title|occupation|profession)\b", re.I), "user.job"),
    (re.compile(r"\bphone|mobile\s+number\b", re.I), "user.phone"),
    (re.compile(r"\be-?mail\b", re.I), "user.email"),
    (re.compile(r"\b(?:birthday|date\s+of\s+birth)\b", re.I), "user.birthday"),
    (re.compile(r"\btime\s?zone\b", re.I), "user.timezone"),
    (re.compile(r"\b(?:diet|vegetarian|vegan)\b", re.I), "user.diet"),
    (re.compile(r"\bpackage\s+manager\b", re.I), _PM),
    (re.compile(r"\bdatabase\b", re.I), _DB),
)


def forget_target(payload: str, inner: list[Hit]) -> tuple[str | None, str | None, Kind, Category]:
    """The slot (and value) a forget request names, from a parsed statement or from keywords."""
    for cand, _, _ in inner:
        if cand.slot:
            return cand.slot, cand.value, cand.kind, cand.category
    for tool, _, _ in find_tools(payload):
        if tool.slot:
            return tool.slot, tool.canonical, Kind.SEMANTIC, Category.FACT
    for pattern, slot in _FORGET_SLOTS:
        if pattern.search(payload):
            kind, category = slot_kind(slot)
            return slot, None, kind, category
    if inner:
        return None, None, inner[0][0].kind, inner[0][0].category
    return None, None, Kind.SEMANTIC, Category.PROFILE


def _forget_hits(sentence: str) -> list[Hit] | None:
    match = _FORGET_RE.match(sentence)
    if match is None:
        return None
    payload = match.group("p").strip(" \"'.!")
    verb = match.group("verb").lower()
    if match.group("all"):
        cand = make("Everything remembered about the user.", Kind.SEMANTIC, Category.PROFILE, Tier.MUST,
                    rule="en.forget.all", confidence=0.9, lang="en", op=Operation.FORGET, extra={"scope": "all"})
        return [(cand, 0, len(sentence))]
    if not payload or _VAGUE.match(payload):
        return []
    if verb.startswith(("forget", "stop", "don't", "do not", "unlearn")):
        if not _PERSONAL.search(payload) and not _MEMORY_WORDS.search(payload):
            return []
    elif not _MEMORY_WORDS.search(payload):
        return []
    payload = re.sub(r"\s+(?:from\s+(?:your\s+)?memory|please)$", "", payload, flags=re.I)
    inner = _fact_hits(payload)
    slot, value, kind, category = forget_target(payload, inner)
    cand = make(sentence_case(third_person(payload)), kind, category, Tier.MUST, rule="en.forget", confidence=0.9,
                lang="en", slot=slot, value=value, op=Operation.FORGET)  # fmt: skip
    return [(cand, 0, len(sentence))]


_CORRECTION_RE = re.compile(
    _LEAD + r"(?P<marker>no|nope|nah|wrong|incorrect|not\s+quite|that's\s+(?:not\s+right|wrong|incorrect|not\s+"
    r"correct)|that\s+is\s+(?:not\s+right|wrong|incorrect)|actually|correction|wait|oops|to\s+clarify|let\s+me\s+"
    r"correct\s+(?:that|myself)|i\s+meant|i\s+mean)\b[\s,:;!.-]*(?P<rest>.+)$",
    re.I,
)


def _fact_hits(sentence: str) -> list[Hit]:
    return (
        _name_hits(sentence) + _place_hits(sentence) + _job_hits(sentence) + _tool_hits(sentence)
        + _pref_hits(sentence) + _profile_hits(sentence)
    )  # fmt: skip


def sentence_hits(sentence: str) -> list[Hit]:
    """All English rule hits for one normalised sentence (see the module docstring)."""
    if not sentence or is_question(sentence):
        return []
    for special in (_forget_hits, _remember_hits):
        hits = special(sentence)
        if hits is not None:
            return hits
    pairs = tool_pair_hits(sentence, lang="en", negating=_NEGATING, cue=_CORRECTION_CUE)
    correction = _CORRECTION_RE.match(sentence)
    if correction:
        offset = correction.start("rest")
        inner = shift(_fact_hits(correction.group("rest")), offset)
        return pairs + [must(hit, "en.correction", start=0) for hit in inner]
    reply = _reply_hits(sentence)
    if reply:
        return reply
    return pairs + _rule_hits(sentence) + (_when_you_hits(sentence) or _fact_hits(sentence))
