"""The offline profile rules: English and Chinese first-person statements → key/value.

Precise rather than broad. A rule fires only on a clause that *starts* with the
speaker (``I``, ``my``, ``我``, ``我的``; a few discourse words like "actually" /
"其实" may come first), followed by the rule's verb with nothing but harmless adverbs
in between. So third persons ("my sister lives in Rome", "我妹妹住在罗马") and
negations ("I don't live in Paris", "我不住在北京") never reach a verb. A whole
sentence is skipped when it is a question, a hypothetical, a wish / plan, or
reported speech. What the rules deliberately miss is listed in ``docs/profile.md``.

Likes/dislikes take noun phrases and gerunds ("I love hiking"); "I like to <verb>"
counts only for a clear hobby verb and is stored as the activity ("I like to swim" →
``swimming``), so "I like to look out" or "I hate to bother you" change nothing.

Pure: text in, :class:`Found` tuples out. :mod:`hmem.extract.profile` wraps them.

Example::

    >>> [(f.key, f.value) for f in find_profile_facts("Actually, I moved to Paris last month.")]
    [('location', 'Paris')]
    >>> find_profile_facts("If I moved to Paris, I would learn French.")
    []
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, Literal, NamedTuple

from hmem.core.profile import normalize_key
from hmem.errors import InvalidInput
from hmem.types import ProfileValue

__all__ = ["Found", "find_profile_facts", "split_sentences"]


class Found(NamedTuple):
    """One rule match. ``merge``: add the list items to the key's current list."""

    key: str
    value: ProfileValue | None
    confidence: float
    operation: Literal["set", "delete"]
    evidence: str
    merge: bool = False


# -- sentence / clause splitting and sentence-level blockers ------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？?!])|\n+")
_CLAUSE_SEP = re.compile(  # a greeting keeps its comma: "Hi, I'm Tom" stays one clause
    r"\s*[;:；：]\s*|\s*，\s*|(?<!Hi)(?<!hi)(?<!Hey)(?<!hey)(?<!Hello)(?<!hello)"
    # an English comma ends a clause only before a new subject ("…, I work at X"), so lists
    # ("I enjoy reading, cooking and running") stay whole
    r"\s*,\s*(?=(?:but|and (?:I|my)|so|also|actually|I|I'm|I've|my|My)\b)|\s+(?:but|and then)\s+|\s+and\s+(?=(?:I|my|I'm|I've)\b)|但是|不过|可是|而且|并且|所以"
)
_EN_QUESTION = re.compile(
    r"^\W*(?:do|does|did|can|could|would|should|shall|will|is|are|am|was|were|have|has|what|where|who|whom|whose|"
    r"which|when|why|how|may|might)\b",
    re.IGNORECASE,
)
_EN_BLOCK = re.compile(
    r"\b(?:if|suppose|supposing|imagine|would|wish|hope|hoping|might|maybe|perhaps|unless|whether|pretend|"
    r"planning|plan to|thinking (?:of|about)|going to|gonna|will|want to|wanna|someday|one day|dream|"
    r"said|says|told|tells|thinks|claims|believes|according to)\b|'ll\b|'d\b",
    re.IGNORECASE,
)
_ZH_BLOCK = re.compile(
    r"如果|假如|要是|假设|假若|倘若|万一|的话|想象|也许|或许|可能|打算|计划|准备|将来|以后|希望|梦想|想要|"
    r"吗|呢|么|什么|哪|谁|怎么|为什么|多少|是否|是不是|有没有|会不会|要不要|(.)不\1|"
    r"听说|据说|告诉|说[，,:：]|认为|以为"
)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (terminal punctuation kept, so questions stay visible)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _blocked(sentence: str) -> bool:
    """Questions, hypotheticals, wishes/plans and reported speech never change a profile."""
    stripped = sentence.rstrip()
    if stripped.endswith(("?", "？")) or _EN_QUESTION.match(stripped):
        return True
    return bool(_EN_BLOCK.search(sentence) or _ZH_BLOCK.search(sentence))


# -- shared value pieces -------------------------------------------------------------------

_EN_LEAD = (
    r"^(?:(?:well|so|and|but|also|actually|oh|btw|by the way|anyway|now|ok|okay|yes|yeah|hi|hello|hey|fyi)[,!]?\s+)*"
)
_EN_ADV = (
    r"(?:(?:now|currently|still|also|actually|just|recently|really|finally|already|even|totally|absolutely|truly)\s+)*"
)
_PN = r"(?P<v>(?-i:[A-Z][\w'’&.-]*)(?:\s+(?:(?:of|de|del|da|la|le|am|upon|on|the)\s+)?(?-i:[A-Z][\w'’&.-]*)){0,4})"
_REST = r"(?P<rest>.*)$"

_ZH_LEAD = r"^(?:其实|对了|另外|顺便说一下|顺便说|嗯|哦|噢|好吧|现在|最近|目前|上个月|上周|去年|今年)?"
_ZH_ADV = (
    r"(?:现在|目前|一直|也|还|就|已经|刚刚|刚|最近|终于|其实|真的|很|非常|特别|超级|超|最|挺|上个月|上周|去年|今年)*"
)
_CJK = r"\u4e00-\u9fff"

_JOBS_EN = (
    "engineer|developer|programmer|teacher|professor|nurse|doctor|physician|surgeon|dentist|lawyer|attorney|"
    "accountant|designer|architect|scientist|researcher|student|writer|journalist|editor|chef|cook|pilot|"
    "pharmacist|therapist|consultant|analyst|manager|librarian|electrician|plumber|carpenter|mechanic|"
    "musician|artist|photographer|translator|firefighter|farmer|veterinarian|vet|paramedic|economist|"
    "entrepreneur|officer|technician|tutor|barista"
)
_JOBS_ZH = (
    "工程师|医生|大夫|老师|教师|教授|护士|律师|会计|设计师|建筑师|程序员|学生|研究生|博士生|厨师|记者|编辑|作家|"
    "研究员|科学家|经理|司机|警察|分析师|顾问|销售|演员|画家|翻译|药剂师|飞行员|产品经理|公务员|农民|摄影师|咨询师"
)
_ANIMALS_EN = (
    "dog|cat|puppy|kitten|hamster|rabbit|bunny|parrot|budgie|goldfish|fish|turtle|tortoise|guinea pig|"
    "horse|bird|snake|lizard|ferret|gecko|chinchilla"
)
_ANIMALS_ZH = "小狗|小猫|狗|猫|兔子|仓鼠|鹦鹉|金鱼|乌龟|鸟|马|蛇|蜥蜴|龙猫"
_NOT_PLACES_ZH = ("这里", "那里", "这儿", "那儿", "附近", "家里", "宿舍", "酒店", "宾馆", "医院", "学校", "公司", "隔壁",
                  "旁边", "对面", "楼上", "楼下")  # fmt: skip
_PRONOUN_OBJ = re.compile(
    r"^(?:it|that|this|these|those|you|him|her|them|me|us|my|your|his|their|what|how|when|where|which|who|"
    r"yours|mine|ours|theirs|hers|its|"
    r"the (?:idea|way|fact)|to (?:think|say|know|believe|hear|see|point out|add|mention))\b",
    re.IGNORECASE,
)
_ZH_PRONOUN_OBJ = re.compile(r"^(?:你|您|他|她|它|这|那|我|的|哪|谁|什么|人是|一)")
_TRAILING_FILLER = re.compile(
    r"\s+(?:a lot|very much|so much|too|as well|anymore|either|though|now|these days|at all|sometimes|"
    r"on (?:the )?weekends?|at the weekend|in my (?:free|spare) time|every (?:day|morning|evening|week))$",
    re.IGNORECASE
)
_LIST_SPLIT = re.compile(r"\s*(?:,|\band\b|\bor\b|和|、|跟|与|还有|以及)\s*")
_NOT_NAMES = (
    "fine|good|great|back|here|sorry|ready|okay|new|home|busy|tired|happy|glad|well|chinese|english|german|french|"
    "japanese|american|british|canadian|indian|italian|spanish|korean|russian|australian|irish|dutch|swiss"
)
_EN_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*"
_ZH_NUM = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}

Builder = Callable[["re.Match[str]"], list[Found]]


class Rule(NamedTuple):
    name: str
    pattern: re.Pattern[str]
    build: Builder


def _clean(text: str) -> str:
    return text.strip().strip(".,;:!'\"’“”").strip()


def _items(raw: str, *, max_words: int = 6, infinitives: bool = True) -> tuple[str, ...] | None:
    """List items of an object phrase, or None when any item looks like a pronoun/clause
    (or, with ``infinitives=False``, a "to <verb>" phrase)."""
    text = _TRAILING_FILLER.sub("", _clean(raw))
    out: list[str] = []
    for part in _LIST_SPLIT.split(text):
        raw_item = _clean(part)
        if _PRONOUN_OBJ.match(raw_item) or _ZH_PRONOUN_OBJ.match(raw_item):
            return None
        if not infinitives and re.match(r"to\s", raw_item, re.IGNORECASE):
            return None
        item = re.sub(r"^to\s+", "", raw_item).rstrip("了啊呀吧的")
        if not item:
            continue
        if len(item.split()) > max_words:
            return None
        if item not in out:
            out.append(item)
    return tuple(out) or None


def _zh_int(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return _ZH_NUM.get(tens, 1 if not tens else -100) * 10 + (_ZH_NUM.get(ones, -100) if ones else 0)
    if len(text) == 1 and text in _ZH_NUM:
        return _ZH_NUM[text]
    return None


@functools.cache
def _posseg() -> Any:
    import logging

    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return jieba.posseg


def _zh_is_place(text: str) -> bool:
    """True when jieba tags the phrase as a place name (北京, 上海浦东 …)."""
    words = [w for w in _posseg().cut(text) if w.word.strip()]
    return bool(words) and all(w.flag.startswith("ns") for w in words)


# -- builders ------------------------------------------------------------------------------


def _text(key: str, confidence: float, *, min_len: int = 1) -> Builder:
    def build(m: re.Match[str]) -> list[Found]:
        value = _clean(m.group("v"))
        if len(value) < min_len:
            return []
        return [Found(key, value, confidence, "set", m.group(0))]

    return build


def _place(key: str, confidence: float) -> Builder:
    def build(m: re.Match[str]) -> list[Found]:
        value = _clean(m.group("v"))
        # "公司附近" (near the office), "学校旁边": a spot relative to something, not a place name
        if len(value) < 2 or value.startswith(("一", "这", "那", "哪")) or any(w in value for w in _NOT_PLACES_ZH):
            return []
        return [Found(key, value, confidence, "set", m.group(0))]

    return build


def _list(key: str, confidence: float) -> Builder:
    def build(m: re.Match[str]) -> list[Found]:
        items = _items(m.group("v"))
        return [Found(key, items, confidence, "set", m.group(0), merge=True)] if items else []

    return build


#: "I like to <verb>" counts only for these hobby verbs, stored as the activity
#: ("I like to swim" → swimming, the same item as "I like swimming"). Any other
#: infinitive ("I like to look out", "I hate to bother you", "I like to keep things
#: simple") is a habit, a politeness formula or a clause, not an object of liking.
_HOBBY_VERBS = {
    "swim": "swimming", "hike": "hiking", "paint": "painting", "draw": "drawing", "cook": "cooking",
    "bake": "baking", "read": "reading", "run": "running", "jog": "jogging", "dance": "dancing",
    "sing": "singing", "travel": "traveling", "ski": "skiing", "snowboard": "snowboarding", "surf": "surfing",
    "skate": "skating", "climb": "climbing", "cycle": "cycling", "bike": "biking", "knit": "knitting",
    "sew": "sewing", "garden": "gardening", "fish": "fishing", "write": "writing", "camp": "camping",
    "sail": "sailing", "dive": "diving", "golf": "golfing", "row": "rowing", "box": "boxing",
    "meditate": "meditating", "kayak": "kayaking", "photograph": "photography", "blog": "blogging",
}  # fmt: skip
_PLAYABLE = re.compile(
    r"play (?P<what>(?:the )?(?:chess|tennis|football|soccer|basketball|badminton|volleyball|golf|piano|guitar|"
    r"violin|cello|drums|video games|board games|table tennis|ping pong))$",
    re.IGNORECASE,
)


def _activities(raw: str) -> tuple[str, ...] | None:
    """"swim and hike" → ("swimming", "hiking"); None unless every item is a hobby."""
    out: list[str] = []
    for part in _LIST_SPLIT.split(_TRAILING_FILLER.sub("", _clean(raw))):
        item = re.sub(r"^to\s+", "", _clean(part), flags=re.IGNORECASE)
        if not item:
            continue
        played = _PLAYABLE.match(item)
        activity = f"playing {played.group('what').lower()}" if played else _HOBBY_VERBS.get(item.lower())
        if activity is None:
            return None
        if activity not in out:
            out.append(activity)
    return tuple(out) or None


def _affinity(key: str, confidence: float) -> Builder:
    """likes / dislikes: noun phrases and gerunds ("tea", "hiking"); "to <verb>" only
    for a clear hobby (see :data:`_HOBBY_VERBS`)."""

    def build(m: re.Match[str]) -> list[Found]:
        obj = _clean(m.group("v"))
        infinitive = re.match(r"to\s", obj, re.IGNORECASE) is not None
        items = _activities(obj) if infinitive else _items(obj, infinitives=False)
        return [Found(key, items, confidence, "set", m.group(0), merge=True)] if items else []

    return build


def _int(key: str, confidence: float, lo: int, hi: int) -> Builder:
    def build(m: re.Match[str]) -> list[Found]:
        number = _zh_int(m.group("v"))
        if number is None or not lo <= number <= hi:
            return []
        return [Found(key, number, confidence, "set", m.group(0))]

    return build


_NOT_NAMES_ZH = ("外卖", "快递", "出租车", "车", "醒", "人", "好")


def _zh_name(m: re.Match[str]) -> list[Found]:
    name = _clean(m.group("v"))
    # "我叫外卖了" / "我叫了外卖" (I ordered takeout) is not a name: names don't start or end in particles
    if name.endswith(("了", "啦", "吧", "呢", "啊", "呀", "的")) or name.startswith(("了", *_NOT_NAMES_ZH)):
        return []
    return [Found("name", name, 0.9, "set", m.group(0))]


_WORK_AS_CUT = re.compile(
    r"\s+(?=(?:at|for|in|with|on|from|since|during|and|but|who|which|that|because|while)\b)", re.IGNORECASE
)
_WORK_AS_EMPLOYER = re.compile(r"(?:at|for) " + _PN + r"(?:\s+(?:in|since|for|from)\b.*)?$")


def _work_as(m: re.Match[str]) -> list[Found]:
    """"I work as a UX designer at a fintech in Manchester" → occupation "UX designer"
    (no employer: "a fintech" is not a name). The job is the words before the first
    preposition/conjunction, and must come with "a/an" or end in a known job noun
    ("I work as hard as I can" is no job)."""
    job, *rest = _WORK_AS_CUT.split(_clean(m.group("v")), maxsplit=1)
    article = re.match(r"an?\s+", job, re.IGNORECASE)
    job = job[article.end():] if article else job
    words = job.split()
    if not words or len(words) > 4 or not all(re.fullmatch(r"[A-Za-z][A-Za-z-]*", w) for w in words):
        return []
    if article is None and not re.fullmatch(rf"(?:{_JOBS_EN})s?", words[-1], re.IGNORECASE):
        return []
    out = [Found("occupation", job, 0.85, "set", m.group(0))]
    employer = _WORK_AS_EMPLOYER.match(rest[0]) if rest else None
    if employer:
        out.append(Found("employer", _clean(employer.group("v")), 0.8, "set", m.group(0)))
    return out


def _job(m: re.Match[str]) -> list[Found]:
    job = re.sub(r"^(?:an?|一名|一个|一位|个|名|位)\s*", "", _clean(m.group("v")))
    out = [Found("occupation", job, 0.85, "set", m.group(0))] if job else []
    employer = m.groupdict().get("emp")
    if employer:
        out.append(Found("employer", _clean(employer), 0.8, "set", m.group(0)))
    return out


def _zh_employer(m: re.Match[str]) -> list[Found]:
    org = re.sub(r"^(?:一家|一个|这家)", "", _clean(m.group("v")))
    if len(org) < 2 or org in _NOT_PLACES_ZH or _zh_is_place(org):
        return []  # "我在北京工作" says where, not for whom
    return [Found("employer", org, 0.8, "set", m.group(0))]


def _pet(m: re.Match[str]) -> list[Found]:
    animal = m.group("v").lower()
    if animal.endswith("s") and not animal.endswith(("ss", "fish")):
        animal = animal[:-1]
    animal = {"puppy": "dog", "kitten": "cat", "bunny": "rabbit", "小狗": "狗", "小猫": "猫"}.get(animal, animal)
    name = m.groupdict().get("name")
    value = (
        f"{animal} named {_clean(name)}" if name and animal.isascii() else (f"{animal}（{name}）" if name else animal)
    )
    return [Found("pets", (value,), 0.85, "set", m.group(0), merge=True)]


_FORGET_ALIASES = {
    "address": "location", "home address": "location", "location": "location", "city": "location",
    "where i live": "location", "name": "name", "job": "occupation", "occupation": "occupation",
    "profession": "occupation", "employer": "employer", "company": "employer", "workplace": "employer",
    "birthday": "birthday", "date of birth": "birthday", "age": "age", "pet": "pets", "pets": "pets",
    "likes": "likes", "dislikes": "dislikes", "preferences": "preferences", "languages": "languages",
    "language": "languages", "native language": "native_language", "hometown": "hometown",
    "地址": "location", "住址": "location", "住处": "location", "所在地": "location", "城市": "location",
    "名字": "name", "姓名": "name", "工作": "occupation", "职业": "occupation", "公司": "employer",
    "生日": "birthday", "年龄": "age", "宠物": "pets", "爱好": "likes", "喜好": "likes", "母语": "native_language",
    "家乡": "hometown", "老家": "hometown", "语言": "languages",
}  # fmt: skip


def _forget(m: re.Match[str]) -> list[Found]:
    what = _clean(m.group("v")).lower()
    what = re.sub(r"\s+(?:please|now|for me)$", "", what)
    key = _FORGET_ALIASES.get(what)
    if key is None:
        if len(what.split()) > 4:
            return []
        try:
            key = normalize_key(what)
        except InvalidInput:
            return []
    return [Found(key, None, 0.9, "delete", m.group(0))]


def _favorite(m: re.Match[str]) -> list[Found]:
    value = _clean(m.group("v"))
    try:
        key = normalize_key(f"favorite {m.group('k')}" if m.group("k").isascii() else f"最喜欢的{m.group('k')}")
    except InvalidInput:
        return []
    return [Found(key, value, 0.85, "set", m.group(0))] if value and not _PRONOUN_OBJ.match(value) else []


# -- the rules -----------------------------------------------------------------------------

_END = r"\s*$"
_ZH_END = r"(?:了|啦|呀|啊|哦)?$"
_ZH_PLACE = rf"(?P<v>[{_CJK}A-Za-z]{{2,15}}?)(?=了|啦|呀|啊|吧|已经|有|快|好|[一二两三四五六七八九十]|\d|的时候|$)"
_EN_OBJ = r"(?P<v>[^;.!?]{1,80})$"
_ZH_OBJ = r"(?P<v>(?!的)[^，。！？,.!?；;]{1,20})$"


def _en(pattern: str) -> re.Pattern[str]:
    return re.compile(_EN_LEAD + pattern, re.IGNORECASE)


def _zh(pattern: str, *, mine: bool = False) -> re.Pattern[str]:
    # mine: the clause starts with 我的 (no adverbs between 我 and 的)
    return re.compile(_ZH_LEAD + (pattern if mine else "我" + _ZH_ADV + pattern))


RULES: tuple[Rule, ...] = (
    # name
    Rule("en_name", _en(r"my (?:full )?name(?: is|'s) " + _PN + _END), _text("name", 0.95)),
    Rule("en_call_me", _en(r"(?:please |you can )?call me " + _PN + _END), _text("name", 0.85)),
    Rule("en_greet_name", re.compile(r"^(?:hi|hello|hey)[,!]?\s+(?:i'm|i am) (?!(?:" + _NOT_NAMES + r")\b)"
                                     r"(?P<v>(?-i:[A-Z][a-z]+))" + _END, re.IGNORECASE), _text("name", 0.8)),
    Rule("zh_name", _zh(rf"叫(?:做)?(?P<v>[{_CJK}·]{{2,5}}|[A-Za-z][A-Za-z .'-]{{1,30}})$"), _zh_name),
    Rule("zh_name_mine", _zh(rf"我的名字(?:是|叫)(?P<v>[{_CJK}·]{{2,5}}|[A-Za-z][A-Za-z .'-]{{1,30}})$", mine=True),
         _text("name", 0.95)),
    # location / hometown
    Rule("en_live", _en(r"i " + _EN_ADV + r"(?:live|reside|am living|'m living|'ve lived|have lived|have been living|"
                        r"'ve been living|am based|'m based) in " + _PN + r"\b" + _REST), _text("location", 0.9)),
    Rule("en_moved", _en(r"i " + _EN_ADV + r"(?:moved|'ve moved|have moved|relocated|'ve relocated) to " + _PN + r"\b"
                         + _REST), _text("location", 0.9)),
    Rule("en_from", _en(r"(?:i'm|i am|i come|i'm originally|i am originally) from " + _PN + _END), _text("hometown", 0.85)),
    Rule("en_grew_up", _en(r"i grew up in " + _PN + r"\b" + _REST), _text("hometown", 0.8)),
    Rule("zh_live", _zh(r"(?:住在|生活在|定居在|搬到了|搬到|搬去了|搬去|搬家到)" + _ZH_PLACE), _place("location", 0.9)),
    Rule("zh_from", _zh(rf"(?:来自|是从)(?P<v>[{_CJK}A-Za-z]{{2,12}}?)(?:来的)?$"), _place("hometown", 0.85)),
    Rule("zh_hometown", _zh(rf"我的?老家(?:是|在)(?P<v>[{_CJK}A-Za-z]{{2,12}}?)$", mine=True), _place("hometown", 0.9)),
    # occupation / employer
    Rule("en_work_as", _en(r"i " + _EN_ADV + r"(?:work|am working|'m working) as " + _EN_OBJ), _work_as),
    Rule("en_by_profession", _en(r"(?:i'm|i am) (?P<v>an? [a-z][a-z -]{1,40}?) by (?:profession|trade)" + _END), _job),
    Rule("en_im_a_job", _en(rf"(?:i'm|i am) (?P<v>an? (?:[a-z-]+ ){{0,3}}(?:{_JOBS_EN}))" + _END), _job),
    Rule("en_work_at", _en(r"i " + _EN_ADV + r"(?:work|am working|'m working) (?:at|for) " + _PN + _END),
         _text("employer", 0.85)),
    Rule("zh_job", _zh(rf"是(?P<v>(?:一名|一个|一位|个|名|位)?[{_CJK}A-Za-z]{{0,8}}?(?:{_JOBS_ZH})){_ZH_END}"), _job),
    Rule("zh_job_mine", _zh(rf"我的职业是(?P<v>[{_CJK}A-Za-z]{{2,12}}){_ZH_END}", mine=True), _job),
    Rule("zh_employer", _zh(rf"在(?P<v>[{_CJK}A-Za-z0-9&. ]{{2,20}}?)(?:工作|上班|任职){_ZH_END}"), _zh_employer),
    # likes / dislikes / preferences / favourites
    Rule("en_prefer", _en(r"i " + _EN_ADV + r"prefer " + _EN_OBJ), _list("preferences", 0.8)),
    Rule("en_like", _en(r"i " + _EN_ADV + r"(?:love|like|enjoy|adore) " + _EN_OBJ), _affinity("likes", 0.75)),
    Rule("en_fan", _en(r"(?:i'm|i am) " + _EN_ADV + r"(?:a (?:big |huge )?fan of|into|fond of|passionate about) "
                       + _EN_OBJ), _list("likes", 0.7)),
    Rule("en_dislike", _en(r"i " + _EN_ADV + r"(?:don't|do not) (?:really )?(?:like|enjoy) " + _EN_OBJ),
         _affinity("dislikes", 0.75)),
    Rule("en_hate", _en(r"i " + _EN_ADV + r"(?:hate|dislike|detest|can't stand|cannot stand) " + _EN_OBJ),
         _affinity("dislikes", 0.75)),
    Rule("en_favorite", _en(r"my (?:favou?rite) (?P<k>[a-z]+(?: [a-z]+)?) is (?P<v>[^,;.!?]{1,60})$"), _favorite),
    Rule("zh_prefer", _zh(r"(?:更喜欢|更爱|偏爱|偏好)" + _ZH_OBJ), _list("preferences", 0.8)),
    Rule("zh_like", _zh(r"(?:喜欢上了|爱上了|喜欢|爱(?![人上死])|热爱|喜爱)" + _ZH_OBJ), _list("likes", 0.75)),
    Rule("zh_dislike", _zh(r"(?:不喜欢|不太喜欢|不爱|讨厌|厌恶|受不了)" + _ZH_OBJ), _list("dislikes", 0.75)),
    Rule("zh_favorite", _zh(rf"我最喜欢的(?P<k>[{_CJK}]{{1,4}})是(?P<v>[^，。！？,.!?]{{1,15}}?){_ZH_END}", mine=True),
         _favorite),
    # languages
    Rule("en_speak", _en(r"i " + _EN_ADV + r"(?:speak|can speak) (?:fluent |some |a little |basic )?(?P<v>(?-i:[A-Z][a-z]+)"
                         r"(?:(?:,\s*|,?\s+and\s+)(?-i:[A-Z][a-z]+))*)" + _END), _list("languages", 0.85)),
    Rule("en_native", _en(r"my (?:native language|mother tongue|first language) is (?P<v>(?-i:[A-Z][a-z]+))" + _END),
         _text("native_language", 0.9)),
    Rule("zh_speak", _zh(rf"(?:会说|会讲)(?:一点点|一点|一些|流利的)?(?P<v>[{_CJK}]{{1,4}}(?:语|话|文)(?:(?:和|、|跟|还有)[{_CJK}]{{1,4}}(?:语|话|文))*)"
                         + _ZH_END), _list("languages", 0.85)),
    Rule("zh_native", _zh(rf"我的母语是(?P<v>[{_CJK}]{{1,4}}(?:语|话|文)){_ZH_END}", mine=True),
         _text("native_language", 0.9)),
    # pets
    Rule("en_pet", _en(r"i (?:have|'ve got|have got|own) (?:a|an|one|two|three|\d+) (?:little |small |big |old |young )?"
                       rf"(?P<v>(?:{_ANIMALS_EN})s?)(?: (?:named|called) (?P<name>(?-i:[A-Z][a-z]+)))?" + _END), _pet),
    Rule("zh_pet", _zh(rf"(?:养了|养着|养|有)(?:一|两|三|几|\d+)?(?:只|条|个|头|匹)?(?P<v>{_ANIMALS_ZH})"
                       rf"(?:(?:叫|名叫|名字叫)(?P<name>[{_CJK}A-Za-z]{{1,6}}))?{_ZH_END}"), _pet),
    # birthday / age
    Rule("en_birthday", _en(rf"my birthday is (?:on )?(?P<v>(?:[^,;!?]*\d[^,;!?]*{_EN_MONTH}|{_EN_MONTH}[^,;!?]*\d)"
                            r"[^,;!?]*?)" + _END), _text("birthday", 0.9)),
    Rule("en_born_on", _en(rf"i was born on (?P<v>[^,;!?]*(?:\d[^,;!?]*{_EN_MONTH}|{_EN_MONTH}[^,;!?]*\d)[^,;!?]*?)" + _END),
         _text("birthday", 0.9)),
    Rule("en_age", _en(r"(?:i'm|i am) (?P<v>\d{1,3}) years old" + _END), _int("age", 0.85, 1, 130)),
    Rule("zh_birthday", _zh(rf"我的?生日是(?P<v>[0-9{_CJK}]{{1,6}}月[0-9{_CJK}]{{1,4}}(?:日|号)){_ZH_END}", mine=True),
         _text("birthday", 0.9)),
    Rule("zh_age", _zh(r"(?P<v>\d{1,3}|[一二两三四五六七八九十]{1,3})岁" + _ZH_END), _int("age", 0.85, 1, 130)),
    # forget → delete
    Rule("en_forget", _en(r"(?:please )?(?:forget|delete|erase) (?:my |what you know about my )(?P<v>[a-z][a-z ]{1,40})"
                          + _END), _forget),
    Rule("en_forget_where", _en(r"(?:please )?forget (?P<v>where i live)" + _END), _forget),
    Rule("zh_forget", re.compile(_ZH_LEAD + rf"(?:请|麻烦你|麻烦)?(?:你)?(?:忘记|忘掉|删除|删掉)我的(?P<v>[{_CJK}]{{1,8}}?)"
                                 r"(?:信息|吧|了)?$"), _forget),
)  # fmt: skip


def _clauses(sentence: str) -> Iterator[str]:
    for raw in _CLAUSE_SEP.split(sentence):
        clause = raw.strip().rstrip(".!。！").strip()
        if clause:
            yield clause


def find_profile_facts(text: str) -> list[Found]:
    """Every rule match in ``text``, in order; blocked sentences contribute nothing."""
    found: list[Found] = []
    for sentence in split_sentences(text):
        if _blocked(sentence):
            continue
        for clause in _clauses(sentence):
            for rule in RULES:
                match = rule.pattern.match(clause)
                if match:
                    found.extend(rule.build(match))
    return found
