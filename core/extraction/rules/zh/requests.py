"""Chinese requests about the agent's memory, and corrections. Pure: no I/O.

- `remember_hits` / `forget_hits` -> None when the sentence is not such a request, else its hits (possibly
  none): a remember request is MUST, the statement inside parsed when the rules can (in English too: "请记住：
  my name is Alice"); a forget request is a FORGET candidate naming its slot when it can.
- `CORRECTION_RE` ("纠正一下，我住在杭州") and `CONTRAST_RE` ("我住在杭州，不是苏州") mark corrections for
  `dispatch`.
"""

from __future__ import annotations

import re

from core.extraction.candidates import Category, Kind, Operation, Tier
from core.extraction.lang import detect_lang
from core.extraction.rules.en import statement_hits
from core.extraction.rules.hits import Hit, forget_target, make, must, shift
from core.extraction.rules.zh.behaviour import reply_hits, rule_hits
from core.extraction.rules.zh.facts import fact_hits
from core.extraction.rules.zh.grammar import LEAD, zh_content

# fmt: off
_REMEMBER_RE = re.compile(
    LEAD + r"(?:这个|这件事|这点|这条|请你?|麻烦你?|提醒你|你|帮我|给我|帮忙|能不能|可以|能|可不可以|以后|今后|往后|"
    r"下次|之后|都|从现在起|从现在开始|务必|一定)*(?:要|得|"
    r"一定要|帮我)*(?:把(?:这个|这些|这条|以下|下面的?)(?:信息|内容|事)?)?(?P<verb>记住|记下来|记下|记一下|"
    r"记着|记好|记得|牢记|记牢|记清楚|记死|提醒你?一下|记在(?:小本本|本子|心|脑子)里|刻在脑子里|别忘了|不要忘了|不要忘记|别忘记|千万别忘了|存一下|保存一下|备忘一下|(?i:remember|note\s+down|"
    r"keep\s+in\s+mind)(?=\s*(?:一下|下|[:,]\s*[\u4e00-\u9fff])))(?:\s*一下|\s*下(?=\s*[,:])|了"
    r"(?=\s*[,:]))?(?:哦|哈|啊|喔)?[\s,:]*(?P<p>.*?)(?:好吗|好不好|可以吗|行吗|吗|哦|哈|啊)?[\s.!?~]*$")
_NEXT_REQUEST = re.compile(
    r",\s*(?:另外|还有|然后|顺便|并且|那)?(?:帮我|请|你|能不能|可以|解释|告诉|说说|看看|怎么|为什么)")
_SUBJECT_START = re.compile(r"^(?:我|我们|咱们|用户|项目|团队|公司|你|他|她|它|这|那|[A-Za-z0-9])")
_FORGET_RES = (
    re.compile(LEAD + r"(?:请你?|麻烦你?|你|帮我|可以|能不能)*(?P<verb>忘掉|忘记|忘了|删掉|删除|清除|"
               r"抹掉|去掉|清空)\s*(?P<p>.+?)(?:吧|了|哦|啊)*$"),
    re.compile(LEAD + r"(?:请你?|麻烦你?|你|帮我)*把\s*(?P<p>.+?)\s*(?:从(?:你的)?记忆(?:里|中))?"
               r"(?P<verb>忘掉|忘了|忘记|删掉|删了|删除|清除|去掉|抹掉)(?:吧|了|哦|啊)*$"),
    re.compile(LEAD + r"(?:请你?|你)?(?P<verb>别|不要|不用|不必|无需|不需要)(?:再)?(?:记|记住|记着|保存|"
               r"存|记录)(?:着)?\s*(?P<p>.+?)(?:了|啦|吧)*$"),
)
_PERSONAL = re.compile(r"我|记忆|关于用户|个人|信息|资料")
_MEMORY_WORDS = re.compile(
    r"记忆|关于我|我[^,]{0,6}?(?:信息|资料|地址|名字|手机|电话|邮箱|生日|住址|个人|隐私|数据)")
_FORGET_ALL = re.compile(r"(?:所有|全部|一切)[^,]{0,6}?(?:信息|记忆|资料|数据|事)?|一切")
# "忘了告诉你…" is "I forgot to tell you": not a target to forget.
_NOT_A_TARGET = re.compile(r"^(?:告诉|说|跟你说|提|带|拿|做|写|关|问)")
_VAGUE = re.compile(r"(?:这个|那个|它|这些|那些|刚才说的|我刚才说的|我说的)")
CONTRAST_RE = re.compile(r"(?:,|而)\s*(?:不是|并不是|而不是)\s*[^,]{1,12}$")
_MARK = (
    r"不是的|不对|错了|搞错了|你搞错了|你记错了|记错了|纠正一下|更正一下|更正|纠正|其实|"
    r"我?(?:刚才|刚刚|之前|前面|上次|昨天)说(?:错了|的不对)|"  # "我刚才说错了": a time between 我 and 说错
    r"说错了|我说错了|准确地说|应该是|不,|我(?:都)?说过(?:好几次|多少次|很多次|几次|了)*了?|说了(?:多少|好几|几)次了?|"
    r"再说一(?:遍|次)|重申一下|跟你说过(?:了)?"
)
CORRECTION_RE = re.compile(  # markers may follow one another: "不对不对，我刚才说错了，..."
    LEAD + r"(?P<marker>(?:" + _MARK + r")(?:[\s,:!.，：！。]*(?:" + _MARK + r"))*)[\s,:!.]*(?P<rest>.+)$")
# fmt: on
_ACTION = re.compile(
    r"用|写|跑|加|提交|测试|检查|关|开|回复|回答|保持|删|更新|备份|带|发|做|看|改|注释|运行|执行|部署|推|拉|"
    r"合并|确认|设置|安装|格式化|说明|标注|告诉|问|通知|先|每次|始终|总是"
)
_REMINDER_VERBS = ("记得", "别忘了", "不要忘了", "不要忘记", "别忘记", "千万别忘了")


def remember_hits(sentence: str) -> list[Hit] | None:
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
        inner = fact_hits(payload) or rule_hits(payload) or reply_hits(payload)
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


def forget_hits(sentence: str) -> list[Hit] | None:
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
    slot, value, kind, category = forget_target(payload, fact_hits(payload))
    cand = make(zh_content(payload), kind, category, Tier.MUST, rule="zh.forget", confidence=0.9, lang="zh",
                slot=slot, value=value, op=Operation.FORGET)  # fmt: skip
    return [(cand, 0, len(sentence))]
