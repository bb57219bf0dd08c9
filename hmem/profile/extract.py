"""Profile extraction from user turns: offline rules or an LLM, and applying the result.

* :class:`OfflineProfileExtractor` — deterministic English/Chinese rules
  (:mod:`hmem.profile._rules`), no model, no network.
* :class:`LLMProfileExtractor` — any :class:`hmem.protocols.LLM`; JSON output
  validated against the update schema (one call per user turn), usage recorded.
* :func:`apply_updates` — writes a list of :class:`ProfileUpdate` to a
  :class:`~hmem.protocols.ProfileStore` with the message's provenance, under the merge
  rules of :mod:`hmem.profile.schema` (:func:`hmem.profile.merge.merge_items`).

Keys are canonical (:func:`hmem.profile.schema.canonical_key`): an update for ``city``
or ``favorite_band`` lands on ``location`` or ``likes``.

Example::

    >>> from hmem.backends.memory.profile import MemoryProfileStore
    >>> from hmem.types import Provenance
    >>> store = MemoryProfileStore()
    >>> updates = OfflineProfileExtractor().extract("I live in Berlin. I love tea and chess.")
    >>> [(u.key, u.value) for u in updates]
    [('location', 'Berlin'), ('likes', ('tea', 'chess'))]
    >>> apply_updates(store, "u1", updates, Provenance("message", "s1", "m1")).changed
    ('location', 'likes')
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from hmem.errors import InvalidInput, LLMError
from hmem.profile._llm_reply import SYSTEM_PROMPT, guard_updates, parse_llm_updates
from hmem.profile._rules import find_profile_facts
from hmem.profile._update import ProfileUpdate
from hmem.profile.merge import merge_items
from hmem.profile.model import check_provenance, same_value
from hmem.profile.schema import KEYS, is_list_key
from hmem.protocols import LLM, ProfileStore
from hmem.types import Message, ProfileEntry, ProfileValue, Provenance, Usage, as_datetime, check_id, check_text

__all__ = [
    "AppliedUpdates",
    "ExtractionMethod",
    "LLMProfileExtractor",
    "OfflineProfileExtractor",
    "ProfileExtraction",
    "ProfileExtractor",
    "ProfileUpdate",
    "apply_updates",
    "extract_profile",
    "parse_llm_updates",
]

log = logging.getLogger("hmem.profile")

#: How a turn's updates were found: the offline rules (no LLM configured), the LLM, the
#: offline rules standing in for an LLM that failed, or an extractor hmem does not know.
ExtractionMethod = Literal["rules", "llm", "rules-fallback", "custom"]


@dataclass(frozen=True, slots=True)
class ProfileExtraction:
    """What one extraction found and how: ``method``, the tokens its LLM calls used
    (failed attempts included), ``reason`` the LLM path failed (``rules-fallback``
    only), and ``refused``: LLM updates the guards kept out, as ``"key: why"``."""

    updates: tuple[ProfileUpdate, ...]
    method: ExtractionMethod
    usage: Usage = field(default_factory=Usage)
    reason: str = ""
    refused: tuple[str, ...] = ()


@runtime_checkable
class ProfileExtractor(Protocol):
    """Anything that turns one user turn into profile updates."""

    def extract(self, text: str, *, current: Sequence[ProfileEntry] = ()) -> list[ProfileUpdate]: ...


class OfflineProfileExtractor:
    """Rule-based extraction of what English, Chinese and code-switched messages state
    about their author, in the value conventions of ``docs/profile.md``.

    Deterministic, no model. Third persons, hypotheticals and plans, questions, states
    that are over, temporary stays, negations and role-play produce nothing current (see
    ``docs/profile.md``). ``current`` is accepted for interface parity and ignored.

    >>> [(u.key, u.value, u.operation) for u in OfflineProfileExtractor().extract("我搬到上海了。忘记我的生日")]
    [('location', '上海', 'set'), ('birthday', None, 'delete')]
    """

    def extract(self, text: str, *, current: Sequence[ProfileEntry] = ()) -> list[ProfileUpdate]:
        check_text(text, "text")
        return [
            ProfileUpdate(f.key, f.value, f.confidence, f.operation, f.evidence, f.merge)
            for f in find_profile_facts(text)
        ]

    def run(self, text: str, *, current: Sequence[ProfileEntry] = ()) -> ProfileExtraction:
        """:meth:`extract` with its report (``method="rules"``, no tokens)."""
        return ProfileExtraction(tuple(self.extract(text, current=current)), "rules")


def extract_profile(
    extractor: ProfileExtractor, text: str, *, current: Sequence[ProfileEntry] = ()
) -> ProfileExtraction:
    """Run any :class:`ProfileExtractor` and say how it went: hmem's extractors report
    themselves (:meth:`LLMProfileExtractor.run`); another one is ``method="custom"``.

    >>> extract_profile(OfflineProfileExtractor(), "I live in Oslo").method
    'rules'
    """
    if isinstance(extractor, OfflineProfileExtractor | LLMProfileExtractor):
        return extractor.run(text, current=current)
    return ProfileExtraction(tuple(extractor.extract(text, current=current)), "custom")


@dataclass(frozen=True, slots=True)
class AppliedUpdates:
    """What :func:`apply_updates` did, by normalized key, in order.

    In ``AddResult.profile`` it also says how the add's user turns were read:
    ``method`` (``"llm"``; ``"rules-fallback"`` when the LLM failed for at least one
    turn and the offline rules stood in; ``"rules"`` without an LLM), ``reason`` (why
    the LLM failed), ``usage`` (the tokens extraction used for the add) and ``refused``
    (LLM updates the guards kept out).
    """

    changed: tuple[str, ...] = ()  # a new version was written
    confirmed: tuple[str, ...] = ()  # the same value again: confirmed_at refreshed
    deleted: tuple[str, ...] = ()  # a live value was deleted
    method: ExtractionMethod | None = None
    usage: Usage = field(default_factory=Usage)
    reason: str = ""
    refused: tuple[str, ...] = ()

    @property
    def any_change(self) -> bool:
        return bool(self.changed or self.deleted)


_OPPOSITE = {"likes": "dislikes", "dislikes": "likes"}


def _new_value(update: ProfileUpdate, before: ProfileValue | None) -> ProfileValue | None:
    """The key's value after ``update`` (None: nothing left), under the key's merge rule."""
    assert update.value is not None
    if update.operation == "remove":
        assert isinstance(update.value, tuple)
        return merge_items(update.key, before, remove=update.value) or None
    if not isinstance(update.value, tuple) or not (update.merge or is_list_key(update.key)):
        return update.value
    spec = KEYS.get(update.key)
    if update.merge:
        return merge_items(update.key, before, add=update.value)
    # A complete list: replaces the current one, except that "keep" keys (allergies,
    # children) never lose an item silently.
    return merge_items(update.key, before, add=update.value, complete=True) if spec else update.value


def _write(store: ProfileStore, user_id: str, key: str, value: ProfileValue | None, *, before: ProfileEntry | None,
           prov: Provenance, confidence: float, said_at: datetime | None = None) -> str:
    """Persist ``value`` for ``key``; what happened: changed / confirmed / deleted / none."""
    if value is None:
        return "deleted" if store.delete(user_id, key, provenance=prov) else "none"
    # History is append-only: a message older than the key's current version (an import
    # replayed after a later change) is written at that version's start, never before it.
    at = None if said_at is None else max(said_at, before.valid_from) if before is not None else said_at
    store.set(user_id, key, value, provenance=prov, confidence=confidence, at=at)
    return "confirmed" if before is not None and same_value(before.value, value) else "changed"


def apply_updates(
    store: ProfileStore,
    user_id: str,
    updates: Sequence[ProfileUpdate],
    provenance: Provenance | None = None,
    *,
    said_at: datetime | str | float | None = None,
) -> AppliedUpdates:
    """Write ``updates`` in order with ``provenance`` (e.g. ``Provenance("message",
    session_id, message_id)``); the store keeps the old value in history. ``said_at``:
    when the user said it (the message's time), which becomes the new version's
    ``valid_from`` (clamped to the current version's start: history is append-only);
    None: the time of the write.

    Every update is validated before the first write, so bad input changes nothing.
    List keys follow :func:`hmem.profile.merge.merge_items`: a merge update adds its
    items, a ``remove`` update takes the named items out (the key is deleted when none
    is left), a complete list replaces the current one except for allergies and
    children, which never lose an item silently. Adding an item to ``likes`` removes it
    from ``dislikes`` and vice versa. (Merges read then write: two writers merging into
    one key at the same instant may lose an item — the last write wins.) A
    :class:`~hmem.errors.CapacityError` stops at the update that hit the cap; earlier
    updates stay applied.
    """
    check_id(user_id, "user_id")
    prov = check_provenance(provenance)
    when = None if said_at is None else as_datetime(said_at, "said_at")
    if isinstance(updates, str | bytes | Mapping) or not all(isinstance(u, ProfileUpdate) for u in updates):
        raise InvalidInput("updates must be a list of ProfileUpdate", field="updates")
    done: dict[str, list[str]] = {"changed": [], "confirmed": [], "deleted": [], "none": []}
    for update in updates:
        if update.operation == "delete":
            done["deleted" if store.delete(user_id, update.key, provenance=prov) else "none"].append(update.key)
            continue
        before = store.get(user_id, update.key)
        value = _new_value(update, before.value if before else None)
        if update.operation == "remove" and before is None:
            continue
        opposite = _OPPOSITE.get(update.key)
        if opposite and update.operation == "set" and isinstance(update.value, tuple):
            other = store.get(user_id, opposite)
            if other is not None:
                kept = merge_items(opposite, other.value, remove=update.value) or None
                if kept != other.value:
                    done[_write(store, user_id, opposite, kept, before=other, prov=prov,
                                confidence=other.confidence, said_at=when)].append(opposite)
        done[_write(store, user_id, update.key, value, before=before, prov=prov,
                    confidence=update.confidence, said_at=when)].append(update.key)
    return AppliedUpdates(tuple(done["changed"]), tuple(done["confirmed"]), tuple(done["deleted"]))


# -- LLM extractor -------------------------------------------------------------------------

class LLMProfileExtractor:
    """Profile extraction by an LLM in JSON mode.

    The current profile is shown to the model so list values come back complete: one
    call per user turn. An invalid reply (not JSON, wrong shape, bad key, a value the
    key's type refuses) is not asked again by default, as the LLM provider retries
    only transient failures; ``max_attempts=2`` sends it back with the validation
    error for one more try (one more call, for a model that often slips).
    Valid updates then meet the offline rules' guards on their evidence
    (:func:`hmem.profile._llm_reply.guard_updates`): one about someone else, or from a
    question, plan, past or temporary state, is refused.

    When the LLM fails (no valid reply, :class:`~hmem.errors.LLMError`: server down,
    timeout, HTTP error) and a ``fallback`` is given, :meth:`run` uses it for the turn,
    logs a warning and reports ``method="rules-fallback"`` with the reason; without a
    fallback it raises :class:`~hmem.errors.LLMError`. ``usage_total`` sums the tokens
    of every attempt.

    Example::

        >>> from hmem.protocols import LLMReply
        >>> class Canned:
        ...     def complete(self, messages, **kw):
        ...         return LLMReply('{"updates": [{"key": "location", "value": "Paris"}]}', "m")
        >>> [(u.key, u.value) for u in LLMProfileExtractor(Canned()).extract("I moved to Paris")]
        [('location', 'Paris')]
    """

    def __init__(self, llm: LLM, *, model: str | None = None, max_attempts: int = 1, max_tokens: int = 512,
                 fallback: ProfileExtractor | None = None) -> None:
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise InvalidInput(f"max_attempts must be an int >= 1, got {max_attempts!r}", field="max_attempts")
        self._llm = llm
        self._model = model
        self._max_attempts = max_attempts
        self._max_tokens = max_tokens
        self._fallback = fallback
        self._lock = threading.Lock()
        self._usage = Usage()
        self._invalid = 0

    @property
    def usage_total(self) -> Usage:
        """Tokens of every LLM call this extractor made (invalid replies included)."""
        with self._lock:
            return self._usage

    @property
    def invalid_replies(self) -> int:
        """How many replies failed validation (with ``max_attempts`` > 1, each but the last cost a retry)."""
        with self._lock:
            return self._invalid

    def extract(self, text: str, *, current: Sequence[ProfileEntry] = ()) -> list[ProfileUpdate]:
        return list(self.run(text, current=current).updates)

    def run(self, text: str, *, current: Sequence[ProfileEntry] = ()) -> ProfileExtraction:
        """The updates for one user turn and how they were found (see the class doc)."""
        check_text(text, "text", allow_empty=False)
        spent: list[Usage] = []
        try:
            updates = self._ask(text, current, spent)
        except LLMError as exc:
            if self._fallback is None:
                raise
            reason = str(exc)
            log.warning("profile extraction: the LLM failed, the offline rules read this turn instead: %s", reason)
            found = extract_profile(self._fallback, text, current=current).updates
            return ProfileExtraction(found, "rules-fallback", sum(spent, Usage()), reason)
        kept, refused = guard_updates(updates, text)
        return ProfileExtraction(tuple(kept), "llm", sum(spent, Usage()), refused=refused)

    def _ask(self, text: str, current: Sequence[ProfileEntry], spent: list[Usage]) -> list[ProfileUpdate]:
        profile = {
            e.key: (list(e.value) if isinstance(e.value, tuple) else e.value) for e in current if e.value is not None
        }
        messages = [
            Message(role="system", content=SYSTEM_PROMPT),
            Message(
                role="user",
                content=json.dumps({"current_profile": profile, "user_message": text}, ensure_ascii=False),
            ),
        ]
        problem = ""
        for _ in range(self._max_attempts):
            reply = self._llm.complete(
                messages, model=self._model, temperature=0.0, max_tokens=self._max_tokens, json_mode=True
            )
            spent.append(reply.usage)
            with self._lock:
                self._usage = self._usage + reply.usage
            try:
                return parse_llm_updates(reply.text, evidence=text)
            except InvalidInput as exc:
                problem = str(exc)
                with self._lock:
                    self._invalid += 1
                messages = [
                    *messages,
                    Message(role="assistant", content=reply.text),
                    Message(
                        role="user",
                        content=f"That reply was invalid: {problem}. Reply again with only the JSON object.",
                    ),
                ]
        raise LLMError(
            f"the LLM gave no valid profile JSON in {self._max_attempts} attempt(s); last problem: {problem}. "
            "Use OfflineProfileExtractor as a fallback or a model that supports JSON mode."
        )
