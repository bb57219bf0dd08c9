"""The offline profile rules: a user message → the profile facts it states. Pure.

1. :func:`hmem.profile._clauses.analyse` cuts the message into clauses and gives each
   its subject (the user, the user with someone, the household, someone else) and its
   guards (question, hypothetical/plan, past, temporary stay, role-play/fiction/joke).
2. The English rules (:mod:`~hmem.profile._en_self`, :mod:`~hmem.profile._en_work`,
   :mod:`~hmem.profile._en_life`) and the Chinese ones (``_zh_*``) read each clause;
   code-switched text meets both, so "I'm from 成都" and "我是 freelance translator" work.
   Every rule checks the guards it cares about and negation before its trigger.
3. :func:`find_profile_facts` folds the facts of one message: one value per scalar key
   (the most confident; a later one wins a tie), list items merged under the key's merge
   rule (a named entity replaces an unnamed one of its kind), and a new value of a key
   wins over the end of its old one ("switched jobs to a bakery… now at Gail's").

What the rules produce follows ``data/profile_eval/SCHEMA.md`` (canonical keys, ISO
birthdays, ``"kind: Name"`` entities, ``no:X`` diets); ``docs/profile.md`` lists the
guards and what is deliberately not extracted.

Example::

    >>> [(f.key, f.value) for f in find_profile_facts("Actually, I moved to Paris last month.")]
    [('location', 'Paris')]
    >>> find_profile_facts("If I moved to Paris, I would learn French.")
    []
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hmem.profile._clauses import Clause, analyse
from hmem.profile._en_kin import kin
from hmem.profile._en_life import life
from hmem.profile._en_self import identity
from hmem.profile._en_work import work
from hmem.profile._values import Found
from hmem.profile._zh_life import zh_life
from hmem.profile._zh_self import zh_identity
from hmem.profile._zh_work import zh_work
from hmem.profile.merge import merge_items
from hmem.profile.schema import is_list_key

__all__ = ["Found", "find_profile_facts"]

Rules = Callable[[Sequence[Clause], int], list[Found]]
RULES: tuple[Rules, ...] = (identity, work, life, kin, zh_identity, zh_work, zh_life)
_GENERIC_CHILD = {"child", "kid", "孩子", "小孩", "娃", "宝宝"}


def _fold(found: list[Found]) -> list[Found]:
    """One fact per (key, operation): the best scalar, or the merged list."""
    order: list[tuple[str, str]] = []
    best: dict[tuple[str, str], Found] = {}
    for f in found:
        slot = (f.key, f.operation)
        if slot not in best:
            order.append(slot)
            best[slot] = f
            continue
        kept = best[slot]
        if f.operation == "set" and is_list_key(f.key) and isinstance(kept.value, tuple) and isinstance(f.value, tuple):
            merged = merge_items(f.key, kept.value, add=f.value)
            best[slot] = kept._replace(value=merged, confidence=max(kept.confidence, f.confidence))
        elif f.operation == "remove" and isinstance(kept.value, tuple) and isinstance(f.value, tuple):
            best[slot] = kept._replace(value=kept.value + f.value)
        elif f.confidence >= kept.confidence and not (f.key == "partner" and ":" in str(kept.value)
                                                       and ":" not in str(f.value)):
            best[slot] = f
    # "I switched jobs to a bakery. I now work at Gail's": the new value, not the end of the old one
    out = [best[slot] for slot in order if not (slot[1] == "delete" and (slot[0], "set") in best)]
    refined = {f.key for f in found if f.refine}
    for n, f in enumerate(out):
        if f.key in refined and isinstance(f.value, tuple):
            named = tuple(v for v in f.value if ":" in v)
            out[n] = f._replace(value=named or f.value)
        if f.key == "children" and f.operation == "set" and isinstance(f.value, tuple):
            specific = [v for v in f.value if v.split(":")[0].strip().lower() not in _GENERIC_CHILD]
            if specific and len(specific) < len(f.value):
                out[n] = f._replace(value=tuple(specific))
    return out


def find_profile_facts(text: str) -> list[Found]:
    """Every profile fact ``text`` states about its author, folded (see the module doc)."""
    clauses = analyse(text)
    found: list[Found] = []
    for i in range(len(clauses)):
        for rules in RULES:
            found.extend(rules(clauses, i))
    return _fold(found)

