"""Clauses of a user message, each with its subject and guards: the first step of the
offline profile rules. Pure.

A message is normalised (NFKC: full-width punctuation becomes ASCII; emoji dropped;
English contractions and chat spellings spelled out: "im" → "I am"), split into
sentences, then into clauses at punctuation and conjunctions. An English comma starts
a new clause only before a new subject, verb or conjunction, so lists ("Polish,
English and German") stay in one clause. Each clause gets:

* ``subject`` — ``self`` ("I …", "我…"), ``with`` ("my wife and I …", "我和我老公…"),
  ``we`` (the user's household: "we moved …", "我们家…"), ``my`` ("my name is …",
  "我的…", "我女儿…": a possessive the rules read themselves), ``other`` (someone else:
  "he …", "my sister lives …", "我朋友…") or inherited from the clause before when the
  clause has none ("…, living in Dubai", "…，在阿里做前端");
* ``pred`` — the clause after a ``self`` / ``with`` / ``we`` subject (what is said of it);
* ``guards`` — what keeps facts out: ``question``, ``hypothetical``, ``past``,
  ``temporary``, ``other`` (role-play, fiction, translation, jokes). Negation is checked
  by each rule on the words before its trigger (:func:`negated`).

Example::

    >>> [(c.subject, c.pred, sorted(c.guards)) for c in analyse("hi im Leo, 17, from Brazil, can u help me?")]
    [('self', 'am Leo', []), ('self', '17', []), ('self', 'from Brazil', []), ('self', 'can you help me?', ['question'])]
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from hmem.profile._lex_en import CHILD_WORDS, FAMILY_WORDS, OTHER_PEOPLE, PARTNER_WORDS
from hmem.profile._lex_zh import SURNAMES, ZH_CHILD_WORDS, ZH_FAMILY_WORDS, ZH_OTHER_PEOPLE, ZH_PARTNER_WORDS

__all__ = ["CJK", "CURRENT", "STAY", "TIMELESS", "Clause", "Subject", "allowed", "analyse", "negated", "normalise",
           "opens_sentence"]

Subject = Literal["self", "with", "we", "my", "other"]
CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause: its text, its subject, what is said of the subject, its guards."""

    text: str
    subject: Subject
    pred: str
    guards: frozenset[str]
    sentence: str
    first: bool  # the first clause of its sentence
    bare: str  # the text without leading discourse words ("hi", "so", "其实")


# -- normalisation -------------------------------------------------------------------------

_CHAT = [  # chat spellings and contractions → plain words (word-bounded, case-insensitive)
    (r"\bi\b", "I"), (r"\b(?:I'?m|I\s+m)\b", "I am"), (r"\bIve\b|\bI've\b", "I have"), (r"\bI'd\b", "I would"),
    (r"\bI'll\b", "I will"), (r"\bdont\b", "don't"), (r"\bdoesnt\b", "doesn't"), (r"\bcant\b", "can't"),
    (r"\bwont\b", "won't"), (r"\bisnt\b", "isn't"), (r"\bwe're\b", "we are"), (r"\bwe've\b", "we have"),
    (r"\b(he|she|it|that|what|there|who)'s\b", r"\1 is"), (r"\b(name|birthday|bday)'s\b", r"\1 is"), (r"\bthey're\b", "they are"),
    (r"(?<=\w) n (?=\w)", " and "), (r"\bu\b", "you"), (r"\bur\b", "your"), (r"\brn\b", "right now"),
    (r"\b(?:bc|cuz|coz)\b", "because"), (r"\bw/", "with "), (r"&", " and "), (r"\bnames (?=[A-Z])", "name is "),
]  # fmt: skip
_CHAT_RE = [(re.compile(p, re.IGNORECASE if p != r"\bi\b" else 0), r) for p, r in _CHAT]
_FILLER_EN = re.compile(r"\b(?:btw|fyi|fwiw|tbh|imo|imho|iirc|afaik|lol|lmao|haha+|hehe|ngl|tbf|lowkey|honestly)\b", re.IGNORECASE)
_LABELS = [  # "Love: jazz, cycling" → "I love jazz, cycling"
    (r"(?:loves?|likes?|hobbies|interests)", "I love"), (r"(?:hates?|dislikes?)", "I hate"),
    (r"(?:allergies|allergic to|allergy)", "I am allergic to"), (r"languages?", "I speak"),
    (r"(?:my )?(?:job|work|occupation|profession)", "I am a"),
]
_LABEL_RE = [(re.compile(rf"(?:^|(?<=[.!?;]\s))(?:{p})\s*:\s*", re.IGNORECASE), r + " ") for p, r in _LABELS]
_INTRO = re.compile(r"(?:^|(?<=[.!?]\s))(?:quick |some |a bit of |fun )?(?:context|background|fact|fyi|ps|note|about me)\s*:\s*",
                    re.IGNORECASE)


#: WeChat style writes clauses apart with spaces ("我叫宋棠 在成都上班 能帮我…"): a space between
#: Chinese characters ends a clause when a clause opener follows ("我叫 宋棠" stays one clause).
_ZH_SPACE = re.compile(rf"(?<=[{CJK}])\s+(?=(?:我|你|在|最近|现在|目前|今年|能|可以|帮|请|麻烦|想|打算|平时|但|不过|所以|"
                       rf"因为|哈|嗯|老家|家里|已经|之前|以前|压力|顺便|有没有|是不是)[{CJK}])")


def normalise(text: str) -> str:
    """NFKC, emoji and chat fillers dropped, contractions spelled out, ’ → '.

    >>> normalise("hey! i'm Maya btw 🐰，我叫 Anna")
    'hey! I am Maya; 我叫 Anna'
    """
    # A full-width comma always ends a Chinese clause (an English one may separate list items).
    text = unicodedata.normalize("NFKC", text.replace("，", "; ")).replace("’", "'").replace("‘", "'")
    text = "".join(" " if unicodedata.category(ch) in ("So", "Sk", "Cs", "Co") else ch for ch in text)
    text = text.replace("\u200d", "").replace("\ufe0f", "")
    text = _INTRO.sub("", text.strip())
    for label, repl in _LABEL_RE:
        text = label.sub(repl, text)
    for pattern, repl in _CHAT_RE:
        text = pattern.sub(repl, text)
    text = _FILLER_EN.sub("", text)
    text = re.sub(r"[ \t]+", " ", text)
    text = _ZH_SPACE.sub("; ", text)
    text = re.sub(r"\s+([,.!?;:])", r"\1", text)
    return re.sub(r",(?=[^\s\d])", ", ", text).strip()


# -- splitting -----------------------------------------------------------------------------

_SENTENCE_END = re.compile(
    rf"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\bSt\.)(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)\s+|\n+|(?<=[。])|(?<=[!?])(?=[{CJK}])"
)
_HARD_SPLIT = re.compile(
    r"\s*[;]\s*|\s+(?=(?:but|though|although|because|since|whereas|while|cause|which|who)\s)|\s+-+\s+|"
    r"\s*—\s*|"
    r"\s+so\s+(?=(?:I|my|we|he|she|they|it|no|that|anything|please|can|could|any|the|don't|do|if)\b)|"
    r"(?<!^me)(?<!^Me)\s+and\s+(?=(?:I|my|we|he|she|they|his|her|their|it|was|am|have|has|had|just|now|currently|recently|also|"
    r"still|then|live|work|love|hate|want|wants|need|needs|moved|speak|can|will|would|finally|already)\b)|"
    rf"(?<=[{CJK}])\s*(?:但是|不过|可是|然而|而且|并且|所以|因此|因为|然后|后来)|^(?:但是|不过|可是|所以|因为)",
    re.IGNORECASE,
)
_EN_CLAUSE_START = re.compile(
    r"(?:I|my|we|our|he|she|they|it|this|that|there|these|those|you|your|his|her|their|me|us|the|a|an|some|any|"
    r"and|but|so|because|since|though|which|who|where|when|while|as|plus|also|please|thanks|ok|okay|anyway|still|just|"
    r"now|currently|originally|recently|already|what|how|why|can|could|would|should|do|does|did|is|are|was|were|"
    r"from|in|at|based|born|living|live|moved|grew|working|teaching|studying|doing|married|divorced|single|"
    r"retired|engaged|used|got|been|not|no|never|love|hate|ideas?|need|help|recommend|suggest|tell|explain|pls|plz|"
    r"keep|skip|let|make|give|send|show|find|add|"
    r"\d)\b|[\d{cjk}]".replace("{cjk}", CJK),
    re.IGNORECASE,
)
_NAME_INTRO = re.compile(r"(?:\bI am|\bname is|^call me|^this is)\s+(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?[A-Z][\w'-]+"
                         r"(?:\s+[A-Z][\w'-]+)?$|^[A-Z][a-z]+ here$")


#: "I'm Sam, 22, nursing student at …": a bare age; what follows it is the next apposition.
_BARE_AGE = re.compile(r"\d{1,2}(?:\s*(?:yo|y/o|years old))?")
_AND_OBJECT = re.compile(r"and\s+(?:a|an|one|two|three|four|\d+|some|several)\s", re.IGNORECASE)


def _segments(sentence: str) -> list[str]:
    """Clauses of one sentence (see the module doc for where an English comma splits)."""
    out: list[str] = []
    for part in _HARD_SPLIT.split(sentence):
        pieces = [p.strip(" .!。") for p in re.split(r"\s*[,:]\s*", part or "")]
        first = True
        for piece in (p for p in pieces if p):
            joins = not first and (not _EN_CLAUSE_START.match(piece) or _AND_OBJECT.match(piece)) \
                and not _NAME_INTRO.search(out[-1]) and not _BARE_AGE.fullmatch(out[-1])
            if joins and not re.search(rf"[{CJK}]$", out[-1]):
                out[-1] = f"{out[-1]}, {piece}"  # a list item or an apposition: same clause
            else:
                out.append(piece)
            first = False
    return out


# -- subjects --------------------------------------------------------------------------------

def _alt(words: frozenset[str] | tuple[str, ...]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_EN_REL = _alt(PARTNER_WORDS | CHILD_WORDS | FAMILY_WORDS | OTHER_PEOPLE | {"best friend", "ex"})
_EN_LEAD = re.compile(
    r"^(?:(?:oh|ok|okay|so|well|yeah|yes|hey|hi|hello|and|also|anyway|actually|plus|just|like|but|though|although|"
    r"because|since|whereas|while|cause|(?:pls|please|just) note(?: that)?|heads up|for context|"
    r"just so (?:you|u) know|(?:work|job|career|diet|health|family)[- ]?wise|(?:now|currently|still)(?=,?\s+(?:I|my|we|our|he|she|they|his|her|their)\b))"
    r"\b(?!\s+from\b)[,!:]?\s*)+",
    re.IGNORECASE)
_EN_WITH = re.compile(rf"^(?:(?:me and|both) my (?:\w+ )?(?:{_EN_REL})(?-i: [A-Z][a-z]+)?|my (?:\w+ )?(?:{_EN_REL})"
                      rf"(?-i: [A-Z][a-z]+)? and I|(?-i:[A-Z][a-z]+) and I)\b\s*", re.IGNORECASE)
_EN_SELF = re.compile(r"^I\b\s*")
_EN_WE = re.compile(r"^(?:we|our (?:family|household)(?: of \w+)?|my family)\b\s*", re.IGNORECASE)
_EN_MY = re.compile(r"^(?:my|our)\b", re.IGNORECASE)
_EN_OTHER = re.compile(rf"^(?:(?:hello|hi|hey|greetings) from|he|she|they|it|this|that|these|those|there|you|your|his|her|their|its|the|a|an|"
                       rf"everyone|everybody|people|someone|somebody|{_alt(OTHER_PEOPLE)})\b", re.IGNORECASE)
_ZH_LEAD = re.compile(r"^(?:(?:大家好|你好|您好|哈喽|嗨|(?:hi|hello|hey)(?!\s+from\b)|哈哈+|呵呵|嘿嘿|嗯+|哦|噢|其实|对了|另外|顺便说一下|顺便说|话说|"
                      r"说真的|不过|但是|可是|而且|并且|所以|因为|然后|后来|同时|因此)[,!。\s]*)+", re.IGNORECASE)
_ZH_REL = _alt(ZH_PARTNER_WORDS + ZH_CHILD_WORDS + ZH_FAMILY_WORDS + ZH_OTHER_PEOPLE)
#: "我跟我老公说…", "我和爸妈讲粤语": talking to someone is not doing something together with them.
_TALK = r"(?![^,;]{0,6}?(?:说|讲|聊|吵|商量|解释|抱怨|打电话|视频|发消息))"
_ZH_WITH = re.compile(rf"^我(?:和|跟|与){_TALK}(?:我的?)?\s*(?:{_ZH_REL}|{_EN_REL})\s*|"
                      rf"^我的?\s*(?:{_ZH_REL}|(?i:{_EN_REL}))(?:\s*[A-Z][a-z]+|[{CJK}]{{2,3}})?\s*(?:和|跟)我(?:一起)?\s*")
_ZH_WE = re.compile(r"^(?:我们(?:全家|一家|家)?|我家(?!乡|人)里?|咱们?家?)\s*")
_ZH_MY = re.compile(rf"^我的|^我\s*(?:一个|一位|那个|这个)?\s*(?:{_ZH_REL}|(?i:{_EN_REL})\b)")
_ZH_SELF = re.compile(r"^(?:本人|我自己|我)\s*")
_ZH_OTHER = re.compile(rf"^(?:他|她|它|你|您|大家|有人|别人|群里|网上|听说|据说|有一?[个位]人|{_ZH_REL}|(?:(?:小|老)[{SURNAMES}]|"
                       rf"[{SURNAMES}][{CJK}]{{1,2}})(?=是|在|住|喜欢|有|叫|说|去|也|的|刚|已经|现在))")  # 小王, 老李, 王磊


_MY_SELF = re.compile(
    r"^(?:my|我的)\s*(?:full |real |first )?(?:name|birthday|bday|b-day|date of birth|native language|mother tongue|"
    r"first language|job|work|hometown|home town|time ?zone|nationality|favou?rite|diet|allergies|名字|生日|母语|工作|"
    r"职业|老家|家乡|国籍|时区|专业)", re.IGNORECASE)


def _subject(clause: str) -> tuple[Subject | None, str]:
    """(subject, pred) of a clause; subject None when the clause has none of its own."""
    text = _ZH_LEAD.sub("", _EN_LEAD.sub("", clause)).strip()
    for pattern, subject in ((_EN_WITH, "with"), (_ZH_WITH, "with"), (_ZH_WE, "we"), (_ZH_MY, "my"),
                             (_ZH_SELF, "self"), (_EN_SELF, "self"), (_EN_WE, "we")):
        m = pattern.match(text)
        if m:
            return subject, (text[m.end():].strip() if subject != "my" else "")  # type: ignore[return-value]
    if _EN_MY.match(text):
        return "my", ""
    if _EN_OTHER.match(text) or _ZH_OTHER.match(text):
        return "other", ""
    return None, text


def _own_subject(part: str, previous: str, inherited: Subject) -> tuple[str, Subject | None, str]:
    """(clause text, subject, pred), reading relative clauses and appositions after ``previous``."""
    subject, pred = _subject(part)
    relative = re.match(r"(?:who|which)\s+", part, re.IGNORECASE)
    if relative:  # "…, a pharmacist from Cairo who now lives in Toronto": about the user only after a self-description
        part = part[relative.end():]
        describes_user = (
            relative.group(0).lower().startswith("who") and inherited == "self"
            and re.match(r"(?:I am )?an?\s", previous) is not None
            and not re.search(r"\b(?:have|has|know|met|with|of)\b", previous, re.IGNORECASE)
        )
        return (part, None, part) if describes_user else (part, "other", "")
    if subject == "other" and re.match(r"(?:a|an)\s", part) and _NAME_INTRO.search(previous):
        return part, None, part  # "I'm Sam, a 29 year old accountant": an apposition about the user
    return part, subject, pred


# -- guards ----------------------------------------------------------------------------------

_QUESTION_EN = re.compile(
    r"^(?:(?:do|does|did|can|could|would|should|shall|will|is|are|was|were|has|have|may|might)\s+(?:you|I|we|they|he|"
    r"she|it|there|anyone|anybody|someone|people|my|your|the|a|an|this|that|these|those)\b|(?:what|where|who|whom|"
    r"whose|which|when|why|how|any|anyone|anybody|ideas?|thoughts|recommendations?|suggestions?|tips)\b)",
    re.IGNORECASE)
_QUESTION_ZH = re.compile(r"吗|呢|什么|哪|谁|怎么|为什么|多少|几点|几岁|几号|是否|是不是|有没有|会不会|要不要|能不能|可不可以|好不好|"
                          rf"咋|为啥|干啥|啥时候|啥样|是啥|([{CJK}])不\1|(?<=[{CJK}])不$")  # "压力大不大", "好养不"
_HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|whether|suppose|would|could|might|maybe|perhaps|someday|one day|planning|plans? to|thinking of|"
    r"thinking about|considering|consider|want to|wants to|wanna|hoping|hope to|wish|dream|dreaming|going to|gonna|will|"
    r"next (?:year|month|week|spring|summer|fall|autumn|winter)|soon|eventually|looking (?:for|to|into)|expecting|"
    r"about to|in the future|once I|when I retire|on the way|due in|I (?:think|guess|suspect|wonder)|try(?:ing)? to|applied for|"
    r"applying for|interview(?:ing|ed)? (?:at|for|with)|(?:was|were) (?:supposed|meant) to|had (?:planned|hoped) to|"
    r"(?:almost|nearly) (?:moved|relocated|took|joined|quit|switched|accepted|signed|started|went))\b|"
    r"尽量|尽可能|面试|差(?:一)?点|险些|(?:本来|原本|原来)(?:是)?(?:要|想|打算|准备)|"
    r"如果|假如|要是|假设|假若|倘若|万一|的话|想象|也许|或许|可能|打算|计划|准备|将来|以后|未来|希望|梦想|(?<![联理思感猜回构])想(?!念|起|法)|"
    r"考虑|等.{0,8}就|明年|下个?月|下周|下半年|退休后|即将|快要|马上就?要|要(?:去|搬|换|成为|当|开始)|会(?:搬|去|成为|换)",
    re.IGNORECASE)
_PAST = re.compile(
    r"\b(?:used to|use to|formerly|previously|back then|back in|as a (?:kid|child|teen|teenager)|when I was|years ago|"
    r"no longer|not anymore|anymore|any more|former|ex-\w+|until (?:last|recently)|quit|resigned|laid off|fired|"
    r"left my job)\b|^(?:lived|worked|was(?! born| raised)|"
    r"were|had|spent|studied abroad)\b|以前|之前|曾经|原来|过去|从前|前几年|那时候|当年|小时候|[读住干做待呆学]过|工作过|"
    r"离职|辞职|不再|已经不|不干了|退休前|当年|那会儿?|那时|那阵子|当时|(?:本来|原本)(?!就)(?:是|在)", re.IGNORECASE)
_TEMPORARY = re.compile(
    r"\b(?:this (?:week|weekend|month|summer|semester|term)|for the (?:week|weekend|summer|holidays?|day|night)|"
    r"for (?:a|one|two|three|four|five|a few|a couple of|\d+|several)[- ](?:days?|weeks?|nights?)|"
    r"\w+-(?:day|week|night) (?:\w+ )?(?:course|trip|visit|stay)|on (?:a |my |our )?(?:trip|holiday|vacation|business trip|"
    r"work trip|workation|layover|visit|honeymoon)|workation|for (?:a|the) (?:conference|wedding|funeral|meeting|course|"
    r"work trip|business trip)|visiting|staying (?:at|with)|(?:cat|dog|house|pet|baby)[- ]?sitting|passing through|"
    r"right now|at the moment|temporarily|for now|(?:till|until|through) (?:monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|the weekend|next week|the end of))\b|"
    r"出差|旅游|旅行|度假|这一?顿|这餐|玩几天|待几天|住几天|呆几天|这周|这几天|这个月|这段时间|暂时|临时|培训|开会|探亲|(?<!搬)回老家|假期|"
    r"[几两三]天|[一两三几半]个月|[一两几]周|一星期|几个星期|周末|今天|今晚|[几两三一]晚|酒店|宾馆|民宿|照顾几天|帮.{0,6}照顾",
    re.IGNORECASE)
_OTHER = re.compile(
    r"\b(?:pretend|pretending|imagine|role[- ]?play|act as|as if|my (?:novel|story|book|screenplay|script|game)|"
    r"main character|the character|fictional|translate|how do (?:you|I) say|just kidding|jk|joking|username|"
    r"writing (?:a|my|the) (?:novel|story|book|script|screenplay|poem|song))\b|"
    r"假装|扮演|角色|小说|剧本|故事里|游戏里|主角|女主|男主|翻译(?=\s*(?:成|为|一下|下|这|那|:))|(?:帮我?|请|麻烦你?|怎么|如何)\s*翻译|怎么说|开玩笑|玩笑|用户名|网名|帮我\s*write|write a bio|"
    r"梦见|梦到|做梦|模仿|口吻|口气|模拟(?:面试|对话|一下|一个|场景)|"
    r"写一?[个篇段]\s*(?i:story|故事)", re.IGNORECASE)
_NEGATION = re.compile(
    r"\b(?:not|never|no|nothing|none|nobody|neither|nor|without)\b|n't\b|不(?!过|错|少)|没|未(?!来)|别(?!人)|非(?!常)|无(?!论)",
    re.IGNORECASE)


#: Guards that keep a current state out (a job, a like, a diet …).
CURRENT = frozenset({"question", "hypothetical", "past", "other"})
#: … and for where one lives or is, and what one has: also temporary stays.
STAY = CURRENT | {"temporary"}
#: Facts that do not expire (hometown, birthday, nationality, name): past tense is fine.
TIMELESS = frozenset({"question", "hypothetical", "other"})


def allowed(clause: Clause, blocked: frozenset[str]) -> bool:
    """True when none of ``blocked`` guards the clause."""
    return not clause.guards & blocked


def opens_sentence(clauses: Sequence[Clause], i: int) -> bool:
    """True when clause ``i`` is the first of its sentence, or only a greeting or discourse
    words come before it ("你好，我是陈浩": the introduction still opens what the user says)."""
    j = i - 1
    while j >= 0 and clauses[j].sentence == clauses[i].sentence:
        if clauses[j].bare.strip(" ,，!！.。~"):
            return False
        j -= 1
    return True


def negated(before: str) -> bool:
    """True when the words before a rule's trigger deny it ("am not a", "我不是", "没有")."""
    return _NEGATION.search(before) is not None


def _guards(clause: str, pred: str, sentence: str, next_clause: str, prev_clause: str = "") -> frozenset[str]:
    guards: set[str] = set()
    bare = _ZH_LEAD.sub("", _EN_LEAD.sub("", clause)).strip()
    if clause.rstrip().endswith("?") or _QUESTION_EN.match(bare) or _QUESTION_ZH.search(clause):
        guards.add("question")
    if _HYPOTHETICAL.search(clause):
        guards.add("hypothetical")
    if _PAST.search(clause) or _PAST.match(pred):
        guards.add("past")
    # "I'm in Rome, just for the week" / "我在上海，出差几天" / "这两天住我姨家，在苏州": a bare "in X"
    # takes the time of the clause next to it
    bare_stay = re.match(r"(?:am|are)\s+(?:in|at)\b|(?:现在|目前|人)?在", pred) is not None and len(pred.split()) <= 4
    # "我现在在广州，下周回北京": going back (回) elsewhere makes the stay a visit
    back = re.search(r"(?:回|back (?:home|to)\b)(?!复|答|忆|头|应|想|收|顾|来)", next_clause, re.IGNORECASE)
    near = _TEMPORARY.search(next_clause) or _TEMPORARY.search(prev_clause)
    if _TEMPORARY.search(clause) or (bare_stay and (near or back)):
        guards.add("temporary")
    if _OTHER.search(sentence):
        guards.add("other")
    return frozenset(guards)


_INTRODUCES = re.compile(rf"^(?:有|还有)\s*(?:一?[个位]|两个|几个)\s*好?(?:{_ZH_REL})$")
#: "我有个同学在字节做后端": what follows the introduced person is about them, so it is cut off.
_HAS_SOMEONE = re.compile(rf"^(?:我|本人)?\s*(?:还|也)?有\s*(?:一?[个位]|两个|几个)\s*好?(?:{_ZH_REL})(?=\s*(?:在|是|做|当|干|住|开|搞|也|刚|今年|去年|现在|目前|从|每天|天天|特别|超|很|"
                          r"对|不吃|不喝|吃|喜欢|讨厌|养))")
_ABOUT = re.compile(rf"(?:{_ZH_REL}|他|她|他们|她们)的\s*(?:简历|信息|资料|情况|介绍|档案|个人信息|基本信息)")
_CONTRAST = re.compile(r"^\s*(?:but|though|although|however|still|不过|但是|可是|但|然而)", re.IGNORECASE)
_SENTENCE_IF = re.compile(r"^\s*(?:if|suppose|imagine|what if)\b|^\s*(?:如果|假如|要是|假设|万一)", re.IGNORECASE)


def _cut_someone(part: str) -> list[str]:
    m = _HAS_SOMEONE.match(_ZH_LEAD.sub("", part).strip())
    if not m:
        return [part]
    lead = len(part) - len(_ZH_LEAD.sub("", part).strip())
    return [part[: lead + m.end()], part[lead + m.end():].strip()]


def analyse(message: str) -> list[Clause]:
    """The clauses of ``message``, in order, with subjects and guards (see the module doc)."""
    out: list[Clause] = []
    text = normalise(message)
    for sentence in (s.strip() for s in _SENTENCE_END.split(text)):
        if not sentence:
            continue
        parts = [q for part in _segments(sentence) for q in _cut_someone(part)]
        inherited: Subject = "self"
        conditional = False
        for i, raw in enumerate(parts):
            part, subject, pred = _own_subject(raw, parts[i - 1] if i else "", inherited)
            if subject is None:
                subject = inherited
            nxt = parts[i + 1] if i + 1 < len(parts) else ""
            guards = _guards(part, pred, sentence, nxt, parts[i - 1] if i else "")
            if conditional and not _CONTRAST.match(part):  # the clause after an "if" clause is its consequence
                guards |= {"hypothetical"}
            conditional = _SENTENCE_IF.match(part) is not None
            bare = _ZH_LEAD.sub("", _EN_LEAD.sub("", part)).strip()
            out.append(Clause(part, subject, pred if subject in ("self", "with", "we") else "", guards, sentence, i == 0,
                              bare))
            if subject == "my":  # "my name is X, …" goes on about the user; "my sister …, …" about her
                subject = "self" if _MY_SELF.match(bare) else "other"
            elif _INTRODUCES.match(pred) or _ABOUT.search(bare):  # "我有个朋友，在杭州做设计": about the friend
                subject = "other"  # "这是我朋友的简历: 王磊，工程师…": what follows the colon is the friend's
            inherited = subject
    return out
