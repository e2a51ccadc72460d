"""Chinese grammar the rules share. Pure: no I/O.

- Pattern pieces: `ME` ("我" as a subject, not "给我" / "我们"), `WE` ("我们" / "咱们"), `ADV` (adverbs and
  time words between subject and verb), `LEAD` (fillers before a request: "好的，另外…"), `BIE` ("别" as
  "don't", not "别的" / "特别").
- `blocked(sentence, start)`: the text before `start` makes the statement not the user's own current fact
  (a quotation, a hypothetical, an unsure clause, reported speech).
- `is_question`, `zh_content` (我 -> 用户, spaces around Latin words, ending in 。), `strip_tail` (drops
  trailing particles: "了", "呢", "吧" ...).
- `with_subject(clause)`: the clause with the "我" Chinese drops before a verb of state or change put back
  ("从这周开始转岗到算法组了" -> "从这周开始我转岗到算法组了").
"""

from __future__ import annotations

import functools
import re

from core.extraction.rules.vocab import ZH_IF_YAOSHI
from core.extraction.rules.vocab import ZH_KIN as KIN

# fmt: off
ME = r"(?<![给帮让叫和跟对把被替为向与同问请令使教自])我(?!们)"  # 我 as a subject, not "给我" / "我们"
WE = r"(?:我们|咱们)"
ADV = (
    r"(?:这边|那边|这里|日常|平常|现在|目前|一直|还|也|就|都|刚|刚刚|才|最近|已经|平时|平常|一般|通常|主要|基本上?|其实|本身|"
    r"真的|确实|比较|很|挺|非常|特别|超|蛮|更|最|总是|向来|始终|长期|常年|本来就|又|如今|早就|早已|"
    r"本人|个人|自己|正式|上个月|上周|去年|前年|今年|前几天|前阵子|年初|年底|上半年|下半年|这个月|这周|"
    # an English adverb of habit inside a Chinese clause: "我 daily 用 Chrome", "我 mostly 写 Go"
    r"\s*(?:daily|usually|mostly|mainly|normally|always|basically|currently|now)\s*)*"
)
# "别" the imperative "don't", not "other" (别的, 别人) nor inside a word (特别, 区别, 分别, 级别)
BIE = r"(?<![特区分级告类个性识辨差鉴派])别(?![的人处家样致扭])"
LEAD = (  # fillers before a request; a short Latin chunk too ("ok, 记住…")
    r"^(?:(?!from\s+now|going\s+forward)[A-Za-z']{1,10}(?:\s+[A-Za-z']{1,10}){0,2}\s*[,:;!.]?\s*(?=[\u4e00-\u9fff]))?"
    r"(?:(?:还有|另外|"
    r"对了|顺便说一下|顺便|补充一下|补充|然后|而且|并且|哦|噢|嗯|嗯嗯|诶|哎|那个|好的|好|ok|okay|"
    r"谢谢|感谢|好吧|行|对|是的|总之|最后|重要|注意|提醒一下|提醒你一下|说一下|跟你说一下|告诉你|"
    r"跟你说|以及|嗨|你好|您好|所以|因此|那就|求求你|拜托你?|劳驾|麻烦你?(?=以后|今后|之后|往后|每次|都|别|不要))"
    r"[\s,:;!.~]*)*"
)
_HYPOTHETICAL = re.compile(  # anywhere before the statement
    r"如果|假如|假设|" + ZH_IF_YAOSHI + r"|万一|比如|例如|比方说|譬如|假定|设想|想象|倘若|若是|即使|就算|哪怕|"
    r"除非|的话")
_UNSURE = re.compile(r"打算|准备|计划|考虑|可能|也许|或许|大概|是否|等我")  # in the statement's own clause
_REPORTED = re.compile(
    r"听说|据说|听人说|告诉我|跟我说|对我说|和我说|以为|认为|觉得|说(?!实话|真的|白了|起来|一下|一句|一声|两句|几句|明|过|下|个|句|说|清楚)")
# fmt: on


_HEARSAY = re.compile(r"好像|貌似|似乎|据说|听说|传闻|据传")
# someone else, or the user's relative, as the subject: "我朋友的公司用 Supabase", "我表姐上个月搬到成都去了"
_SOMEONE_ELSES = re.compile(
    r"(?:(?:朋友|同事|老板|客户|他|她|他们|她们|别人|对方|邻居|室友|亲戚|同学|隔壁组?)的?|^\W*我的?"
    + KIN
    + r")\s*"
    + ADV
    + r"\s*$"
)


def hearsay(sentence: str) -> bool:
    """Hearsay anywhere in the sentence ("竞品好像是用 Go 写的"): not the user's own fact."""
    return _HEARSAY.search(sentence) is not None


def blocked(sentence: str, start: int, *, hypothetical: bool = True) -> bool:
    """True when the text before `start` makes the statement not the user's own current fact (hearsay,
    "好像", "据说", is ruled out for the whole sentence: `hearsay`)."""
    prefix = sentence[:start]
    if prefix.count('"') % 2 == 1:  # inside a quotation
        return True
    if hypothetical:
        clause = prefix[prefix.rfind(",") + 1 :]
        # "…的话" makes its own clause a supposition, not the one before it ("我在杭州，约时间的话按北京时间")
        if (
            _HYPOTHETICAL.search(prefix)
            or _UNSURE.search(clause)
            or "的话" in sentence[start : start + 30].split(",")[0]
        ):
            return True
    if _SOMEONE_ELSES.search(prefix):  # "我朋友的公司用 Supabase": someone else's
        return True
    # "他说我…" is reported; "我说过…" / "跟你说…" are the user's own words.
    return any(
        not prefix[max(0, m.start() - 2) : m.start()].endswith(("我", "你"))
        and prefix[: m.start()].strip(" ,.!~") != ""  # "说了多少遍了，…": the speaker's own words
        for m in _REPORTED.finditer(prefix)
    )


_MIXED_RE = re.compile(r"(?<=[\u4e00-\u9fff])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9+#])(?=[\u4e00-\u9fff])")


def zh_content(text: str) -> str:
    """A third-person statement: 我 -> 用户, 我们 -> 用户团队, spaces around Latin words, ending in 。."""
    text = text.strip(" ,.;:!?~\"'")
    text = re.sub(r"我们|咱们", "用户团队", text).replace("我", "用户")
    return _MIXED_RE.sub(" ", text) + "。" if text else text


def strip_tail(text: str) -> str:
    return re.sub(r"(?:了|啦|呢|吧|哦|噢|啊|呀|嘛|哈|的|呗|~)+$", "", text.strip(" ,.;:!?~\"'"))


_QUESTION_END = re.compile(r"(?:吗|么|呢|嘛)[\s.!~]*$")
_QUESTION_ANY = re.compile(  # an A-not-A after "问(我)" is reported ("别每次都问我要不要跑测试"), not asked
    r"(?<!问我)(?<!问用户)(?:是不是|有没有|能不能|可不可以|要不要|会不会|(?<!不)对不对|好不好|行不行)|还记得|你记得|"
    r"记不记得|请问|"
    r"^(?:为什么|怎么|什么|哪|谁|如何|是否)"
)
_POLITE = re.compile(  # "能帮我记住…吗" / "你能不能别那么啰嗦" ask for something: not questions about a fact
    LEAD + r"(?:请你?|麻烦你?)?(?:你)?(?:能|可以|能不能|可不可以|能否|可否|麻烦)?(?:你)?(?:帮我)?"
    r"(?:一直|以后)?(?:记住|记一下|记下|记着|忘掉|忘记|删掉|删除|叫我|称呼我|别|不要)"
)


# An alternative question without its mark: "用 React 还是 Vue 好", "选 A 还是 B 呢"
# ("以后还是用中文回答吧", "那还是用 pnpm 吧": "had better", a decision, not a choice asked about)
_ALTERNATIVE_QUESTION = re.compile(
    r"(?<=[^,])(?<!以后)(?<!今后)(?<!那)(?<!算了)(?<!我们)(?<!咱们)(?<!我)(?<!你)(?<!现在)(?<!最后)(?<!以后都)"
    r"还是[^,]{1,20}?(?:好|呢|吧|合适|更好|比较好|划算)$"
)


@functools.lru_cache(maxsize=4096)
def is_question(sentence: str) -> bool:
    stripped = sentence.rstrip(" .!~")
    if _POLITE.match(stripped) and not re.search(r"你记得|还记得|记不记得", stripped):
        return False
    return stripped.endswith("?") or bool(
        _QUESTION_END.search(stripped)
        or _QUESTION_ANY.search(stripped)
        or ("还是" in stripped and _ALTERNATIVE_QUESTION.search(stripped))
    )


# Chinese drops the subject before a verb of state or change ("搬到杭州了", "从这周开始转岗到算法组了", "现在用的是
# Arch"): the clause is the user's own. A bare "用 X" is an imperative and gets nothing.
_DROPPED_VERBS = re.compile(r"搬|调到|调去|转岗|转到|转组|加入了|入职|跳槽|住在|用|吃|transfer|move", re.I)
_DROPPED_ME_RE = re.compile(
    LEAD
    + r"(?:从[^,.;!?]{1,6}?(?:开始|起)\s*,?\s*)?(?="
    + ADV
    + r"(?:搬到|搬去|搬回|搬家到|调到|调去|转岗|转到|转组|"
    r"加入了|入职了?|跳槽到|跳槽去|住在|用的是|一直用|一直在用|平时用|开始吃|不再吃|改吃|"
    r"\s*(?i:transfer(?:red)?|move[ds]?)\s*到))"
)


def with_subject(clause: str) -> tuple[str, int, int] | None:
    """The clause with the dropped "我" put back, where it went and how long it is; None when nothing was
    dropped."""
    if _DROPPED_VERBS.search(clause) is None:
        return None
    match = _DROPPED_ME_RE.match(clause)
    if match is None:
        return None
    return clause[: match.end()] + "我" + clause[match.end() :], match.end(), 1
