"""Tokenization for lexical (BM25) retrieval: English and CJK, deterministic, fast.

The same function runs at ingest and at query time, so both sides always agree.

Pipeline (see docs/lexical.md for the reasoning and the measurement behind it):

1. NFKC normalization (full-width letters/digits become ASCII, ligatures split),
   curly apostrophes become ``'``, then lowercase.
2. Split into runs: *CJK runs* (Han, kana, Hangul) and *word runs* (unicode letters
   and digits, with inner apostrophes: ``don't``). Everything else — punctuation,
   emoji, symbols, ``_`` — separates tokens and is dropped. Numbers are kept.
3. Word runs: a trailing possessive ``'s`` is cut, words of :data:`ENGLISH_STOPWORDS`
   are dropped, and the rest are Snowball-stemmed (``stem=True``; PyStemmer, else the
   pure-Python ``snowballstemmer``, else no stemming with a one-time warning).
4. Chinese runs: by default (:data:`DEFAULT_CJK_MODE`, chosen by measurement) each
   character plus each pair of adjacent characters; ``cjk="jieba+bigram"`` uses jieba
   words plus bigrams instead (``"jieba"`` and ``"bigram"`` alone also exist). Runs with
   kana or Hangul (Japanese, Korean) get bigrams only. :data:`CHINESE_STOPWORDS` are
   dropped from every kind of CJK token.

Example::

    >>> tokenize("The users' favourite cafés, in 2024!")
    ['user', 'favourit', 'café', '2024']
    >>> tokenize("Running shoes", stem=False)
    ['running', 'shoes']
    >>> tokenize("我喜欢喝咖啡", cjk="bigram")
    ['我喜', '喜欢', '欢喝', '喝咖', '咖啡']
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
import warnings
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Generic, Literal, TypeAlias, TypeVar

__all__ = [
    "CHINESE_STOPWORDS",
    "DEFAULT_CJK_MODE",
    "ENGLISH_STOPWORDS",
    "SAME_WORDING",
    "CjkMode",
    "same_wording",
    "stemmer_name",
    "term_set",
    "tokenize",
    "tokenizer_signature",
]

CjkMode: TypeAlias = Literal["jieba", "bigram", "jieba+bigram", "unigram+bigram"]

#: How Chinese runs are tokenized unless the caller says otherwise. Chosen on the
#: sample in bench/data/lexical_zh_sample.json (``bench/bench_bm25.py --zh``):
#: unigrams + bigrams had the best MRR and recall@5 there, ahead of jieba + bigrams,
#: and tokenize ~6x faster with no dictionary to load; see docs/lexical.md.
DEFAULT_CJK_MODE: CjkMode = "unigram+bigram"


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: English stopwords: Lucene's classic 33-word list plus personal pronouns, forms of
#: be/have/do, modal verbs and question words. Small on purpose: BM25's idf already
#: discounts common words; this list exists so that the longest postings (speed) and
#: queries made only of function words (which should find nothing) are handled.
ENGLISH_STOPWORDS: frozenset[str] = _word_set(
    """
    a an and are as at be but by for if in into is it no not of on or such that the
    their then there these they this to was will with
    i me my mine myself you your yours yourself we us our ours he him his she her hers
    its itself them theirs themselves
    am were been being have has had having do does did doing
    can could would should shall may might must
    what which who whom whose when where why how
    from about than so too very just also all any some
    i'm i've i'd i'll you're you've it's that's there's don't doesn't didn't
    isn't aren't wasn't weren't can't won't
    """
)

#: Chinese function words, pronouns and question words (the counterpart of the
#: English list), dropped from every CJK token kind: words, unigrams and bigrams.
CHINESE_STOPWORDS: frozenset[str] = _word_set(
    """
    的 了 着 过 吗 呢 吧 啊 呀 么 嘛 和 与 及 或 是 在 也 都 就 还 又 而 并 但 把 被 让 给 对 从 向
    这 那 个 之 我 你 您 他 她 它 我们 你们 他们 她们 咱们 自己 这个 那个 这些 那些 一个
    什么 怎么 怎样 哪 哪个 哪些 哪里 哪儿 几 多少 为什么 时候 要 会 能 可以 有 没有
    们 什 怎
    """
)

# Han (URO, ext A, compatibility, ext B+ and ideographic zero), kana, Hangul.
_HAN = "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_KANA_HANGUL = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
_CJK = _HAN + _KANA_HANGUL
_RUN = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+(?:'[^\W_{_CJK}]+)*)")
_KANA_HANGUL_RE = re.compile(f"[{_KANA_HANGUL}]")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def tokenize(text: str, *, stem: bool = True, cjk: CjkMode = DEFAULT_CJK_MODE) -> list[str]:
    """Split ``text`` into BM25 terms (order kept, duplicates kept: they are term
    frequencies). Deterministic for a given installed stemmer and jieba dictionary.

    Example::

        >>> tokenize("I'm learning Python 3 😀 和 机器学习")
        ['learn', 'python', '3', '机', '器', '学', '习', '机器', '器学', '学习']
        >>> tokenize("我喜欢机器学习", cjk="jieba+bigram")
        ['喜欢', '机器', '学习', '我喜', '喜欢', '欢机', '机器', '器学', '学习']
    """
    if not isinstance(text, str):
        raise TypeError(f"tokenize() needs a str, got {type(text).__name__}")
    norm = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).lower()
    out: list[str] = []
    words: list[str] = []
    for match in _RUN.finditer(norm):
        run = match.group(1)
        if run is None:
            word = match.group(2)
            if word.endswith("'s"):
                word = word[:-2]
            if word not in ENGLISH_STOPWORDS:
                # Stem in batches (one C call) but keep the text order of terms.
                words.append(word)
                out.append("")
            continue
        out.extend(_cjk_tokens(run, cjk))
    if words:
        stems = _stem_words(words) if stem else words
        it = iter(stems)
        out = [next(it) if tok == "" else tok for tok in out]
    return out


#: Texts up to this long have their :func:`term_set` cached (recall asks for the terms of
#: the same candidates again and again); longer ones are tokenized each time.
TERM_SET_CACHED_CHARS = 2000


def term_set(text: str, *, stem: bool = True, cjk: CjkMode = DEFAULT_CJK_MODE) -> frozenset[str]:
    """The distinct terms of ``text`` (:func:`tokenize`), cached for short texts.

    >>> sorted(term_set("Cats and a cat"))
    ['cat']
    """
    if len(text) > TERM_SET_CACHED_CHARS:
        return frozenset(tokenize(text, stem=stem, cjk=cjk))
    return _cached_term_set(text, stem, cjk)


#: Two texts whose terms overlap this much (Jaccard of :func:`term_set`) say the same thing
#: in the same words: the write path merges a near-duplicate fact only then, and the
#: assembler renders such a memory once.
SAME_WORDING = 0.8


def same_wording(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` share at least :data:`SAME_WORDING` of their terms (Jaccard).

    >>> same_wording("I'm allergic to peanuts.", "I am ALLERGIC to peanuts")
    True
    >>> same_wording("Caroline went to an LGBTQ support group yesterday",
    ...              "Caroline went to an LGBTQ conference two days ago")
    False
    """
    x, y = term_set(a), term_set(b)
    return bool(x | y) and len(x & y) / len(x | y) >= SAME_WORDING


@lru_cache(maxsize=8192)
def _cached_term_set(text: str, stem: bool, cjk: CjkMode) -> frozenset[str]:
    return frozenset(tokenize(text, stem=stem, cjk=cjk))


def _cjk_tokens(run: str, mode: CjkMode) -> list[str]:
    if len(run) == 1:
        return [] if run in CHINESE_STOPWORDS else [run]
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    if mode == "bigram" or _KANA_HANGUL_RE.search(run):
        tokens = bigrams
    elif mode == "unigram+bigram":
        tokens = list(run) + bigrams
    elif mode == "jieba":
        tokens = _jieba_cut(run)
    else:
        tokens = _jieba_cut(run) + bigrams
    return [t for t in tokens if t not in CHINESE_STOPWORDS]


# -- lazily loaded helpers: jieba and the stemmer --------------------------------------

_T = TypeVar("_T")


class _Lazy(Generic[_T]):
    """A value built on first use, once, thread-safely (no work at import)."""

    def __init__(self, load: Callable[[], _T]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._value: _T | None = None
        self._loaded = False

    def get(self) -> _T:
        if not self._loaded:
            with self._lock:
                if not self._loaded:
                    self._value = self._load()
                    self._loaded = True
        return self._value  # type: ignore[return-value]


def _load_jieba() -> Callable[[str], list[str]]:
    import jieba

    # jieba logs "Building prefix dict ..." at DEBUG to stderr; callers never want it.
    jieba.setLogLevel(logging.WARNING)
    logging.getLogger("jieba").setLevel(logging.WARNING)
    tok = jieba.Tokenizer()  # our own instance: no shared global state with the app
    tok.initialize()  # reads the dictionary shipped in the package (and a temp cache); no network

    def cut(run: str) -> list[str]:
        # cut_for_search also emits the sub-words of long words, which helps recall
        # when a query and a document are segmented differently.
        return list(tok.cut_for_search(run, HMM=True))

    return cut


def _load_stemmer() -> tuple[Callable[[], Any] | None, str]:
    """A stemmer factory (stemmer objects are not thread-safe: one per thread)."""
    try:
        import Stemmer  # PyStemmer: C Snowball, ~1 µs per word

        return (lambda: Stemmer.Stemmer("english")), "snowball-english"
    except ImportError:
        pass
    try:
        import snowballstemmer  # same Snowball algorithm, pure Python, same output

        return (lambda: snowballstemmer.stemmer("english")), "snowball-english"
    except ImportError:
        warnings.warn(
            "hmem: neither PyStemmer nor snowballstemmer is installed; BM25 terms are not stemmed. "
            "Install PyStemmer (`pip install pystemmer`) and re-index, since stemmed and unstemmed "
            "terms do not match each other.",
            RuntimeWarning,
            stacklevel=2,
        )
        return None, "none"


_JIEBA: _Lazy[Callable[[str], list[str]]] = _Lazy(_load_jieba)
_STEMMER: _Lazy[tuple[Callable[[], Any] | None, str]] = _Lazy(_load_stemmer)
_per_thread = threading.local()


def _jieba_cut(run: str) -> list[str]:
    return _JIEBA.get()(run)


def _stem_words(words: list[str]) -> list[str]:
    stemmer = getattr(_per_thread, "stemmer", None)
    if stemmer is None:
        make = _STEMMER.get()[0]
        if make is None:
            return words
        stemmer = _per_thread.stemmer = make()
    stems: list[str] = stemmer.stemWords(words)
    return stems


def stemmer_name() -> str:
    """``"snowball-english"`` when a Snowball stemmer is available, else ``"none"``."""
    return _STEMMER.get()[1]


def tokenizer_signature(*, stem: bool = True, cjk: CjkMode = DEFAULT_CJK_MODE) -> str:
    """A short string that changes whenever :func:`tokenize` would produce other terms
    for the same settings; persisted indexes store it to detect a mismatch.

    Example::

        >>> tokenizer_signature(stem=False, cjk="bigram")
        'hmem-text-v1;stem=off;cjk=bigram'
    """
    stem_part = stemmer_name() if stem else "off"
    return f"hmem-text-v1;stem={stem_part};cjk={cjk}"
