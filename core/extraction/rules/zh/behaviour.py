"""Chinese rules for how the agent should reply and behave. Pure: no I/O.

- `reply_hits`: reply language and style ("以后回答都用中文", "我喜欢简洁的回复", "你的回答太啰嗦了"), as a
  preference, a rule or feedback by how it was said.
- `rule_hits`: standing rules ("别用 ORM", "永远不要…", "以后都用 pnpm"), MUST; comfort ("别担心") and the
  task at hand ("先别改这个文件") are none. `dont_want_hits`: "我不希望你…", "不用给我…" -> the rule, MUST.
"""

from __future__ import annotations

import re

from core.extraction.candidates import Category, Kind, Tier
from core.extraction.rules.hits import Hit, make, reply_hit, tool_hit
from core.extraction.rules.vocab import LANGUAGE_CODES, ZH_IF_YAOSHI, find_tools
from core.extraction.rules.zh.grammar import ADV, BIE, LEAD, ME, blocked, strip_tail, zh_content

# fmt: off
_REPLY_NOUN = re.compile(r"回答|回复|答复|答案|解释|说明|输出|回应|讲解|说话")
_STYLE_RE = re.compile(
    r"(?P<concise>简洁|简短|简单点|简单一点|短一点|短点|精简|简明|言简意赅|直接一点|直接点|直奔主题|简练|"
    r"少说废话|别废话|不要废话|少废话|直接给(?:结论|代码|答案)|先给结论|先说结论|结论先行|不用解释|不要解释|少解释|解释少一点|只要代码|直接上代码)|(?P<long>啰嗦|啰唆|冗长|太长|很长|长篇大论|废话)|(?P<detailed>详细|"
    r"具体一点|具体点|详尽|展开讲|展开说|多解释)|(?P<bullet_points>分点|列表|要点|分条)")
# Words about replies even when no reply noun is there.
_STYLE_IMPLICIT = re.compile(r"啰嗦|啰唆|废话|言简意赅|长篇大论|直奔主题|分点|解释|代码|结论")
_STYLE_NEG = re.compile(r"(?:不要|别|不|不用|没必要|不需要|少)(?:那么|太|这么|过于|很)?$")
_STYLE_VALUE = {("concise", False): "concise", ("concise", True): "detailed", ("detailed", False): "detailed",
                ("detailed", True): "concise", ("bullet_points", False): "bullet_points"}
_PERSIST = re.compile(r"以后|之后|今后|往后|从现在开始|从现在起|从今以后|一直|始终|总是|永远|每次|一律|所有")
_FEEDBACK = re.compile(
    r"你(?:的)?(?:回答|回复|答复|说的话)?(?:都|总是|老是|有点|有些|也|实在|真的)*(?:太|过于|很|好)?"
    r"(?:长|啰嗦|啰唆|冗长)")
_PREF_CUE = re.compile(ME + ADV + r"(?:喜欢|偏好|倾向|希望|想要|更喜欢|习惯|讨厌|不喜欢|受不了|需要)")
_IMPERATIVE = re.compile(
    LEAD + r"(?:请你?|麻烦你?)?(?:你)?(?:能不能|可不可以|能否)?(?:以后|之后|今后|往后|从现在开始|以后都|"
    r"每次)?(?:的)?(?:回答|回复|说话|写|简洁|简短|不要|别|少|多|尽量|直接|用|使用|说|给我|一律|都|解释|讲|不用|现在)")
_REPLY_LANG = re.compile(
    r"(?:(?:用|使用|说)(?P<lang>中文|汉语|普通话|英文|英语|日语|日文|韩语|法语|德语|西班牙语)(?:来)?(?:回答|回复|"
    r"答复|交流|跟我说话?|和我说话?|和我交流|跟我交流|沟通|聊天|回我|写回复|跟我聊)|(?:回答|回复)(?:请|都|"
    r"一律|要)?(?:用|使用)(?P<lang2>中文|汉语|英文|英语|日语|日文))(?=$|[\s,.;!?~]|我|吧|就|哦|啊|呀|好吗|即可)")
# fmt: on


def _reply_mode(sentence: str) -> str | None:
    persistent = _PERSIST.search(sentence) is not None
    if _FEEDBACK.search(sentence):
        return "feedback"
    if _PREF_CUE.search(sentence):
        return "rule" if persistent else "pref"
    if _IMPERATIVE.match(sentence) or persistent:
        return "rule" if persistent else "soft_rule"
    return None


def reply_hits(sentence: str) -> list[Hit]:
    """Reply language ("以后回答都用中文") and style ("我喜欢简洁的回复", "你的回答太啰嗦了")."""
    match = _REPLY_LANG.search(sentence)
    if match and not blocked(sentence, match.start(), hypothetical=False):
        mode = _reply_mode(sentence)
        if mode is not None:
            code = LANGUAGE_CODES[match.group("lang") or match.group("lang2")]
            return [reply_hit("user.reply_language", code, mode=mode, lang="zh", rule="zh.reply.language",
                              end=len(sentence))]  # fmt: skip
    style = _STYLE_RE.search(sentence)
    if style is None or not (_REPLY_NOUN.search(sentence) or _STYLE_IMPLICIT.search(sentence)):
        return []
    mode = _reply_mode(sentence)
    if mode is None or blocked(sentence, style.start(), hypothetical=False):
        return []
    group = style.lastgroup or ""
    if group == "long" or (group == "concise" and style.group().startswith(("少", "别", "不要"))):
        value: str | None = "concise"  # "太长", "少说废话": less is wanted
    else:
        value = _STYLE_VALUE.get((group, _STYLE_NEG.search(sentence[: style.start()]) is not None))
    if value is None:
        return []
    return [
        reply_hit(
            "user.reply_style",
            value,
            mode=mode,
            lang="zh",
            rule="zh.reply.style",
            end=len(sentence),
            said=sentence,
        )
    ]


# fmt: off
_MODS = (
    r"永远不要|永远别|永远不许|永远不能|千万不要|千万别|绝对不要|绝对别|绝对不能|一定不要|尽量不要|尽量别|"
    r"不要再|别再|不许再|不准再|不要|" + BIE + r"|不许|不准|"
    r"严禁|禁止|切勿|勿|始终|总是|一律|务必|一定要|必须|每次都要?|都要|尽量|避免|"
    r"少用|少写|少加|少搞|优先用|优先使用|统一用|统一使用|只用|只能用|尽可能"
)
_RULE_RE = re.compile(
    LEAD + r"(?P<lead>(?:以后|之后|今后|往后|从现在开始|从现在起|从今以后|从今往后|接下来|每次|from\s+now\s+on|"
    r"going\s+forward)\s*(?:都|请|你)*"
    r"[,:]?\s*)?"
    # A condition ("写 Python 的时候，" / "提交代码前") only counts when a rule word follows it.
    r"(?P<cond>[^,]{1,15}?(?:的时候|时候|时|之前|以前|前|之后|后)(?:\s*,\s*|(?=(?:请你?|你)?(?:" + _MODS
    + r"))))?(?:请你?|麻烦你?)?(?:你)?(?:以后|之后|今后|都)*(?P<mod>" + _MODS + r")?\s*(?P<rest>.{1,100})$")
_MOD_CANON = {
    "永远不要": "永远不要", "永远别": "永远不要", "永远不许": "永远不要", "永远不能": "永远不要",
    "千万不要": "不要", "千万别": "不要", "绝对不要": "不要", "绝对别": "不要", "绝对不能": "不要",
    "一定不要": "不要", "不要": "不要", "别": "不要", "不许": "不要", "不准": "不要", "禁止": "禁止", "严禁": "禁止",
    "切勿": "不要", "勿": "不要", "不要再": "不要再", "别再": "不要再", "不许再": "不要再", "不准再": "不要再",
    "尽量不要": "尽量不要",
    "尽量别": "尽量不要", "避免": "避免", "始终": "始终", "总是": "始终", "一律": "始终", "每次都": "始终",
    "每次都要": "始终", "都要": "始终", "务必": "必须", "一定要": "必须", "必须": "必须", "尽量": "尽量",
    "少用": "少用", "少写": "少写", "少加": "少加", "少搞": "少搞", "优先用": "优先使用", "优先使用": "优先使用",
    "统一用": "统一使用", "统一使用": "统一使用", "只用": "只使用", "只能用": "只使用", "尽可能": "尽可能", "": "始终",
}
_RULE_IDS = {"不要": "dont", "永远不要": "never", "始终": "always"}
NOT_RULE = re.compile(  # "别担心", "不要客气", "别急": comfort, not rules for the agent
    r"^(?:客气|担心|着急|急|紧|管|谢|怕|生气|难过|介意|误会|笑|忘|打扰|麻烦|理|在意|害怕|放弃|慌|紧张|"
    r"多想|想太多|骗|走(?=\s*(?:$|[,.;!~]|了|啊|呀|哦|开))|说了|吵|闹|这样|那样|动(?!不动)(?=\s*(?:$|[,.;!~]|了|啊|呀|哦))|停|哭|乱|瞎|再|劝|"
    r"催)")  # "以后再说": later, not a rule
_ONE_OFF = re.compile(
    r"这一次|这回|这一回|就一次|这次|先|现在|暂时|今天|明天|这个文件|这个函数|这里|这一步|这行|目前|马上|刚才|这段|上面|下面")
_PRONOUN = re.compile(r"它|这个|那个|这样|那样|这些|那些")
# fmt: on


_NEXT_CLAUSE = re.compile(
    r"\s*,\s*(?=[A-Za-z]{2,}\s+[A-Za-z]|我们|我|你|因为|所以|但|不过|而且|另外|老老实实|直接)"
)


# A condition on what the agent produces ("给命令的时候", "你写测试时") and the way to do it, with no rule word:
# "给命令的时候每条单独放一个代码块" is a standing instruction as it stands.
_OUTPUT_RULE_RE = re.compile(
    LEAD
    + r"(?P<cond>(?:你|请你?)?(?:在)?(?:给我|帮我|替我)?(?:写|给|回答|回复|生成|输出|解释|举例|提交|起名|命名|"
    # 时 as "when", not the end of a word ("定时任务", "及时", "按时")
    r"重构|翻译|总结|出|列|review|评审|贴|改)[^,.;!?]{0,12}?(?:的时候|时候|(?<![定及准按同随临当有小暂实平届])时))\s*,?\s*"
    r"(?P<rest>[^,.;!?]{3,60})"
)
_NOT_INSTRUCTION = re.compile(  # "写代码的时候我发现…", "写测试时总报错": what happened, not how to do it
    r"^(?:我|我们|他|她|它|这|那|有|就|还|也|老|一直|经常|突然|遇到|发现|出现|报|碰到|会|没|不会|总|又|都)"
)


# What the user does not want the agent to do ("我不希望你在代码里加太多注释", "我不想看到 any 类型", "不用给我解释
# 原理"): a rule, MUST.
_DONT_WANT_RE = re.compile(
    r"(?:"
    + ME
    + ADV
    + r"(?:不希望|不想看到|不想再看到|不要看到|不需要|不想要)|^"
    + LEAD
    + r"(?:以后|之后|今后)?"
    r"(?:都)?(?:不用|不必|无需|没必要)(?:再)?(?:给我|每次都?))\s*(?:你)?(?P<rest>[^,.;!?]{2,40})"
)


_DONT_WANT_CUE = re.compile(r"不希望|不想|不要看到|不需要|不用|不必|无需|没必要")


def dont_want_hits(sentence: str) -> list[Hit]:
    """ "我不希望你在代码里加太多注释": what the user does not want, a rule."""
    match = _DONT_WANT_RE.search(sentence) if _DONT_WANT_CUE.search(sentence) else None
    if match is None or blocked(sentence, match.start()) or _ONE_OFF.search(match.group("rest")):
        return []
    content = zh_content(strip_tail(sentence[match.start() : match.end()]))
    cand = make(content, Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule="zh.rule.dont_want",
                confidence=0.85, lang="zh")  # fmt: skip
    return [(cand, match.start(), match.end())]


def _output_rule_hits(sentence: str) -> list[Hit]:
    match = _OUTPUT_RULE_RE.match(sentence.rstrip(" .!~"))
    if match is None or _NOT_INSTRUCTION.match(match.group("rest")) or _ONE_OFF.search(match.group("rest")):
        return []
    content = zh_content(f"{match.group('cond')},{strip_tail(match.group('rest'))}").replace(",", "，")
    cand = make(content, Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule="zh.rule.output", confidence=0.85,
                lang="zh")  # fmt: skip
    return [(cand, 0, match.end("rest"))]


# A standing sequence under a condition: "如果要装新的依赖，先问我一声", "凡是涉及删数据的脚本，都先 dry-run 一遍
# 给我看", "改完代码先跑 lint 再给我": the first step the agent takes each time, told with what it leads to (me / 再).
_SEQUENCE_RE = re.compile(
    LEAD + r"(?P<cond>(?:如果|凡是|只要|每当|一旦|每次|遇到|碰到|涉及)[^,.;!?]{1,25}?|"
    r"[^,.;!?]{1,15}?(?:完|之前|以前|前)[^,.;!?先]{0,8}?)"
    r"\s*,?\s*(?:都|请|你|也|一律)*(?:要|得|必须)?先\s*(?P<rest>[^.;!?]{2,40}?)[\s.!~]*$"
)
_SEQUENCE_TO_ME = re.compile(
    r"问我|给我|让我|跟我|和我|找我|我确认|我同意|再(?:给|交|提|发|推|合|上线|部署|执行|动手|改|删)"
)


def _sequence_hits(sentence: str) -> list[Hit]:
    match = _SEQUENCE_RE.match(sentence) if "先" in sentence else None
    if (
        match is None
        or not _SEQUENCE_TO_ME.search(match.group("rest"))
        or re.search(r"这个|这次|这段", sentence)
    ):
        return []  # "先跑一下看看": the task at hand; "这次先…": this once
    content = zh_content(sentence.strip(" .!~。"))
    cand = make(content, Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule="zh.rule.sequence", confidence=0.85,
                lang="zh")  # fmt: skip
    return [(cand, 0, len(sentence))]


_LATIN_TOPIC = re.compile(r"[A-Za-z][\w.+#-]*(?:\s[A-Za-z][\w.+#-]*)?")
_LATIN_FILLERS = frozenset(
    "ok okay hi hey hello btw fyi pls please also and so but well yes yeah sure".split()
)


def rule_hits(sentence: str) -> list[Hit]:
    """Standing rules for the agent: "别用 ORM", "永远不要…", "以后都用 pnpm"."""
    match = _RULE_RE.match(sentence.rstrip(" .!~"))
    if match is None:
        return _sequence_hits(sentence)
    lead, mod = match.group("lead"), match.group("mod") or ""
    if not mod and not lead:
        return _output_rule_hits(sentence) or _sequence_hits(sentence)
    rest = match.group("rest").strip(" ,")
    clause_end = _NEXT_CLAUSE.search(
        rest
    )  # "不要用 ORM, we write raw SQL everywhere": the rule ends at the comma
    if clause_end:
        rest = rest[: clause_end.start()]
    core = strip_tail(rest)
    if re.search(ZH_IF_YAOSHI + r"|如果|假如|的话|万一|多半|大概|可能|估计|应该会", core):
        return []  # "以后要是养狗的话…": a hypothetical, not a rule
    if not mod and re.search(r"会(?:比较|很|更|有|多|少)|问题", core):
        return []  # "之后 Spark 的问题会比较多": what will happen, not what to do
    one_off = _ONE_OFF.search(core)
    if one_off and one_off.group() == "先" and match.group("cond"):
        one_off = None  # "上线前务必先在预发验证": first in a standing sequence, not "for now"
    if len(core) < 2 or NOT_RULE.match(core) or (one_off and not lead):
        return []  # "先别改这个文件": about the task at hand
    if not mod and re.search(r"(?:之前|以前|之后|以后|的时候|时候)$", core):
        return []  # "每次给我 SQL 之前": only a condition, cut from the rule that follows it
    if _PRONOUN.search(core) and len(_PRONOUN.sub("", core)) <= 2:
        return []  # "不要这样做"
    canon = _MOD_CANON[mod]
    tools = find_tools(core)
    uses = tools and tools[0][0].slot and re.match(r"^(?:用|使用|改用|换成)\s*$", core[: tools[0][1]])
    if (
        canon in ("始终", "必须", "统一使用", "只使用", "优先使用") and uses
    ):  # "以后都用 pnpm": in the tool's slot
        return [tool_hit(tools[0][0], 0, len(sentence), rule="zh.rule.use_tool", lang="zh", tier=Tier.MUST,
                         confidence=0.9)]  # fmt: skip
    cond = (match.group("cond") or "").rstrip(" ,")
    said_before = sentence[: match.start("mod")].strip() if mod and not lead and not cond else ""
    if _LATIN_TOPIC.fullmatch(said_before) and said_before.lower() not in _LATIN_FILLERS:
        cond = said_before  # "Java 别问我": the rule is about what is named before it, not a filler
    verb = re.sub(r"^用(?!户)", "使用", core)
    content = zh_content(f"{cond + ',' if cond else ''}{canon}{verb}").replace(",", "，")
    feedback = canon == "不要再" or rest.rstrip(" .!~").endswith(("了", "啦"))  # "不要再用 var 了"
    category = Category.FEEDBACK if feedback else Category.CONSTRAINT
    rule = "zh.rule." + _RULE_IDS.get(canon, "other")
    end = match.start("rest") + len(rest) if clause_end else len(sentence)
    return [
        (make(content, Kind.PROCEDURAL, category, Tier.MUST, rule=rule, confidence=0.9, lang="zh"), 0, end)
    ]
