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

Facts and other non-turn items are indexed as their text. The previous turn is kept
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

from hmem.types import MemoryItem

__all__ = ["PREVIOUS_TURN_KEY", "PREVIOUS_TURN_MAX_CHARS", "dense_text", "lexical_text", "speaker_line"]

#: Metadata key of an archived turn holding the previous turn of its session.
PREVIOUS_TURN_KEY = "previous_turn"
#: The previous turn is cut to this many characters: it is context, and a pasted
#: document before a short reply must not drown the reply in BM25 length normalisation.
PREVIOUS_TURN_MAX_CHARS = 1000

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def speaker_line(speaker: str | None, text: str) -> str:
    """``"<speaker>: <text>"`` (just the text without a speaker)."""
    return f"{speaker}: {text}" if speaker else text


def _is_turn(item: MemoryItem) -> bool:
    return item.kind == "turn"


def dense_text(item: MemoryItem) -> str:
    """The text embedded for ``item``: ``"<speaker>: <text>"`` for a turn, else the text."""
    return speaker_line(item.speaker, item.text) if _is_turn(item) else item.text


def lexical_text(item: MemoryItem) -> str:
    """The text BM25 indexes for ``item``: date, previous turn and speaker line for a
    turn (English month names, so it never depends on the locale); else the text."""
    if not _is_turn(item):
        return item.text
    day = item.created_at
    parts = [f"[{day.day} {_MONTHS[day.month - 1]} {day.year}]"]
    previous = item.metadata.get(PREVIOUS_TURN_KEY)
    if isinstance(previous, str) and previous.strip():
        parts.append(previous[:PREVIOUS_TURN_MAX_CHARS] + "\n" + speaker_line(item.speaker, item.text))
    else:
        parts.append(speaker_line(item.speaker, item.text))
    return " ".join(parts)
