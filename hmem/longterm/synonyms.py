"""Query-side synonyms for BM25: the everyday words for family members.

People ask about their family in other words than they told it: "李雯的父母住在哪里？"
about "我爸妈在湖南岳阳", "Where does Maya's mother live?" about "my mum lives in Leeds".
BM25 matches words, and the small embedding model does not bridge these pairs either
(docs/longterm.md, "Family words"). :func:`expand_query` adds, to the lexical query only,
the synonyms of each family word in it; the stored texts, the dense query and the prompt
are unchanged. A fixed table, no model: colloquial and formal kinship terms
in Chinese and English, nothing else (a general thesaurus would drift topics).

Example::

    >>> expand_query("李雯的父母住在哪里？")
    '李雯的父母住在哪里？ 爸妈 爸爸 妈妈'
    >>> expand_query("Where does Maya's mother live?")
    "Where does Maya's mother live? mom mum"
    >>> expand_query("我妈妈住在长沙")
    '我妈妈住在长沙 母亲 老妈'
    >>> expand_query("What did Caroline do?")
    'What did Caroline do?'
"""

from __future__ import annotations

import re

__all__ = ["SYNONYMS", "expand_query"]

#: A query word → the other words people use for the same relation. Chinese words match
#: as substrings (Chinese has no spaces), English ones as whole words. Directed on purpose:
#: 父母 (parents) brings in 妈妈, but 妈妈 does not bring in 爸爸.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "父母": ("爸妈", "爸爸", "妈妈"), "爸妈": ("父母", "爸爸", "妈妈"),
    "母亲": ("妈妈", "老妈"), "妈妈": ("母亲", "老妈"), "老妈": ("妈妈", "母亲"),
    "父亲": ("爸爸", "老爸"), "爸爸": ("父亲", "老爸"), "老爸": ("爸爸", "父亲"),
    "丈夫": ("老公",), "老公": ("丈夫",), "妻子": ("老婆", "太太"), "老婆": ("妻子", "太太"),
    "太太": ("妻子", "老婆"), "子女": ("孩子", "儿子", "女儿"), "孩子": ("儿子", "女儿"),
    "parents": ("mom", "mum", "dad", "mother", "father"), "mother": ("mom", "mum"), "mom": ("mother", "mum"),
    "mum": ("mother", "mom"), "father": ("dad",), "dad": ("father",), "kids": ("children",),
    "children": ("kids",), "spouse": ("wife", "husband"),
}  # fmt: skip

_CJK = re.compile(r"[\u4e00-\u9fff]")
_WORDS = re.compile(r"[a-z]+")


def expand_query(query: str) -> str:
    """``query`` followed by the synonyms of its family words (:data:`SYNONYMS`), each
    added once and only if the query lacks it."""
    words = set(_WORDS.findall(query.lower()))
    extra: list[str] = []
    for head, others in SYNONYMS.items():
        chinese = bool(_CJK.match(head))
        if (head in query) if chinese else (head in words):
            for word in others:
                present = (word in query) if chinese else (word in words)
                if not present and word not in extra:
                    extra.append(word)
    return f"{query} {' '.join(extra)}" if extra else query
