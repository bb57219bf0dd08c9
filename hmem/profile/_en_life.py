"""English rules for the user's people, animals and tastes: partner, children, family,
pets, diet, allergies, likes, dislikes — and the statements that take one back ("I no
longer eat meat… I eat meat again", "Biscuit died") or ask hmem to forget. Pure.

People and animals are entities, ``"kind: Name"`` or ``"kind"``. "my <relation>" names
the user's relation wherever it stands (even as the subject of a clause about them);
family members count only when named or stated as "I have …".

Example::

    >>> from hmem.profile._clauses import analyse
    >>> cs = analyse("My boyfriend Luis and I just adopted a kitten, we named her Olive")
    >>> [(f.key, f.value) for i in range(len(cs)) for f in life(cs, i)]
    [('partner', 'boyfriend: Luis'), ('pets', ('kitten: Olive',))]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hmem.errors import InvalidInput
from hmem.profile._clauses import CURRENT, STAY, Clause, allowed, negated, opens_sentence
from hmem.profile._en_kin import sorts_after
from hmem.profile._lex_en import (
    ANIMALS,
    CHILD_WORDS,
    DIET_LABELS,
    DIET_SPELLINGS,
    FAMILY_WORDS,
    NOT_NAMES,
    PARTNER_WORDS,
)
from hmem.profile._values import Found, entity, fact, items
from hmem.profile.schema import canonical_key

__all__ = ["life"]


def _alt(words: object) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))  # type: ignore[call-overload]


_KINDS = rf"(?:{_alt(PARTNER_WORDS | CHILD_WORDS | FAMILY_WORDS | ANIMALS)})"
_ADJ = (r"(?:(?:little|older|younger|big|baby|twin|eldest|youngest|oldest|new|lovely|beautiful|sweet|dear|rescue|"
        r"retired|old|adopted|elderly|huge|tiny|fluffy|crazy|senior|\d+[- ]year[- ]old|[a-z]+-(?:year|month)-old|two|"
        r"three|four|five|black|white|"
        r"ginger|orange|grey|gray|brown)\s+){0,2}")
_NAME = r"(?:[A-Z][a-z]+(?:\s[A-Z][a-z]+)?|(?![刚在是也都就又还很说要会不没最已和跟])[\u4e00-\u9fff]{2,3}(?![\u4e00-\u9fff]))"
_NAMES = rf"{_NAME}(?:\s*\(\d+\))?(?:(?:,\s*|\s+and\s+|,\s+and\s+){_NAME}(?:\s*\(\d+\))?)*"
_KIND_WORD = {"gf": "girlfriend", "bf": "boyfriend", "hubby": "husband", "missus": "wife", "kid": "child",
              "kids": "child", "children": "child", "little one": "child", "little ones": "child", "twins": "child",
              "baby": "child", "toddler": "child", "pup": "puppy", "kitty": "cat", "little girl": "daughter",
              "baby girl": "daughter", "little boy": "son", "baby boy": "son"}  # fmt: skip
#: "a dog walker", "a cat allergy", "a baby shower": the animal or relation word is a modifier.
_MODIFIER = (r"\s+(?:walker|walking|sitter|sitting|food|bed|park|trainer|groomer|toy|house|years|owner|lover|person|"
             r"people|hair|allergy|allergies|friendly|show|breeder|shelter|bowl|leash|treats?|shower|monitor|clothes|"
             r"formula|steps|brain|fever|videos?|memes?|cafe|café)\b")
_NOT_HEAD = rf"(?!'s\b|{_MODIFIER})"
_POSSESSIVE = re.compile(rf"\b(?:my|our)\s+(?P<adj>{_ADJ})(?P<kind>{_KINDS})(?P<pl>s|es)?\b(?!'s(?! name)|-in-law|"
                         rf"\s+in law|{_MODIFIER})(?=(?P<rest>.*))", re.IGNORECASE)
_HAVE = re.compile(rf"^(?:also |now |still |just |recently )?(?:have|have got|got|own|keep|adopted|rescued|got a new|"
                   rf"just adopted|recently adopted|brought home)\s+(?P<q>a|an|one|two|three|four|five|six|\d+|twin|"
                   rf"some|several|a couple of|no)?\s*(?P<adj>{_ADJ})(?P<kind>{_KINDS})(?P<pl>s|es)?\b{_NOT_HEAD}"
                   rf"(?P<rest>.*)$", re.IGNORECASE)


def _key(kind: str) -> str | None:
    kind = kind.lower()
    if kind in PARTNER_WORDS:
        return "partner"
    if kind in CHILD_WORDS:
        return "children"
    if kind in FAMILY_WORDS:
        return "family"
    return "pets" if kind in ANIMALS else None


def _kind(kind: str, plural: str | None) -> str:
    word = _KIND_WORD.get(kind.lower(), kind.lower())
    if word in ("sons", "daughters", "siblings", "brothers", "sisters", "parents"):
        word = word[:-1] if word != "parents" else word
    return word


def _names(text: str, explicit: bool = False) -> list[str]:
    """Names in ``text``; after "named"/"called" any capitalised word is one ("a parrot called Kiwi")."""
    stop = {"i", "the", "my", "our", "it", "him", "her", "them"} if explicit else NOT_NAMES
    return [n for n in re.findall(_NAME, re.sub(r"\(\d+\)", "", text)) if n.lower() not in stop]


def _entities(key: str, kind: str, names: list[str], c: Clause, conf: float) -> list[Found]:
    if key == "partner":
        return [fact("partner", entity(kind, names[0] if names else None), conf, c.text)]
    if not names:
        return [] if key == "family" and conf < 0.8 else [fact(key, kind, conf, c.text)]
    return [fact(key, tuple(entity(kind, n) for n in names), conf, c.text)]


_MORE = re.compile(rf"^\s*,?\s*and\s+(?:a|an|one|two|three|four|\d+|twin)?\s*(?P<adj>{_ADJ})(?P<kind>{_KINDS})"
                   rf"(?P<pl>s|es)?\b(?P<rest>.*)$", re.IGNORECASE)


def _had(cs: Sequence[Clause], i: int, m: re.Match[str]) -> list[Found]:
    """"I have a son, Leo, and a daughter, Mia" / "we adopted a kitten, we named her Olive"."""
    c = cs[i]
    out: list[Found] = []
    first = True
    while m:
        key = _key(m.group("kind"))
        rest = m.group("rest")
        named = re.match(rf"^\s*,?\s*(?:(?:named|called) )?(?P<n>{_NAMES})", rest)
        names = _names(named.group("n"), "named" in named.group(0) or "called" in named.group(0)) if named else []
        if first and not names:
            for x in [x for x in cs[i + 1:] if x.sentence == c.sentence][:2]:
                after = re.search(rf"\b(?:named|call|called) (?:her|him|it|them) (?P<n>{_NAME})", x.text)
                names = _names(after.group("n")) if after else names
        kinds = sorts_after(key, m, cs, i)
        if key and kinds and not names:  # "two dogs, a lab and a husky": the sorts replace the plural
            out += [fact(key, tuple(kinds), 0.85, c.text)]
        elif key:
            out += _entities(key, _kind(m.group("kind"), m.group("pl")), names, c, 0.85)
        m = _MORE.match(rest[named.end():] if named else rest)  # type: ignore[assignment]
        first = False
    return out


def _people(cs: Sequence[Clause], i: int) -> list[Found]:
    c = cs[i]
    out: list[Found] = []
    if not allowed(c, frozenset({"question", "other"})):
        return out
    for pm in _POSSESSIVE.finditer(c.text):
        if re.search(r"\b(?:ex|late|former|future|dream|imaginary|dead|deceased)\W*$", c.text[: pm.start("kind")], re.I):
            continue
        key = _key(pm.group("kind"))
        if key is None or (key == "partner" and pm.group("pl")):
            continue
        rest = pm.group("rest")
        many = pm.group("pl") or re.search(r"(?:parents|kids|children|twins|siblings|grandparents)$", pm.group("kind"), re.I)
        named = re.match(rf"^(?:,\s*|\s+)(?:(?:is |was )?(?:named|called) )?(?P<n>{_NAMES if many else _NAME})(?![\w'])", rest)
        before = re.search(rf"(?P<n>{_NAME}),\s*$", c.text[: pm.start()]) or (  # "Marcus, my fiancé, …"
            re.fullmatch(rf"(?P<n>{_NAME})", cs[i - 1].bare) if i > 0 and cs[i - 1].sentence == c.sentence
            and pm.start() == 0 else None)
        named = named or before
        listed = re.match(rf"^\s+(?:are|is)\s+(?P<n>{_NAMES})\s*$", rest)
        called = re.match(rf"^'s name is (?P<n>{_NAME})", rest)
        said = listed or called or named
        names = _names(said.group("n"), re.search(r"named|called|name is", said.group(0)) is not None) if said else []
        kind = _kind(pm.group("kind"), pm.group("pl"))
        if key == "family" and not names:
            continue
        out += _entities(key, kind, names, c, 0.8)
    m = _HAVE.match(c.pred)
    if m and c.subject in ("self", "we", "with") and allowed(c, STAY) and m.group("q") != "no" \
            and not negated(c.pred[: m.start("kind")]):
        out += _had(cs, i, m)
    if c.subject == "self" and allowed(c, CURRENT):
        m = _KIDS_OF.search(c.pred)
        work = re.search(r"\b(?:work|works|working|teach|teaching|volunteer|volunteering|deal|dealing)\b", c.pred)
        if m and (m.group("kind") or not m.group(0).lower().startswith("with")) and not (work and m.start() > work.start()):
            kind = _kind({"boy": "son", "girl": "daughter"}.get((m.group("kind") or "kid").lower().rstrip("s"),
                                                                 m.group("kind") or "kids"), None)
            named = re.match(rf"^(?:,\s*|\s+(?:named|called)\s+)(?P<n>{_NAMES})\s*(?:$|[,.!])", m.group("rest"))
            names = _names(named.group("n"), True) if named else []
            out += _entities("children", kind, names, c, 0.75)
        m = re.match(rf"^(?:am|are) (?:happily )?married(?: to (?P<n>{_NAME}))?(?=$|,|\s)", c.pred)
        if m and not negated(c.pred[: m.start(0) + 4]):
            out.append(fact("partner", entity("spouse", m.group("n")), 0.8, c.text))
    return out


#: "married with two boys, Felix and Rory", "a single dad to a 10 year old girl named Zuri", "mum of three".
_KIDS_OF = re.compile(r"\b(?:with (?:my )?(?:\d+|two|three|four|five|six)|(?:mom|mum|dad|mother|father|parent) (?:of|to) "
                      r"(?:my )?(?:\d+|two|three|four|five|six|an?|one|twins?))(?:\s+(?:\d+|[a-z]+)[- ]year[- ]old)?"
                      r"(?:\s+(?:little |young |small |grown |twin )?(?P<kind>kids?|children|little ones|sons?|daughters?|"
                      r"boys?|girls?)\b|(?=$|,| and\b| here\b))(?P<rest>.*)$", re.IGNORECASE)
_FOLLOWUP = re.compile(rf"^(?:(?:his|her|its|their) names? (?:is|are)|(?:he|she|it) is (?:called|named)|(?:a|an) {_ADJ}"
                       rf"(?P<kind>{_alt(ANIMALS)}) (?:named|called)) (?P<n>{_NAMES})$", re.IGNORECASE)


def _followup(cs: Sequence[Clause], i: int) -> list[Found]:
    """"We got a puppy! A beagle named Scout." / "I have a dog. His name is Rex.": the name
    (and kind) of a pet or child the message mentioned just before without one."""
    c = cs[i]
    m = _FOLLOWUP.match(c.bare)
    if not m or i == 0 or not allowed(c, frozenset({"question", "other"})):
        return []
    for earlier in reversed(cs[max(0, i - 3):i]):
        had = _HAVE.match(earlier.pred) or _POSSESSIVE.search(earlier.text)
        key = _key(had.group("kind")) if had else None
        if had and key in ("pets", "children"):
            kind = m.group("kind") or had.group("kind")
            names = _names(m.group("n"))
            return [f._replace(refine=True) for f in _entities(key, _kind(kind, None), names, c, 0.85)]
    return []


_DIET = rf"(?:{_alt(DIET_LABELS)})"
_DIETS = rf"{_DIET}(?:\s*(?:,|and|&)\s*{_DIET})*"
_NOT_FOOD = re.compile(r"^(?:much|a lot|enough|well|out|late|after|before|breakfast|lunch|dinner|meals?|anything|"
                       r"it|that|this|them|fast food|there|here|at \w+|with \w+)\b", re.IGNORECASE)


#: What "I can't have X" restricts when it is about food ("can't have kids" is not a diet).
_RESTRICTABLE = ("dairy|milk|cheese|lactose|gluten|wheat|nuts|peanuts|tree nuts|shellfish|seafood|fish|eggs?|soy|"
                 "sugar|caffeine|coffee|alcohol|meat|red meat|pork|beef|chicken|spicy food|garlic|onions?")


def _diet(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    out: list[Found] = []
    if c.subject == "other" or not allowed(c, frozenset({"question", "hypothetical", "other"})):
        return out
    label = None
    if c.subject in ("self", "with") and allowed(c, CURRENT):
        m = re.match(rf"^(?:am|are) (?:a |an )?(?:strict |full |fully |mostly |pretty much |basically |also |now |"
                     rf"strictly |100% |a strict |completely )?(?P<l>{_DIETS}|coeliac|celiac)\b", p, re.IGNORECASE) or \
            re.search(r"\bhave (?P<l>coeliac|celiac)(?: disease)?\b", p, re.IGNORECASE) or \
            re.search(rf"\b(?:eat|eats|only eat|keep|follow|am on|are on|went|have gone|have been|switched to|turned)\s+"
                      rf"(?:a |an )?(?:strictly |only |mostly |fully )?(?P<l>{_DIET})(?: diet)?\b", p, re.IGNORECASE)
        if m and not negated(p[: m.start("l")]):
            label = m.group("l")
    m = re.match(rf"^as an? (?:[\w-]+ (?:and|&) (?:a |an )?)?(?P<l>{_DIET})\b", c.bare, re.IGNORECASE) or \
        re.match(rf"^(?:have )?been (?:a |an )?(?:strict |fully )?(?P<l>{_DIET})\b", p, re.IGNORECASE)
    if m:
        label = m.group("l")
    for one in re.findall(rf"{_DIET}|coeliac|celiac", label or "", re.IGNORECASE):
        out.append(fact("diet", DIET_SPELLINGS.get(one.lower(), one.lower()), 0.85, c.text))
    if c.subject in ("self", "with"):
        m = re.search(r"\b(?:don't|do not|never|can't|cannot|won't) (?:really |ever |usually )?(?:eat|drink|touch)"
                      r"(?:\s+(?P<v>.+))?$", p, re.IGNORECASE) or \
            re.search(rf"\b(?:can't|cannot|can not|shouldn't|mustn't) (?:really |ever )?have (?P<v>(?:{_RESTRICTABLE})\b.*)$",
                      p, re.IGNORECASE)
        if m and re.search(r"\bdrink\b", m.group(0)) and not m.group("v"):
            out.append(fact("diet", "no:alcohol", 0.75, c.text))
        elif m and m.group("v") and not _NOT_FOOD.match(m.group("v")):
            foods = items(re.sub(r"\s+(?:anymore|any more|at all|either|ever|after|before|during)\b.*$", "", m.group("v")),
                           max_words=3)
            if foods:
                out.append(fact("diet", tuple(f"no:{f}" for f in foods), 0.8, c.text))
    return out


_ALLERGY_OBJ = r"(?P<v>[A-Za-z][\w' -]{1,40}?)"


def _allergies(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    if c.subject not in ("self", "with") or not allowed(c, frozenset({"question", "hypothetical", "other"})):
        return []
    for pattern in (r"(?:^|\b(?:am|are) )(?:\w+ )?allergic to (?P<v>.+)$",
                    r"\bhave (?:a |an )?(?:severe |mild |bad |serious |deadly |life-threatening |slight )?"
                    + _ALLERGY_OBJ + r" (?:allergy|allergies|intolerance)\b",
                    r"\b(?:(?:very|severely|a bit|slightly|mildly) )?(?P<v>lactose|gluten|"
                    r"dairy|fructose|wheat|histamine|soy|egg|nut|peanut) intolerant\b",
                    r"(?:^|\b(?:a|an|my) |(?<=[\u4e00-\u9fff])\s*)(?P<v>[a-z]+(?: [a-z]+)?) (?:allergy|intolerance)\b"):
        m = re.search(pattern, p, re.IGNORECASE)
        if m and not negated(p[: m.start("v")]):
            found = items(m.group("v"), max_words=3)
            if found and not any(re.match(r"(?:anything|everything|nothing)\b", f) for f in found):
                return [fact("allergies", found, 0.9, c.text)]
    return []


_HOBBY_VERBS = {
    "swim": "swimming", "hike": "hiking", "paint": "painting", "draw": "drawing", "cook": "cooking", "bake": "baking",
    "read": "reading", "run": "running", "jog": "jogging", "dance": "dancing", "sing": "singing",
    "travel": "traveling", "ski": "skiing", "snowboard": "snowboarding", "surf": "surfing", "skate": "skating",
    "climb": "climbing", "cycle": "cycling", "bike": "biking", "knit": "knitting", "sew": "sewing",
    "garden": "gardening", "fish": "fishing", "write": "writing", "camp": "camping", "sail": "sailing",
    "dive": "diving", "golf": "golfing", "row": "rowing", "box": "boxing", "meditate": "meditating",
    "kayak": "kayaking", "photograph": "photography", "blog": "blogging",
}  # fmt: skip


def _objects(raw: str) -> tuple[str, ...] | None:
    """Liked things: noun phrases and -ing forms; "to <verb>" only for a hobby verb."""
    raw = re.sub(r"\s*,?\s*(?:especially|particularly|like|such as)\b.*$", "", raw.strip(), flags=re.IGNORECASE)
    if re.match(r"to\s", raw, re.IGNORECASE):
        verbs = items(re.sub(r"\bto\s+", "", raw, flags=re.IGNORECASE))
        acts = tuple(_HOBBY_VERBS.get(v.lower(), "") for v in verbs or ())
        return acts if acts and all(acts) else None
    return items(raw, max_words=4)


def _tastes(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    out: list[Found] = []
    if not allowed(c, CURRENT):
        return out
    m = re.match(r"^my (?:absolute |all-time )?favou?rite (?P<k>[\w ]{1,20}?) (?:is|are) (?P<v>[^,]+)", c.bare, re.I) or \
        re.match(r"^my (?:hobbies|hobby|interests|passions?) (?:is|are|include) (?P<v>[^,]+(?:,[^,]+)*)", c.bare, re.I)
    if m and (found := items(m.group("v"), max_words=5)):
        out.append(fact("likes", found, 0.8, c.text))
    fan = re.match(r"^(?:a )?(?:big|huge|massive|total|die-hard|lifelong) fan of (?P<v>.+?)(?: here)?$", c.bare, re.I)
    if fan and c.subject == "self" and (found := _objects(fan.group("v"))):
        out.append(fact("likes", found, 0.7, c.text))
    dropped = c.pred == c.bare and opens_sentence(cs, i) and _DROPPED_I.match(p)  # "can't stand coriander"
    if c.subject not in ("self", "with") or (c.pred == c.bare and not dropped):  # else likes need a stated "I"
        return out
    p = f"am {p}" if dropped and p.lower().startswith("not") else p
    adv = r"(?:(?:really|absolutely|totally|just|also|still|truly|genuinely|definitely|kinda|kind of|pretty much|" \
          r"do|actually|so|seriously|deeply) )*"
    rules = (
        ("dislikes", rf"^{adv}(?:don't|do not|really don't|can't say I)\s+(?:really |particularly |much )?"
                     rf"(?:like|enjoy|love|care for)\s+(?P<v>.+)$"),
        ("dislikes", rf"^{adv}(?:hate|dislike|detest|loathe|can't stand|cannot stand)\s+(?P<v>.+)$"),
        ("dislikes", r"^(?:am|are) not (?:a |really a |much of a |the )?(?:big |huge )?fan of (?P<v>.+)$"),
        ("dislikes", r"^(?:am|are) not (?:really |that |very |too |much )?(?:into|keen on|fond of) (?P<v>.+)$"),
        ("dislikes", r"^(?:have )?never (?:really )?(?:liked|enjoyed|been a fan of|been into|cared for) (?P<v>.+)$"),
        ("likes", rf"^{adv}(?:love|like|enjoy|adore|dig)\s+(?P<v>.+)$"),
        ("likes", r"^(?:am|are) (?:a |an )?(?:big |huge |massive |great |total |die-hard |lifelong |long-time )?"
                  r"fan of (?P<v>.+)$"),
        ("likes", r"^(?:am|are) (?:really |totally |super |very |so |deeply )?(?:into|obsessed with|passionate about|"
                  r"crazy about|hooked on|addicted to) (?P<v>.+)$"),
        ("likes", r"^(?:am|are) (?:a |an )?(?:big |huge |massive |die-hard |lifelong )?(?P<v>[A-Z][\w.'&-]*"
                  r"(?: [A-Z][\w.'&-]*){0,3}|[\u4e00-\u9fff]{2,8}) fan\b"),
        ("likes", r"^(?:much |really )?prefer (?P<v>.+?)(?: (?:over|to|rather than) .+)?$"),
    )
    for key, pattern in rules:
        m = re.match(pattern, p, re.IGNORECASE if "[A-Z]" not in pattern else 0)
        if not m:
            continue
        if key == "likes" and negated(p[: m.start("v")]):
            break
        if key == "dislikes" and "never" in m.group(0) and re.search(r"\b(?:until|till|before)\b", p):
            break
        if re.search(r"\b(?:anymore|any more)\b", p) or re.match(r"(?:not|never)\b", m.group("v")):
            break
        found = _objects(m.group("v"))
        if found:
            out.append(fact(key, found, 0.75, c.text))
        break
    return out


#: Taste statements people type without the "I" at the start of a message.
_DROPPED_I = re.compile(r"^(?:(?:(?:really|absolutely|totally|just|genuinely) )*(?:can't stand|cannot stand|hate|dislike|"
                        r"detest|loathe|love|adore)|not (?:a |really a |much of a )?(?:big |huge )?fan of)\s+"
                        r"(?!(?:the|this|that|these|those|your|my|it|how|when|what|to|being|having)\b)", re.I)
_PAST_PET = re.compile(r"\b(?:died|passed away|passed|was put down|had to be put down|crossed the rainbow bridge)\b")


def _removals(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    if not allowed(c, frozenset({"question", "hypothetical", "other"})):
        return []
    out: list[Found] = []
    if c.subject in ("self", "with"):
        m = re.match(r"^(?:don't|do not|no longer|don't really) (?:like|love|enjoy|care for) (?P<v>.+?) (?:anymore|any more)"
                     r"\b|^no longer (?:like|love|enjoy|care for) (?P<w>.+)$", p, re.IGNORECASE)
        if m and (found := items(m.group("v") or m.group("w"))):
            out.append(fact("likes", found, 0.8, c.text, op="remove"))
        m = re.search(rf"\b(?:am|are) no longer (?:a |an )?(?P<l>{_DIET})\b|\beat(?:ing)? meat again\b", p, re.I) or \
            re.search(rf"\b(?:am|are) not (?:a |an )?(?P<k>{_DIET}) (?:anymore|any more)\b", p, re.I)
        if m:
            label = (m.groupdict().get("l") or m.groupdict().get("k") or "").lower()
            gone = (label,) if label else ("vegetarian", "vegan", "pescatarian")
            out.append(fact("diet", gone, 0.8, c.text, op="remove"))
        m = re.search(r"\b(?:am|are) (?:no longer|not) allergic to (?P<v>.+?)(?: (?:anymore|any more))?$", p, re.I)
        if m and ("no longer" in m.group(0) or re.search(r"any ?more", p)) and (found := items(m.group("v"))):
            out.append(fact("allergies", found, 0.8, c.text, op="remove"))
    m = _PAST_PET.search(c.text)
    if m:
        who = re.search(rf"\b(?:(?:my|our) (?:\w+ )?(?P<k>{_alt(ANIMALS)})(?: (?P<n>{_NAME}))?|^(?P<o>{_NAME}))\s*$",
                        c.text[: m.start()], re.IGNORECASE)
        if who and (who.group("n") or who.group("o") or who.group("k")):
            out.append(fact("pets", who.group("n") or who.group("o") or who.group("k").lower(), 0.8, c.text, op="remove"))
    return out


_FORGET_WORDS = {"address": "location", "home address": "location", "where I live": "location", "job": "occupation",
                 "company": "employer", "workplace": "employer", "pet": "pets", "preferences": "likes"}


def _forget(cs: Sequence[Clause], i: int) -> list[Found]:
    c = cs[i]
    m = re.match(r"^(?:please )?(?:forget|delete|erase|remove) (?:my |what you know about my |where I live)"
                 r"(?P<v>[a-z][a-z ]{0,40}?)?(?:\s+(?:please|now|for me))?$", c.bare, re.IGNORECASE)
    if not m or "question" in c.guards:
        return []
    what = (m.group("v") or "where I live").strip() if "where I live" not in m.group(0) else "where I live"
    if len(what.split()) > 4:
        return []
    try:
        key = _FORGET_WORDS.get(what) or canonical_key(what)
    except InvalidInput:
        return []
    return [Found(key, None, 0.9, "delete", c.text)]


def life(cs: Sequence[Clause], i: int) -> list[Found]:
    """Every people / animal / taste fact (and take-back) of clause ``i`` of ``cs``."""
    out: list[Found] = []
    for rule in (_people, _followup, _diet, _allergies, _tastes, _removals, _forget):
        out.extend(rule(cs, i))
    return out

