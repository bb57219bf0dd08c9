"""The Chinese profile rules: clauses that start with 我 / 我的 (after a word like
其实) → :class:`~hmem.profile._rule_parts.Found`.

Places are told from employers with jieba's part-of-speech tags ("我在北京工作" says
where, not for whom); jieba loads on first use. Sentence splitting and blocking
happen in :mod:`hmem.profile._rules`.

Example::

    >>> [rule.name for rule in ZH_RULES if rule.pattern.match("我住在北京")]
    ['zh_live']
"""

from __future__ import annotations

import functools
import re
from typing import Any

from hmem.profile._rule_parts import (
    NOT_PLACES_ZH,
    Builder,
    Found,
    Rule,
    build_favorite,
    build_forget,
    build_job,
    build_pet,
    clean,
    merge_list,
    set_int,
    set_text,
)

__all__ = ["ZH_RULES"]

_ZH_LEAD = r"^(?:其实|对了|另外|顺便说一下|顺便说|嗯|哦|噢|好吧|现在|最近|目前|上个月|上周|去年|今年)?"
_ZH_ADV = (
    r"(?:现在|目前|一直|也|还|就|已经|刚刚|刚|最近|终于|其实|真的|很|非常|特别|超级|超|最|挺|上个月|上周|去年|今年)*"
)
_CJK = r"\u4e00-\u9fff"
_ZH_END = r"(?:了|啦|呀|啊|哦)?$"
_ZH_PLACE = rf"(?P<v>[{_CJK}A-Za-z]{{2,15}}?)(?=了|啦|呀|啊|吧|已经|有|快|好|[一二两三四五六七八九十]|\d|的时候|$)"
_ZH_OBJ = r"(?P<v>(?!的)[^，。！？,.!?；;]{1,20})$"
_JOBS_ZH = (
    "工程师|医生|大夫|老师|教师|教授|护士|律师|会计|设计师|建筑师|程序员|学生|研究生|博士生|厨师|记者|编辑|作家|"
    "研究员|科学家|经理|司机|警察|分析师|顾问|销售|演员|画家|翻译|药剂师|飞行员|产品经理|公务员|农民|摄影师|咨询师"
)
_ANIMALS_ZH = "小狗|小猫|狗|猫|兔子|仓鼠|鹦鹉|金鱼|乌龟|鸟|马|蛇|蜥蜴|龙猫"


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


def _place(key: str, confidence: float) -> Builder:
    def build(m: re.Match[str]) -> list[Found]:
        value = clean(m.group("v"))
        # "公司附近" (near the office), "学校旁边": a spot relative to something, not a place name
        if len(value) < 2 or value.startswith(("一", "这", "那", "哪")) or any(w in value for w in NOT_PLACES_ZH):
            return []
        return [Found(key, value, confidence, "set", m.group(0))]

    return build


_NOT_NAMES_ZH = ("外卖", "快递", "出租车", "车", "醒", "人", "好")


def _zh_name(m: re.Match[str]) -> list[Found]:
    name = clean(m.group("v"))
    # "我叫外卖了" / "我叫了外卖" (I ordered takeout) is not a name: names don't start or end in particles
    if name.endswith(("了", "啦", "吧", "呢", "啊", "呀", "的")) or name.startswith(("了", *_NOT_NAMES_ZH)):
        return []
    return [Found("name", name, 0.9, "set", m.group(0))]


def _zh_employer(m: re.Match[str]) -> list[Found]:
    org = re.sub(r"^(?:一家|一个|这家)", "", clean(m.group("v")))
    if len(org) < 2 or org in NOT_PLACES_ZH or _zh_is_place(org):
        return []  # "我在北京工作" says where, not for whom
    return [Found("employer", org, 0.8, "set", m.group(0))]


def _zh(pattern: str, *, mine: bool = False) -> re.Pattern[str]:
    # mine: the clause starts with 我的 (no adverbs between 我 and 的)
    return re.compile(_ZH_LEAD + (pattern if mine else "我" + _ZH_ADV + pattern))


ZH_RULES: tuple[Rule, ...] = (
    # name
    Rule("zh_name", _zh(rf"叫(?:做)?(?P<v>[{_CJK}·]{{2,5}}|[A-Za-z][A-Za-z .'-]{{1,30}})$"), _zh_name),
    Rule("zh_name_mine", _zh(rf"我的名字(?:是|叫)(?P<v>[{_CJK}·]{{2,5}}|[A-Za-z][A-Za-z .'-]{{1,30}})$", mine=True),
         set_text("name", 0.95)),
    # location / hometown
    Rule("zh_live", _zh(r"(?:住在|生活在|定居在|搬到了|搬到|搬去了|搬去|搬家到)" + _ZH_PLACE), _place("location", 0.9)),
    Rule("zh_from", _zh(rf"(?:来自|是从)(?P<v>[{_CJK}A-Za-z]{{2,12}}?)(?:来的)?$"), _place("hometown", 0.85)),
    Rule("zh_hometown", _zh(rf"我的?老家(?:是|在)(?P<v>[{_CJK}A-Za-z]{{2,12}}?)$", mine=True), _place("hometown", 0.9)),
    # occupation / employer
    Rule("zh_job", _zh(rf"是(?P<v>(?:一名|一个|一位|个|名|位)?[{_CJK}A-Za-z]{{0,8}}?(?:{_JOBS_ZH})){_ZH_END}"), build_job),
    Rule("zh_job_mine", _zh(rf"我的职业是(?P<v>[{_CJK}A-Za-z]{{2,12}}){_ZH_END}", mine=True), build_job),
    Rule("zh_employer", _zh(rf"在(?P<v>[{_CJK}A-Za-z0-9&. ]{{2,20}}?)(?:工作|上班|任职){_ZH_END}"), _zh_employer),
    # likes / dislikes / preferences / favourites
    Rule("zh_prefer", _zh(r"(?:更喜欢|更爱|偏爱|偏好)" + _ZH_OBJ), merge_list("preferences", 0.8)),
    Rule("zh_like", _zh(r"(?:喜欢上了|爱上了|喜欢|爱(?![人上死])|热爱|喜爱)" + _ZH_OBJ), merge_list("likes", 0.75)),
    Rule("zh_dislike", _zh(r"(?:不喜欢|不太喜欢|不爱|讨厌|厌恶|受不了)" + _ZH_OBJ), merge_list("dislikes", 0.75)),
    Rule("zh_favorite", _zh(rf"我最喜欢的(?P<k>[{_CJK}]{{1,4}})是(?P<v>[^，。！？,.!?]{{1,15}}?){_ZH_END}", mine=True),
         build_favorite),
    # languages
    Rule("zh_speak", _zh(rf"(?:会说|会讲)(?:一点点|一点|一些|流利的)?(?P<v>[{_CJK}]{{1,4}}(?:语|话|文)(?:(?:和|、|跟|还有)[{_CJK}]{{1,4}}(?:语|话|文))*)"
                         + _ZH_END), merge_list("languages", 0.85)),
    Rule("zh_native", _zh(rf"我的母语是(?P<v>[{_CJK}]{{1,4}}(?:语|话|文)){_ZH_END}", mine=True),
         set_text("native_language", 0.9)),
    # pets
    Rule("zh_pet", _zh(rf"(?:养了|养着|养|有)(?:一|两|三|几|\d+)?(?:只|条|个|头|匹)?(?P<v>{_ANIMALS_ZH})"
                       rf"(?:(?:叫|名叫|名字叫)(?P<name>[{_CJK}A-Za-z]{{1,6}}))?{_ZH_END}"), build_pet),
    # birthday / age
    Rule("zh_birthday", _zh(rf"我的?生日是(?P<v>[0-9{_CJK}]{{1,6}}月[0-9{_CJK}]{{1,4}}(?:日|号)){_ZH_END}", mine=True),
         set_text("birthday", 0.9)),
    Rule("zh_age", _zh(r"(?P<v>\d{1,3}|[一二两三四五六七八九十]{1,3})岁" + _ZH_END), set_int("age", 0.85, 1, 130)),
    # forget → delete
    Rule("zh_forget", re.compile(_ZH_LEAD + rf"(?:请|麻烦你|麻烦)?(?:你)?(?:忘记|忘掉|删除|删掉)我的(?P<v>[{_CJK}]{{1,8}}?)"
                                 r"(?:信息|吧|了)?$"), build_forget),
)  # fmt: skip
