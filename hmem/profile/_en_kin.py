"""English rules for facts said in passing rather than with "I am / I have": an engagement
("I'm engaged to Tom"), the sorts listed after a plural ("two dogs, a lab and a husky"),
and a diet label that opens a self-description ("vegetarian mum of twins here"). Pure.

Example::

    >>> from hmem.profile._clauses import analyse
    >>> cs = analyse("Just got engaged to Omar! Vegan runner here btw")
    >>> [(f.key, f.value) for i in range(len(cs)) for f in kin(cs, i)]
    [('partner', 'fiance: Omar'), ('diet', ('vegan',))]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hmem.profile._clauses import CURRENT, Clause, allowed, negated, opens_sentence
from hmem.profile._lex_en import ANIMALS, DIET_LABELS, DIET_SPELLINGS
from hmem.profile._values import Found, entity, fact

__all__ = ["kin", "sorts", "sorts_after"]

_SORT = r"(?:a|an|one)\s+(?P<{0}>[a-z]+(?:\s[a-z]+)?)"
_SORTS = re.compile(rf"^\s*,?\s*{_SORT.format('a')}\s*(?:,|and|&)\s*(?:another\s+|{_SORT.format('b')})?\s*$")


def sorts(key: str | None, rest: str, after: str) -> list[str]:
    """The sorts listed right after a plural kind, in ``rest`` (same clause) or ``after``
    (the next clause); [] unless every one is a known animal (pets) or boy/girl (children).

    >>> sorts("pets", "", "a lab and a husky"), sorts("children", ", a boy and a girl", "")
    (['lab', 'husky'], ['son', 'daughter'])
    """
    s = _SORTS.match(rest) or _SORTS.match(after)
    words = [w.lower() for w in (s.groups() if s else ()) if w]
    sexes = {"boy": "son", "girl": "daughter"} if key == "children" else {}
    ok = all(w in sexes or (key == "pets" and w.split()[-1] in ANIMALS) for w in words)
    return [sexes.get(w, w) for w in words] if ok else []


def sorts_after(key: str | None, m: re.Match[str], cs: Sequence[Clause], i: int) -> list[str]:
    """:func:`sorts` after the plural kind that ``m`` (groups ``pl``, ``q``, ``rest``) found in clause ``i``."""
    nxt = cs[i + 1].bare if i + 1 < len(cs) and cs[i + 1].sentence == cs[i].sentence else ""
    many = m.group("pl") or m.groupdict().get("q") not in (None, "a", "an", "one")
    return sorts(key, m.group("rest"), nxt) if many else []


_NAME = r"(?P<n>[A-Z][a-z]+(?:\s[A-Z][a-z]+)?)"
_ENGAGED = re.compile(rf"^(?i:(?:am|are|have (?:just |recently )?got|got|just got|recently got|have been|been) "
                      rf"(?:just |recently |finally |officially )?engaged)(?: to {_NAME})?"
                      r"(?=$|[,.!]|\s+(?:to|last|this|since|and|now|yesterday|recently|a|as|so|but)\b)")  # not "engaged in"
_DIET = "|".join(re.escape(w) for w in sorted(DIET_LABELS, key=len, reverse=True))
#: "vegetarian mum of twins here", "vegan runner here": a label on a word for a person (not "vegan lasagna").
_LABELLED = re.compile(rf"^(?P<l>{_DIET})\s+(?:(?:mom|mum|dad|mother|father|parent|guy|gal|girl|woman|man|lady|"
                       r"student|runner|cyclist|athlete|lifter|climber|household|family)\b|here\b)", re.IGNORECASE)


def kin(cs: Sequence[Clause], i: int) -> list[Found]:
    """The engagement and opening diet label facts of clause ``i`` (English)."""
    c = cs[i]
    if c.subject not in ("self", "with") or not allowed(c, CURRENT):
        return []
    out: list[Found] = []
    m = _ENGAGED.match(c.pred)
    if m and not negated(c.pred[: m.start()]) and c.subject == "self":
        out.append(fact("partner", entity("fiance", m.group("n")), 0.8, c.text))
    m = _LABELLED.match(c.bare)
    if m and c.bare == c.pred and opens_sentence(cs, i):
        label = m.group("l").lower()
        out.append(fact("diet", (DIET_SPELLINGS.get(label, label),), 0.75, c.text))
    return out
