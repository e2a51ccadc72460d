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
  lexicon (`find_tools`), slot metadata, the candidate builders (`make`, `fact`, `tool_hit`, `reply_hit`),
  `must`, `tool_pair_hits`, `forget_target` and `LANGUAGE_CODES`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import NamedTuple

from core.extraction.candidates import Candidate, Category, Kind, Operation, Tier

Hit = tuple[Candidate, int, int]


# ================================================================ shared vocabulary and builders


class Tool(NamedTuple):
    canonical: str  # the slot value: lower-case, one spelling per tool ("postgresql" for "PG")
    display: str  # how content names it
    slot: str | None  # None: several can be in use at once (docker, redis, ...)


# One line per slot: `canonical[=Display][(alias|alias)]`; "_" stands for a space. "-" means no slot.
_TOOL_LEXICON = """
project.package_manager: pnpm npm yarn=Yarn bun=Bun pip(pip|pip3) poetry=Poetry uv pipenv=Pipenv
    conda=Conda(conda|miniconda)
project.database: postgresql=PostgreSQL(postgresql|postgres|postgre|pg|pgsql) mysql=MySQL mariadb=MariaDB
    sqlite=SQLite(sqlite|sqlite3) mongodb=MongoDB(mongodb|mongo) oracle=Oracle(oracle_db) dynamodb=DynamoDB
    sql_server=SQL_Server(sql_server|sqlserver|mssql) clickhouse=ClickHouse cockroachdb=CockroachDB
    cassandra=Cassandra
project.language: python=Python(python|python3) typescript=TypeScript(typescript|ts) go=Go(golang|go)
    javascript=JavaScript(javascript|js) rust=Rust java=Java kotlin=Kotlin c#=C#(c#|csharp) c++=C++(c++|cpp)
    ruby=Ruby php=PHP swift=Swift scala=Scala elixir=Elixir dart=Dart
project.framework: react=React(react|reactjs|react.js) vue=Vue(vue|vuejs|vue.js|vue3) angular=Angular
    svelte=Svelte(svelte|sveltekit) next.js=Next.js(next.js|nextjs) nuxt=Nuxt(nuxt|nuxtjs|nuxt.js)
    django=Django flask=Flask fastapi=FastAPI rails=Rails(ruby_on_rails|rails) laravel=Laravel flutter=Flutter
    spring_boot=Spring_Boot(spring_boot|springboot) express=Express(express.js|expressjs|express)
    nestjs=NestJS(nestjs|nest.js)
project.test_framework: pytest jest=Jest vitest=Vitest
project.orm: sqlalchemy=SQLAlchemy prisma=Prisma typeorm=TypeORM drizzle=Drizzle
project.bundler: vite=Vite webpack
project.cloud: aws=AWS gcp=GCP(gcp|google_cloud) azure=Azure
user.editor: vim=Vim neovim=Neovim(neovim|nvim) emacs=Emacs pycharm=PyCharm intellij=IntelliJ(intellij|idea)
    vscode=VS_Code(vscode|vs_code|visual_studio_code)
user.os: macos=macOS(macos|mac|macbook|osx|os_x) linux=Linux windows=Windows ubuntu=Ubuntu
-: docker=Docker kubernetes=Kubernetes(kubernetes|k8s) terraform=Terraform redis=Redis kafka=Kafka
    graphql=GraphQL tailwind=Tailwind_CSS(tailwind|tailwindcss) eslint=ESLint prettier=Prettier ruff=Ruff mypy
    github=GitHub gitlab=GitLab jira=Jira celery=Celery nginx sentry=Sentry elasticsearch=Elasticsearch
    rabbitmq=RabbitMQ node.js=Node.js(node.js|nodejs|node)
"""
_ENTRY_RE = re.compile(r"([^\s=(]+)(?:=([^\s(]+))?(?:\(([^)]*)\))?")


def _load_lexicon(text: str) -> dict[str, Tool]:
    by_alias: dict[str, Tool] = {}
    slot: str | None = None
    for line in text.strip().splitlines():
        if not line.startswith(" "):
            head, line = line.split(":", 1)
            slot = None if head == "-" else head
        for canonical, display, aliases in _ENTRY_RE.findall(line):
            tool = Tool(canonical.replace("_", " "), (display or canonical).replace("_", " "), slot)
            for alias in (aliases or canonical).split("|"):
                by_alias[alias.replace("_", " ")] = tool
    return by_alias


_TOOLS = _load_lexicon(_TOOL_LEXICON)
# Tool names glued to CJK text ("项目用PG") must match too, so the boundaries are ASCII-only.
_TOOL_RE = re.compile(
    r"(?<![A-Za-z0-9_.#+-])(?:"
    + "|".join(re.escape(alias) for alias in sorted(_TOOLS, key=len, reverse=True))
    + r")(?![A-Za-z0-9_#+]|\.[a-z])",
    re.I,
)
# Aliases that are also common words count only in these spellings ("Go", not "go").
_CASE_SENSITIVE = {"go": ("Go", "GO"), "mac": ("Mac",), "node": ("Node",)}


def find_tools(text: str) -> list[tuple[Tool, int, int]]:
    """Known tools named in `text`, with their spans, in order."""
    found = []
    for match in _TOOL_RE.finditer(text):
        alias = match.group().lower()
        if alias in _CASE_SENSITIVE and match.group() not in _CASE_SENSITIVE[alias]:
            continue
        found.append((_TOOLS[alias], match.start(), match.end()))
    return found


def is_tool(text: str) -> bool:
    return text.lower() in _TOOLS


def slot_kind(slot: str | None) -> tuple[Kind, Category]:
    """The kind and category a slot's facts have (profile for the user, fact for the project)."""
    if slot in ("user.reply_style", "user.reply_language"):
        return Kind.SEMANTIC, Category.PREFERENCE
    if slot is not None and slot.startswith("user."):
        return Kind.SEMANTIC, Category.PROFILE
    return Kind.SEMANTIC, Category.FACT


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
    """A rule candidate without sources (the caller adds them)."""
    return Candidate(
        content=content, kind=kind, category=category, tier=tier, confidence=confidence, source_event_ids=(),
        slot=slot, value=value, op=op, lang=lang, origin="rules", rule=rule, extra=extra or {},
    )  # fmt: skip


def fact(
    content: str, slot: str | None, value: str | None, *, rule: str, lang: str, conf: float = 0.85
) -> Candidate:
    """A WORTH fact whose kind and category follow from its slot."""
    kind, category = slot_kind(slot)
    return make(
        content, kind, category, Tier.WORTH, rule=rule, confidence=conf, lang=lang, slot=slot, value=value
    )


def must(hit: Hit, prefix: str, *, start: int = 0, end: int | None = None) -> Hit:
    """The hit raised to MUST (an explicit remember / correction around it), its span widened."""
    cand, hit_start, hit_end = hit
    confidence = max(cand.confidence, 0.9)
    upgraded = dataclasses.replace(cand, tier=Tier.MUST, confidence=confidence, rule=f"{prefix}+{cand.rule}")
    return upgraded, min(start, hit_start), max(end if end is not None else hit_end, hit_end)


def shift(hits: list[Hit], offset: int) -> list[Hit]:
    return [(cand, start + offset, end + offset) for cand, start, end in hits]


def statements(pattern: re.Pattern[str], sentence: str) -> list[re.Match[str]]:
    """All matches of a subject-verb-span pattern, a later statement allowed inside an earlier one's span."""
    found: list[re.Match[str]] = []
    pos = 0
    while pos < len(sentence) and (match := pattern.search(sentence, pos)) is not None:
        found.append(match)
        pos = match.start("span")
    return found


def tool_hit(
    tool: Tool, start: int, end: int, *, rule: str, lang: str, category: Category | None = None,
    tier: Tier = Tier.WORTH, confidence: float = 0.85,
) -> Hit:  # fmt: skip
    """ "The user's project uses X." / "用户的项目使用 X。" for a tool in its slot."""
    user_level = tool.slot is not None and tool.slot.startswith("user.")
    if lang == "zh":
        content = f"用户使用 {tool.display}。" if user_level else f"用户的项目使用 {tool.display}。"
    else:
        content = (
            f"The user uses {tool.display}." if user_level else f"The user's project uses {tool.display}."
        )
    kind, default_category = slot_kind(tool.slot)
    category = category or default_category
    cand = make(content, kind, category, tier, rule=rule, confidence=confidence, lang=lang, slot=tool.slot,
                value=tool.canonical)  # fmt: skip
    return cand, start, end


_SOFT_NEGATIONS = ("from", "over", "instead", "rather", "从", "替换", "代替")
_TOOL_AS_MODIFIER = re.compile(
    r"\s*(?:script|scripts|command|commands|package|packages|version|registry|lock\s*file|lockfile|cache|one|"
    r"config|file|files|module|modules|docs|api|client|driver|server|image|container|plugin|error|issue|bug)\b",
    re.I,
)


def tool_pair_hits(sentence: str, *, lang: str, negating: re.Pattern[str], cue: re.Pattern[str]) -> list[Hit]:
    """ "pnpm, not npm" / "switched from npm to pnpm": the one positive tool of a slot where one is negated.

    A correction (MUST) when the negation is "not ..." or the sentence has a correction cue; "from X to Y",
    "X over Y", "X instead of Y" alone are a decision or a preference (WORTH).
    """
    # A tool naming a thing ("the npm script") is not a choice of tool.
    tools = [t for t in find_tools(sentence) if t[0].slot and not _TOOL_AS_MODIFIER.match(sentence, t[2])]
    if len(tools) < 2:
        return []
    negations = [negating.search(sentence[max(0, start - 30) : start]) for _, start, _ in tools]
    positive: dict[str, set[str]] = {}
    negated: dict[str, set[str]] = {}
    first: dict[str, Tool] = {}
    soft = True
    for (tool, start, end), negation in zip(tools, negations, strict=True):
        slot = tool.slot or ""
        if negation:
            negated.setdefault(slot, set()).add(tool.canonical)
            soft = soft and negation.group().strip().lower().startswith(_SOFT_NEGATIONS)
            continue
        # Only right next to the negated one: "pnpm, not npm", not "pnpm is what fails, not npm".
        near = any(
            other.slot == slot and neg and (0 <= o_start - end <= 14 or 0 <= start - o_end <= 14)
            for (other, o_start, o_end), neg in zip(tools, negations, strict=True)
        )
        if near:
            positive.setdefault(slot, set()).add(tool.canonical)
            first.setdefault(slot, tool)
    hits: list[Hit] = []
    for slot, canonical in positive.items():
        if len(canonical) != 1 or canonical & negated[slot]:
            continue
        if soft and not cue.search(sentence):
            preference = re.search(r"\b(?:prefer|over)\b|偏好|更喜欢", sentence)
            category = Category.PREFERENCE if preference else Category.DECISION
            hits.append(tool_hit(first[slot], 0, len(sentence), rule=f"{lang}.tool.switch", lang=lang,
                                 category=category))  # fmt: skip
        else:
            rule = f"{lang}.correction.tool_pair"
            hits.append(
                tool_hit(first[slot], 0, len(sentence), rule=rule, lang=lang, tier=Tier.MUST, confidence=0.9)
            )
    return hits


# fmt: off
LANGUAGE_CODES = {
    "english": "en", "chinese": "zh", "mandarin": "zh", "japanese": "ja", "french": "fr", "german": "de",
    "spanish": "es", "korean": "ko", "portuguese": "pt", "italian": "it", "russian": "ru", "中文": "zh",
    "汉语": "zh", "普通话": "zh", "英文": "en", "英语": "en", "日语": "ja", "日文": "ja", "韩语": "ko",
    "法语": "fr", "德语": "de", "西班牙语": "es",
}
_LANGUAGE_NAMES = {
    "en": ("English", "英文"), "zh": ("Chinese", "中文"), "ja": ("Japanese", "日语"),
    "fr": ("French", "法语"), "de": ("German", "德语"), "es": ("Spanish", "西班牙语"),
    "ko": ("Korean", "韩语"), "pt": ("Portuguese", "葡萄牙语"), "it": ("Italian", "意大利语"),
    "ru": ("Russian", "俄语"),
}
_STYLE_CONTENT = {
    "concise": ("The user prefers concise answers.", "用户喜欢简洁的回复。"),
    "detailed": ("The user prefers detailed answers.", "用户喜欢详细的回复。"),
    "bullet_points": ("The user prefers answers in bullet points.", "用户喜欢分点列出的回复。"),
}
_REPLY_MODES = {  # how a reply preference was said -> kind, category, tier
    "pref": (Kind.SEMANTIC, Category.PREFERENCE, Tier.WORTH),  # "I prefer short answers"
    "soft_rule": (Kind.PROCEDURAL, Category.CONSTRAINT, Tier.WORTH),  # "keep answers short"
    "rule": (Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST),  # "always keep answers short"
    "feedback": (Kind.PROCEDURAL, Category.FEEDBACK, Tier.MUST),  # "your answers are too long"
}
# fmt: on


def reply_hit(slot: str, value: str, *, mode: str, lang: str, rule: str, end: int) -> Hit:
    """A `user.reply_style` / `user.reply_language` candidate; `mode` is a key of `_REPLY_MODES`."""
    if slot == "user.reply_style":
        content = _STYLE_CONTENT[value][1 if lang == "zh" else 0]
    else:
        english, chinese = _LANGUAGE_NAMES[value]
        content = f"用户希望用{chinese}回复。" if lang == "zh" else f"The user wants replies in {english}."
    kind, category, tier = _REPLY_MODES[mode]
    confidence = 0.85 if tier is Tier.MUST else 0.75
    cand = make(
        content, kind, category, tier, rule=rule, confidence=confidence, lang=lang, slot=slot, value=value
    )
    return cand, 0, end


# fmt: off
_FORGET_SLOTS = tuple((re.compile(pattern, re.I), slot) for pattern, slot in (
    (r"\b(?:nick\s?name|what\s+to\s+call\s+me|call\s+me)\b|昵称|称呼|怎么叫我|叫我", "user.address_as"),
    (r"\bname\b|名字|叫什么|姓名", "user.name"),
    (r"\b(?:address|where\s+i\s+live|live\s+in|location|city|moved)\b|地址|住址|住在|住哪|在哪住|搬",
     "user.location"),
    (r"\b(?:employer|company|where\s+i\s+work|work\s+(?:at|for))\b|公司|单位|在哪上班", "user.employer"),
    (r"\b(?:job|role|title|occupation|profession)\b|工作|职业|职位", "user.job"),
    (r"\bphone|mobile\s+number\b|手机|电话", "user.phone"),
    (r"\be-?mail\b|邮箱", "user.email"),
    (r"\b(?:birthday|date\s+of\s+birth)\b|生日", "user.birthday"),
    (r"\btime\s?zone\b|时区", "user.timezone"),
    (r"\b(?:diet|vegetarian|vegan)\b|吃素|素食|饮食", "user.diet"),
    (r"\bpackage\s+manager\b|包管理", "project.package_manager"),
    (r"\bdatabase\b|数据库", "project.database"),
))
# fmt: on


def forget_target(payload: str, inner: list[Hit]) -> tuple[str | None, str | None, Kind, Category]:
    """The slot (and value) a forget request names: from a parsed statement, a tool, or keywords."""
    for cand, _, _ in inner:
        if cand.slot:
            return cand.slot, cand.value, cand.kind, cand.category
    for tool, _, _ in find_tools(payload):
        if tool.slot:
            return tool.slot, tool.canonical, Kind.SEMANTIC, Category.FACT
    for pattern, slot in _FORGET_SLOTS:
        if pattern.search(payload):
            return (slot, None, *slot_kind(slot))
    if inner:
        return None, None, inner[0][0].kind, inner[0][0].category
    return None, None, Kind.SEMANTIC, Category.PROFILE


# ================================================================ English text helpers

# fmt: off
_ADV = (
    r"(?:(?:currently|now|still|also|actually|really|just|recently|mostly|mainly|primarily|usually|generally|"
    r"normally|basically|definitely|always|honestly|personally|typically|only|all|both|already|finally|"
    r"officially|permanently|much|strongly|totally|very\s+much|kind\s+of|kinda|pretty\s+much)\s+)*"
)
_I = r"(?<![\w'])i"
_IM = r"(?<![\w'])(?:i'm|i\s+am|im)"
_SPAN = r"(?:[^.;!?]|\.(?=\w))"  # a clause: up to the sentence's end, inner dots ("Next.js") included
_HYPOTHETICAL = re.compile(  # anywhere before the statement: "if ...", "for example, ..."
    r"\b(?:if|suppose|supposing|imagine|assuming|assume|what\s+if|in\s+case|hypothetically|let's\s+say|"
    r"lets\s+say|pretend|unless|whether|wish|for\s+example|for\s+instance|e\.g|such\s+as)\b", re.I)
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


def blocked(sentence: str, start: int, *, hypothetical: bool = True) -> bool:
    """True when the text before `start` makes the statement not the user's own current fact."""
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
    r"rarely|generally|also|typically|normally|mainly)\s+)*"
)
_SUBJECT_VERB_RE = re.compile(rf"\b(i|we)\s+({_ADVERBS})([a-z']+)\b", re.I)
_CONTRACTION_RE = re.compile(r"\b(?:i'm|i\s+am|i've|i'd|i'll|we're|we\s+are|we've|we'd|we'll)\b", re.I)
_PRONOUN_RE = re.compile(r"\b(?:myself|ourselves|mine|ours|my|our|me|us|i|we)\b", re.I)
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
    if low in _UNCHANGED_VERBS or low.endswith(("ed", "n't")) or "'" in low:
        return verb
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + ("es" if low.endswith(("s", "sh", "ch", "x", "z", "o")) else "s")


def third_person(text: str) -> str:
    """'I always deploy on Fridays' -> 'the user always deploys on Fridays' (pronouns, simple agreement)."""

    def subject_verb(match: re.Match[str]) -> str:
        verb = match.group(3)
        if verb.lower() in ("'m", "am", "are", "'re") or verb.lower() in _PRONOUN_MAP:
            return match.group()
        subject = "the user" if match.group(1).lower() == "i" else "the user's team"
        return f"{subject} {match.group(2)}{_conjugate(verb)}"

    text = _CONTRACTION_RE.sub(lambda m: _PRONOUN_MAP[" ".join(m.group().lower().split())], text)
    text = _SUBJECT_VERB_RE.sub(subject_verb, text)
    return _PRONOUN_RE.sub(lambda m: _PRONOUN_MAP[m.group().lower()], text)


def sentence_case(text: str) -> str:
    text = text.strip().rstrip(".!?;,: ")
    return text[0].upper() + text[1:] + "." if text else text


# fmt: off
_LEAD = (  # fillers before a request; a short non-Latin chunk too ("好的，remember ...")
    r"^(?:[^\x00-\x7f]{1,12}(?:\s*[,:;!.]\s*|\s+))?(?:(?:and|also|oh|ok|okay|so|btw|by\s+the\s+way|plus|but|"
    r"hey|hi|hello|well|alright|anyway|one\s+more\s+thing|one\s+last\s+thing|last\s+thing|great|cool|thanks|"
    r"thank\s+you|fyi|ps|just\s+so\s+you\s+know|for\s+the\s+record|important|note)\b[\s,:;!.-]*)*"
)
_QUESTION_START = re.compile(
    r"^(?:(?:and|so|but|also|oh|hey|ok|okay|btw|well)\b[\s,]*)*(?:do(?!\s+not\b)|does|did|can|could|would|will|"
    r"is|are|was|were|should|shall|have|has|am|what|what's|whats|where|where's|who|who's|whom|whose|why|how|"
    r"which)\b", re.I)
_POLITE_RE = re.compile(  # "could you remember ...?" asks for something: not a question about a fact
    _LEAD + r"(?:please\s+)?(?:can|could|would|will)\s+you\s+(?:please\s+|also\s+|just\s+)*(?:remember|note|"
    r"keep\s+in\s+mind|make\s+a\s+note|forget|stop\s+remembering|delete|erase|remove|call\s+me|address\s+me|"
    r"always|never|not|stop|keep|use|reply|respond|answer|write|be|avoid|save|store)\b", re.I)
# fmt: on


def is_question(sentence: str) -> bool:
    if _POLITE_RE.match(sentence):
        return False
    return sentence.rstrip().endswith("?") or _QUESTION_START.match(sentence) is not None


# ================================================================ facts about the user

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
    (_IM + r"\s+called\s+", "user.name", "en.name.called", False, 0.85),
    (r"\bcall\s+me\s+", "user.address_as", "en.address.call_me", False, 0.9),
    (r"\b(?:address|refer\s+to)\s+me\s+as\s+", "user.address_as", "en.address.as", False, 0.9),
    (_I + r"\s+(?:usually\s+|mostly\s+)?go\s+by\s+", "user.address_as", "en.address.go_by", False, 0.85),
    (r"\bmy\s+nick\s?name\s+is\s+", "user.address_as", "en.address.nickname", False, 0.8),
    (r"^(?:(?:hi|hello|hey|hiya|greetings|good\s+(?:morning|afternoon|evening))(?:\s+(?:there|all|everyone|folks|"
     r"guys))?[\s,!.-]*)?(?:i'm|i\s+am|this\s+is)\s+", "user.name", "en.name.intro", False, 0.75),
))
# fmt: on
_NAME_NEGATED = re.compile(r"\b(?:don't|do\s+not|never|not|stop|no\s+longer)\s+(?:\w+\s+)?$", re.I)
_NAME_CONTENT = {"user.name": "The user's name is {}.", "user.address_as": "The user wants to be called {}."}


def _name_hits(sentence: str) -> list[Hit]:
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
    (r"(?<![\w'])(?:i|we)\s*" + _ADV + r"(?:live|reside|am\s+living|'m\s+living|have\s+lived|'ve\s+lived|"
     r"have\s+been\s+living|'ve\s+been\s+living|are\s+living|'re\s+living)\s+in\s+", "user.location",
     "en.location.live"),
    (_IM + r"\s+" + _ADV + r"(?:based|located|living|settled|residing)\s+(?:in|out\s+of)\s+", "user.location",
     "en.location.based"),
    (r"(?<![\w'])(?:i|we)(?:\s+have|'ve)?\s+" + _ADV + r"(?:moved|relocated)\s+(?:back\s+)?(?:to|into)\s+",
     "user.location", "en.location.moved"),
    (r"\bmy\s+(?:current\s+)?(?:city|location|home\s+base)\s+is\s+(?:in\s+)?", "user.location",
     "en.location.my_city"),
    (_IM + r"\s+(?:originally\s+)?from\s+", "user.hometown", "en.hometown.from"),
    (_I + r"\s+(?:was\s+born|grew\s+up)\s+in\s+", "user.hometown", "en.hometown.born"),
    (r"\bmy\s+home\s*town\s+is\s+", "user.hometown", "en.hometown.my"),
))
# fmt: on
_PLACE_CONTENT = {"user.location": "The user lives in {}.", "user.hometown": "The user is from {}."}
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
_ORG_RAW = r"(?:\s+(?:at|for|with)\s+(?P<org>" + _ORG_WORD + r"(?:\s+" + _ORG_WORD + r"){0,2}))?"
_JOB = r"(?P<job>(?:[\w+#./-]+\s+){0,3}?" + _ROLE + r")\b"
_JOB_RES = tuple((re.compile(pattern, re.I), rule) for pattern, rule in (
    (_IM + r"\s+(?:[A-Z][\w'-]*\s*,\s*)?" + _ADV + r"(?:a|an)\s+" + _JOB + _ORG_RAW, "en.job.i_am"),
    (_I + r"\s+" + _ADV + r"(?:work|am\s+working|'m\s+working)\s+as\s+(?:a|an|the)\s+(?P<job>(?:[\w+#./-]+"
     r"\s+){0,3}?[\w+#./-]+?)(?=\s+(?:at|for|with|in|and|but|since|because|on)\b|\s*[,.;!?]|$)" + _ORG_RAW,
     "en.job.work_as"),
    (r"\bmy\s+(?:job|role|title|job\s+title|position|profession|occupation)\s+is\s+(?:(?:a|an|the)\s+)?"
     + _JOB + _ORG_RAW, "en.job.my_job"),
    (_I + r"(?:\s+have|'ve)?\s+" + _ADV + r"(?:work|am\s+working|'m\s+working|been\s+working|intern|joined|"
     r"started\s+at)(?:\s+(?:at|for))?\s+(?P<org>" + _ORG_WORD + r"(?:\s+" + _ORG_WORD + r"){0,2})(?:(?:\s+"
     r"(?:for|since)(?:\s+[\w-]+){1,3}?)?\s+as\s+(?:(?:a|an|the)\s+)?(?P<job>(?:[\w+#./-]+\s+){0,2}?" + _ROLE
     + r")\b)?", "en.employer.work_at"),
))
# fmt: on
_JOB_STOP = frozenset("not no big huge bit little fan total complete real".split())


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
    return value if value and not is_tool(value) else None


def _job_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for pattern, rule in _JOB_RES:
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


# fmt: off
_TOOL_STMT_RE = re.compile(
    r"(?<![\w'])(?P<subj>i|we|my\s+team|our\s+team|our\s+company|my\s+company|(?:our|my|the|this)\s+(?:project|"
    r"app|backend|frontend|codebase|code\s+base|repo|stack|service|services|api|monorepo|product|startup|infra|"
    r"platform|site|website|server|side\s+project|setup|ci|pipeline|database|db|cluster|deployment))"
    r"(?P<be>'re|'m|'s|\s+are|\s+am|\s+is|\s+have|\s+has|'ve)?\s+" + _ADV + r"(?:been\s+)?"
    r"(?P<verb>use|uses|using|rely\s+on|relies\s+on|run\s+on|runs\s+on|work\s+with|works\s+with|(?:code|write|"
    r"program|develop)\s+(?:mostly\s+|mainly\s+|only\s+)?in|built\s+(?:with|on|in)|written\s+in|based\s+on|"
    r"standardi[sz]ed\s+on|switched\s+to|moved\s+to|migrated\s+to|settled\s+on|went\s+with|go\s+with|"
    r"stick\s+with|write|writes|deploys?\s+(?:on|to)|host\s+on|hosted\s+on|on)\b(?P<span>" + _SPAN
    + r"{1,120})",
    re.I)
_TOOL_NOUN_RE = re.compile(
    r"\b(?:my|our)\s+(?:main\s+|primary\s+|preferred\s+|default\s+|go-to\s+)?(?P<noun>package\s+manager|"
    r"database|db|tech\s+stack|stack|programming\s+language|language|framework|editor|ide|os|operating\s+system|"
    r"orm|test\s+runner|testing\s+framework|cloud|backend|frontend)\s+(?:is|are|=)\s+(?P<span>" + _SPAN
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
    r"(?<![\w'])(?P<subj>i|we)\s+(?:don't|do\s+not|dont|never|no\s+longer|won't|don't\s+ever)\s+use\s+"
    r"(?P<obj>[^.;!?,]{1,60})", re.I)
_CHANGE_OF_STATE = re.compile(r"\b(?:anymore|any\s+more|no\s+longer)\b", re.I)
_NEGATING = re.compile(
    r"(?:\bnot|\binstead\s+of|\brather\s+than|\bno\s+longer|\bdon't\s+use|\bdo\s+not\s+use|\bnever\s+use|"
    r"\bstop\s+using|\bnot\s+using|\bfrom|\bover|\breplace|\breplacing|\bditch(?:ed)?|\bdrop(?:ped)?)"
    r"\s+(?:the\s+|using\s+)?$", re.I)
_CORRECTION_CUE = re.compile(
    r"^(?:no|nope|nah|wrong|actually|correction|i\s+said|i\s+meant|it's|it\s+is|its|we\s+use|i\s+use|use)\b",
    re.I)
# fmt: on
_DECISION_VERBS = ("switched", "moved", "migrated", "settled", "went")
_OBJ_PRONOUN = frozenset("it that this them those these him her anything something one".split())


def _cut(span: str) -> str:
    match = _SPAN_CUT.search(span)
    return span[: match.start()] if match else span


def _tool_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for match in statements(_TOOL_STMT_RE, sentence):
        verb = match.group("verb").lower()
        if (verb == "on" and not match.group("be")) or blocked(sentence, match.start()):
            continue
        subject_is_user = match.group("subj").lower() == "i"
        category = Category.DECISION if verb.startswith(_DECISION_VERBS) else None
        offset = match.start("span")
        for tool, _, end in find_tools(_cut(match.group("span"))):
            if tool.slot and tool.slot.startswith("user.") and not subject_is_user:
                continue  # "we use Linux servers" says nothing about the user's own OS
            hits.append(
                tool_hit(tool, match.start(), offset + end, rule="en.tool.use", lang="en", category=category)
            )
    noun = _TOOL_NOUN_RE.search(sentence)
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
        if obj and obj.split()[0].lower() not in _OBJ_PRONOUN and len(obj.split()) <= 6:
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
    _I + r"\s*" + _ADV + r"(?P<verb>prefer|like|love|enjoy|adore|dislike|hate|detest|loathe|can't\s+stand|"
    r"cannot\s+stand|don't\s+(?:really\s+)?like|do\s+not\s+like|don't\s+enjoy|don't\s+love|really\s+don't\s+like|"
    r"(?:'m|\s+am)\s+not\s+(?:a\s+(?:big\s+|huge\s+)?fan\s+of|into)|(?:'m|\s+am)\s+(?:a\s+(?:big\s+|huge\s+)?"
    r"fan\s+of|into))\s+(?P<obj>" + _SPAN + r"{1,100})", re.I)
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


def _pref_hits(sentence: str) -> list[Hit]:
    match = _LIKE_RE.search(sentence)
    if match is None or blocked(sentence, match.start()):
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
    _IM + r"\s+" + _ADV + r"(?:a\s+)?(?:strict\s+)?(?P<diet>vegetarian|vegan|pescatarian|pescetarian|keto|"
    r"halal|kosher|lactose[- ]intolerant|gluten[- ]free|celiac|coeliac|diabetic)\b", re.I)
_DIET_SLOTTED = {"vegetarian": "vegetarian", "vegan": "vegan", "pescatarian": "pescatarian",
                 "pescetarian": "pescatarian", "keto": "keto", "halal": "halal", "kosher": "kosher"}
_PROFILE_RES = (
    (re.compile(_IM + r"\s+" + _ADV + r"(?:(?:very|severely|mildly|a\s+bit)\s+)?allergic\s+to\s+"
                r"(?P<obj>[^.;!?,]{1,40})|" + _I + r"\s+have\s+(?:an?\s+|a\s+severe\s+)?"
                r"(?P<obj2>[\w -]{1,30}?)\s+allergy\b", re.I),
     "The user is allergic to {}.", "en.profile.allergy"),
    (re.compile(_I + r"\s+" + _ADV + r"(?:don't|do\s+not|never|can't|cannot)\s+(?:eat|drink)\s+"
                r"(?P<obj>[^.;!?,]{1,40})", re.I), "The user does not eat {}.", "en.profile.no_eat"),
)
_SLOTTED_PROFILE_RES = (
    (re.compile(r"\bmy\s+time\s?zone\s+is\s+(?P<tz>[\w+:/-]+(?:\s*[+-]\s*\d{1,2})?)|" + _IM + r"\s+"
                r"(?:in|on)\s+(?P<tz2>(?:UTC|GMT)\s?[+-]\s?\d{1,2}(?::?\d{2})?|PST|PDT|EST|EDT|CST|CET|CEST|JST|"
                r"IST|BST|AEST|MST|Pacific|Eastern|Central)(?:\s+time(?:\s*zone)?)?\b", re.I),
     "user.timezone", "The user's timezone is {}.", "en.profile.timezone"),
    (re.compile(r"\bmy\s+birthday\s+is\s+(?:on\s+)?(?P<day>[^.;!?,]{3,25})", re.I),
     "user.birthday", "The user's birthday is {}.", "en.profile.birthday"),
)
# fmt: on


def _profile_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    match = _DIET_RE.search(sentence)
    if match and not blocked(sentence, match.start()):
        diet = match.group("diet").lower().replace(" ", "-")
        slot = "user.diet" if diet in _DIET_SLOTTED else None
        cand = make(f"The user is {diet}.", Kind.SEMANTIC, Category.PROFILE, Tier.WORTH,
                    rule="en.profile.diet", confidence=0.85, lang="en", slot=slot,
                    value=_DIET_SLOTTED.get(diet))  # fmt: skip
        hits.append((cand, match.start(), match.end()))
    for pattern, template, rule in _PROFILE_RES:
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        obj = _cut(next(group for group in match.groups() if group)).strip()
        if obj and obj.split()[0].lower() not in _OBJ_PRONOUN:
            content = template.format(third_person(obj))
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


def _fact_hits(sentence: str) -> list[Hit]:
    return (
        _name_hits(sentence) + _place_hits(sentence) + _job_hits(sentence) + _tool_hits(sentence)
        + _pref_hits(sentence) + _profile_hits(sentence)
    )  # fmt: skip


def statement_hits(text: str) -> list[Hit]:
    """What an English statement inside a request says ("记住：my name is Alice"): facts, rules or replies."""
    return _fact_hits(text) or _rule_hits(text) or _reply_hits(text)


# ================================================================ how the agent should reply and behave

# fmt: off
_PERSIST = (
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|by\s+default|"
    r"every\s+time|from\s+here\s+on|all\s+the\s+time|in\s+general|any\s+more|anymore)\b"
)
_PERSIST_RE = re.compile(_PERSIST, re.I)
_REPLY_NOUN_RE = re.compile(
    r"\b(?:answers|responses|replies|explanations|outputs|messages|summaries|you\s+(?:answer|reply|respond|"
    r"explain|write)|your\s+(?:answers?|responses?|replies|reply|explanations?|output|messages?|writing))\b"
    r"|\b(?:answer|response|reply|explanation)\b(?=.*" + _PERSIST + ")", re.I)
_STYLE_RE = re.compile(
    r"\b(?:(?P<concise>concise|brief|short|shorter|succinct|terse|to\s+the\s+point|compact|tl;?dr|less\s+verbose|"
    r"fewer\s+words)|(?P<long>verbose|long|longer|lengthy|wordy|rambling|long-winded|walls?\s+of\s+text)|"
    r"(?P<detailed>detailed|thorough|in-depth|in\s+depth|comprehensive|more\s+details?|elaborate)|"
    r"(?P<bullet_points>bullet\s+points?|bulleted|bullets|bullet\s+lists?))\b", re.I)
_STYLE_NEG_RE = re.compile(
    r"\b(?:not|don't|dont|do\s+not|no|never|less|hate|dislike|stop|without|too|avoid|fewer|overly|so)\s+"
    r"(?:\w+\s+){0,2}$", re.I)
_STYLE_VALUE = {("concise", False): "concise", ("concise", True): "detailed", ("long", False): "detailed",
                ("long", True): "concise", ("detailed", False): "detailed", ("detailed", True): "concise",
                ("bullet_points", False): "bullet_points"}
_PREF_CUE_RE = re.compile(
    _I + r"\s*" + _ADV + r"(?:prefer|like|love|want|need|appreciate|enjoy|hate|dislike|don't\s+like|"
    r"do\s+not\s+like|can't\s+stand|'d\s+prefer|would\s+prefer|'d\s+like|would\s+like|'d\s+rather|"
    r"would\s+rather)\b", re.I)
_FEEDBACK_CUE_RE = re.compile(
    r"\byour\s+(?:answers|responses|replies|explanations|messages)\s+(?:are|were|have\s+been|get|seem|keep)\b"
    r"|\byou(?:'re|\s+are)\s+(?:being\s+)?(?:way\s+|far\s+|a\s+bit\s+|too\s+|so\s+|really\s+)*(?:verbose|wordy)",
    re.I)
_IMPERATIVE_CUE_RE = re.compile(
    _LEAD + r"(?:please\s+|pls\s+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?(?:be|keep|make|give|"
    r"write|use|answer|reply|respond|stop|don't|do\s+not|never|always|avoid|no\s+more|limit|from\s+now\s+on|"
    r"going\s+forward|in\s+(?:the\s+)?future|format|explain)\b", re.I)
_BARE_BE_RE = re.compile(_LEAD + r"(?:please\s+)?(?:be|keep\s+it|keep\s+things|stay)\s+(?:\w+\s+){0,2}$",
                         re.I)
_LANG_WORDS = r"english|chinese|mandarin|japanese|french|german|spanish|korean|portuguese|italian|russian"
_REPLY_LANG_RE = re.compile(
    r"\b(?:(?:reply|replied|respond|responded|answer|answered|write|wrote|talk|speak|communicate|chat|"
    r"explain(?:\s+things)?)\s+(?:to\s+me\s+|back\s+)?(?:only\s+|always\s+)?|(?:answers|responses|replies|"
    r"explanations)\s+(?:to\s+be\s+)?)in\s+(?P<lang>" + _LANG_WORDS + r")\b", re.I)
# fmt: on


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
    """Reply language ("always answer in English") and style ("I prefer concise answers")."""
    match = _REPLY_LANG_RE.search(sentence)
    if match and not blocked(sentence, match.start(), hypothetical=False):
        mode = _reply_mode(sentence)
        if mode is not None:
            code = LANGUAGE_CODES[match.group("lang").lower()]
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
    negated = _STYLE_NEG_RE.search(sentence[: style.start()]) is not None
    value = _STYLE_VALUE.get((style.lastgroup or "", negated))
    if value is None:
        return []
    return [
        reply_hit("user.reply_style", value, mode=mode, lang="en", rule="en.reply.style", end=len(sentence))
    ]


# fmt: off
_RULE_RE = re.compile(
    _LEAD + r"(?P<lead>(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|from\s+"
    r"here\s+on(?:\s+out)?|as\s+a\s+(?:general\s+)?rule|by\s+default|in\s+general|every\s+time|each\s+time)"
    r"\s*[,:-]?\s*)?(?P<cond>(?:when|whenever|if\s+you|for|in|while)\s[^,]{1,60},\s*)?"
    r"(?:please\s+|pls\s+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?(?:you\s+)?"
    r"(?P<mod>don't\s+ever|do\s+not\s+ever|don't|do\s+not|dont|never\s+ever|never|always|avoid|stop|quit|"
    r"should\s+never|should\s+always|must\s+always|must\s+never|shouldn't|should\s+not|must\s+not|mustn't|"
    r"make\s+sure\s+to|make\s+sure\s+you|be\s+sure\s+to|remember\s+to|no\s+more|please)?\s*"
    r"(?P<rest>[a-z][^\n]{1,200})$", re.I)
_TAIL_PERSIST_RE = re.compile(
    r"[\s,]*(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|from\s+here\s+on(?:\s+out)?"
    r"|every\s+time|always|by\s+default)[\s.!]*$", re.I)
_MOD_CANON = {
    "don't ever": "do not ever", "do not ever": "do not ever", "don't": "do not", "do not": "do not",
    "dont": "do not", "shouldn't": "do not", "should not": "do not", "must not": "do not",
    "mustn't": "do not", "never ever": "never", "never": "never", "should never": "never",
    "must never": "never", "always": "always", "should always": "always", "must always": "always",
    "make sure to": "always", "make sure you": "always", "be sure to": "always", "remember to": "remember to",
    "avoid": "avoid", "stop": "stop", "quit": "stop", "please": "always", "no more": "no more", "": "always",
}
# After "don't" / "never": "don't worry", "never mind" are not rules for the agent.
_NOT_IMPERATIVE = frozenset(
    "worry bother mind hesitate panic stress feel know get care be forget remember understand think "
    "see have want need like love hate agree recall sure mean wait rush apologise thank it that "
    "this i we my the a an there you your here".split()
)
# After "always" / "from now on": the verbs a standing rule starts with.
_IMPERATIVE_VERBS = frozenset(
    "use write reply respond answer add put give call keep make include format explain stick run "
    "test check ask show return follow mention suggest recommend start end wrap comment document "
    "type name import install commit push deploy assume default output print log send speak talk "
    "try limit cite link quote translate summarize summarise list number sort prefix indent "
    "capitalize abbreviate generate create modify change edit rename delete remove mock hardcode "
    "inline split merge lint prioritize prioritise optimize refactor rewrite repeat ramble guess "
    "speculate hallucinate lie pad sugarcoat flatter overexplain apologize apologise prefer double- "
    "check verify review read go let set leave respect stay avoid skip emit raise throw catch "
    "handle validate sign annotate declare store cache touch open close copy paste bump pin upgrade "
    "downgrade switch target support mark tag greet address refer".split()
)
_ONE_OFF = re.compile(
    r"\b(?:yet|this\s+time|for\s+now|right\s+now|today|tonight|tomorrow|at\s+the\s+moment|this\s+(?:file|"
    r"function|one|line|test|pr|step|method|class|branch|commit|case)|that\s+(?:file|function|one|line)|"
    r"in\s+this\s+case|until|here|above|below)\b|^[\w'-]+\s+(?:this|that|these|those|it)\b", re.I)
_PRONOUN_ONLY = re.compile(
    r"^[a-z'-]+(?:\s+(?:it|that|this|them|those|these|so|there|anything|again|up|on))+$", re.I)
_FEEDBACK_WORDS = re.compile(r"\b(?:again|anymore|any\s+more|like\s+you\s+did|as\s+you\s+did|keep)\b", re.I)
_WHEN_YOU_RE = re.compile(
    _I + r"\s*" + _ADV + r"(?:don't\s+like|do\s+not\s+like|hate|dislike|can't\s+stand|cannot\s+stand)\s+"
    r"(?:it\s+)?when\s+you(?P<be>'re|\s+are)?\s+(?P<x>[^.;!?]{2,80})", re.I)
# fmt: on


def _rule_hits(sentence: str) -> list[Hit]:
    """Standing rules for the agent: "don't use ORMs", "never suggest jQuery", "from now on, use pnpm"."""
    body = sentence.rstrip(" .!")
    tail = _TAIL_PERSIST_RE.search(body)
    if tail and tail.start() > 0:
        body = body[: tail.start()]
    match = _RULE_RE.match(body)
    if match is None:
        return []
    mod = " ".join((match.group("mod") or "").lower().split())
    persistent = bool(match.group("lead") or tail)
    if not mod and not persistent:
        return []
    rest = match.group("rest").strip(" ,")
    first, canon = rest.split()[0].lower(), _MOD_CANON[mod]
    if canon == "no more":  # "No more emojis please": a noun, not a verb
        rest = re.sub(r"[\s,]*please$", "", rest, flags=re.I)
    elif canon in ("always", "remember to"):
        if first not in _IMPERATIVE_VERBS:
            return []
    elif first in _NOT_IMPERATIVE or not first.replace("-", "").isalpha():
        return []
    if (_ONE_OFF.search(rest) and not persistent) or _PRONOUN_ONLY.match(rest):
        return []  # "don't change this file yet", "don't do that": about the task at hand
    if len(rest.split()) == 1 and first not in _IMPERATIVE_VERBS and canon != "no more":
        return []
    tools = find_tools(rest)
    uses = canon in ("always", "remember to") and first in ("use", "stick", "switch", "prefer")
    if uses and tools and tools[0][0].slot is not None and len(rest[: tools[0][1]].split()) <= 2:
        # "always use pnpm": the choice goes in the tool's slot
        return [tool_hit(tools[0][0], 0, len(sentence), rule="en.rule.use_tool", lang="en", tier=Tier.MUST,
                         confidence=0.9)]  # fmt: skip
    content = sentence_case(f"{match.group('cond') or ''}{canon} {third_person(rest)}")
    category = Category.FEEDBACK if canon == "stop" or _FEEDBACK_WORDS.search(rest) else Category.CONSTRAINT
    rule = f"en.rule.{canon.replace(' ', '_')}"
    cand = make(content, Kind.PROCEDURAL, category, Tier.MUST, rule=rule, confidence=0.9, lang="en")
    return [(cand, 0, len(sentence))]


def _when_you_hits(sentence: str) -> list[Hit]:
    """ "I hate it when you add emojis": feedback on the agent, the rule "Do not add emojis."."""
    match = _WHEN_YOU_RE.search(sentence)
    if match is None or blocked(sentence, match.start(), hypothetical=False):
        return []
    action = third_person(match.group("x").strip(" ,"))
    content = sentence_case(f"do not {'be ' if match.group('be') else ''}{action}")
    rule = "en.rule.when_you"
    cand = make(content, Kind.PROCEDURAL, Category.FEEDBACK, Tier.MUST, rule=rule, confidence=0.85, lang="en")
    return [(cand, match.start(), match.end())]


# ================================================================ remember / forget / corrections

# fmt: off
_ASKING = (  # how a request to the agent may open
    r"(?:(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future)[\s,]+)?(?:please\s+|pls\s+|kindly\s+)?"
    r"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|i\s+(?:want|need)\s+you\s+to\s+|i(?:'d|\s+would)\s+"
    r"like\s+you\s+to\s+|you\s+(?:should|need\s+to|must|have\s+to|can|may|could)\s+)?(?:also\s+|always\s+|"
    r"just\s+|now\s+)?"
)
_REMEMBER_RE = re.compile(
    _LEAD + _ASKING + r"(?P<verb>remember|don't\s+forget|do\s+not\s+forget|never\s+forget|keep\s+(?:this\s+|"
    r"that\s+|it\s+)?in\s+mind|bear\s+in\s+mind|for\s+future\s+reference|note\s+for\s+(?:the\s+)?future|"
    r"(?P<weak>note|save|store|record)(?=\s+(?:that|this))|make\s+a\s+note|take\s+a\s+note|note\s+down|"
    r"take\s+note|memori[sz]e|(?:save|store|put|add)\s+(?:this|that|it)\s+(?:to|in|into)\s+(?:your\s+)?memory)"
    r"\b(?:\s+for\s+(?:next\s+time|the\s+future|later|future\s+sessions?))?(?:\s+(?:of\s+)?"
    r"(?P<det>this|that|the\s+following)\b)?\s*(?P<sep>[:,;-])?\s*(?P<p>.*)$", re.I)
_PAYLOAD_START = re.compile(
    r"^(?:i|i'm|i've|i'd|i'll|im|my|we|we're|we've|our|you|you're|your|the|this|there|it's|he|she|they|to|"
    r"always|never|don't|do\s+not|use|avoid|[A-Z0-9])")
# A payload opening with a noun phrase must say something about it ("the prod DB is on port 5433").
_IS_STATEMENT = re.compile(
    r"^(?!the\b|this\b|there\b)|\b(?:is|are|was|were|has|have|had|uses|runs|lives|works|needs|should|must|will|"
    r"can|goes|takes|means|belongs|costs|contains|points|expires|requires|depends|starts|ends)\b", re.I)
_NEXT_REQUEST = re.compile(  # "remember X, and also explain Y": only X is to be remembered
    r"[,;]\s*(?:and\s+|but\s+|then\s+)?(?:also\s+|now\s+)?(?:can|could|would|will|please|explain|tell|show|help|"
    r"what|how|why|where|when|let's|fix|write|make|check)\b|\s+and\s+(?:also\s+)?(?:can\s+you|could\s+you|please|"
    r"explain|tell\s+me|show\s+me|help\s+me)\b", re.I)
_RULE_START = re.compile(
    r"^(?:to\s|always\b|never\b|don't\b|do\s+not\b|use\b|avoid\b|you\s+(?:should|must)\b)", re.I)
_PERSONAL = re.compile(r"\b(?:i|i'm|i've|my|me|mine|we|we're|our|us)\b", re.I)
# fmt: on


def _remember_hits(sentence: str) -> list[Hit] | None:
    """None when the sentence is not a remember request; a list (possibly empty) when it is."""
    match = _REMEMBER_RE.match(sentence)
    if match is None:
        return None
    payload = match.group("p").strip(" \"'")
    lowered = payload.lower()
    if (
        not payload
        or lowered in _OBJ_PRONOUN
        or lowered.startswith(("when ", "what ", "how ", "where ", "me "))
    ):
        return []  # "remember when we ...", "remember me?"
    explicit = match.group("sep") or match.group("det") in ("this", "the following")
    if not explicit and not (_PAYLOAD_START.match(payload) and _IS_STATEMENT.search(payload)):
        return []  # "remember that bug", "don't forget the semicolon": a thing, not a statement
    if match.group("weak") and not _PERSONAL.match(payload):
        return None  # "note that the function returns None": task talk, not a request to remember
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
    _LEAD + _ASKING + r"(?P<verb>forget(?:\s+about)?|stop\s+remembering|(?:don't|do\s+not)\s+(?:remember|"
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
_CONTRAST_RE = re.compile(
    r",?\s+(?:not|rather\s+than|instead\s+of)\s+(?:in\s+|at\s+|the\s+|an?\s+)?[\w.+#-]+(?:\s+[\w.+#-]+){0,2}"
    r"[.!]*$",
    re.I,
)


def _forget_hits(sentence: str) -> list[Hit] | None:
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
    slot, value, kind, category = forget_target(payload, _fact_hits(payload))
    content = sentence_case(third_person(payload))
    cand = make(content, kind, category, Tier.MUST, rule="en.forget", confidence=0.9, lang="en", slot=slot,
                value=value, op=Operation.FORGET)  # fmt: skip
    return [(cand, 0, len(sentence))]


_CORRECTION_RE = re.compile(
    _LEAD
    + r"(?P<marker>no|nope|nah|wrong|incorrect|not\s+quite|that's\s+(?:not\s+right|wrong|incorrect|not\s+"
    r"correct)|that\s+is\s+(?:not\s+right|wrong|incorrect)|actually|correction|wait|oops|to\s+clarify|let\s+me\s+"
    r"correct\s+(?:that|myself)|i\s+meant|i\s+mean)\b[\s,:;!.-]*(?P<rest>.+)$",
    re.I,
)


@dataclasses.dataclass(frozen=True)
class LanguageRules:
    """One language's rule functions, for the shared dispatcher `dispatch`."""

    lang: str
    is_question: Callable[[str], bool]
    forget: Callable[[str], list[Hit] | None]  # None: not a forget request
    remember: Callable[[str], list[Hit] | None]
    negating: re.Pattern[str]
    correction_cue: re.Pattern[str]
    correction: re.Pattern[str]  # a correction opener; group "rest" holds the corrected statement
    contrast: re.Pattern[str]  # a statement made against another value ("..., not X")
    correction_facts: Callable[[str], list[Hit]]
    reply: Callable[[str], list[Hit]]
    facts: Callable[[str], list[Hit]]
    rules: Callable[[str], list[Hit]]


def dispatch(sentence: str, rules: LanguageRules) -> list[Hit]:
    """All of one language's rule hits for one normalised sentence: forget / remember requests alone; tool
    pairs; a correction's fact raised to MUST; a short reply; else rules and facts (a fact stated against
    another value is a correction too)."""
    if not sentence or rules.is_question(sentence):
        return []
    for special in (rules.forget, rules.remember):
        hits = special(sentence)
        if hits is not None:
            return hits
    pairs = tool_pair_hits(sentence, lang=rules.lang, negating=rules.negating, cue=rules.correction_cue)
    correction = rules.correction.match(sentence)
    if correction:
        inner = shift(rules.correction_facts(correction.group("rest")), correction.start("rest"))
        return pairs + [must(hit, f"{rules.lang}.correction", start=0) for hit in inner]
    reply = rules.reply(sentence)
    if reply:
        return reply
    facts = rules.facts(sentence)
    if rules.contrast.search(sentence):
        facts = [must(hit, f"{rules.lang}.correction") if hit[0].slot else hit for hit in facts]
    return pairs + rules.rules(sentence) + facts


ENGLISH = LanguageRules(
    lang="en",
    is_question=is_question,
    forget=_forget_hits,
    remember=_remember_hits,
    negating=_NEGATING,
    correction_cue=_CORRECTION_CUE,
    correction=_CORRECTION_RE,  # "no, I live in Munich now"
    contrast=_CONTRAST_RE,
    correction_facts=_fact_hits,
    reply=_reply_hits,
    facts=lambda sentence: _when_you_hits(sentence) or _fact_hits(sentence),
    rules=_rule_hits,
)


def sentence_hits(sentence: str) -> list[Hit]:
    """All English rule hits for one normalised sentence (see the module docstring)."""
    return dispatch(sentence, ENGLISH)
