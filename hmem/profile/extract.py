"""Profile extraction from user turns: offline rules or an LLM, and applying the result.

* :class:`OfflineProfileExtractor` — deterministic English/Chinese rules
  (:mod:`hmem.profile._rules`), no model, no network.
* :class:`LLMProfileExtractor` — any :class:`hmem.protocols.LLM`; JSON output
  validated against the update schema, retried once when invalid, usage recorded.
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
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from hmem.errors import InvalidInput, LLMError
from hmem.profile._rules import find_profile_facts
from hmem.profile.merge import merge_items
from hmem.profile.model import check_confidence, check_provenance, coerce_value, same_value
from hmem.profile.schema import KEYS, canonical_key, is_list_key
from hmem.protocols import LLM, ProfileStore
from hmem.types import Message, ProfileEntry, ProfileValue, Provenance, Usage, check_id, check_text

__all__ = [
    "AppliedUpdates",
    "LLMProfileExtractor",
    "OfflineProfileExtractor",
    "ProfileExtractor",
    "ProfileUpdate",
    "apply_updates",
    "parse_llm_updates",
]

Operation = Literal["set", "delete", "remove"]


@dataclass(frozen=True, slots=True)
class ProfileUpdate:
    """One change an extractor proposes. Validated on construction: the key is made
    canonical (``"City"`` → ``location``, see :mod:`hmem.profile.schema`), a ``set``
    value coerced (lists → tuples), a ``delete`` has no value, a ``remove`` names the
    list items the user took back ("I no longer like jazz").

    ``merge`` (lists only): add the items to the key's current list instead of
    replacing it ("I love tea" then "I love chess" → likes: tea, chess).
    """

    key: str
    value: ProfileValue | None
    confidence: float = 1.0
    operation: Operation = "set"
    evidence: str = ""
    merge: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", canonical_key(self.key))
        if self.operation == "set":
            value = coerce_value(self.value)
            if isinstance(value, str) and is_list_key(self.key):  # one item of a list key: add it
                value = (value,)
                object.__setattr__(self, "merge", True)
            object.__setattr__(self, "value", value)
        elif self.operation == "delete":
            if self.value is not None:
                raise InvalidInput("a delete update must not carry a value", field="value")
        elif self.operation == "remove":
            value = coerce_value([self.value] if isinstance(self.value, str) else self.value)
            if not isinstance(value, tuple):
                raise InvalidInput("a remove update names list items (strings) to take out", field="value")
            object.__setattr__(self, "value", value)
        else:
            raise InvalidInput(
                f"operation must be 'set', 'delete' or 'remove', got {self.operation!r}", field="operation"
            )
        object.__setattr__(self, "confidence", check_confidence(self.confidence))
        if not isinstance(self.evidence, str):
            raise InvalidInput("evidence must be a string", field="evidence")


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


@dataclass(frozen=True, slots=True)
class AppliedUpdates:
    """What :func:`apply_updates` did, by normalized key, in order."""

    changed: tuple[str, ...] = ()  # a new version was written
    confirmed: tuple[str, ...] = ()  # the same value again: confirmed_at refreshed
    deleted: tuple[str, ...] = ()  # a live value was deleted

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
           prov: Provenance, confidence: float) -> str:
    """Persist ``value`` for ``key``; what happened: changed / confirmed / deleted / none."""
    if value is None:
        return "deleted" if store.delete(user_id, key, provenance=prov) else "none"
    store.set(user_id, key, value, provenance=prov, confidence=confidence)
    return "confirmed" if before is not None and same_value(before.value, value) else "changed"


def apply_updates(
    store: ProfileStore,
    user_id: str,
    updates: Sequence[ProfileUpdate],
    provenance: Provenance | None = None,
) -> AppliedUpdates:
    """Write ``updates`` in order with ``provenance`` (e.g. ``Provenance("message",
    session_id, message_id)``); the store keeps the old value in history.

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
                                confidence=other.confidence)].append(opposite)
        done[_write(store, user_id, update.key, value, before=before, prov=prov,
                    confidence=update.confidence)].append(update.key)
    return AppliedUpdates(tuple(done["changed"]), tuple(done["confirmed"]), tuple(done["deleted"]))


# -- LLM extractor -------------------------------------------------------------------------

_SYSTEM_PROMPT = """You maintain a user's profile: a few stable facts about the user, key -> value.
Read the user's message and return ONLY a JSON object:
{"updates": [{"key": str, "operation": "set" | "delete" | "remove", "value": str | number | bool | [str, ...],
              "confidence": number between 0 and 1, "evidence": "the words that state it"}]}
Rules:
- Only facts the user states about THEMSELVES, as true now. Nothing from questions, hypotheticals,
  wishes or plans, other people ("my sister lives in Rome"), states that are over ("I used to"),
  temporary stays ("in Rome this week"), or negated statements.
- Use these keys: name, age (int), birthday (YYYY-MM-DD, or MM-DD without a year), nationality
  (country), hometown, location (where they live now), timezone, languages, occupation, employer
  (a named organisation only), school, major, partner, children, family, pets, diet, allergies,
  likes, dislikes. Another short snake_case key only when none fits.
- partner is one "kind: Name" ("wife: Priya", or "wife" unnamed); children, family and pets are
  lists of "kind: Name" / "kind" ("son: Noah", "greyhound: Biscuit"). diet items are labels
  ("vegan", "halal") or "no:<food>". allergies are the allergen alone ("peanuts").
- List keys (languages, children, family, pets, diet, allergies, likes, dislikes): give the
  COMPLETE new list, starting from the current profile you are shown; to take items out because
  the user said so ("I no longer like X"), use {"operation": "remove", "value": [the items]}.
- "Forget my X" / "忘记我的X": {"key": X's key, "operation": "delete"} with no value.
- Keep values in the user's language. No facts -> {"updates": []}."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


def parse_llm_updates(text: str, evidence: str = "") -> list[ProfileUpdate]:
    """Validate an LLM reply against the update schema; :class:`InvalidInput` says
    what is wrong (that text is sent back to the model on the retry)."""
    try:
        data = json.loads(_FENCE.sub("", text))
    except (json.JSONDecodeError, TypeError) as exc:
        raise InvalidInput(f"the reply is not valid JSON ({exc})", field="reply") from None
    if isinstance(data, Mapping):
        data = data.get("updates")
    if not isinstance(data, list):
        raise InvalidInput('the reply must be an object with an "updates" list', field="updates")
    out: list[ProfileUpdate] = []
    for i, item in enumerate(data):
        where = f"updates[{i}]"
        if not isinstance(item, Mapping):
            raise InvalidInput(f"{where} must be an object", field=where)
        operation = item.get("operation", "set")
        if operation not in ("set", "delete", "remove"):
            raise InvalidInput(f'{where}.operation must be "set", "delete" or "remove", got {operation!r}', field=where)
        if "key" not in item:
            raise InvalidInput(f"{where} has no key", field=where)
        if operation != "delete" and "value" not in item:
            raise InvalidInput(f"{where} sets {item['key']!r} without a value", field=where)
        said = item.get("evidence")
        try:
            out.append(
                ProfileUpdate(
                    key=item["key"],
                    value=item.get("value") if operation != "delete" else None,
                    confidence=item.get("confidence", 0.8),
                    operation=operation,
                    evidence=said if isinstance(said, str) and said else evidence,
                )
            )
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}", field=where) from None
    return out


class LLMProfileExtractor:
    """Profile extraction by an LLM in JSON mode.

    The current profile is shown to the model so list values come back complete.
    An invalid reply (not JSON, wrong shape, bad key or value) is sent back with
    the validation error for one more try (``max_attempts=2``); after that
    :class:`~hmem.errors.LLMError` (callers may fall back to the offline rules).
    ``usage_total`` sums the tokens of every attempt.

    Example::

        >>> from hmem.protocols import LLMReply
        >>> class Canned:
        ...     def complete(self, messages, **kw):
        ...         return LLMReply('{"updates": [{"key": "location", "value": "Paris"}]}', "m")
        >>> [(u.key, u.value) for u in LLMProfileExtractor(Canned()).extract("I moved to Paris")]
        [('location', 'Paris')]
    """

    def __init__(self, llm: LLM, *, model: str | None = None, max_attempts: int = 2, max_tokens: int = 512) -> None:
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise InvalidInput(f"max_attempts must be an int >= 1, got {max_attempts!r}", field="max_attempts")
        self._llm = llm
        self._model = model
        self._max_attempts = max_attempts
        self._max_tokens = max_tokens
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
        """How many replies failed validation (each one cost a retry)."""
        with self._lock:
            return self._invalid

    def extract(self, text: str, *, current: Sequence[ProfileEntry] = ()) -> list[ProfileUpdate]:
        check_text(text, "text", allow_empty=False)
        profile = {
            e.key: (list(e.value) if isinstance(e.value, tuple) else e.value) for e in current if e.value is not None
        }
        messages = [
            Message(role="system", content=_SYSTEM_PROMPT),
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
