"""Chinese rules for who the user is: name, age, birthday, nationality, hometown,
location, time zone, languages. Code-switched clauses work: the value slots take Latin
words too ("住 Singapore", "我 native language 是粤语"). Pure.

Example::

    >>> from hmem.profile._clauses import analyse
    >>> cs = analyse("我叫刘洋，今年26，住在成都")
    >>> [(f.key, f.value) for i in range(len(cs)) for f in zh_identity(cs, i)]
    [('name', '刘洋'), ('age', 26), ('location', '成都')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hmem.profile._clauses import CJK, CURRENT, STAY, TIMELESS, Clause, allowed, negated, opens_sentence
from hmem.profile._en_self import LANG_LIST, TZ, languages_in
from hmem.profile._lex_en import ANIMALS, DEMONYMS, JOBS, NOT_NAMES
from hmem.profile._lex_zh import SURNAMES, ZH_ANIMALS, ZH_CHILD_WORDS, ZH_COUNTRIES, ZH_JOBS
from hmem.profile._values import Found, fact, zh_date, zh_int, zh_is_place, zh_name

__all__ = ["ADV", "zh_identity", "zh_pred"]

#: Adverbs between 我 and the verb ("我现在也住在…").
ADV = re.compile(r"^(?:(?:现在|目前|一直|也|还|就|已经|刚刚|刚|最近|终于|其实|真的|很|非常|特别|超级|超|最|挺|平时|自己|"
                 r"本身|都|主要|一般|确实|本来|基本上|算是|人|这边|这里|一个人|长期|常年|全家)\s*|"
                 r"(?:now|currently|still|also|just|actually)\s+)+", re.IGNORECASE)
_NUM = r"(?P<n>\d{1,3}|[一二两三四五六七八九十]{1,3})"
_COUNTRY = "|".join(sorted(ZH_COUNTRIES, key=len, reverse=True))
_DEMONYM = "(?i:" + "|".join(sorted(DEMONYMS, key=len, reverse=True)) + ")"
_PLACE = rf"(?P<p>[{CJK}]{{2,10}}?|[A-Za-z][A-Za-z .'-]*?[A-Za-z])"
_PLACE_END = r"(?=\s*(?:[了啦呀啊吧哦的]|已经|有|快|好|[一二两三四五六七八九十]|\d|,|，|;|$))"
_NOT_PLACE = ("这里", "那里", "这儿", "那儿", "附近", "家里", "宿舍", "酒店", "宾馆", "医院", "学校", "公司", "隔壁",
              "旁边", "对面", "楼上", "楼下", "哪", "一起", "一块", "外面", "家", "园区", "市区", "市中心", "郊区", "城里",
              "乡下", "老家")  # fmt: skip
#: "学校旁边", "公司附近": a spot relative to something, not a place name.
_SPOT = re.compile(r"附近|旁边|对面|隔壁|楼上|楼下|这里|那里|这儿|那儿|宿舍|酒店|宾馆|医院|学校|公司|家里")
_NOT_NAMES = ("外卖", "快递", "出租车", "滴滴", "车", "醒", "人", "好", "了", "的", "你", "他", "她", "我", "它")
_ENTITY_WORDS = re.compile("|".join(sorted(ZH_ANIMALS + ZH_CHILD_WORDS, key=len, reverse=True))
                           + r"|(?i:\b(?:" + "|".join(sorted(ANIMALS, key=len, reverse=True)) + r")\b)")


def zh_pred(c: Clause) -> str:
    """What a Chinese clause says of the user, adverbs dropped ("" if not about the user)."""
    pred = re.sub(r"^am\s+(?=[从在是住来])", "", c.pred.strip())  # "I'm 从 Harbin 来的"
    return ADV.sub("", pred) if c.subject in ("self", "with", "we") else ""


def _name(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], zh_pred(cs[i])
    if not allowed(c, TIMELESS):
        return []
    prev = cs[i - 1] if i > 0 and cs[i - 1].sentence == c.sentence else None
    about_entity = prev is not None and _ENTITY_WORDS.search(prev.text) is not None
    # "我叫X" names the user; a bare "叫X" only right after "我姓王" (else it may name a baby or pet)
    said_by_me = c.pred != c.bare or (prev is not None and re.match(r"^我姓", prev.bare) is not None)
    for pattern, text, confidence, explicit in (
        (r"^(?:我的)?(?:名字|英文名字?|中文名字?|大名)(?:是|叫)\s*(?P<v>.+)$", c.bare, 0.95, c.bare.startswith("我的")),
        (r"^叫我\s*(?P<v>.+)$", c.bare, 0.85, True),
        (r"^叫(?:做)?\s*(?P<v>.+)$", p, 0.9, said_by_me),
        (rf"^是\s*(?P<v>小?[{SURNAMES}][{CJK}]{{1,2}}|[A-Z][a-z]+(?: [A-Z][a-z]+)?)$", p, 0.7,
         opens_sentence(cs, i) and c.pred != c.bare),
    ):
        if pattern.startswith(("^是", "^叫(")) and not explicit:
            continue
        m = re.match(pattern, text)
        if not m or (about_entity and not explicit) or (c.subject != "self" and not re.match("我的(?:名字|英文名|中文名)",
                                                                                             c.bare)):
            continue
        name = zh_name(m.group("v"))
        if name and any(name.endswith(j) for j in ZH_JOBS):
            continue  # "我是李老师": how the user is addressed, not a name to store as such
        if name and ((name.endswith("人") and zh_is_place(name[:-1])) or {*name.lower().split()} & (NOT_NAMES | JOBS)):
            continue  # "我是韩国人" (韩 is a surname too), "我是 Korean", "我是 Engineer"
        if name and (re.match(r"[不没]", name) or (pattern.startswith("^是") and re.search("[人座迷粉控党族者狗猫]$", name))):
            continue  # "我是马来人", "我是金牛座", "我是宋朝迷", "我叫不出名字": a kind of person, not a name
        if name and not name.startswith(_NOT_NAMES) and name not in _NOT_NAMES:
            return [fact("name", name, confidence, c.text)]
    return []


#: "我妈老说我28了还不结婚": a relative's words give the user's age as it is now.
_SAID_AGE = re.compile(rf"(?:说|念叨|唠叨|嫌|嫌弃|觉得)\s*我\s*(?:都|已经|也)?\s*{_NUM}\s*(?:岁)?\s*(?:了|的人了)")


def _age(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], zh_pred(cs[i])
    said = _SAID_AGE.search(c.text)
    if said and allowed(c, CURRENT) and (n := zh_int(said.group("n"))) is not None and 10 <= n <= 120:
        return [fact("age", n, 0.75, c.text)]
    if c.subject != "self" or not allowed(c, frozenset({"question", "hypothetical", "other"})):
        return []
    for pattern in (rf"^(?:今年|现在)?\s*(?:已经|刚满|刚好|正好|刚|满|已|才)?\s*{_NUM}\s*(?:岁|周岁)(?:了|啦)?(?:$|,|，|;)",
                    rf"^(?:今年|现在)\s*(?:已经|刚满|刚好|正好|刚|满|已|才)?\s*{_NUM}(?:了|啦)?$",
                    rf"^(?:已经|刚满|满)\s*{_NUM}(?:岁)?(?:了|啦)?$",
                    r"^(?P<n>\d{2})\s*(?:岁)?(?:了|啦)(?:$|(?=还|都|也|却))",
                    rf"^(?:上个?月|上周|前几天|前天|昨天|今天)?\s*(?:刚|才)?\s*过完?了?\s*{_NUM}\s*(?:岁|周岁)的?生日"):
        m = re.match(pattern, p)
        if m and not negated(p[: m.start("n")]):
            n = zh_int(m.group("n"))
            if n is not None and 1 <= n <= 120:
                return [fact("age", n, 0.85, c.text)]
    return []


def _birthday(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], zh_pred(cs[i])
    if not allowed(c, TIMELESS):
        return []
    m = re.match(r"^(?:我的)?生日(?:是|在|:)?\s*(?P<v>.+)$", c.bare if c.bare.startswith("我的") else p)
    if m is None and p:
        m = re.match(r"^(?:是)?\s*(?P<v>.+?)\s*(?:出生|生)的?$", p) or re.match(r"^(?:出生于|生于)\s*(?P<v>.+)$", p) \
            or re.match(r"^(?P<v>.+?)\s*(?:过)?生日$", p)
    if m and (date := zh_date(m.group("v"))):
        return [fact("birthday", date, 0.9, c.text)]
    return []


def _origin(cs: Sequence[Clause], i: int) -> list[Found]:
    """Nationality (我是中国人, 新加坡籍, 国籍是…) and hometown (我是四川人, 来自台湾, 在新疆长大)."""
    c, p = cs[i], zh_pred(cs[i])
    if not allowed(c, TIMELESS):
        return []
    mine = re.match(rf"^(?:我的)?(?:老家|家乡|祖籍|籍贯)(?:是|在)?\s*{_PLACE}{_PLACE_END}", c.bare)
    if mine and c.subject == "my" and not mine.group("p").startswith(("那", "这", "哪")):
        return [fact("hometown", mine.group("p"), 0.9, c.text)]
    if c.subject not in ("self", "with") or not p:
        return []
    out: list[Found] = []
    m = re.search(rf"^是\s*(?P<c>{_COUNTRY})\s*(?:人|籍|公民|华人|华裔)|^(?P<e>{_COUNTRY})\s*(?:人|籍|公民|华人|华裔)\s*"
                  rf"(?:一枚|啊|哦|呀)?$|国籍(?:是|为)?\s*(?P<d>{_COUNTRY})|^是?\s*(?P<f>{_COUNTRY})\s*国籍(?:$|,|，)", p)  # a bare "中国人一般…" speaks of people
    if m and not negated(p[: m.start()]):
        out.append(fact("nationality", m.group("c") or m.group("e") or m.group("d") or m.group("f"), 0.85, c.text))
    m = re.match(rf"^是\s*(?P<d>{_DEMONYM})(?![A-Za-z])", p)  # "我是 Malaysian Chinese"
    if m and not out:
        out.append(fact("nationality", DEMONYMS[m.group("d").lower()], 0.8, c.text))
    m = re.match(rf"^(?:是\s*)?(?:土生土长的\s*)?(?P<p>[{CJK}]{{2,6}}?)\s*(?:人|土著)(?:$|,|，|啊|呀|哦)", p)
    if m and not out and not negated(p[: m.start()]) and zh_is_place(m.group("p")) and m.group("p") not in ZH_COUNTRIES:
        out.append(fact("hometown", m.group("p"), 0.8, c.text))
        if "土著" in m.group(0) or "土生土长" in m.group(0):  # a local: born there and still there
            out.append(fact("location", m.group("p"), 0.8, c.text))
    for pattern, confidence in ((rf"^(?:来自|是从)\s*{_PLACE}\s*(?:(?:搬)?过?来的)?{_PLACE_END}", 0.85),
                                (rf"^从\s*{_PLACE}\s*(?:搬)?过?来的", 0.8),
                                (rf"(?:^是?|从小|小时候)在\s*{_PLACE}\s*长大", 0.85),
                                (rf"^是\s*{_PLACE}(?:人)?的$", 0.75),
                                (rf"^(?:出生在|生在|出生于|生于)\s*{_PLACE}{_PLACE_END}", 0.85),
                                (rf"^是?在\s*{_PLACE}\s*出生的?(?=$|,|，|;)", 0.85),
                                (rf"^(?:的)?(?:老家|家乡|祖籍|籍贯)(?:是|在)?\s*{_PLACE}{_PLACE_END}", 0.9),
                                (rf"^土生土长的\s*{_PLACE}人", 0.85)):
        m = re.search(pattern, p)
        if not m or negated(p[: m.start("p")]) or m.group("p") in _NOT_PLACE or m.group("p").startswith(("那", "这", "哪")):
            continue
        cjk = re.match(f"[{CJK}]", m.group("p")) is not None
        if (pattern.startswith(("^是", "^是?")) or (cjk and (pattern.startswith(("^(?:来自", "^从")) or "长大" in pattern))) \
                and not zh_is_place(m.group("p")):
            continue  # "我是东北的" names a place; "我是被朋友推荐来的", "在草原长大", "是从知乎过来的" do not
        out.append(fact("hometown", m.group("p").strip(), confidence, c.text))
    m = re.search(rf"(?i:hometown|home town)\s*(?:是|在)\s*{_PLACE}{_PLACE_END}", p)
    if m:
        out.append(fact("hometown", m.group("p").strip(), 0.9, c.text))
    return out


def _location(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], zh_pred(cs[i])
    if c.subject not in ("self", "with", "we") or not allowed(c, STAY) or not p or re.search(r"在.*的$", p) \
            or re.match(r"^在[^,，]{1,12}?(?:工作|上班|生活|住|读书|上学|打工)的(?!$)", p):
        return []  # "我大学在武汉读的": 是…的 tells a past event; "在上海工作的人…" describes people
    found: list[tuple[float, str]] = []
    for pattern, confidence, checked in (
        (rf"^(?:住在|住|生活在|定居在|定居于|定居|落户在?|安家在?|安顿在|落脚(?:在|于)?|扎根(?:在|于)?|常驻|驻)\s*{_PLACE}{_PLACE_END}",
         0.9, False),
        (rf"(?:搬到|搬去|搬来|搬家到|移居到?|留在|(?i:move[sd]?|moving|relocated?)\s*(?:到|去|to))(?:了)?\s*{_PLACE}{_PLACE_END}",
         0.85, False),
        # "去年从北京搬回了长沙", "搬回老家衡阳了": back home is where the user lives now
        (rf"搬回(?:了)?\s*(?:老家|家乡)?\s*{_PLACE}{_PLACE_END}", 0.85, True),
        # "我们搬进了浦东的新家", "调到上海分公司了": a new home, or a transfer to an office in a city
        (rf"搬进(?:了)?\s*{_PLACE}\s*的?\s*(?:新家|新居|新房子?|新公寓|房子|公寓)", 0.85, True),
        (rf"(?:调到|调去|派驻到?|外派到?)(?:了)?\s*{_PLACE}\s*(?=分公司|总部|分部|办公室|团队|工作|上班|了|啦|,|，|;|$)", 0.8, True),
        (rf"(?:移民到|移民去)(?:了)?\s*{_PLACE}{_PLACE_END}", 0.8, False),
        (rf"^(?:base|坐标|现居|人在)\s*(?:在\s*)?{_PLACE}{_PLACE_END}", 0.85, False),
        (rf"^在\s*{_PLACE}\s*(?:工作|上班|生活|打工|创业|定居|安家|读书|上学)?(?:了|呢)?$", 0.8, True),
        (rf"^在\s*{_PLACE}\s*(?:定居|生活|安家|安顿|落脚|扎根|住)(?!过)", 0.85, True),
        (rf"^(?i:live|living)\s*(?:在|in)\s*{_PLACE}{_PLACE_END}", 0.85, False),
        # "房子我已经在南山区租好了", "在嘉定买了一套房": a home rented or bought there
        (rf"(?:^|房子?\s*我?\s*(?:已经|刚刚?|也)?\s*)在\s*{_PLACE}\s*(?:租|买)(?:好|下|到)?了?\s*(?:一?[套间]\s*)?(?:房子?|公寓|[一两三]居室|$)",
         0.8, True),
        # "我们租了 Bedok 的一个三房 HDB": the home's place before 的
        (rf"(?:租了|买了|租下了?|买下了?)\s*{_PLACE}\s*的\s*(?:一[套间个])?\s*(?:[一两三四五]房|[一两三四]居室)?\s*"
         rf"(?:房子?|公寓|(?i:HDB|condo|flat|apartment))", 0.8, False),
    ):
        m = re.search(pattern, p, re.IGNORECASE)
        if not m or negated(p[: m.start("p")]):
            continue
        place = m.group("p").strip()
        if place in _NOT_PLACE or place.startswith(("一", "这", "那", "哪", "公司", "家", "院", "宿", "的")) or _SPOT.search(place) \
                or (place.endswith("家") and not zh_is_place(place)) \
                or re.match(r"[二两三四五六七八九十几半\d]", place) \
                or TZ.fullmatch(place) \
                or (checked and not zh_is_place(place)):
            continue
        found.append((confidence, place))
    # "在X的时候" is a time, "我在上海的朋友" someone else: neither says where the user is
    m = re.match(r"^在\s*(?P<org>[^,，]{2,20}?)\s*(?:一家|一所|一个|的(?!时候|那|朋友|同事|同学|家人|亲戚|室友)|做|当|干|开|上班|工作)", p)
    if m and not found:
        head = re.match(rf"(?P<p>[{CJK}]{{2,6}}?)(?=一家|一所|一个|的|[^{CJK}]|$)", m.group("org"))
        tail = re.search(rf"(?:^|\s)(?P<p>[{CJK}]{{2,6}})$", m.group("org"))
        for cand in (head, tail):
            if cand and zh_is_place(cand.group("p")):
                found.append((0.75, cand.group("p")))
                break
        if not found and zh_is_place(m.group("org").strip()):
            found.append((0.75, m.group("org").strip()))
    return [fact("location", place, conf, c.text) for conf, place in sorted(found, key=lambda x: -x[0])[:1]]


def _timezone(cs: Sequence[Clause], i: int) -> list[Found]:
    c = cs[i]
    if c.subject not in ("self", "with") or not allowed(c, TIMELESS) or not re.search(f"[{CJK}]", c.text):
        return []
    m = TZ.search(zh_pred(c))
    if m and not negated(zh_pred(c)[: m.start()]):
        return [fact("timezone", m.group(0), 0.85, c.text)]
    return []


_LANG_GOOD = r"(?:也|还|都|只)?\s*(?:还行|还可以|可以|不错|ok|OK|没问题|很好|流利|很溜|说得\S*|讲得\S*|会一点|会说|会讲|一般般?|凑合|马马虎虎)"


def _languages(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], zh_pred(cs[i])
    if not allowed(c, CURRENT):
        return []
    text = c.bare if c.subject == "my" else p
    m = re.search(r"(?:母语|native language|mother tongue|first language)\s*(?:是|:)\s*(?P<v>.+)$", text, re.I)
    if m is None and c.subject == "self":
        m = re.match(r"^(?:会说|会讲|能说|能讲|会|能|说|讲)(?:一点点|一点|一些|流利的|一口流利的|点)?\s*(?P<v>.+)$", p) or \
            re.match(r"^(?:在家|平时|在公司|上班)?\s*(?:跟|和|对)\s*[^,，说讲]{1,8}?\s*(?:都|也|一般|主要|只)?\s*(?:说|讲)\s*(?P<v>.+)$", p)
        if m is None:
            lang = re.match(rf"^(?P<v>.+?)\s*{_LANG_GOOD}", p)
            whole = lang and LANG_LIST.fullmatch(lang.group("v").strip())
            m = lang if whole and (c.pred != c.bare or i > 0) else None  # "我英语还行", "…，日语也还行"
    if m and not negated(text[: text.find(m.group("v"))]):
        told = re.match(r"(?:在家|平时|在公司|上班)?\s*(?:跟|和|对)", m.group(0))  # "跟他说了实话": only known names
        langs = languages_in(m.group("v"), loose=not m.group(0).startswith(m.group("v")) and not told)
        if langs:
            return [fact("languages", langs, 0.85, c.text)]
    return []


def zh_identity(cs: Sequence[Clause], i: int) -> list[Found]:
    """Every identity fact of clause ``i`` of ``cs`` (Chinese and code-switched)."""
    if not re.search(f"[{CJK}]", cs[i].text):
        return []
    out: list[Found] = []
    for rule in (_name, _age, _birthday, _origin, _location, _timezone, _languages):
        out.extend(rule(cs, i))
    return out
