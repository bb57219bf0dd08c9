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

Pure: text in, :class:`Found` tuples out. :mod:`hmem.profile.extract` wraps them.
This module splits text and blocks sentences; the rules themselves live in
:mod:`hmem.profile._rules_en` and :mod:`hmem.profile._rules_zh`, on
the shared pieces of :mod:`hmem.profile._rule_parts`.

Example::

    >>> [(f.key, f.value) for f in find_profile_facts("Actually, I moved to Paris last month.")]
    [('location', 'Paris')]
    >>> find_profile_facts("If I moved to Paris, I would learn French.")
    []
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from hmem.profile._rule_parts import Found, Rule
from hmem.profile._rules_en import EN_RULES
from hmem.profile._rules_zh import ZH_RULES

__all__ = ["Found", "find_profile_facts", "split_sentences"]


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


#: Every rule. A clause can match English rules or Chinese ones, never both (each
#: rule starts with its language's words), so the order across languages is moot.
RULES: tuple[Rule, ...] = EN_RULES + ZH_RULES


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
