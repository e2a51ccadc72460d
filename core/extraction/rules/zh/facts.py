"""Chinese facts about what the user works with, likes and is: tools (in their slots, or "我们不用 X"),
likes and dislikes, diet, allergies and timezone. Pure: no I/O.

- `fact_hits(sentence)` -> every Chinese fact rule's hits, identity (`zh.identity`) included.
- `inherited_hits(sentence)`: facts in subject-less clauses after a "我..." clause ("我叫小王，在字节做产品经理").
- `NEGATING` / `CORRECTION_CUE`: what negates a tool and what makes a tool pair a correction (for
  `dispatch.tool_pair_hits`).
"""

from __future__ import annotations

import re

from core.extraction.candidates import Category, Kind, Tier
from core.extraction.rules.hits import Hit, fact, make, statements, tool_hit
from core.extraction.rules.vocab import find_tools, named_as_left
from core.extraction.rules.zh.grammar import ADV, LEAD, ME, WE, blocked, strip_tail, zh_content
from core.extraction.rules.zh.identity import job_hits, name_hits, place_hits

# fmt: off
_TOOL_STMT_RE = re.compile(
    r"(?P<subj>" + WE + r"(?:的)?(?:团队|公司|项目|组|后端|前端)?|" + ME
    + r"(?:这台|这边|的?(?:电脑|笔记本|机器|手机|本子|主力机))?|(?:这个|我们的|我的|该|本)?"
    r"(?:项目|团队|公司|后端|前端|服务端|仓库|代码库|工程|应用|系统|服务))" + ADV + r"(?:主要|现在|目前|"
    r"一直|都|统一|全部|全都|全)*"
    # "我写 Go 用的是 GoLand": what the tool is used for, between the subject and the verb
    r"(?:(?:写|开发|做|搞|编)\s*(?:[A-Za-z][\w.+#-]*\s*(?:代码|项目)?|[\u4e00-\u9fff]{0,4}?(?:代码|程序))\s*(?:的时候|时)?\s*"
    r"(?=用的是|用的|使用的是))?"
    r"(?P<verb>用的是|使用的是|用的|用|使用|采用|在用|是用|基于|换成了?|改用了?|"
    r"迁移到了?|切换到了?|转到了?|上了|用上了|选了|选的是|选择了|(?<=[台边脑本器机])(?:是|装的是|跑的是|系统是|:)?)"
    r"\s*(?P<span>(?:[^.;!?]|\.(?=\w)){1,80})")
_TOOL_NOUN_RE = re.compile(
    r"(?:(?:我们|我|咱们)?(?:的)?(?:项目|团队|公司)?(?:的)?)(?P<noun>技术栈|数据库|包管理器|包管理工具|"
    r"编程语言|开发语言|语言|前端框架|后端框架|框架|ORM|编辑器|IDE|操作系统|云服务|云)(?:用的是|用的|是|"
    r"使用的是|选的是|选了|用|采用|使用)\s*(?P<span>(?:[^.;!?]|\.(?=\w)){1,60})", re.I)
_NOUN_SLOT = {
    "数据库": "project.database", "包管理器": "project.package_manager",
    "包管理工具": "project.package_manager",
    "编程语言": "project.language", "开发语言": "project.language", "语言": "project.language",
    "前端框架": "project.framework", "后端框架": "project.framework", "框架": "project.framework",
    "orm": "project.orm", "编辑器": "user.editor", "ide": "user.editor", "操作系统": "user.os",
    "云服务": "project.cloud", "云": "project.cloud",
}
# A list ("React,TypeScript 和 pnpm") goes on across commas; the next statement ("，前端用 Vue", "，以后别再写
# npm run") ends it: a comma ends the span unless a list item (a Latin name) follows.
_SPAN_CUT = re.compile(
    r"而不是|不是|而非|因为|但是|但|所以|不过|而且|可是|来做|做|作为|当|替代|代替|"
    r",(?=[^,]{0,8}?(?:用|使用|采用|基于|换成|是))"
    r"|,(?!\s*[A-Za-z][\w.+#-]*(?:\s+[A-Za-z][\w.+#-]*)?(?:\s*v?[\d.]+)?\s*(?:$|[,+/]|和|及|与|、|以及))")
_NO_USE_RE = re.compile(
    r"(?P<subj>" + WE + r"|" + ME + r"|项目)" + ADV + r"(?:不用|不使用|从不用|从来不用)\s*"
    r"(?P<obj>[^,.;!?]{1,30})")
NEGATING = re.compile(
    r"(?:不是|而不是|而非|不用|别用|不要用|不再用|不再使用|别再用|不要再用|从|替换掉?|代替|换掉|不是用)\s*$")
CORRECTION_CUE = re.compile(r"^(?:不是|不对|其实|我说的是|应该是|是)|不是")
# fmt: on
_DECISION_VERBS = ("换成", "改用", "迁移到", "切换到", "转到", "选")
# "我用 Python 写了个爬虫", "我用 pnpm 装了依赖": a one-off action done with the tool, not the stack.
_ONE_OFF_ACTION = re.compile(r"^[^,]*?[A-Za-z0-9+#.]\s*[\u4e00-\u9fff]{1,3}了")


_ALTERNATIVE = re.compile(r"还是[^,]{0,20}?(?:好|呢|吧|更|比较)|或者|或是|要么")


def _cut(span: str) -> str:
    match = _SPAN_CUT.search(span)
    return span[: match.start()] if match else span


def _tool_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    named = bool(find_tools(sentence))  # no tool named: only "we don't use X" can say something of tools
    for match in statements(_TOOL_STMT_RE, sentence) if named else ():
        subject_is_user = match.group("subj").startswith("我") and not match.group("subj").startswith("我们")
        if not match.group("verb") and not subject_is_user:
            continue  # a bare name after a subject is the user's device ("我这边 MacBook M3") or nothing
        if blocked(sentence, match.start()) or (_ONE_OFF_ACTION.search(match.group("span"))):
            continue
        if _ALTERNATIVE.search(match.group("span")):
            continue  # "我们用 React 还是 Vue 好": a choice still open
        category = Category.DECISION if match.group("verb").startswith(_DECISION_VERBS) else None
        span = _cut(match.group("span"))
        if not match.group("verb"):  # "我这边 MacBook M3，Docker 老崩": the device, not the list after it
            span = span.split(",")[0]
        for tool, start, end in find_tools(span):
            if tool.slot and tool.slot.startswith("user.") and not subject_is_user:
                continue
            if named_as_left(span, start, end):
                continue  # "我们用 pnpm,别再用 npm"
            end += match.start("span")
            hits.append(tool_hit(tool, match.start(), end, rule="zh.tool.use", lang="zh", category=category))
    noun = _TOOL_NOUN_RE.search(sentence) if named else None
    if noun and not blocked(sentence, noun.start()):
        wanted = _NOUN_SLOT.get(noun.group("noun").lower())
        for tool, _, end in find_tools(_cut(noun.group("span"))):
            if wanted is None or tool.slot == wanted:
                hits.append(
                    tool_hit(tool, noun.start(), noun.start("span") + end, rule="zh.tool.noun", lang="zh")
                )
    no_use = _NO_USE_RE.search(sentence)
    # "我们已经不用 Jenkins 了" / "早就不用 X 了": a change of state, not a rule; what replaced X is the fact
    changed = no_use is not None and (
        re.search(r"已经|早就|早已|不再|现在", no_use.group()) is not None
        or re.match(r"[^,.;!?]*?了", sentence[no_use.start("obj") :]) is not None
    )
    if no_use and not changed and not blocked(sentence, no_use.start()):
        obj = strip_tail(_cut(no_use.group("obj")))
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
_LIKE_RE = re.compile(  # "我周末喜欢钓鱼": a time of leisure before the verb says when, not whether
    ME + r"\s*(?:周末|业余(?:时间)?|下班(?:以?后)?|没事(?:的时候|儿)?|闲暇时|空闲时|有空(?:的时候)?)?\s*" + ADV
    + r"(?P<verb>不太喜欢|不喜欢|不爱|讨厌|反感|受不了|烦|厌恶|不习惯|更喜欢|喜欢|爱|偏好|偏爱|"
    r"喜爱|更倾向于?|倾向于?|习惯|钟爱|(?i:prefer|like|love|hate|enjoy)(?=\s))\s*(?P<obj>[^,.;!?]{1,40})")
_OBJ_CUT = re.compile(r"因为|但是|但|所以|不过|而且|可是|然而|的话|,")
_OBJ_REJECT = re.compile(  # "我喜欢你的方案": feedback on this task, not a preference
    r"^(?:你|您|它|他|她|这|那|哪|什么|吗|上了|了|着|过|得|一下)|你的|这个(?:方案|回答|答案|想法|版本)|这么|那么|"
    r"这样|这次|今天")
_PREFERS = re.compile(r"偏好|偏爱|更喜欢|比较喜欢|习惯|钟爱|倾向|prefer", re.I)
_DIET_RE = re.compile(
    ME + ADV + r"(?:从[\u4e00-\u9fff\d]{1,6}?)?(?:开始|起|改成|改为)?"
    r"(?P<diet>吃素|是素食者|是素食主义者|是吃素的|是纯素食?者|是纯素|吃纯素|(?:是|算是?)?蛋奶素|(?:是|算是?)?奶素)"
    # the subject dropped, the state told as it is now: "现在算蛋奶素"
    r"|(?:^|[,\s])(?:现在|目前|如今)(?:算是?|是|改成|改吃)(?P<diet2>蛋奶素|奶素|纯素|素食者?)")
_ALLERGY_RE = re.compile(ME + ADV + r"对\s*(?P<obj>[^,.;!?]{1,12}?)\s*过敏")
_NO_EAT_RE = re.compile(  # the household eats what the user eats: "我们家不吃辣"
    r"(?:" + ME + r"|我们家|我家|家里)" + ADV + r"(?:都|一般)?不(?P<verb>吃|喝)\s*(?P<obj>[\u4e00-\u9fff]{1,6}?)"
    r"(?=$|[\s,.;:!?]|的|了|哦|啊)")
_LANGUAGES = r"英语|英文|日语|日文|韩语|法语|德语|西班牙语|俄语|中文|普通话|粤语|广东话|上海话|闽南语|四川话"
_NATIVE_RE = re.compile(
    ME + r"(?:的)?母语是\s*(?P<lang>" + _LANGUAGES + r"|[\u4e00-\u9fff]{2,4}?语)|(?P<lang2>" + _LANGUAGES + r")是"
    + ME + r"的母语")
_LEVEL_RE = re.compile(  # how well the user speaks a language: "我英语一般", "我日语过了 N2"
    ME + r"(?:的)?(?:" + _LANGUAGES + r")\s*(?:水平|能力|口语|阅读)?\s*(?:一般|不好|不太好|很差|比较差|很烂|不行|"
    r"不太行|还行|还可以|不错|很好|挺好|流利|很流利|熟练|过了?\s*\S{1,4}|只会一点|会一点)")
_TIMEZONE_RE = re.compile(
    ME + r"(?:的)?(?:时区是|在)\s*(?P<tz>东[一二三四五六七八九十]+区|UTC\s?[+-]\s?\d{1,2}|"
    r"GMT\s?[+-]\s?\d{1,2})")
# fmt: on
_NEGATIVE = ("不", "讨厌", "反感", "受不了", "烦", "厌恶", "hate", "Hate")


# "我的爱好是钓鱼", "业余爱好是攀岩": a hobby named by its noun
_HOBBY_RE = re.compile(r"(?:" + ME + r"的?|^)(?:业余|兴趣)?爱好(?:是|就是)\s*(?P<obj>[^,.;!?]{2,24})")
# How well the user knows a language or tool: "Python 不太熟", "我对 Go 很熟" (a known name only)
_SKILL_RE = re.compile(
    r"(?:" + ME + ADV + r"(?:对)?\s*|^|,\s*)(?P<obj>[A-Za-z][\w.+#-]*)\s*(?:还|也|就)?"
    r"(?P<level>不太熟悉?|不熟悉?|不太会用|刚入门|"
    r"(?:很|比较|挺|非常)熟悉?|熟练|是新手)"
)


def _skill_hits(sentence: str) -> list[Hit]:
    match = (
        _SKILL_RE.search(sentence) if "熟" in sentence or "入门" in sentence or "新手" in sentence else None
    )
    if match is None or blocked(sentence, match.start("obj")) or not find_tools(match.group("obj")):
        return []
    cand = make(f"用户对 {match.group('obj')} {match.group('level')}。", Kind.SEMANTIC, Category.PROFILE,
                Tier.WORTH, rule="zh.profile.skill", confidence=0.75, lang="zh")  # fmt: skip
    return [(cand, match.start("obj"), match.end())]


def _pref_hits(sentence: str) -> list[Hit]:
    hobby = _HOBBY_RE.search(sentence) if "爱好" in sentence else None
    if hobby and not blocked(sentence, hobby.start()):
        obj = strip_tail(hobby.group("obj"))
        cand = make(f"用户的爱好是{obj}。", Kind.SEMANTIC, Category.PROFILE, Tier.WORTH, rule="zh.profile.hobby",
                    confidence=0.75, lang="zh")  # fmt: skip
        return [(cand, hobby.start(), hobby.start("obj") + len(obj))]
    skill = _skill_hits(sentence)
    if skill:
        return skill
    match = _LIKE_RE.search(sentence)
    if match is None or blocked(sentence, match.start()):
        return []
    cut = _OBJ_CUT.search(match.group("obj"))
    obj = strip_tail(match.group("obj")[: cut.start()] if cut else match.group("obj"))
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
    stopped = re.search(ME + ADV + r"(?:(?:不再|不)(?:吃素|是素食者?|吃纯素)|开始吃肉|恢复吃肉)了?", sentence)
    if stopped and not blocked(sentence, stopped.start()):  # "我现在不吃素了": the slot changes
        cand = fact("用户不再吃素。", "user.diet", "none", rule="zh.profile.diet_stopped", lang="zh")
        return [(cand, *stopped.span())]
    match = _DIET_RE.search(sentence)
    if match and not blocked(sentence, match.start()):
        diet = match.group("diet") or match.group("diet2")
        value = "vegan" if "纯素" in diet else "lacto_ovo" if "奶" in diet else "vegetarian"
        contents = {"vegan": "用户是纯素食者。", "lacto_ovo": "用户吃蛋奶素（蛋奶素食者）。"}
        content = contents.get(value, "用户是素食者（吃素）。")
        hits.append((fact(content, "user.diet", value, rule="zh.profile.diet", lang="zh"), *match.span()))
    native = _NATIVE_RE.search(sentence)
    if native and not blocked(sentence, native.start()):
        lang = native.group("lang") or native.group("lang2")
        cand = fact(f"用户的母语是{lang}。", "user.native_language", lang, rule="zh.profile.native_language",
                    lang="zh")  # fmt: skip
        hits.append((cand, *native.span()))
    level = _LEVEL_RE.search(sentence)
    if level and not blocked(sentence, level.start()):
        cand = make(zh_content(level.group()), Kind.SEMANTIC, Category.PROFILE, Tier.WORTH,
                    rule="zh.profile.language_level", confidence=0.8, lang="zh")  # fmt: skip
        hits.append((cand, *level.span()))
    for pattern, rule in ((_ALLERGY_RE, "zh.profile.allergy"), (_NO_EAT_RE, "zh.profile.no_eat")):
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()) or match.group("obj") in ("了", "饭", "东西"):
            continue
        groups = match.groupdict()
        household = "家里" if match.group().startswith(("我们家", "我家", "家里")) else ""
        text = (
            f"用户{household}不{groups['verb']}{groups['obj']}"
            if "verb" in groups
            else f"用户对{groups['obj']}过敏"
        )
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


# "新 ThinkPad 装了 Ubuntu", "我的笔记本装的是 Fedora": the system on the user's (new) machine
_MACHINE_OS_RE = re.compile(
    r"(?:^|[,\s])(?:新的?|我的?|我这台|这台新的?)\s*(?:[A-Za-z][\w-]*\s*(?:电脑|笔记本|本子)?|电脑|笔记本|本子|机器|主机|工作机)\s*(?:上)?\s*"
    r"(?:装了|装的是|重装了|刷了|换成了?|跑的是)\s*(?P<span>[A-Za-z][\w.+-]*)"
)


def _machine_os_hits(sentence: str) -> list[Hit]:
    match = (
        _MACHINE_OS_RE.search(sentence) if "装" in sentence or "刷" in sentence or "跑" in sentence else None
    )
    if match is None or blocked(sentence, match.start()):
        return []
    tools = [
        t for t, start, end in find_tools(sentence) if start >= match.start("span") and t.slot == "user.os"
    ]
    if not tools:
        return []
    return [tool_hit(tools[0], match.start(), match.end(), rule="zh.tool.machine_os", lang="zh")]


# The language the user writes in, as a habit ("现在 mostly 写 Kotlin 了", "我平时主要写 Go", "日常写 Rust"): an
# adverb of habit or of now before "写" and a language of the vocabulary after it; "帮我写个 Python 脚本" asks.
_WRITES_RE = re.compile(
    r"(?:^|[,\s])(?:" + ME + r"|我们)?\s*(?:(?:现在|目前|最近|平时|日常|主要|基本|一直|都|也|还是|mostly|mainly|"
    r"primarily|daily)\s*)+(?:在)?(?:写|用)\s*(?P<lang>[A-Za-z][\w.+#-]*(?:\s*v?\d[\d.]*)?)"
    r"(?=\s*(?:了|啦|呢|为主|比较多|多一些|多)?\s*(?:$|[,.;!~]))",
    re.I,
)


def _writes_hits(sentence: str) -> list[Hit]:
    match = _WRITES_RE.search(sentence) if "写" in sentence or "用" in sentence else None
    if match is None or blocked(sentence, match.start()) or re.search(r"帮|请|给我|麻烦", sentence[: match.start()]):
        return []
    tools = [t for t, _, _ in find_tools(match.group("lang")) if t.slot == "project.language"]
    if len(tools) != 1:
        return []
    return [tool_hit(tools[0], match.start(), match.end(), rule="zh.tool.writes", lang="zh")]


def fact_hits(sentence: str) -> list[Hit]:
    hits = (
        name_hits(sentence) + place_hits(sentence) + job_hits(sentence) + _tool_hits(sentence)
        + _pref_hits(sentence) + _profile_hits(sentence)
    )  # fmt: skip
    if not any(hit[0].slot == "project.language" for hit in hits):
        hits += _writes_hits(sentence)
    if not any(hit[0].slot == "user.os" for hit in hits):
        hits += _machine_os_hits(sentence)
    return hits


_INHERIT = re.compile(
    r"^(?:在|住|是|做|搬|来自|从事|喜欢|不喜欢|讨厌|偏好|也|还|目前|现在|今年|平时|对|不吃|吃素|叫)"
)


def inherited_hits(sentence: str) -> list[Hit]:
    """Facts in subject-less clauses that follow a "我..." clause ("我叫小王，在字节做产品经理")."""
    clauses = sentence.split(",")
    hits: list[Hit] = []
    offset, subject_is_user = 0, False
    for clause in clauses if len(clauses) > 1 else ():
        stripped = re.sub(LEAD, "", clause.lstrip())
        start = offset + len(clause) - len(stripped)
        if stripped.startswith("我") and not stripped.startswith("我们"):
            subject_is_user = True
        elif subject_is_user and _INHERIT.match(stripped):
            hits += [(c, max(0, s - 1 + start), e - 1 + start) for c, s, e in fact_hits("我" + stripped)]
        elif stripped:
            subject_is_user = False  # "他住在上海" / "我们用 pnpm": someone else is talking about now
        offset += len(clause) + 1
    return hits
