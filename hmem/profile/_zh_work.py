"""Chinese rules for what the user does: occupation, employer, school, major, and job
changes (跳槽到…, 入职…, 当上了…). Pure.

"在X做/当/上班…": X is a place (→ ``location``), a named organisation (→ ``employer``)
or a generic one ("一家外企", "一所小学": nothing). English job phrases inside Chinese
clauses ("做 data engineer", "是 freelance translator") use the English job lexicon.

Example::

    >>> from hmem.profile._clauses import analyse
    >>> cs = analyse("我在星巴克当店长")
    >>> [(f.key, f.value) for i in range(len(cs)) for f in zh_work(cs, i)]
    [('occupation', '店长'), ('employer', '星巴克')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hmem.profile._clauses import CJK, CURRENT, STAY, Clause, allowed, negated
from hmem.profile._en_self import TZ
from hmem.profile._en_work import JOB_PHRASE
from hmem.profile._lex_en import FIELDS, PLACES
from hmem.profile._lex_zh import SURNAMES, ZH_FIELDS, ZH_JOBS, ZH_OTHER_PEOPLE, ZH_PLACES
from hmem.profile._values import Found, fact, zh_is_place, zh_place_prefix
from hmem.profile._zh_self import zh_pred

__all__ = ["zh_work"]

_JOB = (rf"(?P<job>(?![做当干在是搞不没]|作为)(?:[A-Za-z]+\s)?(?:(?![的是在了我你他她])[{CJK}A-Za-z]){{0,6}}?(?:{'|'.join(ZH_JOBS)}|{'|'.join(ZH_FIELDS)})|(?i:{JOB_PHRASE})|"
        rf"(?i:{'|'.join(sorted(FIELDS, key=len, reverse=True))})\b)")
_JOB_END = r"(?=\s*(?:了|啦|呀|哈|哦|啊|吧|嘛|一枚|,|，|;|$|\s|工作|方面|这块|这一块|的(?:$|,|，)))"
_QUANT = r"(?:一名|一个|一位|个|名|位|一枚)?"
_GENERIC = re.compile(r"^(?:一家|一个|一所|一间|这家|那家|家|某|本地|当地|附近)|^(?:[大小]|私立|公立|国企|外企|私企|央企|"
                      r"互联网|电商|创业|科技|教育|医疗|金融|咨询|广告|游戏|外贸|传统|本地|三甲|社区|市|县|区|"
                      r"宠物|儿童|妇幼|口腔|牙科|眼科|中医|民营|整形|美容|培训|装修|设计|物流|快递|律师|会计师|软件|网络|"
                      r"贸易|服装|汽车|房产|地产|保险|投资|制药|医药|食品|化工|建筑|连锁|家族)*"
                      r"(?:公司|外企|企业|单位|学校|医院|银行|工厂|工作室|机构|部门|政府|机关|事业单位|店|厂|小学|中学)$|"
                      rf"^[{CJK}]?[企厂]$")  # 药企, 车企, 药厂
_SCHOOL = re.compile(rf"^(?P<s>[{CJK}]{{2,12}}?(?:大学|学院|中学|小学|高中|学校)|清华|复旦|[{CJK}]{{1,4}}科(?:学)?院|[{CJK}]{{1,4}}大|[A-Z]{{2,6}}|"
                     rf"[A-Z][\w&.'-]*(?: [A-Z][\w&.'-]*){{0,4}})$")


def _named_org(org: str) -> str | None:
    """A named organisation in ``org`` (腾讯, 协和医院, HSBC), None for a place or a generic one
    ("杭州一家电商公司", "一所小学")."""
    org = org.strip()
    place = zh_place_prefix(org)
    if place and place != org:
        rest = org[len(place):].strip().removeprefix("的").strip()  # "杭州的一家公司"
        if re.match(r"(?:大学|学院|医科大学|师范|理工|科技大学|工业大学|农业大学).{2,}", rest):
            return org  # "中南大学湘雅医院": the place begins the organisation's own name
        if (place not in ZH_PLACES and re.fullmatch(r"医院|大学|学院|银行|研究院|研究所", rest)) or rest in ("银行", "大学"):
            return org  # "华西医院": a name jieba reads as a place, then a bare head noun; "中国银行", "上海大学"
        org = rest
    if re.match(r"^(?:一家|一个|一所|一间|这家|那家)", org) or "的" in org:
        return None  # "读的大学": an organisation's name holds no 的
    if _AREA.search(org) or org.removeprefix("我们").removeprefix("我") in (*ZH_JOBS, *ZH_OTHER_PEOPLE):
        return None  # "科技园", "金融街", "CBD": where the office is; "老板的助理": a person, not an employer
    if len(org) < 2 or _GENERIC.match(org) or zh_is_place(org) or org.lower() in PLACES or _SURNAME_TITLE.match(org):
        return None
    latin = re.match(r"^(?P<o>[A-Z][\w&.'-]*(?: [A-Z][\w&.'-]*){0,3})(?:\s*[" + CJK + r"]+)?$", org)
    if latin:
        return latin.group("o") if latin.group("o").lower() not in PLACES | FIELDS else None
    return org if re.fullmatch(rf"[{CJK}A-Za-z0-9&·]{{2,16}}", org) else None


_AREA = re.compile(r"(?:科技园|产业园|工业园|软件园|创业园|园区|开发区|高新区|新区|市中心|市区|商圈|商务区|写字楼|大厦|广场|"
                   r"[^银]街|路|(?i:CBD))$|^(?i:CBD)$")


#: "李老师", "王医生": how someone is addressed (surname + title), not a job description.
_SURNAME_TITLE = re.compile(rf"^[{SURNAMES}](?:老师|医生|大夫|律师|经理|教授|总|工|博士|主任|师傅)$")


_TAUGHT = "英语|数学|语文|物理|化学|生物|历史|地理|政治|音乐|美术|体育|钢琴|舞蹈|编程|中文|汉语|日语|韩语|法语|德语|书法|瑜伽|吉他|绘画"


def _job(raw: str) -> str:
    return re.sub(rf"^{_QUANT}\s*", "", raw).strip()


def _occupation(c: Clause, p: str) -> list[Found]:
    out: list[Found] = []
    p = re.sub(r"(?<![\d])\d0后|(?<![\d])\d5后", "", p)  # "一名95后幼儿园老师": the generation is no part of the job
    p = re.sub(r"^是\s*退休(?:了)?的\s*", "是退休", p)  # "是退休的中学老师" → 退休中学老师
    m = re.match(rf"^(?:是|本人|我是)\s*{_QUANT}\s*{_JOB}{_JOB_END}", p) or \
        re.match(rf"^(?![做当干在是去来有从]){_JOB}\s*(?:一枚)?$", p)  # "程序员一枚"
    if m and not negated(p[: m.start("job")]) and not _SURNAME_TITLE.match(_job(m.group("job"))):
        out.append(fact("occupation", _job(m.group("job")), 0.85, c.text))
    m = re.search(rf"(?:^|在\s*(?P<org>[^,，]{{1,24}}?)\s*)(?:做|当|干|担任|任)\s*{_QUANT}\s*{_JOB}{_JOB_END}", p)
    if m and not negated(p[: m.start("job")]):
        out.append(fact("occupation", _job(m.group("job")), 0.8, c.text))
        org = m.group("org")
        if org:
            named = _named_org(re.sub(rf"\s*[{CJK}]{{2,4}}$", "", org) if re.match(r"[A-Za-z]", org) else org)
            if named:
                student = re.search(r"student|学生|研究生|博士生|读|phd", c.sentence, re.IGNORECASE)
                out.append(fact("school" if student else "employer", named, 0.8, c.text))
    m = re.search(r"(?:^|在\s*(?P<org>[^,，]{1,20}?)\s*)(?:做|当)\s*(?P<job>[A-Z]{2,5})(?=$|[^A-Za-z])", p)
    if m and not out and not negated(p[: m.start("job")]):  # "做 SDE", "在 Meta 做 SWE": a job acronym
        out.append(fact("occupation", m.group("job"), 0.75, c.text))
        if m.group("org") and (named := _named_org(m.group("org"))):
            out.append(fact("employer", named, 0.75, c.text))
    m = re.match(rf"^是\s*(?P<org>[^,，的]{{2,12}})的\s*{_QUANT}\s*{_JOB}{_JOB_END}", p)
    study = r"学生|老师|教授|博士|研究生|(?i:student|undergrad|postdoc|professor|phd)"  # a school's: _study reads it
    if m and not out and not negated(p[: m.start()]) and not re.search(study, m.group("job")):
        out.append(fact("occupation", _job(m.group("job")), 0.75, c.text))  # "是三甲医院的主治医生"
        if named := _named_org(m.group("org")):
            out.append(fact("employer", named, 0.75, c.text))
    m = re.search(rf"(?:转成|转行(?:做|当|成)|转岗(?:到|成|做)|改行(?:做|当)|升(?:职)?(?:成|为)|当上|成为)了?\s*{_QUANT}\s*{_JOB}"
                  rf"{_JOB_END}", p)
    if m and not out and not negated(p[: m.start()]):  # "去年转成了产品经理": the job now
        out.append(fact("occupation", _job(m.group("job")), 0.8, c.text))
    m = re.search(r"从事\s*(?P<job>[^,，;的]{2,8}?)\s*(?:工作|行业|相关工作|方面的工作)?$", p)
    if m and not negated(p[: m.start()]):
        out.append(fact("occupation", m.group("job"), 0.75, c.text))
    m = re.search(rf"(?:职业|工作)(?:是|为)\s*{_QUANT}\s*{_JOB}{_JOB_END}", c.bare if c.subject == "my" else p)
    if m:
        out.append(fact("occupation", _job(m.group("job")), 0.85, c.text))
    m = re.match(r"^(?:在读|正在读|在念)\s*(?P<d>研究生|研|硕士|博士|博|本科|大学|大专|高中|PhD|master'?s?|MBA)", p, re.I)
    if m:
        d = m.group("d").lower()
        out.append(fact("occupation", "研究生" if d in ("研究生", "研", "硕士") else "博士生" if d in ("博士", "博")
                        else "phd student" if d == "phd" else "学生", 0.8, c.text))
    m = re.match(rf"^是(?P<v>做|搞|干|开|跑|卖|送|教|修)\s*(?P<job>(?:(?!的)[{CJK}A-Za-z ]){{1,8}}?)的$", p)
    if m and not out and not negated(p[: m.start()]):  # "是做金融的" → 金融; "是跑外卖的" → 跑外卖
        verb = "" if m.group("v") in "做搞干" else m.group("v")
        out.append(fact("occupation", verb + m.group("job").strip(), 0.75, c.text))
    m = re.search(rf"(?:^|在[^,，]{{1,12}}?)教\s*(?P<s>{_TAUGHT})", p)  # "我在高中教英语" → 英语老师
    if m and not out and not negated(p[: m.start("s")]):
        out.append(fact("occupation", f"{m.group('s')}老师", 0.75, c.text))
    m = re.match(r"^开(?P<v>出租车?|的士|网约车|滴滴|货车|大货车|卡车|大巴|公交车?)(?:的)?$", p)
    if m and not out:  # "我自己开出租车": a driver by trade (not "开车去机场")
        out.append(fact("occupation", f"开{m.group('v')}", 0.75, c.text))
    m = re.match(r"^(?:今年|去年|已经|刚刚?|早就|早已|都)*\s*退休(?:了|啦)?$", p)
    if m and not out:
        out.append(fact("occupation", "退休", 0.75, c.text))
    m = re.search(rf"开了?(?:一)?[家个间]\s*(?:小)?(?P<x>[{CJK}]{{1,6}}?(?:店|馆|公司|工作室|餐厅|饭店|超市|诊所))", p)
    if m and not negated(p[: m.start()]):
        out.append(fact("occupation", m.group("x").removeprefix("小") + "老板", 0.75, c.text))
    return out


#: "暑期在腾讯实习", "这段时间临时在咖啡店帮忙": a job for now, not the user's occupation.
_FOR_NOW = re.compile(r"暑期|暑假|寒假|临时|暂时|这段时间|这几天|这周|这个月|这学期")
_ORG_SUFFIX = re.compile(r"(?:医院|公司|集团|银行|研究院|研究所|中心|局|事务所|大学)$")


def _employer(c: Clause, p: str) -> list[Found]:
    """"在腾讯上班" names an employer; a bare "在X" only when X looks like one (协和医院, HSBC)."""
    m = re.search(r"在\s*(?P<org>[^,，]{2,24}?)\s*(?:工作|上班|任职|实习|打工)(?:了|呢)?(?:$|,|，)", p)
    bare = None if m else re.match(r"^在\s*(?P<org>(?:(?!做|当|干|教|读|学)[^,，]){2,24})$", p)
    m = m or bare
    if not m or negated(p[: m.start("org")]):
        return []
    org = m.group("org").strip()
    named = _named_org(org)
    if named is None:
        latin = re.match(r"^(?P<o>[A-Z][\w&.'-]*(?: [A-Z][\w&.'-]*){0,3})\s*(?P<p>[" + CJK + r"]{2,6})$", org)
        named = latin.group("o") if latin and zh_is_place(latin.group("p")) else None
    rest = org.replace(named or "", "", 1).strip()  # a bare "在 KL 长大" / "在 UTC-5" is no workplace
    if bare and named and (TZ.match(named) or (rest and rest not in ZH_PLACES and not re.fullmatch(f"[{CJK}]+[市省区县]", rest))):
        return []
    if named and (bare is None or _ORG_SUFFIX.search(named) or re.match(r"[A-Z]", named)):
        return [fact("employer", named, 0.8, c.text)]
    return []


#: A new job said as a change: "跳槽到腾讯了", "上周入职了美团", "在网易入职了", "去了小米上班", "加入了华为",
#: "join 了 Shopee".
_NEW_JOB = re.compile(
    r"(?P<v>跳槽(?:到|去)|入职|加入|(?i:join(?:ed)?))\s*了?\s*(?P<org>[^,，;]{1,20}?)\s*(?:上班|工作|报到)?\s*(?:了|啦)?$|"
    r"^(?P<went>去|到)了\s*(?P<dest>[^,，;]{1,20}?)\s*(?:上班|工作|报到)(?:了|啦)?$|"
    r"在\s*(?P<at>[^,，;]{2,20}?)\s*入职(?:了|啦)?$")
#: "入职快三周了", "五月六号入职": how long ago or when, not where.
_HOW_LONG = re.compile(r"^(?:快|已经|刚|满|才|将近|差不多|大概|了)|[\d一二两三四五六七八九十半几]\s*(?:个)?(?:天|周|星期|礼拜|月|年|号|日)")
#: "加入了合唱团" is no job: joining is one only with a word of work or a company's name.
_WORK_CONTEXT = re.compile(r"工作|上班|公司|入职|跳槽|offer|同事|岗位|职位|团队|(?i:\bjob\b|\bwork\b)")


def _job_change(c: Clause, p: str) -> list[Found]:
    """The employer of a job change; a change to a workplace without a name ("跳槽到一家面包店")
    only ends the old employer."""
    m = _NEW_JOB.search(p)
    if not m or negated(p[: m.start()]):
        return []
    org = (m.group("org") or m.group("dest") or m.group("at") or "").strip()
    verb = m.group("v") or ""
    if verb == "加入" and not (_WORK_CONTEXT.search(c.sentence) or _ORG_SUFFIX.search(org) or re.match(r"[A-Z]", org)):
        return []
    named = None if _HOW_LONG.search(org) else _named_org(org)
    if named:
        return [fact("employer", named, 0.8, c.text)]
    if verb.startswith(("跳槽", "入职")) and re.match(r"(?:一|这|那)[家个所间]", org):
        return [Found("employer", None, 0.7, "delete", c.text)]
    return []


_DEGREE = r"书|大学|本科|大专|高中|初中|小学|中学|研|硕|博|master|phd|mba|的|[大高初研][一二三四]|个|预科|语言|了"


def _study(cs: Sequence[Clause], i: int, p: str) -> list[Found]:
    c = cs[i]
    out: list[Found] = []
    m = re.search(r"在\s*(?P<s>[^,，;]{2,16}?)\s*(?P<v>读|(?<![大中小])学(?![习会做院校])|上学(?=\s*$|[了呢])|上(?=课|大学|研|博|本科|高中|初中|小学|中学|\s*$)|念|攻读|就读|学习)\s*(?P<what>[^,，;]{0,12})$", p)
    # "我大学在武汉读的", "在复旦读的本科": 是…的 tells a past event; the school counts (attended), nothing current
    done = m is not None and m.group("what").startswith("的")
    if m and m.group("v") == "学" and not re.search(rf"(?:大学|学院|中学|小学|高中|学校|清华|复旦|[{CJK}]{{1,3}}大)$", m.group("s")):
        m = None  # "在北京学画画": learning something somewhere, no school
    if m and not negated(p[: m.start()]) and zh_is_place(m.group("s").strip()) and allowed(c, STAY) and not done:
        out.append(fact("location", m.group("s").strip(), 0.7, c.text))
        d = m.group("what").strip().lower()
        if d and len(d) <= 12 and not re.match(_DEGREE, d):  # "在 Manchester 读 accounting"
            out.append(fact("major", m.group("what").strip(), 0.7, c.text))
        out.append(fact("occupation", "研究生" if re.match(r"研|硕士|master", d) else "博士生" if re.match("博", d)
                        else "phd student" if d.startswith("phd") else "学生", 0.75, c.text))
    elif m and not negated(p[: m.start()]):
        school, what = m.group("s").strip(), m.group("what").strip()
        if _SCHOOL.match(school):
            out.append(fact("school", school, 0.85, c.text))
        if _SCHOOL.match(school) and not done:
            what = what.removesuffix("专业")
            if re.match(r"^(?:研|研究生|硕士)", what):
                out.append(fact("occupation", "研究生", 0.8, c.text))
            elif re.match(r"^(?:博|博士|phd|PhD|PHD)", what, re.I):
                out.append(fact("occupation", "博士生" if re.match(r"博", what) else "phd student", 0.8, c.text))
            elif field := re.match(r"^(?P<m>.{1,12}?)\s*的\s*(?P<d>(?i:phd|master'?s?)|博士|硕士|研究生|本科)$", what):
                out.append(fact("major", field.group("m"), 0.8, c.text))  # "读 CS 的 PhD"
                d = field.group("d").lower()
                out.append(fact("occupation", "研究生" if d in ("硕士", "研究生") or d.startswith("master") else
                                "博士生" if d == "博士" else "phd student" if d == "phd" else "学生", 0.8, c.text))
            else:
                out.append(fact("occupation", "学生", 0.75, c.text))
                if what and what not in ("书", "大学", "本科", "高中", "初中", "的") and len(what) <= 8:
                    out.append(fact("major", what, 0.8, c.text))
    m = re.search(r"(?:专业|(?i:\bmajor\b))\s*(?:是|为)\s*(?P<m>[^,，的]{1,30}?)(?:专业)?(?:$|,|，)",
                  c.bare if c.subject == "my" else p) or \
        re.search(r"(?:^|是)学\s*(?P<m>[^,，]{1,10}?)的$", p) or re.search(r"研究方向(?:是|为)\s*(?P<m>[^,，]{1,16})", p) or (
        re.match(r"^方向(?:是|为)\s*(?P<m>[^,，]{1,16})", p or c.bare) if re.search(r"读|研究生|博士|硕士|学生", c.sentence)
        else None)
    if m and not negated(p[: m.start()] if p else ""):
        out.append(fact("major", m.group("m").strip(), 0.85, c.text))
    m = re.match(r"^研究\s*(?P<m>[A-Za-z][\w .-]{0,30}|[" + CJK + r"]{2,6})$", p)
    if m and any("读" in x.text or "student" in x.text.lower() for x in cs if x.sentence == c.sentence):
        out.append(fact("major", m.group("m").strip(), 0.7, c.text))
    m = re.search(r"(?:毕业于|毕业自)\s*(?P<s>[^,，]{2,16})", p)
    if m and _SCHOOL.match(m.group("s").strip()):
        out.append(fact("school", m.group("s").strip(), 0.8, c.text))
    m = re.match(r"^是\s*(?P<s>[^,，的]{2,16}?)的\s*(?P<j>学生|研究生|博士生|本科生|大学生|硕士生|博士|老师|教授|"
                 r"(?i:undergrad(?:uate)?|(?:phd |grad |graduate |master'?s )?student|postdoc))", p)
    if m and not negated(p[: m.start()]):
        school = m.group("s").strip()
        major = re.match(r"^(?P<m>.+?)专业$", school)
        if major:
            out.append(fact("major", major.group("m"), 0.85, c.text))
        elif _SCHOOL.match(school):
            out.append(fact("school", school, 0.85, c.text))
        if major or _SCHOOL.match(school):
            out.append(fact("occupation", m.group("j"), 0.85, c.text))
    m = re.match(r"^(?:今年|现在)?(?:在?读|在念|上|是)?(?P<g>大[一二三四]|研[一二三]|博[一二三四五]|高[一二三]|初[一二三])"
                 r"(?:的|了|学生)?(?:$|\s*(?:在|正在))", p)
    if m:  # "我今年大四", "读大二", "是研二的"
        g = m.group("g")
        out.append(fact("occupation", "研究生" if g[0] == "研" else "博士生" if g[0] == "博" else "学生", 0.7, c.text))
    m = re.match(r"^(?:学的|读的|念的)(?:专业)?是\s*(?P<m>[^,，;]{1,12})$", p)
    if m and re.search(r"读|念|大[一二三四]|学生|研究生|博士|硕士|本科", c.sentence):  # "…读大二，学的是临床医学"
        out.append(fact("major", m.group("m"), 0.8, c.text))
    return out


def _as_job(cs: Sequence[Clause], i: int) -> list[Found]:
    """"作为一名护士，我经常上夜班": the user's job, unless what follows only asks ("…，我该学什么？")."""
    m = re.match(rf"^作为\s*{_QUANT}\s*{_JOB}$", cs[i].bare)
    nxt = cs[i + 1] if i + 1 < len(cs) and cs[i + 1].sentence == cs[i].sentence else None
    if m and cs[i].subject == "self" and nxt is not None and nxt.pred and allowed(nxt, CURRENT):
        return [fact("occupation", _job(m.group("job")), 0.75, cs[i].text)]
    return []


def zh_work(cs: Sequence[Clause], i: int) -> list[Found]:
    """Every occupation / employer / school / major fact of clause ``i`` (Chinese, mixed)."""
    c = cs[i]
    if not re.search(f"[{CJK}]", c.text) or not allowed(c, CURRENT) or _FOR_NOW.search(c.text):
        return []
    if c.bare.startswith("作为"):
        return _as_job(cs, i)
    if c.subject == "my":
        return _occupation(c, "") + _study(cs, i, "")
    if c.subject == "other" and re.match(r"^(?:研究)?方向(?:是|为)", c.bare) and i > 0 and cs[i - 1].subject == "self" \
            and cs[i - 1].sentence == c.sentence:
        return _study(cs, i, c.bare)  # "方向是…": 方 reads as a surname ("方某是…"), but this is the user's field
    p = zh_pred(c)
    if c.subject not in ("self", "with") or not p:
        return []
    return _occupation(c, p) + _employer(c, p) + _study(cs, i, p) + _job_change(c, p)
