"""Chinese rules for the user's people, animals and tastes: partner, children, family,
pets, diet, allergies, likes, dislikes, and the take-backs (不再喜欢, 又开始吃肉) and
"忘记我的X". Code-switched words fill the slots ("我 girlfriend 叫 Mia", "我不吃 beef").
Pure.

Example::

    >>> from hmem.profile._clauses import analyse
    >>> cs = analyse("我们家有两只猫，一只叫可乐一只叫雪碧")
    >>> [(f.key, f.value) for i in range(len(cs)) for f in zh_life(cs, i)]
    [('pets', ('猫: 可乐', '猫: 雪碧'))]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hmem.errors import InvalidInput
from hmem.profile._clauses import CJK, CURRENT, STAY, Clause, allowed, negated
from hmem.profile._lex_en import ANIMALS, CHILD_WORDS, DIET_LABELS, FAMILY_WORDS, NOT_NAMES, PARTNER_WORDS
from hmem.profile._lex_zh import ZH_ANIMALS, ZH_CHILD_WORDS, ZH_DIET_LABELS, ZH_FAMILY_WORDS, ZH_PARTNER_WORDS
from hmem.profile._values import Found, entity, fact, items, zh_name
from hmem.profile._zh_self import zh_pred
from hmem.profile.schema import canonical_key

__all__ = ["zh_life"]


def _alt(words: object) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))  # type: ignore[call-overload]


#: English family words in a Chinese clause ("我有个 younger brother 叫 Kevin"); cousins, aunts, uncles are not family here.
_EN_FAMILY = FAMILY_WORDS - {"aunt", "uncle", "cousin"}
_EN_KINDS = rf"(?i:{_alt(PARTNER_WORDS | CHILD_WORDS | ANIMALS | _EN_FAMILY)})\b"
_KINDS = rf"(?:{_alt(ZH_PARTNER_WORDS + ZH_CHILD_WORDS + ZH_FAMILY_WORDS + ZH_ANIMALS)}|{_EN_KINDS})"
_COUNT = r"(?:一|两|二|三|四|几|\d+)?\s*(?:只|条|个|头|匹|位|对)?"
#: "我女儿叫朵朵", "我老公 Mark 是英国人" (a Latin name right after the kind needs no 叫).
_NAMED = (r"(?:\s*(?:,|，)?\s*(?:叫做|叫|名叫|名字叫|名字是)\s*|\s*(?=[A-Z][a-z])|\s*是\s*(?=[A-Z][a-z]+(?:$|[,，;\s])))"
          r"(?P<name>[A-Za-z][A-Za-z'-]*(?![A-Za-z'-])|[" + CJK + r"·]{1,4}?(?=$|,|，|\s|[了啊呀吧哦的是，]))")
_ADJ = r"(?:双胞胎|亲|大|小|二|老|一个|(?i:(?:younger|older|elder|little|big|baby|twin)\s+))?"


def _key(kind: str) -> str | None:
    low = kind.lower()
    if kind in ZH_PARTNER_WORDS or low in PARTNER_WORDS:
        return "partner"
    if kind in ZH_CHILD_WORDS or low in CHILD_WORDS:
        return "children"
    if kind in ZH_FAMILY_WORDS or low in _EN_FAMILY:
        return "family"
    return "pets" if kind in ZH_ANIMALS or low in ANIMALS else None


def _kind(kind: str) -> str:
    return {"boy": "son", "girl": "daughter", "kids": "child", "kid": "child", "children": "child", "男孩": "儿子",
            "女孩": "女儿", "大女儿": "女儿", "小女儿": "女儿", "大儿子": "儿子", "小儿子": "儿子"}.get(kind.lower(), kind)


def _one(key: str, kind: str, name: str | None, c: Clause, conf: float) -> Found | None:
    if key == "family" and not name and conf < 0.85:
        return None  # a bare mention ("我妈是上海人") adds no family member
    value = entity(_kind(kind), name)
    return fact(key, value, conf, c.text)


#: "我和女朋友分手了", "我家狗去年走了": the relation or the animal is gone.
_OVER = re.compile(r"分手|离婚|离了婚|去世|过世|死了|不在了|走丢|送人了|[年月天]走了")


def _people(cs: Sequence[Clause], i: int) -> list[Found]:
    c = cs[i]
    if not allowed(c, frozenset({"question", "other"})):
        return []
    out: list[Found] = []
    listed = None  # "我儿子今年八岁，女儿五岁": the second relation is the user's too
    if i > 0 and cs[i - 1].sentence == c.sentence and \
            re.search(rf"我(?:的|家的?|(?:也|还)?有\s*{_COUNT})?\s*(?:{_KINDS})", cs[i - 1].text):
        listed = re.match(rf"^(?:还有|也有|有)?\s*{_COUNT}\s*{_ADJ}(?P<kind>{_KINDS})(?:{_NAMED})?", c.bare)
    for m in [*re.finditer(rf"(?<![他她你])我(?:和|跟|与)?(?:的|家的?|们家的?|养的)?\s*{_ADJ}(?P<kind>{_KINDS})(?:{_NAMED})?",
                           c.text), *([listed] if listed else [])]:
        key = _key(m.group("kind"))
        if key is None or _OVER.search(c.sentence):
            continue
        name = m.group("name")
        name = name if name and (zh_name(name) or re.match(r"[A-Z]", name)) and name.lower() not in NOT_NAMES else None
        if name is None and key in ("pets", "children"):  # "我家狗狗是只边牧，叫Lucky": the name in the next clause
            following = cs[i + 1] if i + 1 < len(cs) and cs[i + 1].sentence == c.sentence else None
            later = re.match(r"^(?:名字)?(?:叫|名叫|叫做)\s*(?P<n>[A-Za-z][A-Za-z'-]*|[" + CJK + r"]{1,4})(?=$|[了啊呀吧哦])",
                             following.bare) if following else None
            name = later.group("n") if later else None
        has = m is listed and re.match(r"(?:还|也)?有", m.group(0)) is not None  # "我有个哥哥，还有个妹妹"
        found = _one(key, m.group("kind"), name, c, 0.85 if has else 0.8)
        if found:
            out.append(found)
    p = zh_pred(c)
    named_first = re.search(rf"(?:^|里|也|还)(?:有|养了|养着|养)\s*{_COUNT}\s*叫\s*(?P<n>[A-Za-z]+|[{CJK}]{{1,4}}?)的\s*"
                            rf"(?P<kind>{_KINDS})", p)  # "我养了一只叫咪咪的猫"
    if named_first and c.subject in ("self", "we", "with") and allowed(c, STAY) and _key(named_first.group("kind")):
        key = _key(named_first.group("kind")) or "pets"
        return [*out, fact(key, entity(_kind(named_first.group("kind")), named_first.group("n")), 0.85, c.text)]
    have = re.search(rf"(?:^|里|也|还|在家)(?P<v>有|养了|养着|养|带着|带|领养了|收养了|多了|添了|have|got|adopted)\s*{_COUNT}\s*"
                     rf"(?:[一二两三四五六七八九十\d]{{1,2}}岁半?的)?{_ADJ}(?P<kind>{_KINDS})", p)  # "有个三岁的女儿"
    if have and c.subject in ("self", "we", "with") and allowed(c, STAY) and not negated(p[: have.start("v")]):
        key = _key(have.group("kind"))
        if key and not (have.group("v").startswith("带") and key != "children"):
            names = re.findall(rf"(?:^\s*|一|另一|大|小)(?:只|个|条|位)?(?:{_KINDS})?(?:名字)?(?:叫|名叫)\s*"
                               rf"([A-Za-z]+|[{CJK}]{{1,4}}?)(?=$|[一另,，了啊呀]|\s)", p[have.end():])
            # the name may follow in the next sentence too: "我们家多了一只猫！…，取名叫年糕"
            ends_sentence = i + 1 < len(cs) and cs[i + 1].sentence != c.sentence
            nxt = [x for x in cs[i + 1: i + 3] if x.sentence == c.sentence or ends_sentence]
            for x in nxt:
                names += re.findall(rf"(?:^|一|另一|大|小)(?:只|个|条|位)?(?:{_KINDS})?(?:名字|取名|起名)?叫\s*(?:它|他|她)?\s*([A-Za-z]+|"
                                    rf"[{CJK}]{{1,4}}?)(?=$|[一另,，]|\s)", x.bare)
            kind = have.group("kind")
            breeds = [k for x in nxt[:1] for k in re.findall(rf"(?:一|另一)(?:只|条|个)\s*({_KINDS})", x.bare)]
            more = re.findall(rf"^\s*[,，、和跟还有]*\s*(?:一|另一)(?:只|条|个)\s*({_KINDS})|(?<=[,，、和])\s*(?:一|另一)(?:只|条|个)\s*"
                              rf"({_KINDS})|(?<=[{CJK}])(?:另)?一(?:只|条)\s*({_KINDS})", p[have.end():])
            if more and not names:  # "我有一只金毛一只拉布拉多": the kinds are listed after the first
                kinds = [k for g in more for k in g if k]
                single = re.search(r"[一1]\s*(?:只|条|个)\s*\S*$", p[: have.end("kind")]) is not None
                breeds = breeds or [*([kind] if single else []), *kinds]
            values = [entity(_kind(kind), n) for n in names] or [_kind(b) for b in breeds] or [_kind(kind)]
            out.append(fact(key, tuple(values) if key != "partner" else values[0], 0.85, c.text))
    if c.subject == "self" and i > 0 and allowed(c, CURRENT):
        sexes = re.findall(r"(?:一个|一位)\s*(boy|girl|男孩|女孩|儿子|女儿)", p, re.IGNORECASE)
        if sexes and re.search(r"kids|children|孩子|娃", cs[i - 1].text, re.IGNORECASE):
            out.append(fact("children", tuple(_kind(s) for s in sexes), 0.8, c.text))
    if c.subject == "self" and p and allowed(c, CURRENT) and re.match(r"^(?:已经)?(?:结婚了|已婚)$", p):
        out.append(fact("partner", "配偶", 0.75, c.text))
    return out


_LABEL = rf"(?P<l>{_alt(ZH_DIET_LABELS)}|(?i:{_alt(DIET_LABELS)})\b)"
_FOOD = rf"(?P<f>[{CJK}]{{1,6}}?|[A-Za-z][A-Za-z ]{{1,20}}?)(?=$|[了啊呀哈哦的啦,，]|\s*(?:也|和|跟))"
#: "以前不吃香菜" is over ("已经不吃肉了" and "不再吃" are not: they say what holds now).
_WAS = re.compile(r"以前|之前|曾经|原来|过去|从前|小时候|当年|那时候|前几年")
#: "点了份素食披萨", "清真餐厅": the label describes a dish or a place, not the user's diet.
_DISH = re.compile(rf"\s*(?:的)?\s*(?:(?!饮食|主义)[{CJK}]{{0,3}}?)(?:餐厅|餐馆|饭店|馆|店|披萨|汉堡|面|饭|菜|包子|饺子|食品|餐|套餐|料理|蛋糕|面包|外卖|沙拉|"
                   r"火锅|食谱|做法|(?i:restaurant|pizza|burger|menu|recipe|dish|option))")
_NOT_FOOD = ("早饭", "早餐", "午饭", "晚饭", "夜宵", "东西", "饭", "太多", "多少", "什么", "了", "掉", "口", "素", "素食", "素了")
#: "给一个素食者推荐几道菜", "适合吃素的菜": the label names whom a request is for, not the user.
_FOR_WHOM = re.compile(r"(?:给|为|替|帮|适合|推荐|招待|请|陪|照顾)[^,，]{0,6}$")


#: "一点辣都吃不了", "一口肉也不吃", "吃不了辣": refusals whose food is not right after the verb.
_EMPHATIC = (re.compile(rf"(?:一点儿?|一口|半点)\s*(?P<f>[{CJK}]{{1,4}}?)\s*(?:都|也)\s*(?:不吃|吃不了|不能吃|不碰)"),
             re.compile(rf"(?<![能不])吃不了\s*(?![太那这多完])(?P<f>[{CJK}]{{1,4}}?)(?=$|[的了啊呀,，])"))


def _refusals(pred: str) -> list[tuple[str, str, int]]:
    """(verb, food, where) of every "I don't eat X" in ``pred``; the emphatic forms read as 不吃."""
    found = [(m.group("neg"), m.group("f").strip(), m.start())
             for m in re.finditer(rf"(?P<neg>不吃|不喝|不能吃|不碰|忌(?!口))\s*{_FOOD}", pred)]
    found += [("不喝", "酒", m.start()) for m in re.finditer(r"滴酒不沾|烟酒不沾", pred)]
    return found + [("不吃", m.group("f").strip(), m.start()) for rx in _EMPHATIC for m in rx.finditer(pred)]


def _diet_allergy(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], zh_pred(cs[i])
    if c.subject not in ("self", "with") or not p or not allowed(c, frozenset({"question", "hypothetical", "other"})):
        return []
    out: list[Found] = []
    allergic = "过敏" in c.sentence
    m = re.search(_LABEL, p)
    dish = m is not None and ((_DISH.match(p[m.end("l"):]) and not re.search(r"只(?:能)?吃\s*$", p[: m.start("l")]))
                              or re.search(r"(?:点|买|订|叫|吃|开)了\s*(?:一|几|两)?\s*(?:份|碗|个|家|盒|袋)?\s*$",
                                           p[: m.start("l")]))  # "点了一份清真牛肉面"
    if m and allowed(c, CURRENT) and not negated(p[: m.start("l")]) and not dish and not _FOR_WHOM.search(p[: m.start("l")]) \
            and not re.search(r"[他她]", p[: m.start("l")]):  # "跟老公说了他吃素": his diet
        out.append(fact("diet", m.group("l").lower() if m.group("l").isascii() else m.group("l"), 0.85, c.text))
    for neg, food, where in _refusals(p):
        if food in _NOT_FOOD or re.search(r"(?:不是|并非|没有)\s*$", p[:where]) or "temporary" in c.guards \
                or re.search(r"[他她]", p[:where]) \
                or _WAS.search(c.text):
            continue
        if allergic and neg == "不能吃":
            out.append(fact("allergies", food, 0.85, c.text))
        else:
            out.append(fact("diet", f"{neg}{' ' if food.isascii() else ''}{food}", 0.8, c.text))
    for pattern in (r"对\s*(?P<a>[^,，对]{1,16}?)\s*过敏",
                    rf"^(?:有(?![点些]))?\s*(?P<a>[{CJK}]{{1,6}}|[A-Za-z][A-Za-z ]{{1,20}}?)\s*过敏",
                    r"(?P<a>乳糖|麸质|lactose|gluten|果糖)\s*不耐受?"):
        m = re.search(pattern, p)
        if not m or negated(p[: m.start("a")]) or re.search(r"不过敏|没有过敏", p) or re.search(r"[他她]", p[: m.start("a")]):
            continue
        allergens = items(m.group("a").strip())
        if not allergens or any(re.search(r"[吃就都会有点也容易什么任何是]", a) for a in allergens):
            continue
        out.append(fact("allergies", allergens, 0.9, c.text))
        break
    return out


_LIKE = r"(?:喜欢上了|爱上了|喜欢|热爱|喜爱|迷上了|沉迷于?|爱(?![人上死你他她好]))"
_DISLIKE = r"(?:不喜欢|不太喜欢|不爱|讨厌|厌恶|受不了|反感)"


def _items(text: str) -> tuple[str, ...] | None:
    """The items of a taste; a doubled verb is said once ("练练书法" → 练书法, "逛逛街" → 逛街)."""
    return items(re.sub(r"^([练看逛听玩跑聊写画弹唱种拍])\1(?=[" + CJK + "])", r"\1", text.strip()))


def _tastes(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], zh_pred(cs[i])
    if not allowed(c, CURRENT):
        return []
    out: list[Found] = []
    m = re.match(r"^我的?最(?:喜欢|爱)的\s*(?P<k>[" + CJK + r"A-Za-z]{1,6}?)\s*(?:是|:)\s*(?P<v>[^,，]+)", c.bare)
    if m and (found := items(m.group("v"))):
        return [fact("likes", found, 0.8, c.text)]
    m = re.match(r"^(?:我的)?(?:兴趣爱好|爱好|兴趣)(?:就|主要|也)?(?:是|有|:)\s*(?P<v>[^,，;]+)", c.bare if c.subject == "my" else p)
    if m and (found := _items(m.group("v"))):
        return [fact("likes", found, 0.8, c.text)]
    if c.subject not in ("self", "with") or not p:
        return out
    m = re.match(r"^是\s*(?P<v>[^,，;的]{1,12})的\s*(?:粉丝|铁粉|歌迷|影迷|球迷)", p)
    if m and (found := items(m.group("v"))):
        out.append(fact("likes", found, 0.75, c.text))
    for key, verb in (("dislikes", _DISLIKE), ("likes", _LIKE)):
        m = re.match(rf"^{verb}\s*(?P<v>[^,，]+)$", p)
        if not m or negated(p[: m.start("v")] if key == "likes" else ""):
            continue
        if re.search(r"不再|已经不", p):
            break
        found = _items(re.sub(r"\s*的(?:味道|气味|口感|声音|感觉)$", "", m.group("v")))
        if found:
            out.append(fact(key, found, 0.75, c.text))
        break
    m = re.match(r"^(?:尤其是|特别是|especially)\s*(?P<v>[^,，]+)$", p)
    if m and i > 0 and re.search(_LIKE, cs[i - 1].text) and (found := items(m.group("v"))):
        out.append(fact("likes", found, 0.7, c.text))
    return out


def _removals(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], zh_pred(cs[i])
    if c.subject not in ("self", "with") or not p or not allowed(c, frozenset({"question", "hypothetical", "other"})):
        return []
    out: list[Found] = []
    m = re.search(r"(?:不再|已经不)(?:喜欢|爱)\s*(?P<v>[^,，]+?)(?:了)?$", p)
    if m and (found := items(m.group("v"))):
        out.append(fact("likes", found, 0.8, c.text, op="remove"))
    m = re.search(rf"(?:不再|已经不是|不是)\s*{_LABEL}(?:了|啦)", p)
    if m or re.search(r"(?:又开始|重新开始|开始)吃肉", p):
        label = m.group("l") if m else ""
        out.append(fact("diet", (label,) if label else ("吃素", "素食者", "vegetarian", "vegan"), 0.8, c.text, op="remove"))
    m = re.search(r"(?:不再|已经不)对\s*(?P<a>[^,，]{1,10}?)\s*过敏", p)
    if m and (found := items(m.group("a"))):
        out.append(fact("allergies", found, 0.8, c.text, op="remove"))
    return out


_FORGET_WORDS = {"地址": "location", "住址": "location", "住处": "location", "工作": "occupation", "爱好": "likes"}


def _forget(cs: Sequence[Clause], i: int) -> list[Found]:
    c = cs[i]
    m = re.match(rf"^(?:请|麻烦你|麻烦)?(?:你)?(?:忘记|忘掉|删除|删掉)我的(?P<v>[{CJK}]{{1,8}}?)(?:信息|吧|了)?$", c.bare)
    if not m or "question" in c.guards:
        return []
    try:
        key = _FORGET_WORDS.get(m.group("v")) or canonical_key(m.group("v"))
    except InvalidInput:
        return []
    return [Found(key, None, 0.9, "delete", c.text)]


def zh_life(cs: Sequence[Clause], i: int) -> list[Found]:
    """Every people / animal / taste fact (and take-back) of clause ``i`` (Chinese, mixed)."""
    if not re.search(f"[{CJK}]", cs[i].text):
        return []
    out: list[Found] = []
    for rule in (_people, _diet_allergy, _tastes, _removals, _forget):
        out.extend(rule(cs, i))
    return out
