"""What the LLM profile extractor sends and how its reply is checked. Pure.

* :data:`SYSTEM_PROMPT` — the instructions (schema keys, value conventions, guards).
* :func:`parse_llm_updates` — the reply → :class:`~hmem.profile._update.ProfileUpdate`
  list, or :class:`~hmem.errors.InvalidInput` saying what is wrong (sent back to the model).
* :func:`guard_updates` — the offline rules' guards applied to the LLM's own evidence: an
  update whose evidence speaks only of someone else ("my sister lives in Rome"), or only
  in a question, hypothetical or plan, a state that is over or a temporary stay, is
  refused, whatever the model claimed. The prompt asks the model for the same; this
  holds when the model does not listen.

Example::

    >>> ups = parse_llm_updates('{"updates": [{"key": "city", "value": "Rome", "evidence": "my sister lives in Rome"}]}')
    >>> guard_updates(ups, "my sister lives in Rome")
    ([], ('location: evidence is about someone else',))
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from hmem.errors import InvalidInput
from hmem.profile._clauses import CURRENT, STAY, TIMELESS, Clause, analyse
from hmem.profile._lex_en import CHILD_WORDS, FAMILY_WORDS, OTHER_PEOPLE, PARTNER_WORDS
from hmem.profile._lex_zh import ZH_CHILD_WORDS, ZH_FAMILY_WORDS, ZH_OTHER_PEOPLE, ZH_PARTNER_WORDS
from hmem.profile._update import ProfileUpdate
from hmem.profile.schema import ENTITY_KEYS

__all__ = ["SYSTEM_PROMPT", "guard_updates", "parse_llm_updates"]

SYSTEM_PROMPT = """You maintain a user's profile: a few stable facts about the user, key -> value.
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
    what is wrong (that text is sent back to the model on the retry).

    >>> [(u.key, u.value) for u in parse_llm_updates('{"updates": [{"key": "Home Town", "value": "Leeds"}]}')]
    [('hometown', 'Leeds')]
    """
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


# -- guards on the evidence ------------------------------------------------------------------

_PEOPLE_EN = sorted(PARTNER_WORDS | CHILD_WORDS | FAMILY_WORDS | OTHER_PEOPLE, key=len, reverse=True)
_PEOPLE_ZH = sorted(ZH_PARTNER_WORDS + ZH_CHILD_WORDS + ZH_FAMILY_WORDS + ZH_OTHER_PEOPLE, key=len, reverse=True)
# "my sister …", "our neighbour …", "我朋友…", "我的同事…": a possessive that names a person
# makes the clause about that person, not about the user.
_THEIR_CLAUSE = re.compile(
    r"^(?:(?:my|our)\s+(?:\w+\s+)?(?:" + "|".join(re.escape(w) for w in _PEOPLE_EN) + r")\b"
    r"|(?:我的?|我们的?)\s*(?:" + "|".join(re.escape(w) for w in _PEOPLE_ZH) + "))",
    re.IGNORECASE,
)
#: Keys that stay true once said (past tense is fine), and where one is (temporary stays are not).
_TIMELESS_KEYS = frozenset({"name", "birthday", "nationality", "hometown", "school", "major"})
_STAY_KEYS = frozenset({"location", "timezone"})


def _why_not(key: str, clause: Clause) -> str | None:
    """Why ``clause`` cannot state ``key`` of the user now (None: it can)."""
    blocked = TIMELESS if key in _TIMELESS_KEYS else STAY if key in _STAY_KEYS else CURRENT
    guards = sorted(clause.guards & blocked)
    if guards:
        return f"evidence is {'/'.join(guards)}"
    if clause.subject == "other" or (clause.subject == "my" and key not in ENTITY_KEYS
                                     and _THEIR_CLAUSE.match(clause.bare)):
        return "evidence is about someone else"
    return None


def guard_updates(updates: Sequence[ProfileUpdate], message: str) -> tuple[list[ProfileUpdate], tuple[str, ...]]:
    """``(kept, refused)``: each update whose evidence (the whole ``message`` when the
    model gave none) has no clause that may state its key, refused as ``"key: why"``.
    Deletes and removals pass: they only take away."""
    kept: list[ProfileUpdate] = []
    refused: list[str] = []
    for update in updates:
        clauses = analyse(update.evidence or message) if update.operation == "set" else []
        reasons = [_why_not(update.key, c) for c in clauses]
        if clauses and all(reasons):
            refused.append(f"{update.key}: {reasons[0]}")
        else:
            kept.append(update)
    return kept, tuple(refused)
