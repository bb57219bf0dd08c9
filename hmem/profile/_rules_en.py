"""The English profile rules: clauses that start with "I" / "my" (after a discourse
word like "actually") → :class:`~hmem.profile._rule_parts.Found`.

Likes and dislikes take noun phrases and gerunds; "I like to <verb>" counts only for
a hobby verb (:data:`_HOBBY_VERBS`) and is stored as the activity. Sentence splitting
and blocking happen in :mod:`hmem.profile._rules`.

Example::

    >>> [rule.name for rule in EN_RULES if rule.pattern.match("I live in Berlin")]
    ['en_live']
"""

from __future__ import annotations

import re

from hmem.profile._rule_parts import (
    LIST_SPLIT,
    TRAILING_FILLER,
    Builder,
    Found,
    Rule,
    build_favorite,
    build_forget,
    build_job,
    build_pet,
    clean,
    merge_list,
    object_items,
    set_int,
    set_text,
)

__all__ = ["EN_RULES"]

_EN_LEAD = (
    r"^(?:(?:well|so|and|but|also|actually|oh|btw|by the way|anyway|now|ok|okay|yes|yeah|hi|hello|hey|fyi)[,!]?\s+)*"
)
_EN_ADV = (
    r"(?:(?:now|currently|still|also|actually|just|recently|really|finally|already|even|totally|absolutely|truly)\s+)*"
)
_PN = r"(?P<v>(?-i:[A-Z][\w'’&.-]*)(?:\s+(?:(?:of|de|del|da|la|le|am|upon|on|the)\s+)?(?-i:[A-Z][\w'’&.-]*)){0,4})"
_REST = r"(?P<rest>.*)$"
_END = r"\s*$"
_EN_OBJ = r"(?P<v>[^;.!?]{1,80})$"
_JOBS_EN = (
    "engineer|developer|programmer|teacher|professor|nurse|doctor|physician|surgeon|dentist|lawyer|attorney|"
    "accountant|designer|architect|scientist|researcher|student|writer|journalist|editor|chef|cook|pilot|"
    "pharmacist|therapist|consultant|analyst|manager|librarian|electrician|plumber|carpenter|mechanic|"
    "musician|artist|photographer|translator|firefighter|farmer|veterinarian|vet|paramedic|economist|"
    "entrepreneur|officer|technician|tutor|barista"
)
_ANIMALS_EN = (
    "dog|cat|puppy|kitten|hamster|rabbit|bunny|parrot|budgie|goldfish|fish|turtle|tortoise|guinea pig|"
    "horse|bird|snake|lizard|ferret|gecko|chinchilla"
)
_NOT_NAMES = (
    "fine|good|great|back|here|sorry|ready|okay|new|home|busy|tired|happy|glad|well|chinese|english|german|french|"
    "japanese|american|british|canadian|indian|italian|spanish|korean|russian|australian|irish|dutch|swiss"
)
_EN_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*"


#: "I like to <verb>" counts only for these hobby verbs, stored as the activity
#: ("I like to swim" → swimming, the same item as "I like swimming"). Any other
#: infinitive ("I like to look out", "I hate to bother you", "I like to keep things
#: simple") is a habit, a politeness formula or a clause, not an object of liking.
_HOBBY_VERBS = {
    "swim": "swimming", "hike": "hiking", "paint": "painting", "draw": "drawing", "cook": "cooking",
    "bake": "baking", "read": "reading", "run": "running", "jog": "jogging", "dance": "dancing",
    "sing": "singing", "travel": "traveling", "ski": "skiing", "snowboard": "snowboarding", "surf": "surfing",
    "skate": "skating", "climb": "climbing", "cycle": "cycling", "bike": "biking", "knit": "knitting",
    "sew": "sewing", "garden": "gardening", "fish": "fishing", "write": "writing", "camp": "camping",
    "sail": "sailing", "dive": "diving", "golf": "golfing", "row": "rowing", "box": "boxing",
    "meditate": "meditating", "kayak": "kayaking", "photograph": "photography", "blog": "blogging",
}  # fmt: skip
_PLAYABLE = re.compile(
    r"play (?P<what>(?:the )?(?:chess|tennis|football|soccer|basketball|badminton|volleyball|golf|piano|guitar|"
    r"violin|cello|drums|video games|board games|table tennis|ping pong))$",
    re.IGNORECASE,
)


def _activities(raw: str) -> tuple[str, ...] | None:
    """"swim and hike" → ("swimming", "hiking"); None unless every item is a hobby."""
    out: list[str] = []
    for part in LIST_SPLIT.split(TRAILING_FILLER.sub("", clean(raw))):
        item = re.sub(r"^to\s+", "", clean(part), flags=re.IGNORECASE)
        if not item:
            continue
        played = _PLAYABLE.match(item)
        activity = f"playing {played.group('what').lower()}" if played else _HOBBY_VERBS.get(item.lower())
        if activity is None:
            return None
        if activity not in out:
            out.append(activity)
    return tuple(out) or None


def _affinity(key: str, confidence: float) -> Builder:
    """likes / dislikes: noun phrases and gerunds ("tea", "hiking"); "to <verb>" only
    for a clear hobby (see :data:`_HOBBY_VERBS`)."""

    def build(m: re.Match[str]) -> list[Found]:
        obj = clean(m.group("v"))
        infinitive = re.match(r"to\s", obj, re.IGNORECASE) is not None
        items = _activities(obj) if infinitive else object_items(obj, infinitives=False)
        return [Found(key, items, confidence, "set", m.group(0), merge=True)] if items else []

    return build


_WORK_AS_CUT = re.compile(
    r"\s+(?=(?:at|for|in|with|on|from|since|during|and|but|who|which|that|because|while)\b)", re.IGNORECASE
)
_WORK_AS_EMPLOYER = re.compile(r"(?:at|for) " + _PN + r"(?:\s+(?:in|since|for|from)\b.*)?$")


def _work_as(m: re.Match[str]) -> list[Found]:
    """"I work as a UX designer at a fintech in Manchester" → occupation "UX designer"
    (no employer: "a fintech" is not a name). The job is the words before the first
    preposition/conjunction, and must come with "a/an" or end in a known job noun
    ("I work as hard as I can" is no job)."""
    job, *rest = _WORK_AS_CUT.split(clean(m.group("v")), maxsplit=1)
    article = re.match(r"an?\s+", job, re.IGNORECASE)
    job = job[article.end():] if article else job
    words = job.split()
    if not words or len(words) > 4 or not all(re.fullmatch(r"[A-Za-z][A-Za-z-]*", w) for w in words):
        return []
    if article is None and not re.fullmatch(rf"(?:{_JOBS_EN})s?", words[-1], re.IGNORECASE):
        return []
    out = [Found("occupation", job, 0.85, "set", m.group(0))]
    employer = _WORK_AS_EMPLOYER.match(rest[0]) if rest else None
    if employer:
        out.append(Found("employer", clean(employer.group("v")), 0.8, "set", m.group(0)))
    return out


def _en(pattern: str) -> re.Pattern[str]:
    return re.compile(_EN_LEAD + pattern, re.IGNORECASE)


EN_RULES: tuple[Rule, ...] = (
    # name
    Rule("en_name", _en(r"my (?:full )?name(?: is|'s) " + _PN + _END), set_text("name", 0.95)),
    Rule("en_call_me", _en(r"(?:please |you can )?call me " + _PN + _END), set_text("name", 0.85)),
    Rule("en_greet_name", re.compile(r"^(?:hi|hello|hey)[,!]?\s+(?:i'm|i am) (?!(?:" + _NOT_NAMES + r")\b)"
                                     r"(?P<v>(?-i:[A-Z][a-z]+))" + _END, re.IGNORECASE), set_text("name", 0.8)),
    # location / hometown
    Rule("en_live", _en(r"i " + _EN_ADV + r"(?:live|reside|am living|'m living|'ve lived|have lived|have been living|"
                        r"'ve been living|am based|'m based) in " + _PN + r"\b" + _REST), set_text("location", 0.9)),
    Rule("en_moved", _en(r"i " + _EN_ADV + r"(?:moved|'ve moved|have moved|relocated|'ve relocated) to " + _PN + r"\b"
                         + _REST), set_text("location", 0.9)),
    Rule("en_from", _en(r"(?:i'm|i am|i come|i'm originally|i am originally) from " + _PN + _END), set_text("hometown", 0.85)),
    Rule("en_grew_up", _en(r"i grew up in " + _PN + r"\b" + _REST), set_text("hometown", 0.8)),
    # occupation / employer
    Rule("en_work_as", _en(r"i " + _EN_ADV + r"(?:work|am working|'m working) as " + _EN_OBJ), _work_as),
    Rule("en_by_profession", _en(r"(?:i'm|i am) (?P<v>an? [a-z][a-z -]{1,40}?) by (?:profession|trade)" + _END), build_job),
    Rule("en_im_a_job", _en(rf"(?:i'm|i am) (?P<v>an? (?:[a-z-]+ ){{0,3}}(?:{_JOBS_EN}))" + _END), build_job),
    Rule("en_work_at", _en(r"i " + _EN_ADV + r"(?:work|am working|'m working) (?:at|for) " + _PN + _END),
         set_text("employer", 0.85)),
    # likes / dislikes / preferences / favourites
    Rule("en_prefer", _en(r"i " + _EN_ADV + r"prefer " + _EN_OBJ), merge_list("preferences", 0.8)),
    Rule("en_like", _en(r"i " + _EN_ADV + r"(?:love|like|enjoy|adore) " + _EN_OBJ), _affinity("likes", 0.75)),
    Rule("en_fan", _en(r"(?:i'm|i am) " + _EN_ADV + r"(?:a (?:big |huge )?fan of|into|fond of|passionate about) "
                       + _EN_OBJ), merge_list("likes", 0.7)),
    Rule("en_dislike", _en(r"i " + _EN_ADV + r"(?:don't|do not) (?:really )?(?:like|enjoy) " + _EN_OBJ),
         _affinity("dislikes", 0.75)),
    Rule("en_hate", _en(r"i " + _EN_ADV + r"(?:hate|dislike|detest|can't stand|cannot stand) " + _EN_OBJ),
         _affinity("dislikes", 0.75)),
    Rule("en_favorite", _en(r"my (?:favou?rite) (?P<k>[a-z]+(?: [a-z]+)?) is (?P<v>[^,;.!?]{1,60})$"), build_favorite),
    # languages
    Rule("en_speak", _en(r"i " + _EN_ADV + r"(?:speak|can speak) (?:fluent |some |a little |basic )?(?P<v>(?-i:[A-Z][a-z]+)"
                         r"(?:(?:,\s*|,?\s+and\s+)(?-i:[A-Z][a-z]+))*)" + _END), merge_list("languages", 0.85)),
    Rule("en_native", _en(r"my (?:native language|mother tongue|first language) is (?P<v>(?-i:[A-Z][a-z]+))" + _END),
         set_text("native_language", 0.9)),
    # pets
    Rule("en_pet", _en(r"i (?:have|'ve got|have got|own) (?:a|an|one|two|three|\d+) (?:little |small |big |old |young )?"
                       rf"(?P<v>(?:{_ANIMALS_EN})s?)(?: (?:named|called) (?P<name>(?-i:[A-Z][a-z]+)))?" + _END), build_pet),
    # birthday / age
    Rule("en_birthday", _en(rf"my birthday is (?:on )?(?P<v>(?:[^,;!?]*\d[^,;!?]*{_EN_MONTH}|{_EN_MONTH}[^,;!?]*\d)"
                            r"[^,;!?]*?)" + _END), set_text("birthday", 0.9)),
    Rule("en_born_on", _en(rf"i was born on (?P<v>[^,;!?]*(?:\d[^,;!?]*{_EN_MONTH}|{_EN_MONTH}[^,;!?]*\d)[^,;!?]*?)" + _END),
         set_text("birthday", 0.9)),
    Rule("en_age", _en(r"(?:i'm|i am) (?P<v>\d{1,3}) years old" + _END), set_int("age", 0.85, 1, 130)),
    # forget → delete
    Rule("en_forget", _en(r"(?:please )?(?:forget|delete|erase) (?:my |what you know about my )(?P<v>[a-z][a-z ]{1,40})"
                          + _END), build_forget),
    Rule("en_forget_where", _en(r"(?:please )?forget (?P<v>where i live)" + _END), build_forget),
)  # fmt: skip
