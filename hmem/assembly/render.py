"""The template that renders summary, profile and recalled items into a system message.

Replace it by passing your own :class:`ContextTemplate` to
:func:`hmem.assembly.assemble.assemble` (e.g. ``dataclasses.replace(DEFAULT_TEMPLATE,
recalled_item="* {text} ({date})")``). Placeholders are checked when the template is
built: an unknown one raises :class:`~hmem.errors.InvalidInput` right away, not in the
middle of a request.

Layout of the memory block (empty sections and empty headers are left out)::

    {memory_header}
    <section_separator>
    {summary_header}<item_separator>{summary_item}
    <section_separator>
    {profile_header}<item_separator>{profile_item}<item_separator>{profile_item}...
    <section_separator>
    {recalled_header}<item_separator>{recalled_group}<item_separator>{recalled_item}...

Example::

    >>> from hmem.types import Hit, MemoryItem
    >>> from datetime import datetime, UTC
    >>> item = MemoryItem(id="m1", user_id="u", text="Moved to Berlin", session_id="s7",
    ...                   created_at=datetime(2024, 5, 1, tzinfo=UTC))
    >>> hit = Hit(item=item, score=1.0)
    >>> DEFAULT_TEMPLATE.recalled_group_line(hit), DEFAULT_TEMPLATE.recalled(hit)
    ('[2024-05-01, session s7]', '- Moved to Berlin')
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import date
from functools import lru_cache
from typing import Any, Literal

from hmem.errors import InvalidInput
from hmem.longterm.dates import annotate_dates
from hmem.profile.model import format_value
from hmem.types import Hit, MemoryItem, ProfileEntry, ProfileValue

__all__ = ["DEFAULT_TEMPLATE", "ContextTemplate", "render_value"]

_SUMMARY_FIELDS = frozenset({"summary"})
_PROFILE_FIELDS = frozenset({"key", "value", "since", "confidence"})
_RECALLED_FIELDS = frozenset(
    {"text", "date", "datetime", "session", "kind", "speaker", "speaker_prefix", "id", "score", "importance"}
)
_GROUP_FIELDS = frozenset({"date", "session"})
_NUMERIC_FIELDS = frozenset({"confidence", "score", "importance"})


def render_value(value: ProfileValue | None) -> str:
    """A profile value as prompt text: :func:`hmem.profile.model.format_value` (the one
    rule for profile values in a prompt), ``""`` for a deleted value.

    >>> render_value(("tea", "chess")), render_value(True), render_value(None)
    ('tea, chess', 'yes', '')
    """
    return "" if value is None else format_value(value)


@dataclass(frozen=True, slots=True)
class ContextTemplate:
    """How memory tiers become prompt text.

    Item placeholders:

    * ``summary_item``: ``{summary}``
    * ``profile_item``: ``{key}``, ``{value}``, ``{since}`` (date set), ``{confidence}``
    * ``recalled_item``: ``{text}``, ``{date}`` (YYYY-MM-DD), ``{datetime}``
      (YYYY-MM-DD HH:MM UTC), ``{session}``, ``{kind}``, ``{speaker}``,
      ``{speaker_prefix}`` ("user: " or ""), ``{id}``, ``{score}``, ``{importance}``
    * ``recalled_group``: ``{date}``, ``{session}`` — a line written once before a run
      of recalled items that share it (their date and session), so a session's turns
      read as one dated excerpt and the date is not paid for on every line; ``""``
      puts no group lines (then say the date in ``recalled_item`` if you want it).

    Headers and separators are literal text (write ``{{`` for a brace in an item).
    ``memory_message="merge"`` appends the memory block to the system prompt's
    message (one system message: accepted by every chat template, including local
    models that reject a second system message); ``"separate"`` sends it as its own
    system message right after the system prompt.

    ``resolve_dates``: a recalled turn's relative dates are written out, resolved against
    the day it was said ("last Saturday" → "last Saturday (6 May 2023)";
    :func:`~hmem.longterm.dates.annotate_dates`), so the model reading the memory months
    later need not do the calendar arithmetic (facts are written so when extracted).

    ``recalled_order``: which recalled items are kept is always decided best match
    first; ``"chronological"`` (default) then shows them oldest first, so turns of one
    session stand together in the order they were said, each with its date;
    ``"rank"`` shows them best match first.
    """

    memory_header: str = (
        "# Memory\n"
        "Notes kept from earlier conversations with this user. Use them when they help; "
        "they may be outdated, and what the user says now takes precedence."
    )
    summary_header: str = "## Summary of this conversation so far"
    summary_item: str = "{summary}"
    profile_header: str = "## Known facts about the user"
    profile_item: str = "- {key}: {value}"
    recalled_header: str = "## Recalled from earlier conversations (dated, oldest first)"
    recalled_group: str = "[{date}, session {session}]"
    recalled_item: str = "- {speaker_prefix}{text}"
    section_separator: str = "\n\n"
    item_separator: str = "\n"
    unknown_session: str = "unknown"
    memory_message: Literal["merge", "separate"] = "merge"
    recalled_order: Literal["chronological", "rank"] = "chronological"
    resolve_dates: bool = True

    def __post_init__(self) -> None:
        allowed = {
            "summary_item": _SUMMARY_FIELDS,
            "profile_item": _PROFILE_FIELDS,
            "recalled_item": _RECALLED_FIELDS,
            "recalled_group": _GROUP_FIELDS,
        }
        for spec in fields(self):
            value = getattr(self, spec.name)
            where = f"template.{spec.name}"
            if spec.name == "memory_message":
                if value not in ("merge", "separate"):
                    raise InvalidInput(f"{where} must be 'merge' or 'separate', got {value!r}", field=where)
                continue
            if spec.name == "resolve_dates":
                if not isinstance(value, bool):
                    raise InvalidInput(f"{where} must be True or False, got {value!r}", field=where)
                continue
            if spec.name == "recalled_order":
                if value not in ("chronological", "rank"):
                    raise InvalidInput(f"{where} must be 'chronological' or 'rank', got {value!r}", field=where)
                continue
            if not isinstance(value, str):
                raise InvalidInput(f"{where} must be a string", field=where)
            if spec.name in allowed:
                _check_placeholders(value, allowed[spec.name], where)
        for name in ("summary_item", "profile_item", "recalled_item"):
            if not getattr(self, name).strip():
                raise InvalidInput(f"template.{name} must not be empty", field=f"template.{name}")

    # -- items ----------------------------------------------------------------------

    def recalled_group_line(self, hit: Hit) -> str:
        """The group line of ``hit`` (``""`` when groups are off)."""
        if not self.recalled_group:
            return ""
        item = hit.item
        return self.recalled_group.format(date=item.created_at.date().isoformat(),
                                          session=item.session_id or self.unknown_session)

    def summary(self, text: str) -> str:
        return self.summary_item.format(summary=text)

    def profile(self, entry: ProfileEntry) -> str:
        return self.profile_item.format(
            key=entry.key,
            value=render_value(entry.value),
            since=entry.valid_from.date().isoformat(),
            confidence=entry.confidence,
        )

    def writes_dates(self, item: MemoryItem) -> bool:
        """Whether :meth:`recalled` writes ``item``'s relative dates out (``resolve_dates``, a turn)."""
        return self.resolve_dates and item.kind == "turn"

    def recalled(self, hit: Hit, *, as_said: bool = False) -> str:
        """``hit``'s line; ``as_said``: its text as said, relative dates not written out."""
        item = hit.item
        text = item.text
        if not as_said and self.writes_dates(item):
            text = _dated(text, item.created_at.date())
        return self.recalled_item.format(
            text=text,
            date=item.created_at.date().isoformat(),
            datetime=item.created_at.strftime("%Y-%m-%d %H:%M UTC"),
            session=item.session_id or self.unknown_session,
            kind=item.kind,
            speaker=item.speaker or "",
            speaker_prefix=f"{item.speaker}: " if item.speaker else "",
            id=item.id,
            score=hit.score,
            importance=item.importance,
        )

    # -- block ----------------------------------------------------------------------

    def section(self, header: str, lines: Sequence[str]) -> str:
        """One section: header (if any) and its item lines."""
        return self.item_separator.join([header, *lines] if header else lines)

    def block(self, summary: Sequence[str], profile: Sequence[str], recalled: Sequence[str]) -> str | None:
        """The whole memory block from already rendered item lines; None when empty."""
        sections = [
            self.section(header, lines)
            for header, lines in (
                (self.summary_header, summary),
                (self.profile_header, profile),
                (self.recalled_header, recalled),
            )
            if lines
        ]
        if not sections:
            return None
        parts = [self.memory_header, *sections] if self.memory_header else sections
        return self.section_separator.join(parts)

    def system_text(self, system_prompt: str | None, block: str) -> str:
        """The merged system message text (``memory_message="merge"``)."""
        return block if system_prompt is None else f"{system_prompt}{self.section_separator}{block}"


@lru_cache(maxsize=1024)
def _dated(text: str, said_on: date) -> str:
    # A user's recurring memories come back in prompt after prompt, and a long assistant
    # reply takes ~0.2 ms to scan for dates.
    return annotate_dates(text, said_on)


def _check_placeholders(text: str, allowed: frozenset[str], where: str) -> None:
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise InvalidInput(f"{where} is not a valid format string: {exc}", field=where) from None
    for _literal, name, _spec, _conversion in parsed:
        if name is None:
            continue
        base = name.split(".")[0].split("[")[0]
        if base not in allowed or base != name:
            options = ", ".join("{" + f + "}" for f in sorted(allowed))
            raise InvalidInput(f"{where}: unknown placeholder {{{name}}}; allowed: {options}", field=where)
    # Sample values of the real types, so format specs like {score:.2f} are accepted.
    sample: dict[str, Any] = {name: 0.5 if name in _NUMERIC_FIELDS else "x" for name in allowed}
    try:
        text.format(**sample)
    except (ValueError, IndexError, KeyError) as exc:
        raise InvalidInput(f"{where} cannot be formatted: {exc}", field=where) from None


DEFAULT_TEMPLATE = ContextTemplate()
