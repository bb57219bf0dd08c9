"""What the long-term indexes see of an item: a documented representation, pure.

The stored :attr:`MemoryItem.text` of an archived turn stays verbatim; the *indexed*
texts add what a question about that turn is likely to mention but the turn alone
does not say:

- **lexical (BM25)**: ``"[<session date>] <previous turn>\\n<speaker>: <text> (<dates>)"``.
  A turn is often the answer to the previous turn's question ("Yes, twice a week!"),
  so the pair carries the topic; questions name people ("What did Caroline …") and
  dates ("… in May 2023"). BM25 only gains from the extra words: a query term that
  appears in the previous turn now also points at its answer. ``(<dates>)`` are the
  dates the turn's own text refers to, resolved against the session date by
  :func:`hmem.longterm.dates.resolve_dates` ("yesterday" said on 8 May 2023 →
  ``(7 May 2023)``; keys joined by ``"; "``, the session date itself left out); a turn
  without any has no parentheses.
- **dense (embedding)**: ``"<speaker>: <text>"``. One sentence embedding averages its
  input, so the previous turn would blur the turn's own meaning (measured on the sample
  set: dense recall@10 65.5 → 50.0 with the previous turn); the speaker's name stays
  because questions name people.
- **sentence keys (embedding)**: for the same reason, a turn of several sentences is
  also embedded one sentence at a time, ``"<speaker>: <sentence>"`` (at most
  :data:`MAX_SENTENCE_KEYS`, :func:`sentence_keys`): "I just signed up for a pottery
  class yesterday" stands out of "Wow, Caroline! That's great! I just signed up … Have you
  tried it?" (:mod:`hmem.longterm.keys`, docs/longterm.md "Sentence keys").

Facts and other non-turn items are indexed as their text, except that BM25 sees a fact
extracted offline as the sentence it was said in, in the user's own words
(``item.metadata["said"]``): the statement shown in the prompt names the speaker ("Maya
went hiking …"), and that name, which hmem inserted, would match every question about
the user (measured on LoCoMo dev: docs/longterm.md "Fact extraction: atomic facts").

Every indexed text stays within :data:`MAX_INDEX_CHARS` (the limit of any hmem text,
which embedders and lexical indexes enforce): for a turn near that size the context is
dropped (previous turn, then resolved dates, then session date, then speaker), never
the turn itself, so a message that was accepted is always indexed. The previous turn is kept
in ``item.metadata["previous_turn"]`` as ``"<speaker>: <text>"`` (filled by
:meth:`LongTermStore.archive_turns`), so :meth:`LongTermStore.reindex` rebuilds
exactly the same index texts. See docs/eval.md for the measurements behind each part.

Example::

    >>> from datetime import datetime, UTC
    >>> from hmem.types import MemoryItem
    >>> it = MemoryItem(id="1", user_id="u", text="Yes, twice a week! Went yesterday.", kind="turn",
    ...                 speaker="Mel", created_at=datetime(2023, 5, 8, tzinfo=UTC),
    ...                 metadata={"previous_turn": "Caroline: Do you still go swimming?"})
    >>> print(lexical_text(it))
    [8 May 2023] Caroline: Do you still go swimming?
    Mel: Yes, twice a week! Went yesterday. (7 May 2023)
    >>> dense_text(it)
    'Mel: Yes, twice a week! Went yesterday.'
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hmem.longterm.dates import date_keys, day_key, resolve_dates
from hmem.types import MAX_CONTENT_CHARS, MemoryItem

__all__ = [
    "DATE_SCAN_CHARS",
    "MAX_DATE_KEYS",
    "MAX_INDEX_CHARS",
    "MAX_SENTENCE_KEYS",
    "PREVIOUS_TURN_KEY",
    "PREVIOUS_TURN_MAX_CHARS",
    "SAID_KEY",
    "dense_line",
    "dense_text",
    "key_positions",
    "lexical_text",
    "sentence_keys",
    "sentences",
    "speaker_line",
]

#: Metadata key of an archived turn holding the previous turn of its session.
PREVIOUS_TURN_KEY = "previous_turn"
#: Metadata key of an extracted fact holding the sentence it was said in (what BM25 sees).
SAID_KEY = "said"
#: The previous turn is cut to this many characters: it is context, and a pasted
#: document before a short reply must not drown the reply in BM25 length normalisation.
PREVIOUS_TURN_MAX_CHARS = 1000

#: Dates are looked for in this many leading characters of a turn, and at most
#: :data:`MAX_DATE_KEYS` are added: a pasted document is not a conversation turn, and
#: the resolver's cost grows with the text (~0.05 ms for a 25-word turn, a few ms per
#: 1,000 characters in the worst case), so a maximal message must not stall ingest.
DATE_SCAN_CHARS = 4000
#: See :data:`DATE_SCAN_CHARS`: more keys would outweigh the turn's own words in BM25.
MAX_DATE_KEYS = 12

#: Sentence keys of one turn (its first sentences): a pasted document is not a
#: conversation turn, and each key is one more vector to embed and store.
MAX_SENTENCE_KEYS = 8

#: A sentence: text up to and including its closing marks (Latin and CJK), or the rest.
_SENTENCE = re.compile(r"[^.!?\u3002\uff01\uff1f]+[.!?\u3002\uff01\uff1f]*")
_WORDLIKE = re.compile(r"\w")
#: A sentence worth a key of its own holds a word of three letters (or characters):
#: "Hi!" or "OK." alone would match everything a little.
_KEY_WORTHY = re.compile(r"\w{3}")

#: Longest text handed to an index. The same as the message limit: embedders and
#: lexical indexes check every text against it, so added context must fit inside it.
MAX_INDEX_CHARS = MAX_CONTENT_CHARS


def speaker_line(speaker: str | None, text: str) -> str:
    """``"<speaker>: <text>"`` (just the text without a speaker)."""
    return f"{speaker}: {text}" if speaker else text


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences after ``.``, ``!``, ``?`` and their CJK forms (kept),
    stripped; pieces without a letter or digit are dropped.

    >>> sentences("Wow, Mel! How'd they like it? We went... 去了。好吗？")
    ['Wow, Mel!', "How'd they like it?", 'We went...', '去了。', '好吗？']
    """
    return [s.strip() for s in _SENTENCE.findall(text) if _WORDLIKE.search(s)]


def sentence_keys(item: MemoryItem) -> list[str]:
    """The texts embedded as sentence keys of ``item``: for an archived turn of two or
    more sentences worth a key, each as ``"<speaker>: <sentence>"`` (its first
    :data:`MAX_SENTENCE_KEYS`); none for a one-sentence turn (the turn is its own key)
    or any other kind of item.

    >>> it = MemoryItem(id="1", user_id="u", kind="turn", speaker="Mel",
    ...                 text="Hi! Great news. I signed up for a pottery class.")
    >>> sentence_keys(it)
    ['Mel: Great news.', 'Mel: I signed up for a pottery class.']
    """
    if item.kind != "turn":
        return []
    parts = sentences(item.text)
    worthy = [parts[i] for i in key_positions(parts)]
    if len(worthy) < 2:
        return []
    return [dense_line(item.kind, item.speaker, s) for s in worthy]


def key_positions(parts: Sequence[str]) -> list[int]:
    """Where in a turn's :func:`sentences` its sentence keys come from: key ``n`` is
    ``parts[key_positions(parts)[n]]`` (the first :data:`MAX_SENTENCE_KEYS` worth a key).

    >>> key_positions(["Hi!", "Great news.", "OK.", "I signed up."])
    [1, 3]
    """
    return [i for i, s in enumerate(parts) if _KEY_WORTHY.search(s)][:MAX_SENTENCE_KEYS]


def _first_fitting(*candidates: str) -> str:
    # Candidates go from the most context to none; the last one is the verbatim text,
    # which hmem's text checks already hold to the limit.
    for text in candidates[:-1]:
        if len(text) <= MAX_INDEX_CHARS:
            return text
    return candidates[-1]


def dense_line(kind: str, speaker: str | None, text: str) -> str:
    """The embedded text of an item or entry with these fields (see :func:`dense_text`).

    >>> dense_line("turn", "Mel", "hi"), dense_line("fact", "Mel", "hi")
    ('Mel: hi', 'hi')
    """
    if kind != "turn":
        return text
    return _first_fitting(speaker_line(speaker, text), text)


def dense_text(item: MemoryItem) -> str:
    """The text embedded for ``item``: ``"<speaker>: <text>"`` for a turn, else the text."""
    return dense_line(item.kind, item.speaker, item.text)


def lexical_text(item: MemoryItem) -> str:
    """The text BM25 indexes for ``item``: date, previous turn, speaker line and the
    dates the turn refers to, for a turn (English month names, so it never depends on
    the locale); for a fact, the sentence it was said in when known; else the text."""
    if item.kind != "turn":
        said = item.metadata.get(SAID_KEY)
        return said if isinstance(said, str) and said.strip() else item.text
    day = item.created_at.date()
    session = day_key(day)
    date = f"[{session}] "
    line = speaker_line(item.speaker, item.text)
    # The session date is already in the text: repeating it would only raise its weight.
    keys = [k for k in date_keys(resolve_dates(item.text[:DATE_SCAN_CHARS], day)) if k != session][:MAX_DATE_KEYS]
    dated = f"{line} ({'; '.join(keys)})" if keys else line
    previous = item.metadata.get(PREVIOUS_TURN_KEY)
    with_previous = (
        date + previous[:PREVIOUS_TURN_MAX_CHARS] + "\n" + dated
        if isinstance(previous, str) and previous.strip() else date + dated
    )
    return _first_fitting(with_previous, date + dated, date + line, line, item.text)
