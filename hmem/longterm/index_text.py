"""What the long-term indexes see of an item: a documented representation, pure.

The stored :attr:`MemoryItem.text` of an archived turn stays verbatim; the *indexed*
texts add what a question about that turn is likely to mention but the turn alone
does not say:

- **lexical (BM25)**: ``"[<session date>] <previous turn>\\n<speaker>: <text>"``.
  A turn is often the answer to the previous turn's question ("Yes, twice a week!"),
  so the pair carries the topic; questions name people ("What did Caroline …") and
  dates ("… in May 2023"). BM25 only gains from the extra words: a query term that
  appears in the previous turn now also points at its answer.
- **dense (embedding)**: ``"<speaker>: <text>"``. One sentence embedding averages its
  input, so the previous turn would blur the turn's own meaning (measured on the sample
  set: dense recall@10 65.5 → 50.0 with the previous turn); the speaker's name stays
  because questions name people.

Facts and other non-turn items are indexed as their text.

Every indexed text stays within :data:`MAX_INDEX_CHARS` (the limit of any hmem text,
which embedders and lexical indexes enforce): for a turn near that size the context is
dropped (previous turn, then date, then speaker), never the turn itself, so a message
that was accepted is always indexed. The previous turn is kept
in ``item.metadata["previous_turn"]`` as ``"<speaker>: <text>"`` (filled by
:meth:`LongTermStore.archive_turns`), so :meth:`LongTermStore.reindex` rebuilds
exactly the same index texts. See docs/eval.md for the measurements behind each part.

Example::

    >>> from datetime import datetime, UTC
    >>> from hmem.types import MemoryItem
    >>> it = MemoryItem(id="1", user_id="u", text="Yes, twice a week!", kind="turn", speaker="Mel",
    ...                 created_at=datetime(2023, 5, 8, tzinfo=UTC),
    ...                 metadata={"previous_turn": "Caroline: Do you still go swimming?"})
    >>> print(lexical_text(it))
    [8 May 2023] Caroline: Do you still go swimming?
    Mel: Yes, twice a week!
    >>> dense_text(it)
    'Mel: Yes, twice a week!'
"""

from __future__ import annotations

from hmem.types import MAX_CONTENT_CHARS, MemoryItem

__all__ = [
    "MAX_INDEX_CHARS",
    "PREVIOUS_TURN_KEY",
    "PREVIOUS_TURN_MAX_CHARS",
    "dense_line",
    "dense_text",
    "lexical_text",
    "speaker_line",
]

#: Metadata key of an archived turn holding the previous turn of its session.
PREVIOUS_TURN_KEY = "previous_turn"
#: The previous turn is cut to this many characters: it is context, and a pasted
#: document before a short reply must not drown the reply in BM25 length normalisation.
PREVIOUS_TURN_MAX_CHARS = 1000

#: Longest text handed to an index. The same as the message limit: embedders and
#: lexical indexes check every text against it, so added context must fit inside it.
MAX_INDEX_CHARS = MAX_CONTENT_CHARS

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def speaker_line(speaker: str | None, text: str) -> str:
    """``"<speaker>: <text>"`` (just the text without a speaker)."""
    return f"{speaker}: {text}" if speaker else text


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
    """The text BM25 indexes for ``item``: date, previous turn and speaker line for a
    turn (English month names, so it never depends on the locale); else the text."""
    if item.kind != "turn":
        return item.text
    day = item.created_at
    date = f"[{day.day} {_MONTHS[day.month - 1]} {day.year}] "
    line = speaker_line(item.speaker, item.text)
    previous = item.metadata.get(PREVIOUS_TURN_KEY)
    with_previous = (
        date + previous[:PREVIOUS_TURN_MAX_CHARS] + "\n" + line
        if isinstance(previous, str) and previous.strip() else date + line
    )
    return _first_fitting(with_previous, date + line, line, item.text)
