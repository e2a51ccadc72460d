"""Chinese statements by grammatical class, for what the slot rules do not name. Pure: no I/O.

The same classes as `en.statements`, in Chinese grammar:

- `labelled_rule_hits`: a rule after its label ("有个规矩你要知道：…", "团队习惯是…") and a convention as topic and
  comment ("变量名用英文", "缩进统一用四个空格") -> MUST.
- `prohibition_hits`: a thing forbidden, object first or after a topic ("lodash 别用了", "ORM 是禁用的",
  "TS 里不许写 any", "项目里禁用 moment.js"), and modal rules on a thing ("生产库的 migration 必须先在
  staging 跑一遍", "所有金额一律用 BigDecimal") -> MUST.
- `team_hits`: the user's group ("我在支付组", "我现在调到数据组了", "我们组是支付组") -> `user.team`; a family
  member or pet with a name ("我家猫叫馒头") -> a WORTH fact.
- `statement_hits`: a lasting statement of a subject the user speaks for (我 / 我们 / 团队 / 项目 / 这个服务 /
  线上 / 数据库 ...) with a predicate of use, place, decision or policy ("前端静态资源托管在 Cloudflare
  Pages 上", "没上 k8s，三台机器够用", "数据库每天凌晨全量备份到 OSS"), and lessons ("踩过坑：…",
  "上次事故…，现在…") -> WORTH, the clause in the third person. The moment ("今天", "这个报错"), requests and
  questions yield nothing.
"""

from __future__ import annotations

import re

from core.extraction.candidates import Category, Kind, Tier
from core.extraction.rules.en.statements import family_slot
from core.extraction.rules.hits import Hit, fact, make
from core.extraction.rules.sentences import ENUMERATOR_RE, split_outside_brackets
from core.extraction.rules.vocab import only_left
from core.extraction.rules.zh.behaviour import NOT_RULE
from core.extraction.rules.zh.grammar import (
    ADV,
    BIE,
    LEAD,
    ME,
    WE,
    blocked,
    is_question,
    strip_tail,
    zh_content,
)
from core.extraction.rules.zh.identity import IS_ROLE

_LEAD_RE = re.compile(LEAD)
# fmt: off
_OBJ = (  # a thing: a Latin name, or a Han noun that is not a time, an enumerator or a condition
    r"(?P<obj>[A-Za-z][\w.+#/-]*(?:\s[A-Za-z][\w.+#/-]*){0,2}|(?!以后|之后|今后|现在|平时|一是|二是|三是|第)"
    r"[\u4e00-\u9fff]{2,6}(?<!时候)(?<!的时)(?<!之前)(?<!以前))"
)
_BANNED_RES = (
    # "moment.js 在我们项目里是禁用的", "ORM 一律禁用"
    re.compile(r"^(?:还有|另外|而且|注意)?\s*" + _OBJ + r"\s*(?:在[^,]{1,10}?(?:里|中|上))?\s*"
               r"(?:是|都是|一律|全部|统一)?\s*(?:禁用|禁止使用|禁止|不允许(?:使用|用)?|不许(?:用|使用)|不准(?:用|使用)|不能用|不要用|别用|"
               r"不用)(?:的|了|啦|哈|哦)?\s*(?:$|[,.;!~(（])"),
    # "lodash 别用了", "ORM 就别用了"
    re.compile(r"^" + _OBJ + r"\s*(?:就|也|都|千万|一定|以后)?(?:别|不要|不许|不准|禁止)(?:再)?(?:用|引入|引|使用|"
               r"写|上)(?:了|啦|哈|哦)?\s*(?:$|[,.;!~(（])"),
    # "项目里禁用 moment.js", "禁止引入 ORM"
    re.compile(r"(?:^|[里中上,])\s*(?:一律|全面|统一)?(?:禁用|禁止使用|禁止引入|不许引入|不准引入|不允许引入)\s*"
               + _OBJ),
)
_TOPIC_RULE_RE = re.compile(  # "TS 里不许写 any", "生产环境禁止手动执行 DML"
    r"^(?P<topic>[^,]{1,16}?)(?:里|中|上|内|环境)?\s*(?P<mod>不许|不准|不能|禁止|不允许|不得|严禁|必须|一律|务必|" + BIE
    + r"|不要|一定要|都得|都要|只能|只许)\s*(?P<rest>[^,]{2,60})")
# fmt: on
# "这个仓库不能直接推 master": a durable thing named by "this" is a topic; "这段先…" is the task at hand
_NOT_TOPIC = re.compile(
    r"^(?:我(?!们)|你|他|她|它|这(?!个?(?:仓库|项目|代码库|服务|系统|团队|组|部门|公司|库|repo|分支))|那|今天|先|刚|如果|"
    r"要是|因为|所以|但|可是|不过)",
    re.I,
)


def _rule(content: str, rule: str, end: int) -> Hit:
    cand = make(zh_content(content), Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule=rule,
                confidence=0.85, lang="zh")  # fmt: skip
    return cand, 0, end


def _body(sentence: str) -> str | None:
    # a Latin word first is the thing the rule is about ("ORM 就别用了"), not a filler before a request
    text = ENUMERATOR_RE.sub("", sentence.strip(" ,:;!.~"))
    body = text if re.match(r"[A-Za-z]", text) else _LEAD_RE.sub("", text, count=1).strip(" ,:;!.~")
    return None if not body or is_question(body) else body


def banned_hits(sentence: str) -> list[Hit]:
    """A thing banned, named first or after a topic ("lodash 别用了", "项目里禁用 moment.js")."""
    body = _body(sentence)
    for pattern in _BANNED_RES if body else ():
        match = pattern.search(body or "")
        if match and blocked(body or "", match.start()):
            continue
        if match and not re.match(r"^(?:我|你|他|她|它|这|那|什么|啥)", match.group("obj")):
            return [_rule(f"不要使用 {match.group('obj').strip()}", "zh.rule.banned", len(sentence))]
    return []


# A rule announced by its label, the rule after it ("有个规矩你要知道：…", "我们这规定，…", "团队习惯是…"): the
# team's, the project's or unattributed, not the user's own habit ("我的习惯是…" is a preference).
_RULE_LABEL_RE = re.compile(
    # the owner of the rule: "咱们组的规矩", "我们团队的约定", "项目的规范"
    r"^(?:有(?:一|两|几|三)?(?:个|条)|(?:" + WE + r")?(?:的)?(?:团队|组里|小组|组|公司|项目|部门|仓库|repo)?"
    r"(?:这边|这里|这)?(?:的)?)"
    r"(?:硬性?的?)?(?:规矩|规定|要求|约定|铁律|红线|习惯|规范|惯例|原则)"
    # the rest is the rule, not the user's own state ("组里的习惯我还不太懂")
    r"(?:是|你要知道|你得知道|你要记住|要记住|记一下|说一下)?\s*[:,]?\s*(?P<rest>(?!我(?!们))[^:]{4,200})$"
)
# A convention on a part of the code or of the answer, stated as topic and comment ("变量名用英文", "缩进统一用四个
# 空格", "注释写中文就行", "日期格式一律 YYYY-MM-DD"): how the agent must write it.
_CONVENTION_RE = re.compile(
    # "所有接口返回的时间统一用 UTC": the noun may come with what it belongs to
    r"^(?:所有的?|全部的?)?(?:(?![我你他她])[\u4e00-\u9fffA-Za-z]{1,8}的)?"
    r"(?P<noun>(?:代码)?注释|(?:code\s+)?comments?|错误码|返回格式|响应格式|响应体|docstrings?|variable\s+names?|变量名|时间|时区|时间戳|日期|函数名|类名|方法名|文件名|表名|字段名|列名|命名|缩进|提交信息|commit\s*message|"
    r"分支名|日志|文档|字符串|引号|代码风格|代码示例|示例代码|示例|命令|单位|日期格式|时间格式|金额|编码|行宽|换行|"
    r"(?:SQL\s*)?关键字|报错信息|错误信息|返回值|接口返回)\s*(?:统一|都|一律|全部|全都|必须|一定要|要|得|请)*\s*"
    # the spec may hold a literal in braces or brackets, commas and all ("{code, msg, data} 这个格式")
    r"(?:用|写成?|使用|采用|保持|遵循|按|走)(?![得了过着完光掉尽])\s*"
    r"(?P<spec>(?:\{[^{}]{1,60}\}|\[[^\[\]]{1,60}\]|[^,.;!?{}\[\]]){1,40}?)(?:就行|就好|即可|就可以|吧|哈|哦)?$",
    re.I,
)


# An obligation stated of a thing ("单元测试是必须的", "代码评审必不可少"), or a practice never broken ("密钥从来不
# 提交到仓库"): MUST.
_REQUIRED_RE = re.compile(
    r"^(?P<obj>[^,]{2,20}?)\s*(?:是|都是|也是)?(?:必须的|必需的|必不可少的?|硬性要求|强制的|强制要求|少不了的)"
    r"|^(?P<obj2>[^,]{2,20}?)\s*(?:从来|从|绝)不\s*(?P<verb>[^,]{2,20})"
)


# A rule in the register of a regulation: everything of a kind ("凡", "凡是", "所有", "任何"), then a modal of
# obligation or prohibition ("须", "须经", "均须", "必须", "应当", "不得"): "凡对外发布的数据，须经审核后方可公开"
_FORMAL_RULE_RE = re.compile(
    r"(?:^|[:：]\s*)(?P<rule>(?:凡是?|所有|任何|一切)[^.;!?]{1,30}?(?:均须|均应|均不得|一律|须经|须|必须|应当|不得|不可)"
    r"[^.;!?]{2,60})"
)


def labelled_rule_hits(sentence: str) -> list[Hit]:
    """A rule announced by its label ("有个规矩你要知道：早上 5 点到 7 点不许发版"), or a convention stated as topic
    and comment ("变量名用英文，注释用中文就行"), MUST."""
    body = _body(sentence)
    if body is None:
        return []
    formal = _FORMAL_RULE_RE.search(body)
    if formal and not blocked(body, formal.start()):
        # "凡对外发布的数据，须经数据安全组审核后方可公开": a rule in the register of a regulation
        return [_rule(strip_tail(formal.group("rule")), "zh.rule.formal", len(sentence))]
    required = _REQUIRED_RE.match(body)
    subject = required and (required.group("obj") or required.group("obj2"))
    if subject and not _NOT_TOPIC.match(subject) and not re.match(r"我们|咱们", subject):
        return [_rule(strip_tail(body), "zh.rule.required", len(sentence))]
    label = _RULE_LABEL_RE.match(body)
    if label and not blocked(body, label.start("rest")):
        rest = ENUMERATOR_RE.sub("", label.group("rest"))  # "有两条硬规定：第一，…"
        return [_rule(strip_tail(rest), "zh.rule.labelled", len(sentence))]
    hits: list[Hit] = []
    offset = 0
    for part in split_outside_brackets(body):
        start = offset + len(part) - len(part.lstrip())
        offset += len(part) + 1
        convention = _CONVENTION_RE.match(part.strip())
        if convention and not blocked(body, start):
            cand, _, _ = _rule(strip_tail(part.strip()), "zh.rule.convention", 0)
            hits.append((cand, start, start + len(part.strip())))
    return hits


# A rule over everything of a kind the agent gives, said with 都: "所有时间都按北京时间显示给我",
# "回答里的代码我希望都带类型注解" (what is asked for: a verb of form after 都; whose: the agent's output or
# the user's wish).
_ALL_DO_RE = re.compile(
    r"^(?:所有的?|全部的?|一切)?(?P<topic>[^,]{1,14}?)\s*(?:我(?:希望|要求|想要)|希望)?(?:你)?(?:以后|今后)?都(?:要|得|请)?\s*"
    r"(?P<rest>(?:按|用|带|加|写成|改成|换成|附上|保留|显示|标注|注明)[^,]{1,40})"
)
_ALL_DO_CUE = re.compile(r"给我|我希望|希望你|我要求|回答|回复|输出|显示|代码|注释|文档")


def all_do_hits(sentence: str) -> list[Hit]:
    body = _body(sentence) if "都" in sentence else None
    match = _ALL_DO_RE.match(body) if body else None
    if (
        match is None
        or body is None
        or not _ALL_DO_CUE.search(body)
        or _NOT_TOPIC.match(match.group("topic"))
        or re.search(
            r"人|大家|同事|团队|他们|你们", match.group("topic")
        )  # everyone's habit, not a rule for the agent
        or re.search(r"了$|按时", body)  # "都按时跑完了": an event
        or match.group("rest").rstrip(" 。.!~").endswith("了")  # "新代码现在都用 Kotlin 写了": the state now
        or re.search(r"现在|已经|目前", match.group("topic"))
        or blocked(body, match.start("rest"))
    ):
        return []
    said = strip_tail(f"{match.group('topic')}都{match.group('rest')}")
    return [_rule(said, "zh.rule.all_do", len(sentence))]


_OTHERS_RULE = re.compile(
    r"隔壁|别的(?:组|团队|部门|公司|项目)|其他(?:组|团队|部门|公司|项目)|他们的|人家的|别人的|对方的"
)


def prohibition_hits(sentence: str) -> list[Hit]:
    """Things forbidden or required in the user's work, however phrased (see the module docstring)."""
    body = _body(sentence)
    if body is None:
        return []
    banned = banned_hits(sentence)
    if banned:
        return banned
    topic = _TOPIC_RULE_RE.match(body)
    if (
        topic
        and not blocked(body, topic.start("mod"))
        and not _NOT_TOPIC.match(topic.group("topic"))
        and not NOT_RULE.match(topic.group("rest"))  # "回复慢点别介意": comfort, not a rule
        and not re.search(r"今天|这次|(?<!必须)(?<!要)先|马上", body)
        # another group's rule, not one for the user's work: "隔壁组的规矩是不准用 lodash"
        and not _OTHERS_RULE.search(body)
    ):
        return [_rule(strip_tail(body), "zh.rule.modal", len(sentence))]
    return []


# fmt: off
_TEAM_RE = re.compile(  # "自从转到风控组": a move the user takes as given, its subject dropped
    r"(?:" + ME + ADV + r"|^(?:自从|自打)\s*(?=调|转|去|加入|换))"
    r"(?:在|调到了?|调去了?|转到了?|转去了?|去了|加入了?|换到了?|转岗到了?|调岗到了?|转组到了?|带|负责|管|"
    r"\s*(?i:transfer(?:red)?|move[ds]?)\s*到了?|"
    r"是)\s*(?P<team>[\u4e00-\u9fffA-Za-z]{1,8}?|[A-Za-z][\w-]*(?:\s[A-Za-z][\w-]*){1,2}?)\s?"
    r"(?P<unit>组|团队|部门|小组|team)(?![\u4e00-\u9fff]{0,1}(?:的人|长))")
_WE_TEAM_RE = re.compile(
    WE + r"(?:组|团队|部门)(?:是|叫)\s*(?P<team>[\u4e00-\u9fffA-Za-z]{1,8}?)(?P<unit>组|团队|部门)"
)
_FAMILY = r"猫|狗|猫咪|狗狗|女儿|儿子|老婆|老公|媳妇|妻子|丈夫|孩子|宝宝|闺女|男朋友|女朋友|对象|兔子|鹦鹉|仓鼠"
_FAMILY_RE = re.compile(
    # "我是夜猫子" (a night owl) is what the user is, no cat: no 是 before the word, no idiom around it
    r"(?:" + ME + r"|" + WE + r"|家里)(?:家)?(?:的)?(?:那只|这只|那条|这条)?(?:(?!是)[\u4e00-\u9fff]){0,2}?"
    r"(?<![夜懒馋熊病])(?P<who>" + _FAMILY
    + r")(?:的名字)?(?:叫做?|名叫|是|,)?\s*(?P<name>[A-Z][a-z]+|[\u4e00-\u9fff]{1,3}?)(?=$|[\s,.;!~]|今年|了|呢|已经|"
      r"特别|三|两|一|刚|最近|老)")
_MANAGER_RE = re.compile(
    r"(?:(?:" + WE + r"(?:组|团队|部门)?|" + ME + r")(?:的|换了?|新)?|\bmy\s+|(?<![\u4e00-\u9fff])新(?:的)?|^新|"
    r"现在(?:的)?|"
    r"目前(?:的)?|^)"
    r"\s*(?:(?:组|团队|部门)的?)?\s*(?:leader|manager|boss|老大|领导|经理|老板|直属领导|主管|负责人|组长|TL|上级|直属上级|带我的(?:人)?)\s*"
    r"(?:(?:是|叫)|了?[^,.;!?]{0,6}?,\s*(?:现在|目前)(?:是|换成了?))\s*(?P<name>[\u4e00-\u9fff]{2,3}|[A-Z][a-z]+)"
    r"(?=$|[\s,.;!~]|了|啦|呢|吧|哦)",
    re.I)
_REPORT_TO_RE = re.compile(  # "现在我汇报给刘婷", "改成向 Amy 汇报了"
    r"(?:现在|目前|已经|改成|改为)?\s*(?:我)?\s*(?:汇报给|向)\s*(?P<name>[\u4e00-\u9fff]{2,3}?|[A-Z][a-z]+)\s*(?:汇报)?"
    r"(?=$|[\s,.;!~]|了|啦|呢|吧|哦)"
)
_APPOS_MANAGER_RE = re.compile(  # "我老板李娜特别在意测试覆盖率": the boss named right after the word
    r"(?:" + ME + r")的?(?:老板|领导|经理|leader|boss|manager|直属领导|主管|上级)\s*"
    r"(?P<name>[\u4e00-\u9fff]{2,3}?|[A-Z][a-z]+)"
    r"(?=特别|非常|比较|一直|总是|说|让|要|在|对|希望|觉得|最近|$|[\s,])", re.I)
_PAREN_MANAGER_RE = re.compile(  # "陈思（我现在的主管）让我…"
    r"(?P<name>[\u4e00-\u9fff]{2,3})\s*[(（]\s*我(?:现在|目前|新)?的?(?:领导|主管|老板|经理|leader|直属领导)\s*[)）]",
    re.I)
_SUPERVISOR_ZH_RE = re.compile(  # "我的导师是李教授", "我换导师了，现在跟周教授"
    r"(?:" + ME + r"的?导师(?:是|换成了?)|换导师了?[^.;!?]{0,4}?,?\s*现在跟(?:着)?)\s*"
    r"(?P<name>[\u4e00-\u9fff]{1,2}(?:教授|老师|博士))")
_NEW_MANAGER_RE = re.compile(  # "新 leader 张婷下周到岗"
    r"新(?:的|来的)?\s*(?:leader|领导|经理|老板|主管|负责人)\s*(?P<name>[\u4e00-\u9fff]{2,3}?|[A-Z][a-z]+)"
    r"(?=下周|下个月|明天|已经|到岗|入职|来了|上任|$|[\s,.;!~])", re.I)
# fmt: on
_NAME_STOP = re.compile(
    r"^(?:什么|啥|谁|这|那|个|很|太|特|的|了|在|有|不|也|今|刚|最|老|上|去|又|都|一|两|三|几|"
    # a verb or an adverb where the name would be: "我老板喜欢用 Notion"
    r"喜|让|要|觉|想|总|每|就|只|超|真|挺|爱|讨|叫|给|把|被|跟|对|经常|天天|一直)"
)


_CHILDREN_RE = re.compile(  # "我有两个孩子，大的叫豆豆…", "我家两个孩子，一个五岁一个八岁"
    ME + r"(?:家)?(?:有|养了)?(?:两|三|四|五|\d)(?:个|只|条)(?:孩子|女儿|儿子|娃|宝宝|猫|狗)"
    r"(?:[^.;!?]*?叫|\s*,\s*(?:一个|大的|老大)[^.;!?]{0,20}?(?:岁|年级))"
)


# What the household's life must allow for ("我女儿对坚果过敏", "我老公不吃辣", "孩子在上幼儿园"): the user's
# meals and days are planned around it. A relative outside the household, or their job, is theirs.
_HOUSEHOLD_NEEDS_RE = re.compile(
    r"(?:"
    + ME
    + r"|我们)(?:家)?(?:的)?(?:女儿|儿子|孩子|老婆|老公|媳妇|宝宝|对象|闺女|娃)(?:们)?"
    + ADV
    + r"(?:对\s*[^,.;!?]{1,12}?过敏|不(?:能|太能)?吃[^,.;!?]{1,10}|吃素|在上[^,.;!?]{1,8}|"
    r"上[^,.;!?]{0,4}(?:幼儿园|小学|初中|高中)|坐轮椅|有[^,.;!?]{1,8}?(?:过敏|病))"
)


def team_hits(sentence: str) -> list[Hit]:
    """The user's group (`user.team`), and a family member or pet named."""
    hits: list[Hit] = []
    children = _CHILDREN_RE.search(sentence)
    if children and not blocked(sentence, children.start()):  # "我有两个孩子，大的叫豆豆，小的叫糖糖"
        cand = make(zh_content(sentence), Kind.SEMANTIC, Category.PROFILE, Tier.WORTH, rule="zh.family.children",
                    confidence=0.8, lang="zh")  # fmt: skip
        return [(cand, 0, len(sentence))]
    needs = _HOUSEHOLD_NEEDS_RE.search(sentence)
    if needs and not blocked(sentence, needs.start()):
        cand = make(zh_content(needs.group()), Kind.SEMANTIC, Category.PROFILE, Tier.WORTH, rule="zh.family.needs",
                    confidence=0.75, lang="zh")  # fmt: skip
        hits.append((cand, needs.start(), needs.end()))
    team = _TEAM_RE.search(sentence) or _WE_TEAM_RE.search(sentence)
    if team and not blocked(sentence, team.start()):
        name = team.group("team")
        if not re.match(r"^(?:一个|这个|那个|哪个|同一|别的|其他|我们|你们|他们|小|大|新)$", name):
            value = team.string[team.start("team") : team.end("unit")]  # as written: "payments team"
            said = f" {value}" if value[:1].isascii() else value  # "用户在 payments team。", "用户在风控组。"
            cand = fact(f"用户在{said}。", "user.team", value.lower(), rule="zh.team", lang="zh")
            hits.append((cand, team.start(), team.end()))
    supervisor = _SUPERVISOR_ZH_RE.search(sentence)
    if supervisor and not blocked(sentence, supervisor.start()):
        name = supervisor.group("name")
        hits.append((fact(f"用户的导师是{name}。", "user.supervisor", name, rule="zh.supervisor", lang="zh"),
                     supervisor.start(), supervisor.end()))  # fmt: skip
    manager = (
        _MANAGER_RE.search(sentence)
        or _NEW_MANAGER_RE.search(sentence)
        or _PAREN_MANAGER_RE.search(sentence)
        or (_REPORT_TO_RE.search(sentence) if "汇报" in sentence else None)
        or _APPOS_MANAGER_RE.search(sentence)
    )
    if manager and not blocked(sentence, manager.start()) and not _NAME_STOP.match(manager.group("name")):
        name = manager.group("name")  # "我们组 leader 是张伟", "我们组换 leader 了，现在是李娜"
        cand = fact(f"用户的领导是{name}。", "user.manager", name, rule="zh.manager", lang="zh")
        hits.append((cand, manager.start(), manager.end()))
    family = _FAMILY_RE.search(sentence)
    if family and not blocked(sentence, family.start()) and not _NAME_STOP.match(family.group("name")):
        content = f"用户的{family.group('who')}叫{family.group('name')}。"
        slot = family_slot(family.group("who"), sentence)
        if IS_ROLE.match(
            family.group("name")
        ):  # "我老婆是护士": what they do, not a name, and not the user's fact
            return hits
        cand = make(content, Kind.SEMANTIC, Category.PROFILE, Tier.WORTH, rule="zh.family", confidence=0.8,
                    lang="zh", slot=slot, value=family.group("name") if slot else None)  # fmt: skip
        hits.append((cand, family.start(), family.end()))
    return hits


# fmt: off
_SUBJECT = (
    r"(?:" + WE + r"(?:这边|那边|这里|组|团队|公司|项目组|部门|组里|团队里|公司里)?|" + ME
    + r"|(?:这个|我们的?|我的|该|本|整个)?(?:项目|团队|公司|组里|后端|前端|服务端|服务|仓库|代码库|工程|应用|系统|"
    r"网关|集群|架构|技术栈|栈|用户|客户|主?产品|业务|接口|API|机器|服务器|所有东西|东西)|"
    r"(?:线上|生产环境?|prod|测试环境|预发|staging|CI|CD|CI/CD|流水线|部署|发布|上线|备份|数据库|主库|库|缓存|队列|新?代码|"
    r"状态管理|安卓端|iOS端|客户端|移动端|小程序|App|app|"
    r"日志|监控|告警|前端静态资源|静态资源|镜像|所有服务|服务都|全部服务|(?:每个|所有|每次)\s*(?:PR|MR|提交|接口|服务|版本|"
    r"需求|改动|变更))(?:的)?)"
)
_PREDICATE = (
    r"(?:用的是|用的|使用的是|用|使用|采用|基于|跑在|部署在|托管在|放在|搭在|建在|连的是|连|接的是|选了|选的是|选择了|选|定了|"
    r"决定|放弃了?|弃用了?|没用|没上|没选|不用|不上|换成了?|换到了?|迁到了?|迁移到了?|改用了?|改成了?|升到了?|升级到了?|"
    r"切到了?|切换到了?|上了|走|全走|都走|每天|每晚|每周|每小时|每月|定期|凌晨|保留|负责|维护|是|自建|自己搭|自己部署|"
    r"自托管|会跑|跑|在(?=[\u4e00-\u9fff]{2})|集中在|分布在|来自)"
)
_STATEMENT_RE = re.compile(  # a time word may come first: "去年我们放弃了微服务"
    r"^(?:(?:去年|今年|前年|上个月|之前|以前|后来|当初|最近|早就)\s*,?\s*|(?:所有|全部|一切)[\u4e00-\u9fff]{0,4}\s*)?"
    r"(?P<subj>" + _SUBJECT + r")\s*(?:现在|目前|一直|都|还是|主要|基本|全部|全都|统一|已经|早就|也|就|平时|"
    r"本来|其实|最后|当时|全)*\s*(?P<pred>" + _PREDICATE + r")")
_DECISION_RE = re.compile(
    r"^(?:当时|最后|最终|后来)?(?:评估过|考虑过|试过|调研过|看过)?[^,]{0,20}?(?:没选|没用|没上|放弃了?|弃用了?|"
    r"否掉了?|不考虑|选了|选|定了|决定用)")
_RULE_MARKER_RE = re.compile(
    r"[,，]?\s*(?:这|这个|这条)?(?:是|算是)?(?:我们|组里|团队|公司|项目|部门)?(?:的)?(?:硬性)?(?:规矩|规定|要求|约定|铁律)"
    r"(?:哈|哦|啊|了)?\s*$")
_TRIED_REJECTED_RE = re.compile(
    r"(?:评估过|考虑过|试过|调研过|看过|用过|试用过)\s*[A-Za-z][\w.+#-]*[^。]{0,30}?(?:没选|没用|没上|放弃|弃用|否掉|不用了|pass掉?|"
    r"换掉|没采用|不考虑)", re.I)
_LESSON_RE = re.compile(
    r"教训|踩过坑|踩坑|事故|复盘|故障|出过事|吃过亏|血泪|翻车|挂过|宕机过|lesson|(?:上次|之前|以前)(?:因为|由于)", re.I
)
_POLICY_RE = re.compile(r"备份|保留\s*\d+|每天|每晚|每周|每小时|每月|凌晨|定期|轮换|值班|发版|上线窗口")
_MOMENT = re.compile(
    r"今天|今晚|刚才|刚刚|现在在|正在|这个(?:报错|错误|问题|bug|文件|函数|组件|接口)|帮我|帮忙|请你|麻烦|能不能|"
    r"可以吗|怎么|为什么|为啥|咋|吗|呢|下面|上面|如下|贴|看下|看看|看一下|待会|一会|明天|下周|打算|准备|想要|想让|"
    r"试试|一下|问问|随便|好奇", re.I)
_LABEL = re.compile(
    r"^(?:(?:上次|之前|去年|那次)?(?:线上)?(?:事故|故障)(?:复盘)?(?:的)?(?:结论|教训)?|(?:吸取|血的)?教训|踩过(?:的)?坑|"
    r"备份策略(?:改了|变了|更新了|调整了)?|部署(?:方式|策略)(?:改了|变了)?|结论|lesson(?:s)?(?:\s+learned)?(?:[^:]{0,30})?)\s*[:：]?\s*",
    re.I)
_ONE_OFF = re.compile(r"[A-Za-z0-9+#.]\s*[\u4e00-\u9fff]{1,3}了|[跑装写做改试]了|了一下|了个")
# fmt: on


def _generic(text: str, category: Category, kind: Kind, rule: str, end: int) -> Hit:
    cand = make(
        zh_content(strip_tail(text)), kind, category, Tier.WORTH, rule=rule, confidence=0.7, lang="zh"
    )
    return cand, 0, end


def lesson_hits(sentence: str) -> list[Hit]:
    """A lesson told in one sentence ("踩过坑：日志别落本地盘…"): one memory of it, its label dropped."""
    if not _LESSON_RE.search(sentence) or is_question(sentence):
        return []
    body = _LABEL.sub("", _LEAD_RE.sub("", sentence, count=1).strip(" ,:;!.~"), count=1)
    if len(body) < 5 or re.search(r"帮我|帮忙|能不能|怎么|为什么|为啥", body) or blocked(sentence, 0):
        return []
    return [_generic(body, Category.LESSON, Kind.EPISODIC, "zh.statement.lesson", len(sentence))]


_WHOLE_PREDICATES = frozenset(
    ("没上", "没用", "没选", "放弃了", "放弃", "自建", "自己搭", "自己部署", "自托管")
)


def statement_hits(clause: str, sentence: str = "", whole: bool = False) -> list[Hit]:
    """A lasting statement of one clause (see the module docstring); called with the whole sentence as
    `clause` first, where only a lesson or a policy counts."""
    if whole:
        marker = _RULE_MARKER_RE.search(sentence)
        if marker and not is_question(sentence):  # "提交信息用英文写，这是组里的规矩"
            rule = (sentence[: marker.start()] + sentence[marker.end() :]).strip(" ,.;:!~")
            if len(rule) >= 4:
                return [_rule(strip_tail(rule), "zh.rule.marked", len(sentence))]
        hits = lesson_hits(sentence)
        rejected = _TRIED_REJECTED_RE.search(sentence)
        if not hits and rejected and not is_question(sentence) and not blocked(sentence, rejected.start()):
            body = _LEAD_RE.sub("", sentence, count=1).strip(" ,:;!.~")  # "评估过 MongoDB，最后没选，…"
            hits = [_generic(body, Category.DECISION, Kind.SEMANTIC, "zh.statement.rejected", len(sentence))]
        if not hits and _POLICY_RE.search(sentence) and "备份" in sentence and not _MOMENT.search(sentence):
            body = _LABEL.sub("", _LEAD_RE.sub("", sentence, count=1).strip(" ,:;!.~"), count=1)
            hits = [_generic(body, Category.FACT, Kind.SEMANTIC, "zh.statement.policy", len(sentence))]
        return hits
    body = _LEAD_RE.sub("", clause, count=1).strip(" ,:;!.~")
    if (
        len(body) < 5
        or is_question(body)
        or _MOMENT.search(body)
        or blocked(body, len(body))
        or only_left(body)
    ):
        return []  # only_left: "Oracle 已经下线了" tells the value left, replaced by the one told with it
    if sentence and blocked(sentence, max(0, sentence.find(clause))):
        return []
    match = _STATEMENT_RE.match(body)
    if (
        match
        and match.group("pred") == "在"
        and not re.search(r"主要|大多|大部分|基本|都", body[: match.end()])
    ):
        match = None  # "我们公司在杭州" is where the company is; "用户主要在东南亚" is how things are spread
    if match:
        rest = body[match.end() :]
        habitual = re.search(r"现在|都|一直|平时|以后|全部|统一", body[: match.end()])
        if match.group("pred") in ("用", "使用", "是", "走") and _ONE_OFF.search(rest) and not habitual:
            return []  # "我用 pnpm 装了依赖": something done once with the tool, not what is used
        if len(strip_tail(rest)) < 2 and match.group("pred") not in _WHOLE_PREDICATES:
            return []  # "我们用": a verb that needs its object; "我们都自建" says it all
        category = Category.DECISION if re.match(r"选|定|决定|放弃|弃用|没|不|换|迁|改|切", match.group("pred")) else (
            Category.FACT)  # fmt: skip
        rule = "zh.statement.policy" if _POLICY_RE.search(body) else f"zh.statement.{category.value}"
        return [_generic(body, category, Kind.SEMANTIC, rule, len(clause))]
    if _DECISION_RE.match(body) and re.search(r"[A-Za-z]{2,}", body):
        return [_generic(body, Category.DECISION, Kind.SEMANTIC, "zh.statement.decision", len(clause))]
    return []
