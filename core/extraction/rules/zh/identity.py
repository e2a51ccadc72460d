"""Chinese facts about who the user is: name and form of address, where they live and come from, job and
employer. Pure: no I/O.

`name_hits` / `place_hits` / `job_hits` take one normalised sentence and return slotted WORTH `Hit`s:
`user.name`, `user.address_as`; `user.location`, `user.hometown`; `user.job`, `user.employer`.
`is_place` knows the cities, provinces and countries the looser patterns accept.
"""

from __future__ import annotations

import dataclasses
import re

from core.extraction.candidates import Category, Kind, Tier
from core.extraction.rules.hits import Hit, fact, make
from core.extraction.rules.vocab import find_tools, is_tool
from core.extraction.rules.zh.grammar import ADV, ME, blocked, zh_content

# fmt: off
_NAME = r"(?P<name>[\u4e00-\u9fff]{1,4}?|[A-Za-z][A-Za-z'.-]*(?:\s[A-Z][A-Za-z'.-]*)?)"
_NAME_END = r"(?=$|[\s,.;:!?\"'~]|就|吧|好了|哦|噢|啊|呀|啦|呢|嘛|哈|是|在|今年|来自|住|目前|现在|也|和)"
_NAME_STOP = re.compile(  # "我叫什么", "给我叫个车", "他叫我去开会": not names
    r"^(?:什么|啥|谁|外卖|车|个|了|醒|人|它|他|她|你|您|一下|过来|起来|做|去|来|这|那|不|没|我|的|得|"
    r"着|过|一|帮|给|把|写|看|跟|回|吃|别|好|啊|新)|什么|啥|谁|的|了")
_NAME_RES = (
    (re.compile(ME + r"(?:的)?(?:名字|姓名|全名|真名|大名)(?:是|叫)\s*" + _NAME + _NAME_END), "user.name",
     "zh.name.my_name", 0.9),
    (re.compile(ME + r"(?:就|其实|本名)?叫\s*" + _NAME + _NAME_END), "user.name", "zh.name.jiao", 0.9),
    # "我姓欧阳，复姓": the user's surname
    (re.compile(ME + r"(?:就|其实)?姓\s*(?P<name>[\u4e00-\u9fff]{1,2}?)(?=$|[\s,.;!~]|复姓|单姓|哦|啊|呀|哈|,)"),
     "user.surname", "zh.name.surname", 0.85),
    (re.compile(r"(?:^|[\s,.!:]|你|您|大家|就|可以|直接|以后|都|请|也)(?:叫|称呼|喊)我\s*" + _NAME
                + r"(?=就好|就行|就可以|吧|好了|即可|就成|$|[\s,.;!~])"), "user.address_as",
     "zh.address.call_me", 0.9),
    (re.compile(ME + r"(?:的)?(?:昵称|小名|外号|网名)(?:是|叫)\s*" + _NAME + _NAME_END), "user.address_as",
     "zh.address.nickname", 0.85),
    (re.compile(r"^(?:大家好|你好|您好|hi|hello|嗨|哈喽)(?:呀|啊|哇)?[\s,!.~]*我是\s*(?P<name>[\u4e00-\u9fff]"
                r"{2,3}|[A-Z][A-Za-z'-]*)(?=$|[\s,.;!~])", re.I), "user.name", "zh.name.intro", 0.75),
)
_ROLE_STRONG = (
    r"(?:工程师|开发者|开发人员|程序员|码农|设计师|产品经理|项目经理|经理|大学生|研究生|博士生|本科生|"
    r"硕士生|学生|老师|教师|教授|讲师|研究员|医生|护士|律师|会计|分析师|架构师|科学家|创始人|合伙人|"
    r"总监|主管|实习生|作家|记者|顾问|自由职业者|创业者|运营|站长|博主|负责人|组长|CTO|CEO|PM|HR|"
    r"leader|翻译|编辑|SRE|DBA|QA|DevOps|运维开发|架构师|UI设计师|UX设计师|数据工程师|算法工程师|班主任|护士|医生|"
    r"老师)"
)
_ROLE_ANY = (
    _ROLE_STRONG[:-1] + r"|开发|研发|产品|设计|测试|算法|后端|前端|全栈|运维|数据分析|数据|销售|市场|"
    r"财务|人事|行政|客服|科研|教学|[A-Za-z]+(?:\s[A-Za-z]+)?\s(?:engineer|developer|designer|manager|analyst|scientist|"
    r"lead|architect)|firmware\s开发)"
)
# fmt: on
IS_ROLE = re.compile(_ROLE_ANY + r"$")  # "护士", "产品经理": a line of work, not a name


def name_hits(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for pattern, slot, rule, conf in _NAME_RES:
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        name = match.group("name").strip()
        if _NAME_STOP.search(name) or (rule == "zh.name.intro" and re.search(_ROLE_ANY, name)):
            continue  # "你好，我是产品经理" introduces a job, not a name
        template = {"user.name": "用户叫{}。", "user.surname": "用户姓{}。"}.get(slot, "用户希望被称呼为{}。")
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
    (re.compile(ME + ADV + r"(?:(?:跟|和|与|同)[\u4e00-\u9fff]{1,5}?(?:一起)?)?(?:租房子?|租了房子?|买了房子?|买房)?"
                r"(?:住在|住|居住在|定居在?|生活在|"
                r"常驻|坐标|人在|\s*base\s*在|\s*based?\s*(?:in|在))\s*" + _LOC + _LOC_END,
                re.I), "user.location", "zh.location.live"),
    (re.compile(r"(?:" + ME + r"|我们|我们家|我家)" + ADV + r"(?:搬到|搬去|搬来|搬家到|搬回|移居到?|迁居到?|"
                r"搬回到)了?\s*" + _LOC + _LOC_END), "user.location", "zh.location.moved"),
    # "我被调去上海了", "我又调回北京了", and with the subject dropped as Chinese drops it ("又被派到深圳了",
    # "终于回老家武汉了"): posted to a place the vocabulary knows
    (re.compile(r"(?:" + ME + ADV + r"|^|(?<=[,\s]))(?:被|又|已经|刚|终于)*(?:调去|调到|调回到?|派到|派去|外派到|"
                r"回老家|回到|回)了?\s*(?P<loc>"
                + "|".join(sorted(_PLACES, key=len, reverse=True))
                + r")(?=$|[\s,.;!~]|了|啦|呢|工作|上班|这边|办公|研发|总部|分公司|分部|办事处|office)", re.I),
     "user.location", "zh.location.posted"),
    (re.compile(ME + ADV + r"(?:来自|出生在|出生于|老家是|老家在)\s*" + _LOC + _LOC_END), "user.hometown",
     "zh.hometown.from"),
    (re.compile(ME + r"(?:现在|目前|一直|常年|长期)+在\s*(?P<loc>[\u4e00-\u9fff]{2,6}?)(?:生活|定居)?"
                r"(?=$|[\s,.;!~]|了|啦|呢)"), "user.location", "zh.location.zai"),
    (re.compile(ME + r"(?:现在|目前|人)?在\s*(?P<loc>" + "|".join(sorted(_PLACES, key=len, reverse=True))
                + r")(?=$|[\s,.;!~]|了|呢|啊|哦|这边|工作|上班|生活|住)"), "user.location", "zh.location.known"),
    # "搬家了，现在住闵行": where the user lives now, the subject dropped (as Chinese drops it), told with the
    # verb of living (any place: the verb says it is one)
    (re.compile(r"(?:^|[,\s])(?:现在|目前|如今)(?:已经|都)?(?:住在|住|定居在?|生活在)\s*" + _LOC + _LOC_END),
     "user.location", "zh.location.now_live"),
    # "搬来成都之后通勤短多了": a move with the subject dropped, to a place the vocabulary knows
    # (a place in Latin letters is a capitalised name that is not a tool: "搬来 Berlin 之后", not "搬到 Vercel")
    (re.compile(r"(?:^|[,\s])(?:刚|已经)?(?:搬来|搬到|搬去|搬回|搬家到)了?\s*(?P<loc>"
                + "|".join(sorted(_PLACES, key=len, reverse=True)) + r"|(?-i:[A-Z][a-z]{2,}(?:\s[A-Z][a-z]{2,})?)"
                r"(?=\s*(?:之后|以后|后|了|$|[,.!~\s])))"), "user.location", "zh.location.moved_bare"),
    # "我在北京海淀这边住", "我现在在上海浦东那边生活": a known place, a district after it, then the verb of living
    (re.compile(ME + r"(?:现在|目前|一直)?在\s*(?P<loc>" + "|".join(sorted(_PLACES, key=len, reverse=True))
                + r")(?:[\u4e00-\u9fff]{0,4}?(?:这边|那边|附近))?(?:住|生活)"), "user.location", "zh.location.zai_zhu"),
    # "来温哥华三个月了", "到深圳快一年了": how long the user has been in a place the vocabulary knows
    (re.compile(r"(?:^|[,\s])(?:我)?(?:来|到|搬来|回)(?:了)?\s*(?P<loc>"
                + "|".join(sorted(_PLACES, key=len, reverse=True))
                + r")(?:已经|快|都|也|才|刚)?(?:[一二三四五六七八九十两半几\d]+|大半)个?多?"
                r"(?:月|年|周|星期|礼拜)(?:多)?了"),
     "user.location", "zh.location.since"),
    # "已经回国了，现在在北京": the state after a move, the subject dropped
    (re.compile(r"(?:^|[,\s])(?:现在|目前|如今)(?:人)?在\s*(?P<loc>" + "|".join(sorted(_PLACES, key=len, reverse=True))
                + r")(?=$|[\s,.;!~]|了|呢|啊|哦|这边|工作|上班|生活|住)"), "user.location", "zh.location.now_bare"),
    # "我在北京研发中心": the user's own place of work named by its city
    (re.compile(ME + r"(?:现在|目前)?在\s*(?P<loc>" + "|".join(sorted(_PLACES, key=len, reverse=True))
                + r")(?=(?:的)?(?:研发中心|办公室|分公司|总部|office|园区))", re.I),
     "user.location", "zh.location.office"),
    (re.compile(ME + r"是\s*(?P<loc>[\u4e00-\u9fff]{2,4}?)人(?=$|[\s,.;!~]|哦|啊|呀)"), "user.hometown",
     "zh.hometown.ren"),
)
# fmt: on
_NOT_LIVING = re.compile(r"工作|上班|出差|开会|旅游|玩|读书|上学|实习")


def is_place(text: str) -> bool:
    """A known city, province or country, or a name with an administrative suffix ("西湖区")."""
    return text in _PLACES or text[:2] in _PLACES or text.endswith(("市", "省", "区", "县", "州", "镇"))


def place_hits(sentence: str) -> list[Hit]:
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


# when a change of role happened, at the start of its clause ("年后升了…"), and how long ago ("转开发三个月了")
_SINCE = r"(?:年后|节后|年初|年底|上个月|上周|去年|今年|最近|前阵子|前几天|[一二三四五六七八九十\d]{1,2}\s*月份?)?"
_SPAN = r"[一二三四五六七八九十两几半\d]+\s*(?:个)?(?:月|年|周|天|星期)"
# fmt: off
_JOB_RES = tuple((re.compile(pattern), rule) for pattern, rule in (
    (ME + ADV + r"是(?:一名|一个|一位|名|个|位)?\s*(?P<job>[\u4e00-\u9fffA-Za-z+# ]{0,10}?" + _ROLE_STRONG
     + r")(?=$|[\s,.;:!?]|在|就职|也|啊|哦|呀|啦|呢|了)", "zh.job.shi"),
    # "我是测试开发", "我是运维": a line of work as the whole statement
    (ME + ADV + r"是(?:一名|一个|一位|名|个|位)?\s*(?P<job>[\u4e00-\u9fffA-Za-z+# ]{0,6}?" + _ROLE_ANY
     + r")(?=$|[\s,.;:!?]|啊|哦|呀|啦|呢)", "zh.job.shi_any"),
    (ME + ADV + r"在\s*(?P<org>[\u4e00-\u9fffA-Za-z0-9& ]{2,12}?)\s*(?:做|当|担任|任|干)\s*(?P<job>"
     r"[\u4e00-\u9fffA-Za-z+# ]{0,8}?" + _ROLE_ANY + r")(?:工作|的工作)?(?=$|[\s,.;:!?]|了|呢|啊|哦)",
     "zh.job.zai_zuo"),
    # "我在小红书做推荐算法", "我在一家券商做量化": a line of work at a place, whatever its name
    (ME + ADV + r"在\s*(?P<org>[\u4e00-\u9fffA-Za-z0-9& ]{2,12}?)\s*(?:做|搞|负责|干|教|带)\s*(?P<job>"
     r"[\u4e00-\u9fffA-Za-z+#/ ]{2,10}?)(?:工作|的工作|方向|相关)?(?=$|[\s,.;:!?]|了|呢|啊|哦)", "zh.job.zai_zuo_any"),
    # "公司叫鲜达", "我们公司叫海帆": the employer named
    (r"(?:^|[,\s])(?:" + ME + r"|我们)?(?:的|所在的)?公司(?:的名字|名字)?(?:叫做?|名叫|是)\s*"
     r"(?P<org>[\u4e00-\u9fff]{2,6}?|[A-Z][\w&.-]*(?:\s[A-Z][\w&.-]*)?)(?=$|[\s,.;!?]|了|呢|啊|哦)",
     "zh.employer.named"),
    (ME + ADV + r"(?:是做|是搞|做|搞|从事|干)\s*(?P<job>[\u4e00-\u9fffA-Za-z+# ]{0,8}?" + _ROLE_ANY
     + r")(?:的|工作|行业|相关的?工作|这一?行)(?=$|[\s,.;:!?]|了|呢|啊|哦)", "zh.job.zuo"),
    (ME + ADV + r"是\s*(?P<org>[\u4e00-\u9fffA-Za-z0-9&]{2,8}?)(?:公司)?的\s*(?P<job>"
     r"[\u4e00-\u9fffA-Za-z+#]{0,6}?" + _ROLE_ANY + r")(?=$|[\s,.;:!?]|啊|哦|呀|啦|呢)", "zh.job.org_de"),
    (ME + r"(?:的)?(?:工作|职业|职位|岗位)是\s*(?P<job>[\u4e00-\u9fffA-Za-z+# ]{1,10}?)"
     r"(?=$|[\s,.;:!?]|了|呢|啊|哦)", "zh.job.my_job"),
    (ME + ADV + r"在\s*(?P<org>[\u4e00-\u9fffA-Za-z0-9& ]{2,12}?)\s*(?:工作|上班|任职|就职|实习)",
     "zh.employer"),
    # "作为高三班主任我晚上时间很少": the role the user speaks as
    (r"^(?:作为|身为)(?:一名|一个|一位)?\s*(?P<job>[\u4e00-\u9fffA-Za-z+# ]{0,8}?" + _ROLE_ANY + r")(?=\s*,?\s*我)",
     "zh.job.as"),
    # "我转前端了", "我现在改做产品了", "我从后端转岗做 SRE 了": a change of role; with the subject dropped at the
    # start of a clause as chat drops it ("年后升了高级工程师", "转开发三个月了")
    (r"(?:" + ME + ADV + r"|^|(?<=[,;\s]))" + _SINCE + ADV + r"(?:从\s*[\u4e00-\u9fffA-Za-z+# ]{1,8}?\s*)?"
     r"(?:被|又|终于|正式)*(?:转岗做|转岗到|转岗成|转岗|转到|转成|转做|改做|换成|调到|升职为|升职到|晋升为|晋升到|晋升|升为|升到|"
     r"升了|转(?!发|给|告|账|载|帖|交))\s*(?P<job>[\u4e00-\u9fffA-Za-z+# ]{0,6}?" + _ROLE_ANY + r")(?:了|啦|岗)?"
     r"(?=$|[\s,.;:!?]|了|啦|" + _SPAN + r")", "zh.job.changed"),
    # "现在是架构师了", "已经换工作了，现在做 ML engineer": the role now, the subject dropped at the start of a clause
    (r"(?:^|(?<=[,;\s]))(?:现在|目前|如今)\s*(?:是|做|当|干)\s*(?:一名|一个|一位|名|个|位)?\s*(?P<job>"
     r"[\u4e00-\u9fffA-Za-z+# ]{0,8}?" + _ROLE_ANY + r")(?=$|[\s,.;:!?]|了|啦|呢|啊|哦)", "zh.job.now"),
    # "我从字节出来了，现在在快手": left one employer, now at another (a place would be a move, not this)
    (r"(?:出来了|离职了?|辞职了?|离开了?|跳槽了?)[^.;!?]{0,10}?,\s*(?:现在|目前)(?:在|去了)\s*(?P<org>[\u4e00-\u9fffA-Za-z]{2,6}?)"
     r"(?=$|[\s,.;!?]|了|做|工作|上班)", "zh.employer.left"),
    # "跳槽了，现在在美团", "入职了快手": a change of employer, the subject dropped as chat does
    (r"(?:跳槽|入职|加入了?|跳到|换到|去了)(?:了)?[^,.;!?]{0,4}?(?:,\s*)?(?:现在|目前)?(?:在|到)?\s*"
     r"(?P<org>(?<![A-Za-z])[\u4e00-\u9fffA-Za-z]{2,6}?)(?=$|[\s,.;!?]|了|做|工作|上班)", "zh.employer.changed"),
))
_ORG_REJECT = re.compile(  # "我在想做个产品", "我在一家公司…", "我是他们的…", "我是组里唯一的前端": not organisations
    # "大/小" as the size of a kind of place ("小公司", "大厂"), not the first character of a name ("小红书", "小米")
    r"^(?:想|学|写|搞|弄|看|找|用|考虑|准备|试|做|给|帮|跟|和|家|一家|一个|某|这|那|他|她|你|我|"
    r"(?:大|小)(?=公司|厂|团队|企业|组|作坊|店|单位|部门|$)|组里|团队里)"
    r"|这|那|哪|家里|们|唯一|仅有|第一个")
# "一家券商", "银行", "高中": a kind of employer, not its name
_KIND_OF_PLACE = re.compile(
    r"^(?:一家|一个|某)|^(?:高中|初中|小学|中学|大学|学校|医院|银行|工厂|机房|公司|研究所|实验室|政府|事业单位|国企|外企)$"
)
_NOT_WORK = re.compile(  # "我在家做饭", "我在公司加班": what the user is doing, not a line of work
    r"饭|菜|家务|作业|运动|加班|梦|事|什么|啥|一下|准备|测试一下|实验一下|这个|那个|公司|上班")
# Studies the user is in: "我在读研，方向是 NLP", "我在准备考研，目标是浙大计算机", "我在写毕业论文".
_STUDY_RE = re.compile(  # also what the user is learning, the business they run, a lasting condition
    ME + ADV + r"(?:(?:在|正在)?\s*(?:学|自学)(?!一下|这|那|怎么|着)[\u4e00-\u9fffA-Za-z]{2,8}|(?:开了|开)"
    r"(?:个|一家|一个)[\u4e00-\u9fff]{0,8}?(?:店|公司|工作室|餐厅|咖啡馆|诊所|网店|淘宝店)|有点?(?:近视|远视|散光|色盲|色弱|红绿色盲|"
    r"糖尿病|高血压|哮喘|腰椎间盘突出|颈椎病|失眠|焦虑症|抑郁症)|(?:在|正在)?\s*(?:读研|读博|读研究生|读博士|读本科|读大学|"
    r"读大[一二三四]|读高[一二三]|准备考研|考研|备考|写毕业论文|写论文|写硕士论文|写博士论文|念研究生|念博士))[^.;!?]{0,30}?(?=$|[.;!?]|,\s*(?:帮|请|能|你|麻烦|求))"
)
# fmt: on


_TITLED_NAME = re.compile(r"[\u4e00-\u9fff](?:老师|经理|总|主管|总监|医生|律师|教授|工|博)")
_TEAM_ENDS = ("组", "团队", "小组", "部门", "事业部", "中台")


def job_hits(sentence: str) -> list[Hit]:
    """The user's job and employer, and the studies they are in."""
    hits: list[Hit] = []
    study = _STUDY_RE.search(sentence)
    if study and not blocked(sentence, study.start()):
        cand = make(zh_content(study.group()), Kind.SEMANTIC, Category.PROFILE, Tier.WORTH,
                    rule="zh.profile.studies", confidence=0.8, lang="zh")  # fmt: skip
        hits.append((cand, study.start(), study.end()))
    for pattern, rule in _JOB_RES:
        match = pattern.search(sentence)
        if match is None or blocked(sentence, match.start()):
            continue
        groups = match.groupdict()
        org = (groups.get("org") or "").strip()
        if rule == "zh.job.zai_zuo_any" and (
            hits
            or _NOT_WORK.search(groups.get("job") or "")
            or (_ORG_REJECT.search(org) and not _KIND_OF_PLACE.match(org))
        ):
            continue  # "我在家做饭": not a line of work; a role already found says it better
        if org and (_ORG_REJECT.search(org) or find_tools(org) or _KIND_OF_PLACE.match(org)):
            org = ""  # "我在一家创业公司做算法工程师", "我在银行做测试": the job still holds
        if org and is_place(org):  # "我在上海工作": where the user lives
            cand = fact(
                f"用户在{org}工作。", "user.location", org, rule=rule + ".place", lang="zh", conf=0.75
            )
            hits.append((cand, match.start(), match.end("org")))
        elif org and org.endswith(_TEAM_ENDS):  # "转岗去了搜索组": a team inside the employer, not a new one
            cand = fact(f"用户在{org}。", "user.team", org, rule=rule + ".team", lang="zh", conf=0.8)
            hits.append((cand, match.start(), match.end("org")))
        elif org:
            cand = fact(zh_content(f"用户在{org}工作"), "user.employer", org, rule=rule, lang="zh", conf=0.8)
            hits.append((cand, match.start(), match.end("org")))
        job = (groups.get("job") or "").strip().rsplit("的", 1)[-1].strip()
        if rule == "zh.job.now" and _TITLED_NAME.fullmatch(job):
            continue  # "换导师了，现在是陈老师": a person called by surname and title, not the user's role
        if job and not re.search(r"[这那它吗什么]", job):
            # the user's own words say more than the role ("用户在一家券商做量化"), unless they name the employer,
            # which has its own slot: a new employer must not leave the old one current in the job's words
            said = sentence[match.start() : match.end("job")]
            own = said.startswith("我") and not org
            content = zh_content(said) if own else zh_content(f"用户的职业是{job}")
            cand = fact(content, "user.job", job.lower(), rule=rule, lang="zh")
            hits.append((cand, match.start(), match.end("job")))
    employers = [c.value for c, _, _ in hits if c.slot == "user.employer" and c.value]
    return [  # a job told with the employer's name keeps to the role: the employer has its own slot
        (
            dataclasses.replace(c, content=zh_content(f"用户的职业是{c.value}"))
            if c.slot == "user.job" and any(e in c.content for e in employers)
            else c,
            start,
            end,
        )
        for c, start, end in hits
    ]
