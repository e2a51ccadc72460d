"""Chinese memory rules. Pure: no I/O.

Contract: `sentence_hits(sentence)` takes ONE normalised Chinese sentence (NFKC: "，" is already ",") and
returns `Hit`s exactly like `rules_en.sentence_hits`, with content in Chinese ("用户叫小王。").
- The first person is "我" as a subject: "给我叫个车" / "他叫我去开会" (我 as an object) and "我朋友住在东京"
  (someone else) do not match. A clause without a subject after a "我..." clause inherits it
  ("我叫小王，在字节做产品经理" gives the job too).
- Questions ("你记得我叫什么吗？"), hypotheticals ("如果我搬到深圳…"), reported speech ("他说我…") and negated
  facts ("我不住在北京了") yield nothing. Tiers follow the English rules.
"""

from __future__ import annotations

import re

from core.extraction.candidates import Category, Kind, Operation, Tier
from core.extraction.lang import detect_lang
from core.extraction.rules_en import (
    LANGUAGE_CODES,
    Hit,
    LanguageRules,
    dispatch,
    fact,
    find_tools,
    forget_target,
    is_tool,
    make,
    must,
    reply_hit,
    shift,
    statement_hits,
    statements,
    tool_hit,
)

# fmt: off
_ME = r"(?<![给帮让叫和跟对把被替为向与同问请令使教自])我(?!们)"  # 我 as a subject, not "给我" / "我们"
_WE = r"(?:我们|咱们)"
_ADV = (
    r"(?:现在|目前|一直|还|也|就|都|刚|刚刚|才|最近|已经|平时|平常|一般|通常|主要|基本上?|其实|本身|"
    r"真的|确实|比较|很|挺|非常|特别|超|蛮|更|最|总是|向来|始终|长期|常年|本来就|又|如今|早就|早已|"
    r"本人|自己|上个月|上周|去年|前年|今年|前几天|前阵子|年初|年底|上半年|下半年|这个月|这周)*"
)
_LEAD = (  # fillers before a request; a short Latin chunk too ("ok, 记住…")
    r"^(?:[A-Za-z']{1,10}(?:\s+[A-Za-z']{1,10}){0,2}\s*[,:;!.]?\s*(?=[\u4e00-\u9fff]))?(?:(?:还有|另外|"
    r"对了|顺便说一下|顺便|补充一下|补充|然后|而且|并且|哦|噢|嗯|嗯嗯|诶|哎|那个|好的|好|ok|okay|"
    r"谢谢|感谢|好吧|行|对|是的|总之|最后|重要|注意|提醒一下|提醒你一下|说一下|跟你说一下|告诉你|"
    r"跟你说|以及|嗨|你好|您好)[\s,:;!.~]*)*"
)
_HYPOTHETICAL = re.compile(  # anywhere before the statement
    r"如果|假如|假设|要是|万一|比如|例如|比方说|譬如|假定|设想|想象|倘若|若是|即使|就算|哪怕|除非|的话")
_UNSURE = re.compile(r"打算|准备|计划|考虑|可能|也许|或许|大概|是否|等我")  # in the statement's own clause
_REPORTED = re.compile(
    r"听说|据说|听人说|告诉我|跟我说|对我说|和我说|以为|认为|觉得|说(?!实话|真的|白了|起来|一下|明|过)")
# fmt: on


def blocked(sentence: str, start: int, *, hypothetical: bool = True) -> bool:
    """True when the text before `start` makes the statement not the user's own current fact."""
    prefix = sentence[:start]
    if prefix.count('"') % 2 == 1:  # inside a quotation
        return True
    if hypothetical:
        clause = prefix[prefix.rfind(",") + 1 :]
        if _HYPOTHETICAL.search(prefix) or _UNSURE.search(clause) or "的话" in sentence[start : start + 30]:
            return True
    # "他说我…" is reported; "我说过…" / "跟你说…" are the user's own words.
    return any(
        not prefix[max(0, m.start() - 2) : m.start()].endswith(("我", "你"))
        for m in _REPORTED.finditer(prefix)
    )


_MIXED_RE = re.compile(r"(?<=[\u4e00-\u9fff])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9+#])(?=[\u4e00-\u9fff])")


def zh_content(text: str) -> str:
    """A third-person statement: 我 -> 用户, 我们 -> 用户团队, spaces around Latin words, ending in 。."""
    text = text.strip(" ,.;:!?~\"'")
    text = re.sub(r"我们|咱们", "用户团队", text).replace("我", "用户")
    return _MIXED_RE.sub(" ", text) + "。" if text else text


def _strip_tail(text: str) -> str:
    return re.sub(r"(?:了|啦|呢|吧|哦|噢|啊|呀|嘛|哈|的|呗|~)+$", "", text.strip(" ,.;:!?~\"'"))


_QUESTION_END = re.compile(r"(?:吗|么|呢|嘛)[\s.!~]*$")
_QUESTION_ANY = re.compile(
    r"是不是|有没有|能不能|可不可以|要不要|会不会|对不对|好不好|行不行|还记得|你记得|记不记得|请问|"
    r"^(?:为什么|怎么|什么|哪|谁|如何|是否)"
)
_POLITE = re.compile(  # "能帮我记住…吗" / "你能不能别那么啰嗦" ask for something: not questions about a fact
    _LEAD + r"(?:请你?|麻烦你?)?(?:你)?(?:能|可以|能不能|可不可以|能否|可否|麻烦)?(?:你)?(?:帮我)?"
    r"(?:一直|以后)?(?:记住|记一下|记下|记着|忘掉|忘记|删掉|删除|叫我|称呼我|别|不要)"
)


def is_question(sentence: str) -> bool:
    stripped = sentence.rstrip(" .!~")
    if _POLITE.match(stripped) and not re.search(r"你记得|还记得|记不记得", stripped):
        return False
    return stripped.endswith("?") or bool(_QUESTION_END.search(stripped) or _QUESTION_ANY.search(stripped))


# ================================================================ facts about the user

# fmt: off
_NAME = r"(?P<name>[\u4e00-\u9fff]{1,4}?|[A-Za-z][A-Za-z'.-]*(?:\s[A-Z][A-Za-z'.-]*)?)"
_NAME_END = r"(?=$|[\s,.;:!?\"'~]|就|吧|好了|哦|噢|啊|呀|啦|呢|嘛|哈|是|在|今年|来自|住|目前|现在|也|和)"
_NAME_STOP = re.compile(  # "我叫什么", "给我叫个车", "他叫我去开会": not names
    r"^(?:什么|啥|谁|外卖|车|个|了|醒|人|它|他|她|你|您|一下|过来|起来|做|去|来|这|那|不|没|我|的|得|"
    r"着|过|一|帮|给|把|写|看|跟|回|吃|别|好|啊|新)|什么|啥|谁|的|了")
_NAME_RES = (
    (re.compile(_ME + r"(?:的)?(?:名字|姓名|全名|真名|大名)(?:是|叫)\s*" + _NAME + _NAME_END), "user.name",
     "zh.name.my_name", 0.9),
    (re.compile(_ME + r"(?:就|其实|本名)?叫\s*" + _NAME + _NAME_END), "user.name", "zh.name.jiao", 0.9),
    (re.compile(r"(?:^|[\s,.!:]|你|您|大家|就|可以|直接|以后|都|请|也)(?:叫|称呼|喊)我\s*" + _NAME
                + r"(?=就好|就行|就可以|吧|好了|即可|就成|$|[\s,.;!~])"), "user.address_as",
     "zh.address.call_me", 0.9),
    (re.compile(_ME + r"(?:的)?(?:昵称|小名|外号|网名)(?:是|叫)\s*" + _NAME + _NAME_END), "user.address_as",
     "zh.address.nickname", 0.85),
    (re.compile(r"^(?:大家好|你好|您好|hi|hello|嗨|哈喽)(?:呀|啊|哇)?[\s,!.~]*我是\s*(?P<name>[\u4e00-\u9fff]"
                r"{2,3}|[A-Z][A-Za-z'-]*)(?=$|[\s,.;!~])", re.I), "user.name", "zh.name.intro", 0.75),
)
_ROLE_STRONG = (
    r"(?:工程师|开发者|开发人员|程序员|码农|设计师|产品经理|项目经理|经理|大学生|研究生|博士生|本科生|"
    r"硕士生|学生|老师|教师|教授|讲师|研究员|医生|护士|律师|会计|分析师|架构师|科学家|创始人|合伙人|"
    r"总监|主管|实习生|作家|记者|顾问|自由职业者|创业者|运营|站长|博主|负责人|组长|CTO|CEO|PM|HR|"
    r"leader|翻译|编辑)"
)
_ROLE_ANY = (
    _ROLE_STRONG[:-1] + r"|开发|研发|产品|设计|测试|算法|后端|前端|全栈|运维|数据分析|数据|销售|市场|"
    r"财务|人事|行政|客服|科研|教学)"
)
# fmt: on


def _name_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for pattern, slot, rule, conf in _NAME_RES:
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        name = match.group("name").strip()
        if _NAME_STOP.search(name) or (rule == "zh.name.intro" and re.search(_ROLE_ANY, name)):
            continue  # "你好，我是产品经理" introduces a job, not a name
        template = "用户叫{}。" if slot == "user.name" else "用户希望被称呼为{}。"
        cand = fact(template.format(name), slot, name, rule=rule, lang="zh", conf=conf)
        hits.append((cand, match.start(), match.end("name")))
    return hits


# fmt: off
_PLACES = frozenset(
    "北京 上海 广州 深圳 杭州 成都 南京 武汉 西安 重庆 天津 苏州 厦门 长沙 青岛 郑州 合肥 济南 大连 "
    "沈阳 福州 昆明 宁波 无锡 东莞 佛山 珠海 香港 澳门 台北 东京 大阪 首尔 纽约 伦敦 巴黎 柏林 新加坡 "
    "硅谷 旧金山 洛杉矶 西雅图 多伦多 温哥华 悉尼 墨尔本 慕尼黑 阿姆斯特丹 湾区 广东 浙江 江苏 四川 "
    "湖北 湖南 山东 河南 河北 福建 台湾 东北 美国 英国 德国 法国 日本 加拿大 澳大利亚 韩国 海外 国外"
    .split())
_LOC = r"(?P<loc>[\u4e00-\u9fffA-Za-z·]{2,12}?)"
_LOC_END = (
    r"(?=$|[\s,.;:!?\"']|了|啦|呢|的|这边|那边|附近|周边|一带|工作|上班|生活|住|已经|好久|很久|快|有|"
    r"呀|啊|哦|吧|\d|[一二三四五六七八九十两几半多]+(?:年|个月|月|天|周))"
)
_LOC_REJECT = re.compile(
    r"家|公司|这|那|哪|宿舍|酒店|宾馆|朋友|同学|学校|里|楼|附近|^(?:得|的|了|过|着|一个|一家|在)")
_LOC_RES = (
    (re.compile(_ME + _ADV + r"(?:住在|住|居住在|定居在?|生活在|常驻|坐标|base在|人在)\s*" + _LOC + _LOC_END,
                re.I), "user.location", "zh.location.live"),
    (re.compile(_ME + _ADV + r"(?:搬到|搬去|搬来|搬家到|搬回|移居到?|迁居到?|搬回到)了?\s*" + _LOC
                + _LOC_END), "user.location", "zh.location.moved"),
    (re.compile(_ME + _ADV + r"(?:来自|出生在|出生于|老家是|老家在)\s*" + _LOC + _LOC_END), "user.hometown",
     "zh.hometown.from"),
    (re.compile(_ME + r"(?:现在|目前|一直|常年|长期)+在\s*(?P<loc>[\u4e00-\u9fff]{2,6}?)(?:生活|定居)?"
                r"(?=$|[\s,.;!~])"), "user.location", "zh.location.zai"),
    (re.compile(_ME + r"是\s*(?P<loc>[\u4e00-\u9fff]{2,4}?)人(?=$|[\s,.;!~]|哦|啊|呀)"), "user.hometown",
     "zh.hometown.ren"),
)
# fmt: on
_NOT_LIVING = re.compile(r"工作|上班|出差|开会|旅游|玩|读书|上学|实习")


def is_place(text: str) -> bool:
    """A known city, province or country, or a name with an administrative suffix ("西湖区")."""
    return text in _PLACES or text[:2] in _PLACES or text.endswith(("市", "省", "区", "县", "州", "镇"))


def _place_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for pattern, slot, rule in _LOC_RES:
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        loc = match.group("loc")
        if _LOC_REJECT.search(loc) or is_tool(loc):
            continue
        # "我是好人" / "我现在在开会": only real places after the looser patterns.
        if rule in ("zh.hometown.ren", "zh.location.zai") and (not is_place(loc) or _NOT_LIVING.search(loc)):
            continue
        template = "用户住在{}。" if slot == "user.location" else "用户来自{}。"
        hits.append(
            (fact(template.format(loc), slot, loc, rule=rule, lang="zh"), match.start(), match.end("loc"))
        )
    return hits


# fmt: off
_JOB_RES = tuple((re.compile(pattern), rule) for pattern, rule in (
    (_ME + _ADV + r"是(?:一名|一个|一位|名|个|位)?\s*(?P<job>[\u4e00-\u9fffA-Za-z+# ]{0,10}?" + _ROLE_STRONG
     + r")(?=$|[\s,.;:!?]|在|就职|也|啊|哦|呀|啦|呢|了)", "zh.job.shi"),
    (_ME + _ADV + r"在\s*(?P<org>[\u4e00-\u9fffA-Za-z0-9& ]{2,12}?)\s*(?:做|当|担任|任|干)\s*(?P<job>"
     r"[\u4e00-\u9fffA-Za-z+# ]{0,8}?" + _ROLE_ANY + r")(?:工作|的工作)?(?=$|[\s,.;:!?]|了|呢|啊|哦)",
     "zh.job.zai_zuo"),
    (_ME + _ADV + r"(?:是做|是搞|做|搞|从事|干)\s*(?P<job>[\u4e00-\u9fffA-Za-z+# ]{0,8}?" + _ROLE_ANY
     + r")(?:的|工作|行业|相关的?工作|这一?行)(?=$|[\s,.;:!?]|了|呢|啊|哦)", "zh.job.zuo"),
    (_ME + _ADV + r"是\s*(?P<org>[\u4e00-\u9fffA-Za-z0-9&]{2,8}?)(?:公司)?的\s*(?P<job>"
     r"[\u4e00-\u9fffA-Za-z+#]{0,6}?" + _ROLE_ANY + r")(?=$|[\s,.;:!?]|啊|哦|呀|啦|呢)", "zh.job.org_de"),
    (_ME + r"(?:的)?(?:工作|职业|职位|岗位)是\s*(?P<job>[\u4e00-\u9fffA-Za-z+# ]{1,10}?)"
     r"(?=$|[\s,.;:!?]|了|呢|啊|哦)", "zh.job.my_job"),
    (_ME + _ADV + r"在\s*(?P<org>[\u4e00-\u9fffA-Za-z0-9& ]{2,12}?)\s*(?:工作|上班|任职|就职|实习)",
     "zh.employer"),
))
_ORG_REJECT = re.compile(  # "我在想做个产品", "我在一家公司…", "我是他们的…": not organisations
    r"^(?:想|学|写|搞|弄|看|找|用|考虑|准备|试|做|给|帮|跟|和|家|一家|一个|某|这|那|他|她|你|我|大|小)"
    r"|这|那|哪|家里|们")
# fmt: on


def _job_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for pattern, rule in _JOB_RES:
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        groups = match.groupdict()
        org = (groups.get("org") or "").strip()
        if org and (_ORG_REJECT.search(org) or find_tools(org)):
            org = ""  # "我在一家创业公司做算法工程师": the job still holds
        if org and is_place(org):  # "我在上海工作": where the user lives
            cand = fact(
                f"用户在{org}工作。", "user.location", org, rule=rule + ".place", lang="zh", conf=0.75
            )
            hits.append((cand, match.start(), match.end("org")))
        elif org:
            cand = fact(zh_content(f"用户在{org}工作"), "user.employer", org, rule=rule, lang="zh", conf=0.8)
            hits.append((cand, match.start(), match.end("org")))
        job = (groups.get("job") or "").strip().rsplit("的", 1)[-1].strip()
        if job and not re.search(r"[这那它吗什么]", job):
            cand = fact(zh_content(f"用户的职业是{job}"), "user.job", job.lower(), rule=rule, lang="zh")
            hits.append((cand, match.start(), match.end("job")))
    return hits


# fmt: off
_TOOL_STMT_RE = re.compile(
    r"(?P<subj>" + _WE + r"(?:的)?(?:团队|公司|项目|组|后端|前端)?|" + _ME + r"|(?:这个|我们的|我的|该|本)?"
    r"(?:项目|团队|公司|后端|前端|服务端|仓库|代码库|工程|应用|系统|服务))" + _ADV + r"(?:主要|现在|目前|"
    r"一直|都|统一|全部|全都|全)*(?P<verb>用的是|使用的是|用的|用|使用|采用|在用|是用|基于|换成了?|改用了?|"
    r"迁移到了?|切换到了?|转到了?|上了|用上了|选了|选的是|选择了)\s*(?P<span>[^.;!?]{1,80})")
_TOOL_NOUN_RE = re.compile(
    r"(?:(?:我们|我|咱们)?(?:的)?(?:项目|团队|公司)?(?:的)?)(?P<noun>技术栈|数据库|包管理器|包管理工具|"
    r"编程语言|开发语言|语言|前端框架|后端框架|框架|ORM|编辑器|IDE|操作系统|云服务|云)(?:用的是|用的|是|"
    r"使用的是|选的是|选了|用|采用|使用)\s*(?P<span>[^.;!?]{1,60})", re.I)
_NOUN_SLOT = {
    "数据库": "project.database", "包管理器": "project.package_manager",
    "包管理工具": "project.package_manager",
    "编程语言": "project.language", "开发语言": "project.language", "语言": "project.language",
    "前端框架": "project.framework", "后端框架": "project.framework", "框架": "project.framework",
    "orm": "project.orm", "编辑器": "user.editor", "ide": "user.editor", "操作系统": "user.os",
    "云服务": "project.cloud", "云": "project.cloud",
}
# A list ("React,TypeScript 和 pnpm") goes on across commas; the next statement ("，前端用 Vue") ends it.
_SPAN_CUT = re.compile(
    r"而不是|不是|而非|因为|但是|但|所以|不过|而且|可是|来做|做|作为|当|替代|代替|"
    r",(?=[^,]{0,8}?(?:用|使用|采用|基于|换成|是))")
_NO_USE_RE = re.compile(
    r"(?P<subj>" + _WE + r"|" + _ME + r"|项目)" + _ADV + r"(?:不用|不使用|从不用|从来不用)\s*"
    r"(?P<obj>[^,.;!?]{1,30})")
_NEGATING = re.compile(
    r"(?:不是|而不是|而非|不用|别用|不要用|不再用|不再使用|别再用|不要再用|从|替换掉?|代替|换掉|不是用)\s*$")
_CORRECTION_CUE = re.compile(r"^(?:不是|不对|其实|我说的是|应该是|是)|不是")
# fmt: on
_DECISION_VERBS = ("换成", "改用", "迁移到", "切换到", "转到", "选")
# "我用 Python 写了个爬虫", "我用 pnpm 装了依赖": a one-off action done with the tool, not the stack.
_ONE_OFF_ACTION = re.compile(r"^[^,]*?[A-Za-z0-9+#.]\s*[\u4e00-\u9fff]{1,3}了")


def _cut(span: str) -> str:
    match = _SPAN_CUT.search(span)
    return span[: match.start()] if match else span


def _tool_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for match in statements(_TOOL_STMT_RE, sentence):
        subject_is_user = match.group("subj") == "我"
        if blocked(sentence, match.start()) or (_ONE_OFF_ACTION.search(match.group("span"))):
            continue
        category = Category.DECISION if match.group("verb").startswith(_DECISION_VERBS) else None
        for tool, _, end in find_tools(_cut(match.group("span"))):
            if tool.slot and tool.slot.startswith("user.") and not subject_is_user:
                continue
            end += match.start("span")
            hits.append(tool_hit(tool, match.start(), end, rule="zh.tool.use", lang="zh", category=category))
    noun = _TOOL_NOUN_RE.search(sentence)
    if noun and not blocked(sentence, noun.start()):
        wanted = _NOUN_SLOT.get(noun.group("noun").lower())
        for tool, _, end in find_tools(_cut(noun.group("span"))):
            if wanted is None or tool.slot == wanted:
                hits.append(
                    tool_hit(tool, noun.start(), noun.start("span") + end, rule="zh.tool.noun", lang="zh")
                )
    no_use = _NO_USE_RE.search(sentence)
    if no_use and not blocked(sentence, no_use.start()):
        obj = _strip_tail(_cut(no_use.group("obj")))
        if obj and not re.match(r"[它这那]|担心|管|急|谢", obj):
            if no_use.group("subj") == "我":
                kind, category, content = Kind.SEMANTIC, Category.FACT, zh_content(f"用户不使用{obj}")
            else:
                kind, category, content = Kind.PROCEDURAL, Category.CONSTRAINT, zh_content(f"不要使用{obj}")
            cand = make(
                content, kind, category, Tier.WORTH, rule="zh.tool.no_use", confidence=0.75, lang="zh"
            )
            hits.append((cand, no_use.start(), no_use.end()))
    return hits


# fmt: off
_LIKE_RE = re.compile(
    _ME + _ADV + r"(?P<verb>不太喜欢|不喜欢|不爱|讨厌|反感|受不了|烦|厌恶|不习惯|更喜欢|喜欢|爱|偏好|偏爱|"
    r"喜爱|更倾向于?|倾向于?|习惯|钟爱)\s*(?P<obj>[^,.;!?]{1,40})")
_OBJ_CUT = re.compile(r"因为|但是|但|所以|不过|而且|可是|然而|的话|,")
_OBJ_REJECT = re.compile(  # "我喜欢你的方案": feedback on this task, not a preference
    r"^(?:你|您|它|他|她|这|那|哪|什么|吗|上了|了|着|过|得|一下)|你的|这个(?:方案|回答|答案|想法|版本)|这么|那么|"
    r"这样|这次|今天")
_PREFERS = re.compile(r"偏好|偏爱|更喜欢|比较喜欢|习惯|钟爱|倾向")
_DIET_RE = re.compile(_ME + _ADV + r"(?P<diet>吃素|是素食者|是素食主义者|是吃素的|是纯素食?者|是纯素|吃纯素)")
_ALLERGY_RE = re.compile(_ME + _ADV + r"对\s*(?P<obj>[^,.;!?]{1,12}?)\s*过敏")
_NO_EAT_RE = re.compile(
    _ME + _ADV + r"不(?P<verb>吃|喝)\s*(?P<obj>[\u4e00-\u9fff]{1,6}?)(?=$|[\s,.;:!?]|的|了|哦|啊)")
_TIMEZONE_RE = re.compile(
    _ME + r"(?:的)?(?:时区是|在)\s*(?P<tz>东[一二三四五六七八九十]+区|UTC\s?[+-]\s?\d{1,2}|"
    r"GMT\s?[+-]\s?\d{1,2})")
# fmt: on
_NEGATIVE = ("不", "讨厌", "反感", "受不了", "烦", "厌恶")


def _pref_hits(sentence: str) -> list[Hit]:
    match = _LIKE_RE.search(sentence)
    if match is None or blocked(sentence, match.start()):
        return []
    cut = _OBJ_CUT.search(match.group("obj"))
    obj = _strip_tail(match.group("obj")[: cut.start()] if cut else match.group("obj"))
    if not obj or _OBJ_REJECT.search(obj) or len(obj) > 30:
        return []
    verb = match.group("verb")
    negative = verb.startswith(_NEGATIVE)
    # "我更喜欢" / "我习惯用": the adverb or verb makes it a choice, not a taste
    prefers = not negative and _PREFERS.search(sentence[match.start() : match.start("obj")]) is not None
    end = match.start("obj") + len(obj)
    tools = find_tools(obj)
    if prefers and tools and tools[0][0].slot and re.match(r"^(?:用|使用)?\s*$", obj[: tools[0][1]]):
        tool = tools[0][0]
        cand = make(
            f"用户偏好使用 {tool.display}。",
            Kind.SEMANTIC,
            Category.PREFERENCE,
            Tier.WORTH,
            rule="zh.pref.tool",
            confidence=0.75,
            lang="zh",
            slot=tool.slot,
            value=tool.canonical,
        )
        return [(cand, match.start(), end)]  # fmt: skip
    word = "不喜欢" if negative else "习惯" if verb == "习惯" else "偏好" if prefers else "喜欢"
    rule = "zh.pref.dislike" if negative else "zh.pref.like"
    cand = make(zh_content(f"用户{word}{obj}"), Kind.SEMANTIC, Category.PREFERENCE, Tier.WORTH, rule=rule,
                confidence=0.75, lang="zh")  # fmt: skip
    return [(cand, match.start(), end)]


def _profile_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    match = _DIET_RE.search(sentence)
    if match and not blocked(sentence, match.start()):
        value = "vegan" if "纯素" in match.group("diet") else "vegetarian"
        content = "用户是纯素食者。" if value == "vegan" else "用户吃素。"
        hits.append((fact(content, "user.diet", value, rule="zh.profile.diet", lang="zh"), *match.span()))
    for pattern, rule in ((_ALLERGY_RE, "zh.profile.allergy"), (_NO_EAT_RE, "zh.profile.no_eat")):
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()) or match.group("obj") in ("了", "饭", "东西"):
            continue
        groups = match.groupdict()
        text = f"用户不{groups['verb']}{groups['obj']}" if "verb" in groups else f"用户对{groups['obj']}过敏"
        content = zh_content(text)
        cand = make(
            content, Kind.SEMANTIC, Category.PROFILE, Tier.WORTH, rule=rule, confidence=0.8, lang="zh"
        )
        hits.append((cand, *match.span()))
    match = _TIMEZONE_RE.search(sentence)
    if match and not blocked(sentence, match.start()):
        value = match.group("tz").replace(" ", "")
        cand = fact(
            f"用户的时区是{value}。", "user.timezone", value, rule="zh.profile.timezone", lang="zh", conf=0.8
        )
        hits.append((cand, *match.span()))
    return hits


def _fact_hits(sentence: str) -> list[Hit]:
    return (
        _name_hits(sentence) + _place_hits(sentence) + _job_hits(sentence) + _tool_hits(sentence)
        + _pref_hits(sentence) + _profile_hits(sentence)
    )  # fmt: skip


_INHERIT = re.compile(
    r"^(?:在|住|是|做|搬|来自|从事|喜欢|不喜欢|讨厌|偏好|也|还|目前|现在|今年|平时|对|不吃|吃素|叫)"
)


def _inherited_hits(sentence: str) -> list[Hit]:
    """Facts in subject-less clauses that follow a "我..." clause ("我叫小王，在字节做产品经理")."""
    clauses = sentence.split(",")
    hits: list[Hit] = []
    offset, subject_is_user = 0, False
    for clause in clauses if len(clauses) > 1 else ():
        stripped = re.sub(_LEAD, "", clause.lstrip())
        start = offset + len(clause) - len(stripped)
        if stripped.startswith("我") and not stripped.startswith("我们"):
            subject_is_user = True
        elif subject_is_user and _INHERIT.match(stripped):
            hits += [(c, max(0, s - 1 + start), e - 1 + start) for c, s, e in _fact_hits("我" + stripped)]
        elif stripped:
            subject_is_user = False  # "他住在上海" / "我们用 pnpm": someone else is talking about now
        offset += len(clause) + 1
    return hits


# ================================================================ how the agent should reply and behave

# fmt: off
_REPLY_NOUN = re.compile(r"回答|回复|答复|答案|解释|说明|输出|回应|讲解|说话")
_STYLE_RE = re.compile(
    r"(?P<concise>简洁|简短|简单点|简单一点|短一点|短点|精简|简明|言简意赅|直接一点|直接点|直奔主题|简练|"
    r"少说废话|别废话|不要废话|少废话)|(?P<long>啰嗦|啰唆|冗长|太长|很长|长篇大论|废话)|(?P<detailed>详细|"
    r"具体一点|具体点|详尽|展开讲|展开说|多解释)|(?P<bullet_points>分点|列表|要点|分条)")
# Words about replies even when no reply noun is there.
_STYLE_IMPLICIT = re.compile(r"啰嗦|啰唆|废话|言简意赅|长篇大论|直奔主题|分点")
_STYLE_NEG = re.compile(r"(?:不要|别|不|不用|没必要|不需要|少)(?:那么|太|这么|过于|很)?$")
_STYLE_VALUE = {("concise", False): "concise", ("concise", True): "detailed", ("detailed", False): "detailed",
                ("detailed", True): "concise", ("bullet_points", False): "bullet_points"}
_PERSIST = re.compile(r"以后|之后|今后|往后|从现在开始|从现在起|从今以后|一直|始终|总是|永远|每次|一律|所有")
_FEEDBACK = re.compile(
    r"你(?:的)?(?:回答|回复|答复|说的话)?(?:都|总是|老是|有点|有些|也|实在|真的)*(?:太|过于|很|好)?"
    r"(?:长|啰嗦|啰唆|冗长)")
_PREF_CUE = re.compile(_ME + _ADV + r"(?:喜欢|偏好|倾向|希望|想要|更喜欢|习惯|讨厌|不喜欢|受不了|需要)")
_IMPERATIVE = re.compile(
    _LEAD + r"(?:请你?|麻烦你?)?(?:你)?(?:能不能|可不可以|能否)?(?:以后|之后|今后|往后|从现在开始|以后都|"
    r"每次)?(?:的)?(?:回答|回复|说话|写|简洁|简短|不要|别|少|多|尽量|直接|用|使用|说|给我|一律|都)")
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


def _reply_hits(sentence: str) -> list[Hit]:
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
        reply_hit("user.reply_style", value, mode=mode, lang="zh", rule="zh.reply.style", end=len(sentence))
    ]


# fmt: off
_MODS = (
    r"永远不要|永远别|永远不许|永远不能|千万不要|千万别|绝对不要|绝对别|绝对不能|一定不要|尽量不要|尽量别|"
    r"不要再|别再|不要|别|不许|不准|禁止|切勿|勿|始终|总是|一律|务必|一定要|必须|每次都要?|都要|尽量|避免"
)
_RULE_RE = re.compile(
    _LEAD + r"(?P<lead>(?:以后|之后|今后|往后|从现在开始|从现在起|从今以后|从今往后|接下来|每次)(?:都|请|你)*"
    r"[,:]?\s*)?"
    # A condition ("写 Python 的时候，" / "提交代码前") only counts when a rule word follows it.
    r"(?P<cond>[^,]{1,15}?(?:的时候|时候|时|之前|以前|前|之后|后)(?:\s*,\s*|(?=(?:请你?|你)?(?:" + _MODS
    + r"))))?(?:请你?|麻烦你?)?(?:你)?(?:以后|之后|今后|都)*(?P<mod>" + _MODS + r")?\s*(?P<rest>.{1,100})$")
_MOD_CANON = {
    "永远不要": "永远不要", "永远别": "永远不要", "永远不许": "永远不要", "永远不能": "永远不要",
    "千万不要": "不要", "千万别": "不要", "绝对不要": "不要", "绝对别": "不要", "绝对不能": "不要",
    "一定不要": "不要", "不要": "不要", "别": "不要", "不许": "不要", "不准": "不要", "禁止": "禁止",
    "切勿": "不要", "勿": "不要", "不要再": "不要再", "别再": "不要再", "尽量不要": "尽量不要",
    "尽量别": "尽量不要", "避免": "避免", "始终": "始终", "总是": "始终", "一律": "始终", "每次都": "始终",
    "每次都要": "始终", "都要": "始终", "务必": "必须", "一定要": "必须", "必须": "必须", "尽量": "尽量",
    "": "始终",
}
_RULE_IDS = {"不要": "dont", "永远不要": "never", "始终": "always"}
_NOT_RULE = re.compile(  # "别担心", "不要客气", "别急": comfort, not rules for the agent
    r"^(?:客气|担心|着急|急|紧|管|谢|怕|生气|难过|介意|误会|笑|忘|打扰|麻烦|理|在意|害怕|放弃|慌|紧张|"
    r"多想|想太多|骗|走|说了|吵|闹|这样|那样|动|停|哭|乱|瞎|再)")  # "以后再说": later, not a rule
_ONE_OFF = re.compile(
    r"这次|先|现在|暂时|今天|明天|这个文件|这个函数|这里|这一步|这行|目前|马上|刚才|这段|上面|下面")
_PRONOUN = re.compile(r"它|这个|那个|这样|那样|这些|那些")
# fmt: on


def _rule_hits(sentence: str) -> list[Hit]:
    """Standing rules for the agent: "别用 ORM", "永远不要…", "以后都用 pnpm"."""
    match = _RULE_RE.match(sentence.rstrip(" .!~"))
    if match is None:
        return []
    lead, mod = match.group("lead"), match.group("mod") or ""
    if not mod and not lead:
        return []
    rest = match.group("rest").strip(" ,")
    core = _strip_tail(rest)
    if len(core) < 2 or _NOT_RULE.match(core) or (_ONE_OFF.search(core) and not lead):
        return []  # "先别改这个文件": about the task at hand
    if _PRONOUN.search(core) and len(_PRONOUN.sub("", core)) <= 2:
        return []  # "不要这样做"
    canon = _MOD_CANON[mod]
    tools = find_tools(core)
    uses = tools and tools[0][0].slot and re.match(r"^(?:用|使用|改用|换成)\s*$", core[: tools[0][1]])
    if canon in ("始终", "必须") and uses:  # "以后都用 pnpm": the choice goes in the tool's slot
        return [tool_hit(tools[0][0], 0, len(sentence), rule="zh.rule.use_tool", lang="zh", tier=Tier.MUST,
                         confidence=0.9)]  # fmt: skip
    cond = (match.group("cond") or "").rstrip(" ,")
    verb = re.sub(r"^用(?!户)", "使用", core)
    content = zh_content(f"{cond + ',' if cond else ''}{canon}{verb}").replace(",", "，")
    feedback = canon == "不要再" or rest.rstrip(" .!~").endswith(("了", "啦"))  # "不要再用 var 了"
    category = Category.FEEDBACK if feedback else Category.CONSTRAINT
    rule = "zh.rule." + _RULE_IDS.get(canon, "other")
    return [
        (
            make(content, Kind.PROCEDURAL, category, Tier.MUST, rule=rule, confidence=0.9, lang="zh"),
            0,
            len(sentence),
        )
    ]


# ================================================================ remember / forget / corrections

# fmt: off
_REMEMBER_RE = re.compile(
    _LEAD + r"(?:请你?|麻烦你?|你|帮我|给我|帮忙|能不能|可以|能|可不可以|以后|下次|之后|务必|一定)*(?:要|得|"
    r"一定要|帮我)*(?:把(?:这个|这些|这条|以下|下面的?)(?:信息|内容|事)?)?(?P<verb>记住|记下来|记下|记一下|"
    r"记着|记好|记得|牢记|别忘了|不要忘了|不要忘记|别忘记|千万别忘了|存一下|保存一下|备忘一下)(?:一下|了"
    r"(?=\s*[,:]))?(?:哦|哈|啊|喔)?[\s,:]*(?P<p>.*?)(?:好吗|好不好|可以吗|行吗|吗|哦|哈|啊)?[\s.!?~]*$")
_NEXT_REQUEST = re.compile(
    r",\s*(?:另外|还有|然后|顺便|并且|那)?(?:帮我|请|你|能不能|可以|解释|告诉|说说|看看|怎么|为什么)")
_SUBJECT_START = re.compile(r"^(?:我|我们|咱们|用户|项目|团队|公司|你|他|她|它|这|那|[A-Za-z0-9])")
_FORGET_RES = (
    re.compile(_LEAD + r"(?:请你?|麻烦你?|你|帮我|可以|能不能)*(?P<verb>忘掉|忘记|忘了|删掉|删除|清除|"
               r"抹掉|去掉|清空)\s*(?P<p>.+?)(?:吧|了|哦|啊)*$"),
    re.compile(_LEAD + r"(?:请你?|麻烦你?|你|帮我)*把\s*(?P<p>.+?)\s*(?:从(?:你的)?记忆(?:里|中))?"
               r"(?P<verb>忘掉|忘了|忘记|删掉|删了|删除|清除|去掉|抹掉)(?:吧|了|哦|啊)*$"),
    re.compile(_LEAD + r"(?:请你?|你)?(?P<verb>别|不要|不用|不必|无需|不需要)(?:再)?(?:记|记住|记着|保存|"
               r"存|记录)(?:着)?\s*(?P<p>.+?)(?:了|啦|吧)*$"),
)
_PERSONAL = re.compile(r"我|记忆|关于用户|个人|信息|资料")
_MEMORY_WORDS = re.compile(
    r"记忆|关于我|我[^,]{0,6}?(?:信息|资料|地址|名字|手机|电话|邮箱|生日|住址|个人|隐私|数据)")
_FORGET_ALL = re.compile(r"(?:所有|全部|一切)[^,]{0,6}?(?:信息|记忆|资料|数据|事)?|一切")
# "忘了告诉你…" is "I forgot to tell you": not a target to forget.
_NOT_A_TARGET = re.compile(r"^(?:告诉|说|跟你说|提|带|拿|做|写|关|问)")
_VAGUE = re.compile(r"(?:这个|那个|它|这些|那些|刚才说的|我刚才说的|我说的)")
_CONTRAST_RE = re.compile(r"(?:,|而)\s*(?:不是|并不是|而不是)\s*[^,]{1,12}$")
_CORRECTION_RE = re.compile(
    _LEAD + r"(?P<marker>不是的|不对|错了|搞错了|你搞错了|你记错了|记错了|纠正一下|更正一下|更正|纠正|其实|"
    r"说错了|我说错了|准确地说|应该是|不,)[\s,:!.]*(?P<rest>.+)$")
# fmt: on
_ACTION = re.compile(
    r"用|写|跑|加|提交|测试|检查|关|开|回复|回答|保持|删|更新|备份|带|发|做|看|改|注释|运行|执行|部署|推|拉|"
    r"合并|确认|设置|安装|格式化|说明|标注|告诉|问|通知|先|每次|始终|总是"
)
_REMINDER_VERBS = ("记得", "别忘了", "不要忘了", "不要忘记", "别忘记", "千万别忘了")


def _remember_hits(sentence: str) -> list[Hit] | None:
    """None when the sentence is not a remember request; a list (possibly empty) when it is."""
    match = _REMEMBER_RE.match(sentence)
    if match is None:
        return None
    payload = match.group("p").strip(" ,:\"'")
    if len(payload) < 2 or re.match(r"^(?:了|吗|没|住了|这个$|那个$|它$)", payload):
        return []  # "记住了" acknowledges; it asks nothing
    offset = match.start("p") + match.group("p").find(payload)
    request = _NEXT_REQUEST.search(payload)  # "记住X，另外帮我看看Y": only X is to be remembered
    if request:
        payload = payload[: request.start()]
    end = offset + len(payload)
    if detect_lang(payload) == "en":  # "请记住：my name is Alice"
        inner = statement_hits(payload)
    else:
        inner = _fact_hits(payload) or _rule_hits(payload) or _reply_hits(payload)
    if inner:
        return [must(hit, "zh.remember", start=0, end=end) for hit in shift(inner, offset)]
    if match.group("verb") in _REMINDER_VERBS and not _SUBJECT_START.match(payload):
        if not _ACTION.search(payload):
            return []  # "别忘了第12行末尾的分号": a thing in the code, not something to do each time
        content, kind, category = zh_content(f"记得{payload}"), Kind.PROCEDURAL, Category.CONSTRAINT
    else:
        content, kind, category = zh_content(payload), Kind.SEMANTIC, Category.FACT
    return [
        (make(content, kind, category, Tier.MUST, rule="zh.remember", confidence=0.95, lang="zh"), 0, end)
    ]


def _forget_hits(sentence: str) -> list[Hit] | None:
    """None when the sentence is not a forget request; a list (possibly empty) when it is."""
    match = next((m for p in _FORGET_RES if (m := p.match(sentence.rstrip(" .!~")))), None)
    if match is None:
        return None
    payload = match.group("p").strip(" ,")
    if _FORGET_ALL.search(payload) and len(payload) <= 14:  # "删除关于我的所有记忆"
        cand = make(
            "关于用户的所有记忆。",
            Kind.SEMANTIC,
            Category.PROFILE,
            Tier.MUST,
            rule="zh.forget.all",
            confidence=0.9,
            lang="zh",
            op=Operation.FORGET,
            extra={"scope": "all"},
        )
        return [(cand, 0, len(sentence))]  # fmt: skip
    payload = payload.split(",")[0]  # "忘掉之前的做法，我们试试递归": the target ends at the comma
    payload = re.sub(r"(?:这件事|这个事|这事|的事情?|这条|的信息|的记忆|这一条|这个信息)$", "", payload)
    if len(payload) < 2 or _NOT_A_TARGET.match(payload) or _VAGUE.fullmatch(payload):
        return []
    needed = _MEMORY_WORDS if match.group("verb").startswith(("删", "清", "抹", "去")) else _PERSONAL
    if not needed.search(payload):
        return []  # "把这个函数删了", "忘掉之前那个方案": not about the user
    slot, value, kind, category = forget_target(payload, _fact_hits(payload))
    cand = make(zh_content(payload), kind, category, Tier.MUST, rule="zh.forget", confidence=0.9, lang="zh",
                slot=slot, value=value, op=Operation.FORGET)  # fmt: skip
    return [(cand, 0, len(sentence))]


CHINESE = LanguageRules(
    lang="zh",
    is_question=is_question,
    forget=_forget_hits,
    remember=_remember_hits,
    negating=_NEGATING,
    correction_cue=_CORRECTION_CUE,
    correction=_CORRECTION_RE,  # "纠正一下，我住在杭州"
    contrast=_CONTRAST_RE,  # "我住在杭州，不是苏州"
    correction_facts=_fact_hits,
    reply=_reply_hits,
    facts=lambda sentence: _fact_hits(sentence) + _inherited_hits(sentence),
    rules=_rule_hits,
)


def sentence_hits(sentence: str) -> list[Hit]:
    """All Chinese rule hits for one normalised sentence (see the module docstring)."""
    return dispatch(sentence, CHINESE)
