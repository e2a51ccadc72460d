"""One language's rule pipeline, the same for both rule sets. Pure: no I/O.

- `LanguageRules` holds one language's rule functions and patterns; `en.ENGLISH` and `zh.CHINESE` are the two.
- `dispatch(sentence, rules)` -> every hit of that language for one normalised sentence, in a fixed order:
  nothing for a question; a forget or remember request alone; else tool pairs ("pnpm, not npm"), then a
  correction's facts raised to MUST, or a reply preference alone, or standing rules and facts.
- `tool_pair_hits` is the script-neutral part: the one positive tool of a slot where another is negated.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable

from core.extraction.candidates import Category, Tier
from core.extraction.lang import has_han
from core.extraction.rules.hits import Hit, must, shift, tool_hit, without_insert
from core.extraction.rules.sentences import ENUMERATOR_RE
from core.extraction.rules.vocab import (
    ZH_IF_YAOSHI,
    ZH_KIN,
    ZH_OTHERS,
    Tool,
    current_tool,
    find_tools,
    first_current_tool,
    is_common_word,
    is_tool,
    named_as_left,
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
    # the user's words in the third person ("my daughter is 7" -> "the user's daughter is 7")
    restate: Callable[[str], str] = lambda text: text
    # a lasting statement no other rule accounts for: (clause, its sentence, whole) -> hits; `whole`: the
    # clause is the whole sentence, tried first (a lesson is one memory of its sentence)
    generic: Callable[[str, str, bool], list[Hit]] = lambda clause, sentence, whole: []
    # the clause with the subject the language dropped put back ("been on Zed ..." -> "I've been on Zed ..."),
    # where it went and its length; None when nothing was dropped
    with_subject: Callable[[str], tuple[str, int, int] | None] = lambda clause: None


def dispatch(sentence: str, rules: LanguageRules) -> list[Hit]:
    """All of one language's rule hits for one normalised sentence (`_dispatch`); when there are none and
    the sentence dropped its first-person subject ("moved to Lyon in May", "搬到杭州了"), those of the
    sentence with the subject put back."""
    hits = _dispatch(sentence, rules)
    dropped = None if hits else rules.with_subject(sentence)
    if dropped is None:
        return hits
    text, at, added = dropped
    return without_insert(_dispatch(text, rules), at, added)


def _dispatch(sentence: str, rules: LanguageRules) -> list[Hit]:
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
    late = _LATE_MARKER.match(sentence) if rules.lang == "en" and "actually" in sentence.lower() else None
    # "it's Flask actually": the marker after the value, read as "actually, it's Flask"
    correction = rules.correction.match(f"actually, {late.group('body')}") if late else None
    correction = correction or rules.correction.match(sentence)
    if correction:
        rest = correction.group("rest")
        inner = (
            rules.correction_facts(rest)
            or stack_hits(rest, lang=rules.lang)
            or change_hits(rest, lang=rules.lang)
            or _corrected_noun_state(rest, rules.lang)
        )
        if inner:
            return pairs + [
                must(hit, f"{rules.lang}.correction", start=0)
                for hit in shift(inner, correction.start("rest"))
            ]
        marker = correction.group("marker")
        if marker[:8].lower() == "you keep":  # "you keep calling it the users table — it's accounts"
            called = re.sub(r"^you\s+keep\s+\w+\s+(?:it\s+|me\s+|this\s+|that\s+)?", "", marker, flags=re.I)
            rest = f"{rest.rstrip(' .!')}, not {called}"
        contrast = rules.contrast.search(rest.split(".")[0] + ".")
        strong = (
            _STRONG_CORRECTION.search(correction.group("marker"))
            or contrast
            or _OWN_MISTAKE.search(rest)  # "nah, the standup is at 9:15, I mixed it up"
        )
        said = next(  # the first piece of the rest that names a value: "wrong one, it's Kong"
            (p.strip() for p in rest.split(".")[0].split(",")[:3] if _NAMED_VALUE.match(p.strip())), None
        )
        named = current_tool(said) if said else None
        if _ABOUT_THE_CHAT.search(rest) or pairs:
            pass
        elif named is not None and rules.lang == "en":
            # "sorry, wrong, it's Tyk": the right value of a slot, named after the marker
            return [tool_hit(named, 0, len(sentence), rule="en.correction.named", lang="en", tier=Tier.MUST,
                             confidence=0.85)]  # fmt: skip
        elif strong and (_STATES.search(rest) or contrast or _QUANTITY.match(rest)):
            # "Small correction: standups are 9:30 CET, not PST": the corrected statement itself, MUST
            return [_corrected(rules.restate(rest), rules.lang, len(sentence))]
        elif rules.lang == "en" and _NAMED_VALUE.match(rest):
            # "nope, it's Siobhán", "actually it's Flask": the right name, after the marker
            tool = current_tool(rest.split(",")[0])
            if tool is not None:
                return [tool_hit(tool, 0, len(sentence), rule="en.correction.named", lang="en", tier=Tier.MUST,
                                 confidence=0.85)]  # fmt: skip
            return [_corrected(rules.restate(rest), rules.lang, len(sentence))]
        # "No Friday deploys": a "no" that opens a statement, not a correction of one
    reply = rules.reply(sentence)
    if reply:
        return reply
    facts = rules.facts(sentence)
    if rules.contrast.search(sentence):
        facts = [must(hit, f"{rules.lang}.correction") if hit[0].slot else hit for hit in facts]
    return pairs + rules.rules(sentence) + facts


# a value left by a change or a choice ("from npm", "no longer Jenkins", "不用 Jenkins 了"), not corrected
_SOFT_NEGATIONS = ("from", "over", "instead", "rather", "no longer", "replac", "ditch", "drop", "swap", "从", "替换",
                   "代替", "不用", "不再", "换掉")  # fmt: skip
_TOOL_AS_MODIFIER = re.compile(
    r"\s*(?:script|scripts|command|commands|package|packages|version|registry|lock\s*file|lockfile|cache|one|"
    r"config|file|files|module|modules|docs|api|client|driver|server|image|container|plugin|error|issue|bug)\b",
    re.I,
)


# A supposition before the positive value: "suppose I were on X instead of Y", "say we moved from Y to X", "假如换成 X"
_SUPPOSED = re.compile(
    r"\b(?:if|suppose|supposing|imagine|assuming|what\s+if|hypothetically|let'?s\s+say)\b"
    r"|(?:^|[,;:(\u2014]\s*)say\s+(?:we|i|you|they|our|my)\b|如果|" + ZH_IF_YAOSHI + r"|假如|假设|万一|倘若",
    re.I,
)


def _corrected_noun_state(rest: str, lang: str) -> list[Hit]:
    """The slot a noun names, stated as the correction ("correction: the region is us-east-2, not 1", "纠正一下：
    消息队列是 RocketMQ"): its first clause, after a label ("from last week:") when there is one."""
    head = re.split(r"[,;，；]", rest, maxsplit=1)[0]
    label = re.match(r"^[^:：]{0,30}[:：]\s*", head)
    for text, at in ((head, 0), (head[label.end() :], label.end()) if label else (head, 0)):
        found = noun_state_hits(text, lang=lang)
        if found:
            return shift(found, at)
    return []


# A versioned tool stated against another version of itself, the tool not said again: "it's Go 1.21 actually, not
# 1.22", "其实是 JDK 21，不是 17", "Python 3.12 rather than 3.11": the named version is the slot's value, a correction.
_OTHER_VERSION_RE = re.compile(
    r"\s*(?:actually|really|其实)?\s*[,，]?\s*(?:not|rather\s+than|instead\s+of|不是|而不是|并不是)\s*v?(?P<v>\d{1,2}(?:\.\d{1,3}){0,2})"
    r"(?![\w%]|\.\d)",
    re.I,
)


def _version_pair_hits(sentence: str, tools: list[tuple[Tool, int, int]], *, lang: str) -> list[Hit]:
    for tool, _, end in tools:
        other = _OTHER_VERSION_RE.match(sentence, end)
        if other is None or " " not in tool.canonical:
            continue
        version = tool.canonical.rsplit(" ", 1)[1]
        if other.group("v") != version and version[:1].isdigit():
            return [tool_hit(tool, 0, len(sentence), rule=f"{lang}.correction.version_pair", lang=lang,
                             tier=Tier.MUST, confidence=0.9)]  # fmt: skip
    return []


# before the first tool: someone else's choice, or one not made yet
_NOT_OWN_CHOICE = re.compile(
    r"\b(?:he|she|they|his|her|their|(?:my|our)\s+(?:sister|brother|mom|mum|dad|mother|father|wife|husband|partner|"
    r"son|daughter|kids?|parents?|friends?|cousin|colleague|coworker)s?|considering|thinking\s+(?:about|of)|"
    r"planning|might|could|should|would)\b"
    rf"|{ZH_OTHERS}|考虑|打算|准备|要不要|是否|可能|也许",
    re.I,
)


# A change that is not the user's: read or heard about, or told of a company or product by name ("Discord
# switched from Go to Rust", "I read that Figma moved to WebGPU", "这篇 blog 说 Discord 从 Go 换到了 Rust")
_REPORTED = re.compile(
    r"\b(?:read|heard|hear|(?<!i\s)says|(?<!i\s)said|according\s+to)\b|(?<![我你])说|听说|据说|报道", re.I
)
_NAMED_SUBJECT_EN = re.compile(
    r"(?-i:(?P<name>\b[A-Z][\w.+#-]*))\s+(?:(?:has|had|have|just|also|finally|recently|apparently|reportedly|already|"
    r"\w+ly)\s+)*$"
)
_NOT_A_SUBJECT_NAME = frozenset(
    "I We My Our So And But Then Also Just Finally Recently Last Btw Fyi Ok Okay Ugh Oh Update Yes No Yeah Hey Hi "
    "Now Today Yesterday Everything Everyone Team The This That Since After Before When".split()
)
# The English verbs of a change from one value to another, in the past ("X replaced Y" is left out: its subject
# is the new value, "Vitest replaced Jest")
CHANGE_VERBS_EN = r"switched|moved|migrated|went|changed|rewrote|ported|upgraded|transitioned|jumped|converted"
_CHANGE_VERB = re.compile(rf"\b(?:{CHANGE_VERBS_EN})\b|从|把|换成|换到|改成|改用|迁到|切到", re.I)
_VERB_BEFORE_TOOL = re.compile(rf"\b(?:{CHANGE_VERBS_EN})\s+(?:[\w'-]+\s+){{0,3}}?(?:from\s+)?$", re.I)


def others_change(prefix: str, lang: str) -> bool:
    """The words before a change (its verb, or in Chinese 从 / 把) make it not the user's: read or heard about,
    or, in English, a company or product named as the subject (mid-sentence any capitalised name; at the start
    one the vocabulary knows or written like a name: "Discord", "GitHub")."""
    if _REPORTED.search(prefix):
        return True
    if lang == "zh":  # "K8s 从 1.27 升到 1.29": a Latin subject in Chinese is the user's own topic
        return False
    prefix = _VERB_BEFORE_TOOL.sub("", prefix)
    match = _NAMED_SUBJECT_EN.search(prefix)
    if match is None or match.group("name") in _NOT_A_SUBJECT_NAME:
        return False
    name = match.group("name")
    before = prefix[: match.start()].strip(" \t\"'\u201c\u2018-:,")
    if re.search(r"\b(?:at|in|of|for|with|from|on|to)$", before, re.I):
        return False  # "our team at Acme switched ...": the name is not the subject
    if before:
        return True
    return is_tool(name) or any(c.isupper() or c.isdigit() for c in name[1:])


def _not_users_choice(prefix: str, lang: str) -> bool:
    """The words before a tool change make it someone else's, a plan, or not the user's (`others_change`)."""
    return _NOT_OWN_CHOICE.search(prefix) is not None or others_change(prefix, lang)


def tool_pair_hits(sentence: str, *, lang: str, negating: re.Pattern[str], cue: re.Pattern[str]) -> list[Hit]:
    """ "pnpm, not npm" / "switched from npm to pnpm": the one positive tool of a slot where one is negated.

    A correction (MUST) when the negation is "not ..." or the sentence has a correction cue; "from X to Y",
    "X over Y", "X instead of Y" alone are a decision or a preference (WORTH).
    """
    # A tool naming a thing ("the npm script") is not a choice of tool.
    tools = [t for t in find_tools(sentence) if t[0].slot and not _TOOL_AS_MODIFIER.match(sentence, t[2])]
    if len(tools) < 2:
        return _version_pair_hits(sentence, tools, lang=lang)
    verb = _CHANGE_VERB.search(sentence)
    before = sentence[: verb.start() if verb is not None else tools[0][1]]
    if _not_users_choice(before, lang):
        return []  # "my sister switched from Android to iPhone", "我们考虑从 AWS 迁到 GCP": not the user's choice
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
        if near and not _SUPPOSED.search(sentence[:start]):  # "suppose I were on a Mac instead of Linux"
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


# A change already made, in either language: the value after it is the slot's current one. Past forms only
# ("moved", "迁到了", "自从迁到"): "should we migrate to X?" asks, it does not tell.
_CHANGE_RE = re.compile(
    r"(?<![\w'])(?:moved|migrated|switched|replaced|rewrote|rewritten|ported|bumped|upgraded|downgraded|"
    r"transitioned|converted|went\s+(?:over\s+)?to|changed|standardi[sz]ed|settled)\b"
    r"|\b(?:after|since)\s+(?:the|our|we\s+did\s+the)\s+(?:[\w.+#-]+\s+){1,3}?(?:upgrade|migration|move|switch|"
    r"rewrite|cutover|port)\b"
    r"|\b(?:after|since)\s+(?:the|our)\s+(?:upgrade|migration|move|switch|cutover)\s+to\b"
    r"|\b(?:after|since)\s+(?:bumping|upgrading|moving|migrating|switching|porting)\b"
    r"|\bmigrate[sd]?\s*(?:到|to)|\b(?:move[sd]?|transfer(?:red)?|switch(?:ed)?|切换?|迁移?)\s*(?:到|去)|用(?=\s*[A-Za-z][^,]{0,24}?重写)"
    r"|(?:迁到了|迁移到了|迁到|迁移到|换成了|换成|改用了|改用|升到了|升到|升级到了|升级到|切到了|切到|切换到了|切换到|"
    r"转到了|转到|换到了|换到|搬到了|搬到|重写成|重写为|用上了|上了|换了(?:台|个|一台|一个|新的?)?|统一到了?|统一成了?|"
    r"全换成了?|换回了?|迁回了?|挪到了?|挪去了?|搬去了?|迁去了?|转去了?)",
    re.I,
)
# "now that we're on 3.12", "ever since we landed on Fly.io", "finished porting to JAX", "the migration to
# AWS is done": the state after a change, told as the ground for something else
# "the AWS migration finally wrapped up": the value named before the change's noun
_GIVEN_CHANGE_RE = re.compile(
    r"\bnow\s+that\s+(?:[\w']+\s+){0,3}?(?:we're|i'm|it's|everything's|we've|i've|is|are|am|have\s+been|has\s+been)\s+"
    r"(?:now\s+|finally\s+|all\s+)?(?:on|in|using|at|running)\b"
    r"|\b(?:ever\s+)?since\s+(?:we|i)\s+(?:landed\s+on|went\s+to|moved\s+to|switched\s+to|migrated\s+to)\b"
    r"|\b(?:finished|completed|done)\s+(?:porting|migrating|moving|switching|the\s+(?:migration|move|switch))\s+"
    r"(?:\w+\s+)?(?:to|onto)\b"
    r"|\b(?:migration|move|switch|cutover|transition)\s+to\s+(?=[\w.+#-]+(?:\s+[\w.+#-]+)?\s+(?:is|was|has\s+been)\s+"
    r"(?:(?:finally|officially|now)\s+)?(?:done|complete|completed|finished|wrapped\s+up|live|over)\b)"
    r"|\b(?=[\w.+#-]+(?:\s+v?\d[\d.x]*)?\s+(?:migration|move|cutover|switch|rollout|upgrade)\s+"
    r"(?:(?:is|was|has\s+been|finally|officially|now)\s+)*(?:done|complete|completed|finished|wrapped\s+up|over|landed|"
    r"shipped|merged|live)\b)",
    re.I,
)
_GIVEN_CHANGE_WORDS = ("now that", "since", "finish", "complet", "done", "wrapped", "live", " over", "landed",
                       "shipped", "merged")  # fmt: skip


# mixed-language changes ("最近 switch 到 Cursor 了", "自从 all-in 阿里云之后") and going all in on a value: searched
# only when their words are there (each alternative of `_CHANGE_RE` is tried at every character)
_MIXED_CHANGE_RE = re.compile(r"\bswitch(?:ed)?\s*到|\b(?:went\s+)?all[- ]in(?:\s+on)?\b", re.I)


def change_match(clause: str) -> re.Match[str] | None:
    """The change a clause tells, the earliest: a past-tense change verb, or a change taken as given (the
    second pattern is searched only when one of its words is there: it is costly at every word)."""
    found = _CHANGE_RE.search(clause)
    low = clause.lower()
    if ("switch" in low or "all-in" in low or "all in" in low) and (mixed := _MIXED_CHANGE_RE.search(clause)):
        found = mixed if found is None or mixed.start() < found.start() else found
    for word in _GIVEN_CHANGE_WORDS:  # substring tests: cheaper than a case-insensitive alternation
        if word in low:
            break
    else:
        return found
    given = _GIVEN_CHANGE_RE.search(clause)
    return given if given is not None and (found is None or given.start() < found.start()) else found


_REMOVAL_RE = re.compile(
    r"\b(?:got\s+rid\s+of|ripped\s+out|tore\s+out|removed|phased\s+out|dropped|ditched|retired|killed|no\s+longer|"
    r"anymore|any\s+more|never|stop\s+(?:using|writing|suggesting))\b|不再|不用|下掉|干掉|去掉|换掉|弃用|别再|不要再",
    re.I,
)


def names_change(sentence: str) -> bool:
    """The sentence tells a change, or names a value as left ("switched to", "got rid of", "不再用")."""
    return change_match(sentence) is not None or _REMOVAL_RE.search(sentence) is not None


_ASKED = re.compile(
    r"(?:\byou\b|\bshould\s+we\b|\bshall\s+we\b|\bwhy\s+not\b|你|要不要|是否|该不该|打算|准备|"
    r"\bplan|\bconsider|\bthinking|\bmaybe\b|\bif\b|\bsuppos\w*|\bimagine|\bassum\w*|\bwhat\s+if|"
    r"\bwould|\bcould|\bwhether|\bneed\s+to|\bwant\s+to|\bhave\s+to|假如|假设|万一|如果|"
    + ZH_IF_YAOSHI
    + r"|倘若|是不是|应该|"
    r"得|要|想|需要|帮我|帮忙|估|算一下|对比|比较|评估|会上|开会|讨论|聊了?|大家|\bdiscuss\w*|\bmeeting)[^,;]{0,30}$",
    re.I,
)


# A slot named by its noun, whatever its value is: a change ("moved CI over to Woodpecker", "CI is now
# Woodpecker", "数据库换成了 TiDB") or a state ("CI is Drone", "Data warehouse is BigQuery", "我们 CI 是 Drone",
# "调度用的是 DolphinScheduler"): the value is the name after the verb.
_SLOT_NOUNS = (
    (r"ci|ci/cd|pipelines?|流水线", "project.ci"), (r"(?:the\s+)?database|db|数据库|主库", "project.database"),
    (r"package\s+manager|包管理(?:器|工具)?", "project.package_manager"), (r"editor|ide|编辑器", "user.editor"),
    (r"hosting|host|托管", "project.hosting"), (r"cloud|云", "project.cloud"), (r"framework|框架", "project.framework"),
    (r"error\s+(?:tracking|monitoring|reporting)|crash\s+reporting|错误监控|异常监控|错误追踪",
     "project.error_tracking"),
    (r"monitoring|监控", "project.monitoring"), (r"(?:message\s+)?queue|消息队列|队列", "project.queue"),
    (r"cache|缓存", "project.cache"), (r"orm", "project.orm"), (r"bundler|build\s+tool|打包工具", "project.bundler"),
    (r"linter|lint", "project.linter"), (r"test\s+(?:runner|framework)|测试框架", "project.test_framework"),
    (r"phone|手机", "user.phone"), (r"(?:data\s+)?warehouse|数仓|数据仓库", "project.warehouse"),
    (r"(?:issue\s+|bug\s+)?tracker|工单系统|需求管理|项目管理工具", "project.tracker"),
    (r"(?:container\s+|image\s+|docker\s+)?registry|镜像仓库", "project.registry"),
    (r"(?:job\s+|workflow\s+)?(?:scheduler|orchestrator)|调度(?:系统|平台|工具)?", "project.workflow"),
    (r"shell", "user.shell"), (r"(?:operating\s+system|os)|操作系统", "user.os"),
    (r"paging|on-?call\s+paging|incident\s+(?:management|alerting)", "project.paging"),
    (r"region|地域|可用区", "project.region"), (r"api\s*gateway|api\s*网关", "project.api_gateway"),
    (r"dns|域名解析|dns\s*解析", "project.dns"),
)  # fmt: skip
_SLOT_NAMES = {
    "project.ci": ("CI", "CI"), "project.database": ("database", "数据库"),
    "project.package_manager": ("package manager", "包管理器"), "user.editor": ("editor", "编辑器"),
    "project.error_tracking": ("error tracking", "错误监控"),
    "project.hosting": ("hosting", "托管平台"), "project.cloud": ("cloud", "云服务"),
    "project.framework": ("framework", "框架"), "project.monitoring": ("monitoring", "监控"),
    "project.queue": ("message queue", "消息队列"), "project.cache": ("cache", "缓存"), "project.orm": ("ORM", "ORM"),
    "project.bundler": ("build tool", "打包工具"), "project.linter": ("linter", "代码检查工具"),
    "project.test_framework": ("test framework", "测试框架"), "user.phone": ("phone", "手机"),
    "project.warehouse": ("data warehouse", "数据仓库"), "project.tracker": ("issue tracker", "工单系统"),
    "project.registry": ("container registry", "镜像仓库"), "project.workflow": ("job scheduler", "调度系统"),
    "user.shell": ("shell", "shell"), "user.os": ("operating system", "操作系统"),
    "project.paging": ("paging", "告警通道"), "project.region": ("region", "地域"),
    "project.api_gateway": ("API gateway", "API 网关"), "project.dns": ("DNS", "DNS"),
}  # fmt: skip
_VALUE = (  # a name: capitalised, a number, or in camel case ("macOS"); a cloud region's code ("us-east-2",
    # "europe-west4": lower-case words joined by hyphens, ending in a number); or Han characters ending the clause
    r"(?P<val>(?-i:[A-Z0-9]|[a-z]+[A-Z])[\w.+#-]*(?:\s(?-i:[A-Z0-9])[\w.+#-]*)?|(?-i:[a-z]{2,7}(?:-[a-z]+){1,2}-?\d{1,2}[a-z]?)(?![\w.-])"
    r"|[\u4e00-\u9fff]{2,6}(?=$|[\s,.;!~]|了|啦))"
)
_NOUN_GROUPS = "|".join(f"(?P<n{i}>{noun})" for i, (noun, _) in enumerate(_SLOT_NOUNS))
_NOUN_CHANGE_RES = tuple(
    re.compile(pattern.format(noun=_NOUN_GROUPS, val=_VALUE), re.I)
    for pattern in (
        r"\b(?:moved|switched|migrated|changed|ported)\s+(?:our\s+|the\s+)?(?:(?:primary|main|default|new|old|whole)\s+)?"
        r"(?:{noun})\s+(?:over\s+)?(?:from\s+\S+\s+)?"
        r"(?:to|onto)\s+(?:an?\s+|the\s+)?{val}",
        r"(?:^|\b)(?:our\s+|the\s+)?(?:{noun})\s+(?:is|are)\s+now\s+(?:on\s+|an?\s+)?{val}",
        # the noun as the subject of the change: "DNS moved to Cloudflare", "our CI has switched over to Drone"
        r"^(?:(?:and|so|also|btw|fyi|oh)[\s,]+)*(?:our\s+|the\s+)?(?:{noun})\s+(?:has\s+|have\s+|finally\s+|just\s+)*"
        r"(?:moved|switched|migrated|changed|went)\s+(?:over\s+)?(?:from\s+\S+\s+)?(?:to|onto)\s+(?:an?\s+|the\s+)?{val}",
        r"(?:^|[,\s])(?:{noun})\s*(?:已经|现在|也|都|整体|全部|全都)*(?:从\s*[A-Za-z][\w.+#-]*\s*)?(?:已经|也|都|全部)*"
        r"(?:换成|改成|改用|迁到|迁移到|统一到|切到|换到|挪到|搬到|转到)了?\s*(?:自研的|自建的|内部的|新的|公司的)?\s*{val}",
    )
)
# Only a clause with one of these words can hold such a change: checked first, it spares the patterns.
_NOUN_CHANGE_CUE = re.compile(
    r"\b(?:moved|switched|migrated|changed|ported|went|now)\b|换成|改成|改用|迁到|迁移到|统一到|切到|换到|挪到|搬到|转到",
    re.I,
)
# The state: the noun first in its clause (after "our" / "the" / one modifier: "Data warehouse is ..."), a
# copula or a verb of use, and a name that ends the statement. A Han value counts only when it is in the
# vocabulary ("工单系统是禅道"); a lower-case word is no name ("the database is slow").
_STATE_END = r"(?=\s*$|\s*[,.;!(（]|\s+(?:and|but|with|for|now|these|since|too|btw)\b|\s*[\u4e00-\u9fff])"
_NOUN_STATE_RES = tuple(
    re.compile(pattern.format(noun=_NOUN_GROUPS, val=_VALUE.replace("(?=$|", "(?=$|[\u4e00-\u9fff]|")), re.I)
    for pattern in (
        r"^(?:(?:and|so|also|btw|fyi)\s+)*(?:our\s+|the\s+|my\s+)?(?:[\w-]+\s+)?(?:{noun})(?:\s+(?:is|are|=)|'s|\s*:)\s+"
        r"(?:all\s+)?(?:on\s+|(?P<inside>in\s+))?{val}" + _STATE_END,
        r"^(?:[\u4e00-\u9fff]{{0,4}}?的|我们的?|我的|咱们的?|项目的?)?\s*(?:{noun})\s*(?:现在|目前|一直|都|主要|统一)*"
        r"(?:是|用的是|用的|用|走的是|走|跑在|选的是|(?:放|建|搭|部署|托管)?在(?=\s*[A-Za-z]))\s*{val}"
        + _STATE_END,
    )
)


# A value given its slot by "as": "using Helix as my editor", "we picked Drone as our CI"
_NOUN_AS_RE = re.compile(
    r"\b(?:use|uses|using|used|went\s+with|picked|chose|run|running|have)\s+"
    + _VALUE
    + r"\s+as\s+(?:my|our)\s+"
    r"(?:main\s+|primary\s+|daily\s+|default\s+|go-to\s+)?(?:" + _NOUN_GROUPS + r")\b",
    re.I,
)
# A word of each slot noun, to spare the patterns a clause that names none
_STATE_NOUN_WORDS = frozenset(
    "ci ci/cd pipeline pipelines database db package editor ide host hosting cloud framework monitoring queue "
    "cache orm bundler build linter lint test phone warehouse tracker registry scheduler orchestrator shell os "
    "error crash "
    "operating paging region dns api".split()
)
_STATE_NOUN_HAN = re.compile(
    r"流水线|数据库|主库|包管理|编辑器|托管|云|框架|监控|队列|缓存|打包|测试框架|手机|数仓|数据仓库|工单|需求管理|项目管理|"
    r"镜像仓库|调度|操作系统|地域|可用区|域名解析"
)


def is_question_like(prefix: str) -> bool:
    """A hypothetical or planned prefix ("if we", "should we", "要是") before a change."""
    pattern = (
        r"\b(?:if|suppose|should|would|could|might|maybe|plan|planning|thinking)\b|如果|"
        + ZH_IF_YAOSHI
        + r"|假如|打算|准备|考虑"
    )
    return re.search(pattern, prefix, re.I) is not None


def _noun_value_hit(clause: str, match: re.Match[str], *, lang: str, change: bool) -> list[Hit]:
    """The slot a noun names, with the name after it as its value (the vocabulary's spelling when it knows
    the name in that slot); a Han name only when the vocabulary knows it."""
    from core.extraction.rules.hits import fact

    slot = next(
        _SLOT_NOUNS[int(name[1:])][1] for name, said in match.groupdict().items() if said and name[0] == "n"
    )
    said = match.group("val").strip()
    tools = find_tools(said)
    if not said.isascii() and not tools:
        return []
    known = tools[0][0] if tools and tools[0][0].slot == slot else None
    if match.groupdict().get("inside") and known is None:
        return []  # "DNS is in Route 53" names its provider; "the database is in Frankfurt" names a place
    value, display = (known.canonical, known.display) if known else (said.lower(), said)
    english, chinese = _SLOT_NAMES[slot]
    now = ("现在" if lang == "zh" else "now ") if change else ""
    content = (
        f"用户的{chinese}{now}是 {display}。" if lang == "zh" else f"The user's {english} is {now}{display}."
    )
    cand = fact(content, slot, value, rule=f"{lang}.slot.{'change' if change else 'state'}", lang=lang)
    end = (
        len(clause) if change else match.end()
    )  # a state accounts for itself: "..., and all X are Y" is more
    return [(dataclasses.replace(cand, category=Category.DECISION) if change else cand, 0, end)]


def noun_change_hits(clause: str, *, lang: str) -> list[Hit]:
    """A change of the slot a noun names, to a value the vocabulary may not know ("moved CI to Woodpecker")."""
    if not _NOUN_CHANGE_CUE.search(clause):
        return []
    for pattern in _NOUN_CHANGE_RES:
        match = pattern.search(clause)
        if (
            match is None
            or _ASKED.search(clause[: match.start()])
            or is_question_like(clause[: match.start()])
        ):
            continue
        return _noun_value_hit(clause, match, lang=lang, change=True)
    return []


def noun_state_hits(clause: str, *, lang: str) -> list[Hit]:
    """The value of the slot a noun names, stated ("CI is Drone", "我们 CI 是 Drone"); the caller has ruled
    out a question, a hypothetical and someone else's statement."""
    if " as my " in clause or " as our " in clause:
        named = _NOUN_AS_RE.search(clause)
        if named is not None and not is_question_like(clause[: named.start()]):
            return _noun_value_hit(clause, named, lang=lang, change=False)
    head = clause[:40]
    if _STATE_NOUN_WORDS.isdisjoint(head.lower().replace("'s ", " ").replace(":", " ").split()) and not (
        has_han(head) and _STATE_NOUN_HAN.search(head)
    ):
        return []  # the noun comes first in its clause, or not at all
    body = ENUMERATOR_RE.sub("", clause.strip())
    for pattern in _NOUN_STATE_RES:
        match = pattern.match(body)
        if match is not None and not _STACK_BLOCK_RE.search(body):
            return _noun_value_hit(clause, match, lang=lang, change=False)
    return []


_NEW_VERSION_RE = re.compile(r"\s*(?:to|到)?\s*v?(?P<v>\d{1,2}(?:\.\d{1,3}){0,2})(?![\w.%])", re.I)


def _upgraded(clause: str, change: re.Match[str]) -> Tool | None:
    """A version change of a tool named with it ("JDK 升到 17", "upgraded Postgres to 16", "bumped node to 22"):
    the tool at its new version; None when the change is not one."""
    if not re.search(r"升|upgrad|bump|downgrad|moved|went", change.group(), re.I):
        return None
    before = [t for t in find_tools(clause[: change.start()]) if t[0].slot and t[2] >= change.start() - 12]
    said = len(change.group())  # the tail keeps the verb: "bumped node" names Node.js, "node" alone does not
    after = [t for t in find_tools(clause[change.start() :]) if t[0].slot and t[1] >= said]
    if before:
        tool, end = before[-1][0], change.end()
    elif after and after[0][1] - said <= 12:
        tool, end = after[0][0], change.start() + after[0][2]
    else:
        return None
    version = _NEW_VERSION_RE.match(clause, end)
    if version is None:
        return None
    base = re.sub(r"\s+v?\d[\d.x]*$", "", tool.canonical)
    display = re.sub(r"\s+v?\d[\d.x]*$", "", tool.display)
    v = version.group("v")
    return tool._replace(canonical=f"{base} {v}", display=f"{display} {v}")


# Slots whose values stand in for one another ("moved from ECS to EKS": a scheduler for a managed cluster)
_SLOT_FAMILIES = (
    frozenset({"project.hosting", "project.orchestration"}),
    frozenset({"project.database", "project.warehouse"}),
)


_LIST_GAP_RE = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+|\s*[/&+]\s*)", re.I)


def left_then_current(sentence: str, clause_end: int, left: list[Tool]) -> tuple[Tool, int] | None:
    """After a clause that only leaves values ("we moved off Vercel"), the first value of the same slot (or
    family) the rest of the sentence names as current ("，现在 self-host 在 Cloudflare Pages"): the new value, in
    the left value's slot, and where it ends; None when there is none."""
    slots = {t.slot for t in left if t.slot}
    if len(slots) != 1:
        return None
    slot = next(iter(slots))
    family = next((f for f in _SLOT_FAMILIES if slot in f), frozenset({slot}))
    rest = sentence[clause_end:]
    # the names listed right after the clause were left with it: "replaced black, flake8, isort with ruff"
    listed_to: int | None = 0
    for tool, start, end in find_tools(rest):
        if listed_to is not None and _LIST_GAP_RE.fullmatch(rest[listed_to:start]):
            listed_to = end
            continue
        listed_to = None
        if tool.slot in family and not named_as_left(rest, start, end):
            if start > 60 or _SUPPOSED.search(rest[:start]):
                return None
            return tool._replace(slot=slot), clause_end + end
    return None


def _in_left_slot(clause: str, tool: Tool) -> Tool:
    """The new value in the slot of the value it replaces, when the two sit in slots of one family ("moved from
    ECS to EKS": EKS takes ECS's place, so ECS does not stay current beside it)."""
    left = [
        t
        for t, start, end in find_tools(clause)
        if t.slot and t.slot != tool.slot and named_as_left(clause, start, end)
    ]
    if len({t.slot for t in left}) != 1:
        return tool
    slot = left[0].slot
    family = next((f for f in _SLOT_FAMILIES if tool.slot in f), None)
    return tool._replace(slot=slot) if family is not None and slot in family else tool


# "Vitest replaced Jest", "用 Vitest 替换了 Jest", "Jest 已经被 Vitest 取代了": the new value is the one named right
# before the verb, the other value of its slot is the one replaced ("replaced by" / "replaced X with" are read as
# changes already)
# ("把 X 替换成 Y" names the new value after the verb: a change, read by `_CHANGE_RE`)
_REPLACED_BY_RE = re.compile(
    r"(?:\b(?:has\s+|have\s+|had\s+|finally\s+|fully\s+)?(?:replaced|superseded|supplanted|took\s+over\s+from)\b"
    r"(?!\s+(?:by|with)\b)|替换了?掉?(?!成|为)|替代了?|取代了?)",
    re.I,
)


_SUBJECT_GAP_RE = re.compile(
    r"[\s,(]*(?:(?:which|that|who)\s+)?(?:(?:has|have|had|now|just|already|finally|fully|officially|basically|completely|totally|pretty\s+much)"
    r"\s+)*|\s*(?:已经|已|彻底|完全|基本|基本上|全面|正式|终于|现在)*\s*",
    re.I,
)


def _may_replace(clause: str) -> bool:
    low = clause.lower()
    return (
        "replac" in low
        or "supersed" in low
        or "supplant" in low
        or "took over" in low
        or (not clause.isascii() and ("替" in clause or "取代" in clause))
    )


def _replaced_hits(clause: str, *, lang: str) -> list[Hit]:
    verb = _REPLACED_BY_RE.search(clause)
    if verb is None or _ASKED.search(clause[: verb.start()]) or is_question_like(clause[: verb.start()]):
        return []
    tools = [(t, start, end) for t, start, end in find_tools(clause) if t.slot]
    # the new value is the verb's subject, right before it: "Vitest (has) replaced Jest", "Vitest 取代了 Jest"; in
    # "we ripped out Jest and replaced it with Vitest" the tool before the verb is the old one's object
    before = [
        (t, start, end)
        for t, start, end in tools
        if end <= verb.start() and _SUBJECT_GAP_RE.fullmatch(clause[end : verb.start()]) is not None
    ]
    if not before:
        return []
    new = before[-1][0]
    if not any(t.slot == new.slot and t.canonical != new.canonical for t, _, _ in tools):
        return []
    return [tool_hit(new, 0, len(clause), rule=f"{lang}.tool.replaced", lang=lang, category=Category.DECISION,
                     confidence=0.85)]  # fmt: skip


# "been loving Zed since I ditched VS Code", "on Fish ever since we dropped zsh": a value, then the one of its slot
# the user left to take it up; the first is current
_SINCE_LEFT_RE = re.compile(
    r"^\W*(?:[\w'-]+\s+){0,3}?(?:ever\s+)?since\s+(?:i|we)(?:'ve|\s+have|\s+finally|\s+just)?\s+(?:ditched|dropped|left|"
    r"quit|moved\s+off(?:\s+of)?|switched\s+(?:away\s+)?from|gave\s+up(?:\s+on)?|got\s+rid\s+of|stopped\s+using|"
    r"abandoned|uninstalled)\s+(?:the\s+|my\s+|our\s+)?$",
    re.I,
)


def _since_left_hits(clause: str, *, lang: str) -> list[Hit]:
    tools = [(t, start, end) for t, start, end in find_tools(clause) if t.slot]
    for (new, _, new_end), (old, old_start, _) in itertools.pairwise(tools):
        if (
            new.slot == old.slot
            and new.canonical != old.canonical
            and _SINCE_LEFT_RE.match(clause[new_end:old_start])
        ):
            return [tool_hit(new, 0, len(clause), rule=f"{lang}.tool.since_left", lang=lang,
                             category=Category.DECISION, confidence=0.85)]  # fmt: skip
    return []


# A tool told as the state now, with nothing else in its clause: "Vitest now, jest was too slow", "and now it's
# Go", "it's all Railway these days", "Node 20 everywhere now". Chat's way to give the value a change led to. A
# leading "now" needs a subject ("now in Go" asks for code in Go); without one the name is capitalised or has a
# digit, is no everyday word ("render now", "Go now") and no programming language ("Python now" may ask for code).
_BARE_STATE_RE = re.compile(
    r"^\W*(?:(?:and|so|but|ok|okay|btw|fyi|yeah|anyway)\W+)*(?:(?P<lead>now|these\s+days|nowadays)\W+)?"
    r"(?:(?P<subject>it's|it\s+is|everything's|everything\s+is|everything\s+runs|we're|we\s+are|i'm|i\s+am)\s+)?"
    r"(?:(?:all|mostly|fully|purely)\s+)?(?:(?:on|in|using|with)\s+)?"
    r"(?P<name>(?-i:[A-Za-z])[\w.+#-]*(?:\s+[\w.+#-]+){0,2}?)"
    r"(?:\s+(?P<now>now|everywhere|these\s+days|nowadays|across\s+the\s+board|for\s+everything)(?:\s+now)?)?"
    r"\W*$",
    re.I,
)


def bare_state_hits(clause: str, *, lang: str) -> list[Hit]:
    """A clause that is only a tool and a "now" (`_BARE_STATE_RE`): the tool is its slot's current value."""
    if lang != "en" or len(clause) > 60:
        return []
    match = _BARE_STATE_RE.match(clause)
    if match is None or not (match.group("lead") or match.group("now")) or is_question_like(clause):
        return []
    name = match.group("name")
    if match.group("lead") and not match.group("subject"):
        return []
    if not match.group("subject") and (is_common_word(name) or not (name[0].isupper() or name[-1].isdigit())):
        return []  # "Go now", "render now": an everyday word first in its clause may be just that
    tools = [(t, start, end) for t, start, end in find_tools(name) if t.slot]
    if len(tools) != 1 or tools[0][1] != 0 or name[tools[0][2] :].strip(" .0-9x"):
        return []  # the name is one tool (a version may follow), nothing else
    if not match.group("subject") and tools[0][0].slot == "project.language":
        return []  # "Python now": as often the language of the code asked for next
    return [tool_hit(tools[0][0], match.start("name"), match.end(), rule=f"{lang}.tool.state_now", lang=lang,
                     category=Category.DECISION, confidence=0.85)]  # fmt: skip


_REPLACED_WITH_RE = re.compile(r"(?:replaced|swapped(?:\s+out)?|traded|substituted)\b", re.I)


def change_hits(clause: str, *, lang: str, blocked: Callable[[str, int], bool] | None = None) -> list[Hit]:
    """A change of a slot's value already made ("fyi we've since moved CI to Buildkite", "CI 改用 GitHub
    Actions 了", "after the Node 22 upgrade ..."): the tool named as the new value, in its slot, as a
    decision. Nothing when the change is asked about or planned."""
    if " since " in clause.lower():
        left = _since_left_hits(clause, lang=lang)
        if left and (blocked is None or not blocked(clause, 0)) and not _ASKED.search(clause[:8]):
            return left
    replaced = _replaced_hits(clause, lang=lang) if _may_replace(clause) else []
    if replaced and (blocked is None or not blocked(clause, 0)):
        return replaced
    change = change_match(clause)
    if change is None or _ASKED.search(clause[: change.start()]):
        return []
    if blocked is not None and blocked(clause, change.start()):
        return []  # "同事说我们换成了 pnpm", "if we moved to Go": not the user's change
    if _not_users_choice(clause[: change.start()], lang):
        return []  # "my sister switched to iPhone", "他换成了 React"
    if re.search(
        r"的可能性|的方案|的想法|的提议|\b(?:idea|proposal|option)\s+of\b", clause[change.start() :], re.I
    ):
        return []  # "聊了下用 Rust 重写的可能性": an idea, not a change
    tail = clause[change.start() :]
    # "after the Node 22 upgrade": the tool is inside the change's own words; else the first tool after the
    # verb ("换了台 MacBook 之后 brew 装 postgresql …": MacBook, not what is done with it next)
    tool = _upgraded(clause, change) or current_tool(change.group()) or first_current_tool(tail)
    if tool is not None and (instead := _REPLACED_WITH_RE.match(change.group())) is not None:
        # "we replaced black, flake8 and isort with ruff": the new value follows "with", after the list left
        given = re.search(r"\b(?:with|for|by)\s+", tail[instead.end() :], re.I)
        if given is not None:
            tool = first_current_tool(tail[instead.end() + given.end() :]) or tool
    if tool is None:
        return []
    tool = _in_left_slot(clause, tool)
    return [tool_hit(tool, 0, len(clause), rule=f"{lang}.tool.change", lang=lang, category=Category.DECISION,
                     confidence=0.85)]  # fmt: skip


# A clause that speaks for the user, the team or the project and names tools: "Stack is Laravel 10 + MySQL,
# all hosted on DigitalOcean", "我们主要是 Kotlin + Spring Boot，数据库 PostgreSQL", "前端是 Vue 3".
_STACK_SUBJECT_RE = re.compile(
    # a time the state holds from, before its subject: "since last quarter everything runs on Nomad"
    r"^(?:(?:and|also|plus|btw|fyi|so|oh|ok|but|heads\s+up|quick\s+update|update|fwiw|now|nowadays|lately|"
    r"(?:ever\s+)?since\s+(?:last|the\s+start\s+of|early|late)\s+(?:week|month|quarter|year|sprint|release|spring|"
    r"summer|autumn|fall|winter|january|february|march|april|may|june|july|august|september|october|november|"
    r"december)|as\s+of\s+(?:last\s+(?:week|month|quarter|year)|this\s+(?:week|month|quarter|year)|v?\d[\d.]*))"
    r"[\s,:]+)*(?:i\b|i'm|i've|we\b|we're|we've|our\b|my\b|(?:the|this)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:stack|backend|frontend|api|app|service|project|repo|codebase|db|database|infra|cluster|site|"
    r"pipeline|ci|layer|cache|queue|server|servers|platform|website|blog|monorepo|tests|test\s+suite|product|saas|"
    r"startup|tool|box|machine|laptop|homelab|home\s+lab|setup|system|side)\b|"
    r"this\s+(?:repo|project|service|app|codebase)\b|(?:tech\s+)?stack\b|backend\b|frontend\b|db\b|database\b|"
    # a part of the product as the subject: "Main languages are Go and ...", "iOS is SwiftUI, Android is Compose"
    r"(?:(?:main|primary|core)\s+)?(?:languages?|frameworks?)\s+(?:is|are)\b|(?:ios|android|web|mobile|desktop)"
    r"(?:\s+(?:app|apps|client|side))?\s+(?:is|are|uses|runs)\b|"
    r"ci\b|infra\b|prod\b|everything\b|all\s+hosted|hosted\b|deployed\b|running\b|built\b|"
    r"100\s*%\s*(?=(?-i:[A-Z])[\w.+#-]*\s*(?:(?:now|these\s+days|nowadays)\s*)?(?:$|[,.;!]))|"
    # "it's all Zustand now", "all on Buildkite these days": the current state, told after a change
    # "day to day it's mostly Kotlin for me": the user's, said by "for me"
    r"(?:(?:day\s+to\s+day|these\s+days|mostly|mainly),?\s+)?(?:it's|it\s+is|all|everything's)\s+"
    r"(?=[^,;]*\b(?:now|these\s+days|nowadays|for\s+(?:me|us))\b))"
    r"|^(?:(?:顺便说一?下|顺便|对了|另外|还有|补充一?下|说一?下|btw|fyi)[,\s]*)?(?:现在|目前|如今|now\s+)?\s*"
    r"(?:我们?|咱们|项目|技术栈|栈|前端|后端|服务端|数据库|库|主库|CI|线上|生产|部署|服务|整个|这个(?:项目|服务|仓库)|我们的|"
    r"公司|团队|组里)"
    r"|^(?:现在|目前|如今)?\s*(?:[A-Za-z]{2,10}\s*)?[\u4e00-\u9fff]{1,6}(?=(?:都|统一|一直|现在|直接|全)*(?:用的是|用的|用|采用|使用|跑在|跑|"
    r"部署在|部署到|托管在|托管到|挂在|挂|放在|放到|存在|存放在|存到|走的是|走|运行在|进|接入|接的是|打到|推到|发到|写到)"
    r"\s*[A-Za-z])"
    r"|^(?:这个|这套|我们的?|咱们的?|我的)?\s*(?:[\u4e00-\u9fff]{2,6}|[A-Za-z]{2,12})\s*(?=是\s*[A-Za-z][^,]{0,20}?写的)"
    # a tool's version as the subject: "Node 已经是 22 了", "项目的 Python 版本是 3.10", "the Go version is 1.23"
    r"|^(?:现在|目前|如今)?\s*(?:项目的?|我们的?|the\s+)?\s*(?=[A-Za-z][\w.+#-]{0,15}(?:\s+version\s*(?:is|[:=])|\s*的?\s*"
    r"(?:版本号?)?\s*(?:现在|目前|已经|也)*\s*(?:是|为|[:：=])))(?=[^\d]*\d[\d.]*(?!\s*(?:年|月|天|周|岁|个|倍|门|种|次)))",
    re.I,
)
_STACK_BLOCK_RE = re.compile(
    r"\b[a-z]+n't\b|"  # "the cluster isn't on Python 3.9": a state denied is no value
    r"\b(?:if|suppose|imagine|would|could|should\s+we|maybe|might|thinking|considering|planning|plan\s+to|want\s+to|"
    r"going\s+to|gonna|said|says|told|colleague|friend|boss|cto|ceo|cfo|vp|manager|wants?|wanted|wishes|today|yesterday|tried|trying|not|never|don't|no\s+longer|"
    r"competitors?|rivals?|vendors?|partners?|suppliers?|clients?|customers?|apparently|reportedly|supposedly|"
    r"instead|than|vs|versus|or)\b|如果|"
    + ZH_IF_YAOSHI
    + r"|假如|假设|的话|打算|准备|考虑|可能|也许|同事|朋友|老板|他们|不用|不是|没用|没上|"
    r"不再|放弃|有没有|是不是|能不能|怎么|为什么|哪个|哪些|还是[^,]{0,20}?(?:好|呢|吧|更)|或者|对比|比较|今天|试了|试试|[?？吗]|[A-Za-z0-9+#.]\s*(?!上了|里了)[\u4e00-\u9fff]{1,3}了(?!解)|"
    r"\b(?:installed|ran|used\s+\w+\s+to|just|discuss\w*|meeting|talked|debated)\b|讨论|会上|开会|聊过|要不要|评估|隔壁|"
    # a plan denied ("我们没有要上 K8s"), a relative as the subject ("我弟在学 Java")
    r"没有?要|没打算|不打算|没计划|^\W*我的?" + ZH_KIN + r"|"
    r"竞品|竞争对手|友商|甲方|供应商|合作方|外包|好像|貌似|似乎|试着|尝试|正在|在试|在装|在配|在调|"
    r"别的组|其他组|别人|对方|客户|听说|据说|有人说|人家说|网上说|看到有人|"
    # someone close to the user as the subject: "my neighbour's kid is learning Rust"
    r"\b(?:my|our)\s+(?:(?:little|older|younger|best|new|old)\s+)?(?:neighbou?rs?|kids?|sons?|daughters?|wife|husband|"
    r"partner|sisters?|brothers?|mom|mum|dad|parents?|cousins?|roommates?|flatmates?|nephews?|nieces?|aunts?|uncles?|"
    r"grandma|grandpa|girlfriend|boyfriend)\b",
    re.I,
)


_ASIDE_RE = re.compile(r"\s*[(（][^()（）]{1,80}[)）]")


def opens_stack(clause: str) -> bool:
    """A clause that introduces the user's setup ("The product is a B2B SaaS:", "技术栈：", "背景："): the clauses
    after it speak for the same subject."""
    body = ENUMERATOR_RE.sub("", clause.strip())
    return bool(_STACK_SUBJECT_RE.match(body) or _SETUP_LABEL_RE.match(body)) and not _STACK_BLOCK_RE.search(
        body
    )


_SETUP_LABEL_RE = re.compile(
    r"^(?:(?:some\s+|quick\s+)?(?:background|context|setup|about\s+us)|背景|技术栈|架构|环境)\b", re.I
)


def stack_hits(clause: str, *, lang: str, inherited: bool = False) -> list[Hit]:
    """The tools a clause attributes to the user, the team or the project, each in its slot (a second value
    of a slot is named with the first: see `passes`), or in none when several can be in use (Docker,
    Notion). Nothing for a question, a hypothetical, a negation, a comparison or someone else's setup."""
    body = ENUMERATOR_RE.sub("", clause.strip())
    said = _ASIDE_RE.sub("", body) if "(" in body else body  # an aside ("(maybe 50 users)") blocks nothing
    if not (inherited or _STACK_SUBJECT_RE.match(body)) or _STACK_BLOCK_RE.search(said):
        return []
    hits: list[Hit] = []
    for tool, start, end in find_tools(body):
        if tool.slot and tool.slot.startswith("user."):
            continue
        if named_as_left(body, start, end):  # "we got rid of Heroku", "the Jenkins box is gone": not current
            continue
        cand, _, _ = tool_hit(tool, 0, len(clause), rule=f"{lang}.tool.stack", lang=lang)
        hits.append((cand if tool.slot else dataclasses.replace(cand, value=None), 0, len(clause)))
    return hits


# The right value named after a correction's marker: a name (capitalised, or not in ASCII), not "it's fine"
_NAMED_VALUE = re.compile(
    r"^(?:it's|it\s+is|its|that's|that\s+is|the\s+\w+\s+is|they're|he's|she's)\s+(?!(?:OK|Fine|Good|True|False)\b)"
    r"(?:(?-i:[A-Z])|[^\x00-\x7f])",
    re.I,
)
_LATE_MARKER = re.compile(
    r"^(?P<body>(?:it's|it\s+is|its|that's|we\s+use|we're\s+on)\s+[^,;]{1,40}?)[\s,]+actually(?:\W*$|\s*[,;.\u2014]\s)",
    re.I,
)
_OWN_MISTAKE = re.compile(
    r"\b(?:i\s+mixed\s+(?:it|them|that)\s+up|i\s+misspoke|my\s+(?:bad|mistake)|typo|i\s+was\s+wrong)\b|我说错了|我记错了|"
    r"打错了|写错了",
    re.I,
)
# A correction of what was said or pasted in the chat ("不对，我说的是上一个函数", "我刚才贴错代码了"), not of a fact
_ABOUT_THE_CHAT = re.compile(
    r"^(?:我|i)?\s*(?:刚才|刚刚|之前|前面)?(?:说的是|指的是|是说|的意思是|贴错|发错|复制错|贴的是|发的是)|下面这段|上面这段|"
    r"\bi\s+(?:pasted|sent|copied)\s+the\s+wrong\b|\bi\s+was\s+talking\s+about\b"
    # an item of the chat pointed at by its place ("I meant the second link not the first", "the other snippet")
    r"|\b(?:first|second|third|last|other|previous|next|top|bottom|former|latter)\s+(?:one|link|option|file|line|"
    r"version|answer|snippet|example|image|result|step|item|suggestion|query|command)s?\b",
    re.I,
)
_STRONG_CORRECTION = re.compile(
    r"correct|clarify|i\s+meant|i\s+mean|wrong|incorrect|not\s+right|fix|keep\s+(?:calling|saying|writing|spelling|naming)|纠正|更正|说错|搞错|记错|错了|不对|应该是",
    re.I,
)


# A corrected quantity, stated bare ("correction: 9 nodes, we added three", "更正：3 台机器"): a number and what it
# counts, which says the value as a statement does
_QUANTITY = re.compile(
    r"^\s*(?:\d[\d.,]*\s*(?:%|[a-z]{2,}\b)|\d+\s*(?:个|台|人|天|周|小时|节点|核|块|张))", re.I
)


# The corrected text must state something ("standups are 9:30 CET"), not name a thing ("the other file").
_STATES = re.compile(
    r"\b(?:is|are|am|was|were|use|uses|live|lives|work|works|run|runs|has|have|needs?|goes|deploys?)\b|'s\b|'re\b|'m\b"
    r"|[\u4e00-\u9fff]*(?:是|在|用|叫|住|跑|部署|需要)",
    re.I,
)


def _corrected(rest: str, lang: str, end: int) -> Hit:
    from core.extraction.candidates import Kind
    from core.extraction.rules.hits import make

    text = rest.strip(" ,.;:!?~-。")
    content = text + "。" if lang == "zh" else text[:1].upper() + text[1:] + "."
    cand = make(content, Kind.SEMANTIC, Category.FACT, Tier.MUST, rule=f"{lang}.correction.statement",
                confidence=0.85, lang=lang)  # fmt: skip
    return cand, 0, end
