"""Offline extractive summarization: pick the most informative sentences within a token cap.

Pure and deterministic (no network, no model, no randomness): the summary path hmem
uses when no LLM is configured or the LLM fails. A sentence scores for numbers,
dates, names, first-person statements, decisions/preferences and tool outcomes, and
loses for greetings, filler and questions. Chinese is handled like English: sentences
split on ``。！？；…`` as well as ``.!?``, labels follow the conversation's language.

Incremental: the previous summary's sentences compete with the new ones (with a
bonus, since they already won once), so the rolling summary stays within its cap.

Example::

    >>> from hmem.types import Message
    >>> class Words:  # any hmem Tokenizer works; a word counter keeps the example short
    ...     def count(self, text): return len(text.split())
    ...     def truncate(self, text, n): return " ".join(text.split()[:n])
    >>> msgs = [Message(role="user", content="Hi there! I moved to Berlin on 3 May 2024."),
    ...         Message(role="assistant", content="Nice. How can I help?")]
    >>> extractive_summary(None, msgs, tokenizer=Words(), budget=12)
    'User: I moved to Berlin on 3 May 2024.'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from hmem.types import Message

__all__ = [
    "Candidate",
    "detect_language",
    "extractive_summary",
    "message_label",
    "message_text",
    "score_sentence",
    "split_sentences",
]


class _Counter(Protocol):
    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


# -- language ------------------------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")


def detect_language(text: str) -> str:
    """``"zh"`` when CJK characters outnumber Latin words, else ``"en"``.

    >>> detect_language("我下周三去上海出差"), detect_language("I fly to Shanghai on Wednesday")
    ('zh', 'en')
    """
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN_WORD.findall(text))
    return "zh" if cjk > 0 and cjk >= latin else "en"


_LABELS = {
    "en": {"user": "User", "assistant": "Assistant", "tool": "Tool", "system": "System", "developer": "Developer"},
    "zh": {"user": "用户", "assistant": "助手", "tool": "工具", "system": "系统", "developer": "开发者"},
}
_SEP = {"en": ": ", "zh": "："}
_JOIN = {"en": " ", "zh": ""}
_ALL_LABELS = sorted({v for table in _LABELS.values() for v in table.values()}, key=len, reverse=True)
_LABEL_PREFIX = re.compile(r"^(?P<label>(?:" + "|".join(map(re.escape, _ALL_LABELS)) + r")(?: [\w.-]+)?)\s*[:：]\s*")


def message_label(message: Message, language: str) -> str:
    """The role label in ``language`` ("User" / "用户" …), with a tool's name if it has one."""
    label = _LABELS.get(language, _LABELS["en"])[message.role]
    if message.role == "tool" and message.name:
        label = f"{label} {message.name}"
    return label


def message_text(message: Message, *, max_args_chars: int = 200) -> str:
    """A message as one line of text: its content plus any tool calls it makes."""
    parts = [message.text.strip()] if message.text.strip() else []
    for call in message.tool_calls:
        args = call.arguments if len(call.arguments) <= max_args_chars else call.arguments[:max_args_chars] + "…"
        parts.append(f"→ {call.name}({args})")
    return " ".join(parts)


# -- sentences -------------------------------------------------------------------------------

_CJK_END = frozenset("。！？；…")
_LATIN_END = frozenset(".!?;")
_CLOSERS = frozenset("\"'”’」』）)]】")


def split_sentences(text: str) -> list[str]:
    """Split English and Chinese text into sentences (newlines always split).

    A CJK terminator (``。！？；…``) ends a sentence at once; ``.!?;`` only when
    followed by whitespace or the end, so ``3.5`` and ``v1.2`` stay whole.

    >>> split_sentences("我叫王伟。我住在上海！Price is 3.5 euros. OK?")
    ['我叫王伟。', '我住在上海！', 'Price is 3.5 euros.', 'OK?']
    """
    out: list[str] = []
    for raw_line in text.splitlines():
        line = raw_line.strip()
        start = 0
        i = 0
        n = len(line)
        while i < n:
            ch = line[i]
            if ch in _CJK_END or ch in _LATIN_END:
                j = i + 1
                while j < n and (line[j] in _CJK_END or line[j] in _LATIN_END or line[j] in _CLOSERS):
                    j += 1
                if ch in _CJK_END or j == n or line[j].isspace():
                    piece = line[start:j].strip()
                    if piece:
                        out.append(piece)
                    start = j
                i = j
                continue
            i += 1
        tail = line[start:].strip()
        if tail:
            out.append(tail)
    return out


# -- scoring ---------------------------------------------------------------------------------

_NUMBER = re.compile(r"\d|[一二三四五六七八九十百千万两][个岁月日号点年天晚周元块分钟小时次位人间张]")
_DATE = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"today|tomorrow|yesterday|tonight|weekend|next (?:week|month|year)|last (?:week|month|year))\b"
    r"|\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}"
    r"|[年月日号]|星期|周[一二三四五六日末]|今天|明天|昨天|后天|前天|下周|上周|下个月|上个月|今年|明年|去年",
    re.IGNORECASE,
)
#: A word by which speakers speak of themselves (what they say is about them).
FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|me|my|mine|myself|we|we're|our|us)\b|我", re.IGNORECASE)
_COMMIT = re.compile(
    r"\b(?:decid\w*|agree\w*|plan\w*|will|going to|let's|chose|choose|prefer\w*|like|love|hate|allergic|"
    r"need|want|booked|bought|moved|live|work\w*|confirm\w*|cancel\w*|must|never|always|favou?rite)\b"
    r"|决定|同意|打算|计划|准备|选择|选了|喜欢|讨厌|偏好|过敏|需要|想要|预订|订了|买了|搬|住在|工作|确认|取消|必须|从不|总是|最爱",
    re.IGNORECASE,
)
# Health and diet facts are the ones an assistant must never forget.
_CRITICAL = re.compile(
    r"\b(?:allerg\w*|vegetarian|vegan|diabet\w*|pregnan\w*|medication|intoleran\w*|halal|kosher)\b"
    r"|过敏|素食|吃素|糖尿病|怀孕|用药|不耐受|清真",
    re.IGNORECASE,
)
# Pleasantries that look informative to the features above ("How can I help you today?").
_SMALL_TALK = re.compile(
    r"^(?:hi|hello|hey|good (?:morning|afternoon|evening)|dear)\b|how can i help|anything else|nice to meet you"
    r"|^(?:你好|您好|嗨)|有什么(?:可以|能)帮|很高兴(?:认识|为您)|还有(?:什么|别的)需要",
    re.IGNORECASE,
)
_NAME_MARK = re.compile(r"叫|名叫|姓|名字")
_CAPITALIZED = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:[A-Z][a-z]+)*\b")
_FILLER = frozenset(
    {
        "hi", "hello", "hey", "thanks", "thank you", "ok", "okay", "sure", "yes", "no", "great", "cool",
        "nice", "bye", "goodbye", "got it", "of course", "noted", "you re welcome",
        "好的", "谢谢", "你好", "嗯", "好", "是的", "没问题", "不客气", "再见", "收到",
    }
)


def score_sentence(sentence: str, *, role: str | None = None) -> float:
    """How informative one sentence is (higher is better; any real number).

    >>> score_sentence("I moved to Berlin on 3 May.", role="user") > score_sentence("Thanks!", role="user")
    True
    """
    s = sentence.strip()
    score = 0.0
    if _NUMBER.search(s):
        score += 2.0
    if _DATE.search(s):
        score += 2.0
    names = {m for m in _CAPITALIZED.findall(s) if m not in {"I", "I'm"}}
    score += 1.5 * min(len(names), 2)
    if _NAME_MARK.search(s):
        score += 1.5
    if FIRST_PERSON.search(s):
        score += 1.5
    if _COMMIT.search(s):
        score += 1.5
    if _CRITICAL.search(s):
        score += 3.0
    if role == "tool":
        score += 2.0
    elif role == "user":
        score += 0.5
    if s.endswith(("?", "？")):
        # The assistant's questions ("Should I book it?") rarely carry facts; the user's may.
        score -= 1.5 if role == "assistant" else 0.5
    if _SMALL_TALK.search(s):
        score -= 3.0
    bare = re.sub(r"[\W_]+", " ", s.lower()).strip()
    if bare in _FILLER or (len(bare.split()) <= 2 and not _CJK.search(s) and score < 2) or (
        _CJK.search(s) and len(_CJK.findall(s)) <= 3 and score < 2
    ):
        score -= 2.0
    # Longer sentences carry a little more; log keeps them from winning on length alone.
    return score + 0.25 * math.log1p(len(s))


_STOP = frozenset(
    {
        "the", "a", "an", "and", "or", "but", "to", "of", "in", "on", "at", "for", "with", "is", "are",
        "was", "were", "be", "been", "am", "i", "you", "he", "she", "it", "we", "they", "me", "my", "your",
        "our", "their", "this", "that", "these", "those", "so", "also", "please", "noted", "sure", "ok",
        "okay", "yes", "no",
    }
)


def _content(sentence: str) -> frozenset[str]:
    """Content words (Latin) and character bigrams (CJK) of a sentence, for redundancy checks."""
    words = {w for w in re.findall(r"[a-z0-9:']+", sentence.lower()) if w not in _STOP}
    for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", sentence):
        words.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return frozenset(words)


def _redundant(cand: Candidate, chosen: Sequence[Candidate]) -> bool:
    """True when most of ``cand``'s content already appears in one chosen sentence
    (the assistant echoing the user: "Noted: you are allergic to peanuts.")."""
    mine = _content(cand.sentence)
    if not mine:
        return False
    return any(len(mine & _content(c.sentence)) >= 0.6 * len(mine) for c in chosen)


# -- selection -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    """One sentence that may enter the summary: its source line, label and score."""

    source: int  # index of the line it came from (previous-summary lines first)
    order: int  # global position, for output in conversation order
    label: str | None
    sentence: str
    score: float


def _candidates(previous: str | None, messages: Sequence[Message], language: str) -> list[Candidate]:
    out: list[Candidate] = []
    seen: set[str] = set()
    source = 0

    def add(label: str | None, text: str, role: str | None, bonus: float) -> None:
        nonlocal source
        for sentence in split_sentences(text):
            key = re.sub(r"\s+", " ", sentence.lower())
            if key in seen:
                continue
            seen.add(key)
            out.append(Candidate(source, len(out), label, sentence, score_sentence(sentence, role=role) + bonus))
        source += 1

    for line in (previous or "").splitlines():
        match = _LABEL_PREFIX.match(line.strip())
        label = match.group("label") if match else None
        role = "tool" if label and label.split(" ")[0] in ("Tool", "工具") else None
        add(label, line.strip()[match.end() :] if match else line, role, 1.0)
    for message in messages:
        add(message_label(message, language), message_text(message), message.role, 0.0)
    return out


def _render(chosen: Sequence[Candidate], language: str) -> str:
    lines: list[str] = []
    current: tuple[int, str | None] | None = None
    parts: list[str] = []

    def close() -> None:
        if current is not None and parts:
            body = _JOIN[language].join(parts)
            lines.append(f"{current[1]}{_SEP[language]}{body}" if current[1] else body)

    for cand in sorted(chosen, key=lambda c: c.order):
        key = (cand.source, cand.label)
        if key != current:
            close()
            current, parts = key, []
        parts.append(cand.sentence)
    close()
    return "\n".join(lines)


def extractive_summary(
    previous: str | None,
    messages: Sequence[Message],
    *,
    tokenizer: _Counter,
    budget: int,
    language: str | None = None,
) -> str:
    """Fold ``messages`` into ``previous`` by keeping the best sentences within ``budget`` tokens.

    Output is one line per source (``"User: …"`` / ``"用户：…"``), in conversation order.
    Never longer than ``budget`` tokens as counted by ``tokenizer``; "" only when
    there is no text at all or ``budget`` < 1.
    """
    if budget < 1:
        return ""
    lang = language or detect_language((previous or "") + " " + " ".join(m.text for m in messages))
    cands = _candidates(previous, messages, lang)
    if not cands:
        return ""
    # Best first; among equals the newer one, since a rolling summary should track the present.
    # Filler (negative score) never enters, unless there is nothing else at all.
    ranked = sorted(cands, key=lambda c: (-c.score, -c.order))
    if any(c.score > 0 for c in ranked):
        ranked = [c for c in ranked if c.score > 0]
    chosen: list[Candidate] = []
    used = 0
    for cand in ranked:
        cost = tokenizer.count(cand.sentence) + (tokenizer.count(cand.label) + 1 if cand.label else 0)
        if used + cost <= budget and not _redundant(cand, chosen):
            chosen.append(cand)
            used += cost
    text = _render(chosen, lang)
    # Joining and separators can tokenize differently from the parts: trim until it fits.
    while chosen and tokenizer.count(text) > budget:
        chosen.remove(min(chosen, key=lambda c: (c.score, c.order)))
        text = _render(chosen, lang)
    if not chosen:
        best = ranked[0]
        head = f"{best.label}{_SEP[lang]}" if best.label else ""
        room = budget - tokenizer.count(head)
        text = (head + tokenizer.truncate(best.sentence, room)) if room > 0 else tokenizer.truncate(best.sentence, budget)
        while text and tokenizer.count(text) > budget:  # a tokenizer may count a prefix's join oddly
            text = text[:-1]
    return text
