"""English rules for what the user does: occupation, employer, school, major, and job
changes ("switched jobs to …", "got hired at …", "First week at Ondina done"). Pure.

An occupation is a noun phrase headed by a job word (:data:`~hmem.profile._lex_en.JOBS`:
"backend engineer", "pastry chef"), a field of work ("I'm in HR"), or a verb that names
one ("I teach" → teacher). An employer must be a *name* (capitalised, or Chinese): "at
a fintech startup" names nobody. Places after the job go to ``location``.

Example::

    >>> from hmem.profile._clauses import analyse
    >>> cs = analyse("I work for the NHS as a pharmacist")
    >>> sorted((f.key, f.value) for i in range(len(cs)) for f in work(cs, i))
    [('employer', 'NHS'), ('occupation', 'pharmacist')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hmem.profile._clauses import CJK, CURRENT, STAY, TIMELESS, Clause, allowed, negated
from hmem.profile._lex_en import FIELDS, JOBS, PLACES, SCHOOL_WORDS, STUDY_YEARS
from hmem.profile._values import Found, en_place, fact

__all__ = ["JOB_NP", "JOB_PHRASE", "ORG", "first_days_at", "work"]


def _alt(words: object) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))  # type: ignore[call-overload]


_STOP = (r"(?:of|in|at|for|with|to|from|and|or|but|the|a|an|my|our|who|that|which|fan|on|by|as|so|is|am|are|was|"
         r"very|really|huge|big|total|bit|kind|sort|here|there|now|still|just|basically|literally|professional napper)")
_MOD = rf"(?!{_STOP}\b)[A-Za-z][\w/&'-]*"
_JOB_HEAD = rf"(?:{_alt(JOBS)})"
_FIELDS = _alt(FIELDS)  # built once: escaping every field word on each clause cost ~0.3 ms a turn
#: "senior" is a study year only when no job word follows ("a senior data scientist" is not a student).
_HEAD = rf"(?:{_JOB_HEAD}|(?:{_alt(STUDY_YEARS)})(?!\s+(?:[A-Za-z][\w/&'-]*\s+){{0,3}}?{_JOB_HEAD}\b))"
_SPECIAL = (r"stay[- ]at[- ]home (?:mom|mum|dad|parent|mother|father|mama)|full[- ]time (?:mom|mum|dad|parent)|"
            r"work[- ]from[- ]home (?:mom|mum|dad|parent)")
#: An occupation noun phrase: up to four modifiers and a job word ("second year CS student").
JOB_PHRASE = rf"(?:{_SPECIAL}|(?:{_MOD}\s+){{0,4}}?{_HEAD}(?:\s+{_HEAD}(?![\w-]))?)(?![\w-])"
JOB_NP = rf"(?P<job>{JOB_PHRASE})"
#: A named organisation: capitalised words ("Georgia Tech", "ASML"), or Chinese characters.
ORG = rf"(?:the\s+)?(?P<org>(?:[A-Z][\w&.'-]*)(?:\s+(?:of\s+|&\s+|and\s+)?[A-Z][\w&.'-]*){{0,4}}|[{CJK}]{{2,12}})"
_SUBJECTS = ("english", "math", "maths", "mathematics", "physics", "chemistry", "chem", "biology", "science", "history",
             "geography", "music", "art", "pe", "french", "spanish", "german", "chinese", "mandarin", "japanese", "esl",
             "drama", "economics", "yoga", "piano", "dance", "swimming", "computer science", "cs")
_DEGREE = (r"(?P<deg>phd|ph\.d\.?|doctorate|dphil|masters?|master's|msc|ma|mba|mphil|bsc|ba|bachelor'?s|"
           r"undergrad(?:uate)?(?: degree)?|degree)")
_NOT_MAJOR_MODS = re.compile(r"\b(?:first|second|third|fourth|final|1st|2nd|3rd|4th|year|grad|graduate|phd|college|"
                             r"university|uni|high|school|international|mature|full-time|part-time|exchange|med|"
                             r"undergrad|undergraduate|postgrad|masters|doctoral|former|current|new|young|old)\b",
                             re.IGNORECASE)
_COMPANY_NOUN = (r"(?:startup|start-up|company|firm|business|agency|studio|shop|restaurant|cafe|café|bakery|practice|"
                 r"clinic|charity|nonprofit|non-profit|lab|brand|consultancy|bar|store)")


def _clean_job(job: str) -> str:
    """The job phrase without "UK-based"-style place modifiers."""
    words = [w for w in job.split() if not re.search(r"-based$", w, re.IGNORECASE)]
    return " ".join(words)


def _org(text: str) -> str | None:
    m = re.match(ORG, text.strip())
    if not m:
        return None
    org = re.sub(r"\s+(?:of|and|&)$", "", m.group("org")).strip()
    if org.lower() in PLACES or org.lower() in FIELDS or org in ("I", "My", "Our"):
        return None
    return org


def _is_school(org: str, student: bool) -> bool:
    words = org.lower().split()
    return any(w in SCHOOL_WORDS for w in words) or (student and bool(re.fullmatch(r"[A-Z]{2,6}", org)))


def _after_job(c: Clause, job: str, rest: str, conf: float) -> list[Found]:
    """The facts of a job phrase and what follows it ("… at Shopify", "… in Leeds")."""
    head = job.rsplit(maxsplit=1)[-1].lower()
    student = head.rstrip("s") in {"student", "undergrad", "undergraduate", "postdoc"} or head in STUDY_YEARS
    out: list[Found] = []
    if head in STUDY_YEARS:
        out.append(fact("occupation", "student", conf, c.text))
    else:
        out.append(fact("occupation", _clean_job(job), conf, c.text))
    if student:
        mods = re.sub(r"[\s-]+", " ", _NOT_MAJOR_MODS.sub(" ", " ".join(job.split()[:-1]))).strip()
        if mods and len(mods.split()) <= 3:
            out.append(fact("major", mods, 0.7, c.text))
        studying = re.search(r"\bstudying (?P<m>[A-Za-z][\w ]{1,30}?)(?=$|,| at | in | and )", rest)
        if studying:
            out.append(fact("major", studying.group("m"), 0.75, c.text))
    m = re.match(r"^\s*(?:,\s*)?(?:at|for|with|of)\s+(?P<v>.+)$", rest)
    org = _org(m.group("v")) if m else None
    if org:
        out.append(fact("school" if student or _is_school(org, student) else "employer", org, 0.8, c.text))
    origin = re.search(r"\bfrom (?P<v>.+)$", rest)
    if origin and (value := en_place(origin.group("v"))) and allowed(c, TIMELESS):
        out.append(fact("hometown", value, 0.75, c.text))
    called = re.search(rf"\b{_COMPANY_NOUN} (?:called|named) (?P<v>[A-Z][\w&.'-]*(?: [A-Z][\w&.'-]*)?)", rest)
    if called and not org:
        out.append(fact("employer", called.group("v"), 0.75, c.text))
    place = re.search(r"\bin (?P<v>[A-Z" + CJK + r"a-z].*)$", rest)
    if place and (value := en_place(place.group("v"))) and value.lower() not in FIELDS and allowed(c, STAY):
        out.append(fact("location", value, 0.7, c.text))
    return out


def _occupation(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    if c.subject not in ("self", "with") or not allowed(c, CURRENT):
        return []
    flags = re.IGNORECASE
    m = re.match(rf"^(?:am|are) (?:also |currently |now |still |actually )?(?:a |an |the )?(?:\d{{1,2}}\s?(?:yo|y/o)\s+|"
                 rf"\d{{1,2}}[- ]year[- ]old\s+)?{JOB_NP}(?P<rest>.*)$", p, flags) or re.match(rf"^have been (?:a |an )?{JOB_NP}(?P<rest>\s+for\b.*)$", p, flags)
    if m and not negated(p[: m.start("job")]) and not re.match(r"^\s+fan\b", m.group("rest")):
        return _after_job(c, m.group("job"), m.group("rest"), 0.85)
    # "I got promoted to senior data scientist", "Brightpath promoted me to lead designer": past only
    m = re.search(rf"\b(?:(?:got|was|been|just|finally|recently) promoted|promoted me) to (?:a |an |the )?{JOB_NP}"
                  rf"(?P<rest>.*)$", p, flags)
    if m and not negated(p[: m.start("job")]):
        return _after_job(c, m.group("job"), m.group("rest"), 0.8)
    m = re.match(rf"^(?:am|are) .*?\band (?:a |an )?{JOB_NP}(?P<rest>.*)$", p, flags)
    if m and not negated(p[: m.start("job")]) and not re.match(r"^\s+fan\b", m.group("rest")):
        return _after_job(c, m.group("job"), m.group("rest"), 0.8)
    m = re.match(r"^(?:drive|drives) (?:a |an |the )?(?P<v>bus|taxi|cab|lorry|truck|tram|train|forklift|ambulance)"
                 r"(?=(?: for (?:a living|work))? *$| for (?:a living|work)\b| professionally)", p, flags)
    if m and not negated(p[: m.start()]) and (m.group("v") not in ("truck", "ambulance") or m.end() < len(p) - 1):
        return [fact("occupation", f"{m.group('v').lower()} driver", 0.75, c.text)]  # "I drive a bus for a living"
    m = re.search(rf"\bwork(?:s|ing)?(?: \w+)? as (?:a |an |the )?{JOB_NP}(?P<rest>.*)$", p, flags)
    if m and not negated(p[: m.start("job")]):
        return _after_job(c, m.group("job"), m.group("rest"), 0.85)
    m = re.search(rf"\b(?:work(?:s|ing)?|joined|started at|just started at|got a job at)\s+(?:at|for)?\s*{ORG}"
                  rf"(?:\s+as (?:a |an |the )?{JOB_NP})?", p)
    if m and not negated(p[: m.start("org")]) and (org := _org(m.group(0)[m.start("org") - m.start(0):])):
        out = [fact("employer", org, 0.85, c.text)]
        if m.group("job"):
            out.append(fact("occupation", _clean_job(m.group("job")), 0.85, c.text))
        return out
    # "work at a hospital as a nurse", "have worked as a chef for ten years", "got a job as a bank teller"
    m = re.search(rf"\b(?:work(?:s|ing)?|have worked|got (?:a|the) job|have (?:a|the) job)(?: [^,;]{{1,30}}?)? as "
                  rf"(?:a |an |the )?{JOB_NP}(?P<rest>.*)$", p, flags)
    if m and not negated(p[: m.start("job")]):
        return _after_job(c, m.group("job"), m.group("rest"), 0.8)
    m = re.search(rf"\b(?:a|my|new|dream) job (?:at|with) {ORG}", p)
    if m and not negated(p[: m.start("org")]) and (org := _org(m.group("org"))):
        return [fact("employer", org, 0.75, c.text)]
    m = re.search(r"\bin (?:my (?:\w+ )?year (?:of|at) )?(?P<s>nursing|law|med|medical|dental|grad|graduate|business|"
                  r"culinary|art|film|vet|veterinary|pharmacy|divinity) school\b", p, flags)
    if m and not negated(p[: m.start()]):  # "I'm in nursing school" → nursing student
        kind = {"medical": "med", "graduate": "grad", "veterinary": "vet"}.get(m.group("s").lower(), m.group("s").lower())
        return [fact("occupation", f"{kind} student", 0.75, c.text)]
    m = re.match(rf"^(?:am|are) in (?P<f>{_FIELDS})\b", p, flags) or \
        re.search(rf"\bwork(?:s|ing)? in (?P<f>{_FIELDS})\b", p, flags)
    if m and not negated(p[: m.start("f")]):
        return [fact("occupation", m.group("f"), 0.75, c.text)]
    m = re.match(rf"^(?:am |are )?(?:currently )?(?:doing|pursuing|studying for|working on|in the middle of|"
                 rf"finishing|(?:almost|nearly) done with|in the (?:last|final|first|second|third|fourth|fifth) "
                 rf"(?:stretch|stages?|months?|year|weeks?) of) (?:a |an |my )?{_DEGREE}(?: (?:in|on) (?P<major>[A-Za-z][\w -]{{1,30}}?))?"
                 rf"(?: at {ORG})?(?=$|,| at | in | and )", p, flags)
    if m:
        degree = m.group("deg").lower().replace(".", "")
        out = [fact("occupation", "phd student" if degree in ("phd", "doctorate", "dphil") else "student", 0.8, c.text)]
        if m.group("major"):
            out.append(fact("major", m.group("major").strip(), 0.8, c.text))
        if m.group("org"):
            out.append(fact("school", m.group("org"), 0.8, c.text))
        return out
    m = re.match(rf"^(?:as|being) (?:a|an) {JOB_NP}$", p, flags)  # "As a teacher, I get summers off"
    if m and c.first and i + 1 < len(cs) and cs[i + 1].sentence == c.sentence and cs[i + 1].pred \
            and allowed(cs[i + 1], CURRENT):  # "As a nurse, what should I …?" only presupposes it
        return [fact("occupation", _clean_job(m.group("job")), 0.75, c.text)]
    m = re.match(rf"^(?:do|does) (?P<f>{_FIELDS}) for a living\b", p, flags)  # "I do accounting for a living"
    if m:
        return [fact("occupation", m.group("f"), 0.75, c.text)]
    # "I run a small bakery in Asheville" → bakery owner; "I manage a warehouse" → warehouse manager
    m = re.match(rf"^(?:also |currently |now |still )?(?P<v>run|own|manage)s? (?:a|an|my|our|the) (?:(?:small|little|local|"
                 rf"family|busy|tiny|big) )*(?:[a-z]+ )?(?P<n>{_COMPANY_NOUN}|warehouse|team|department|hotel|gym|salon|"
                 rf"farm|pharmacy|kitchen|office|branch|site|plant|factory|garage|pub|daycare|bookshop|bookstore)\b"
                 rf"(?P<rest>.*)$", p, flags)
    if m and not negated(p[: m.start("v")]):
        role = "manager" if m.group("v").lower() == "manage" else "owner"
        out = [fact("occupation", f"{m.group('n').lower()} {role}", 0.75, c.text)]
        place = re.search(r"\bin (?P<v>[A-Z" + CJK + r"].*)$", m.group("rest"))
        if place and (value := en_place(place.group("v"))) and allowed(c, STAY):
            out.append(fact("location", value, 0.7, c.text))
        return out
    m = re.search(r"(?:^(?:am |are )?|\b(?:recently|just|finally|now|happily) )retired"
                  r"(?=$|,|\s+(?:from|last|in|this|after|early|since|and|now|so|but|teacher|nurse)\b)", p, flags)
    if m and not negated(p[: m.start(0)]):
        return [fact("occupation", "retired", 0.8, c.text)]
    m = re.match(r"^(?:(?:also|currently|still|now|actually|have been|am|are|and) )*(?:teach|teaches|teaching)\b"
                 r"(?: (?P<subj>[A-Za-z]+(?: science)?))?", p, flags)
    if m and not negated(p[: m.start(0)]) and not re.search(r"\bteach(?:ing)? (?:myself|me|him|her|them|my|our)\b", p):
        subj = (m.group("subj") or "").lower()
        out = [fact("occupation", f"{subj} teacher" if subj in _SUBJECTS else "teacher", 0.75, c.text)]
        place = re.search(r"\bin (?P<v>[A-Z" + CJK + r"].*)$", p[m.end():])
        if place and (value := en_place(place.group("v"))) and allowed(c, STAY):
            out.append(fact("location", value, 0.7, c.text))
        return out
    return []


def _intro_job(cs: Sequence[Clause], i: int) -> list[Found]:
    """A clause that is just a job phrase about the user: "Software engineer at Shopify
    here", "…, UX designer at a fintech startup here in Manchester"."""
    c = cs[i]
    if c.subject != "self" or c.pred != c.bare or not allowed(c, CURRENT):
        return []
    # "I'm Soraya, 22, nursing student at …": a bare age may stand between the name and the job
    j = i - 1 if i < 2 or not re.fullmatch(r"\d{1,2}", cs[i - 1].bare) else i - 2
    intro = i == 0 or (i > 0 and re.search(
        r"(?:\bam|\bname is|^call me)\s+(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?[A-Z]\w+(?:\s+[A-Z][\w'-]+)?$|^[A-Z][a-z]+ here$",
        cs[j].bare) is not None)
    m = re.match(rf"^(?:(?:currently|now|just|also) )?(?:a |an )?(?:(?P<age>\d{{1,2}})[- ]year[- ]old )?{JOB_NP}(?P<rest>(?:\s+(?:at|for|with)\s+[^,]+?)?"
                 rf"(?:\s+here)?(?:\s+(?:in|from)\s+.+)?)$", c.pred, re.IGNORECASE)
    if not intro or not m:
        return []
    age = [fact("age", int(m.group("age")), 0.75, c.text)] if m.group("age") else []
    return age + _after_job(c, m.group("job"), m.group("rest"), 0.8)


def _study(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    if c.subject not in ("self", "with") or not allowed(c, frozenset({"question", "hypothetical", "other"})):
        return []
    out: list[Found] = []
    m = re.search(r"\b(?:major|majoring|majored) in (?P<m>[A-Za-z][\w -]{1,30}?)(?=$|,| at | and )", p, re.IGNORECASE) \
        or re.match(r"^(?:am|are) (?:a |an )?(?P<m>[A-Za-z][\w -]{1,20}?) major\b", p, re.IGNORECASE)
    if m and not negated(p[: m.start("m")]):
        out.append(fact("major", m.group("m"), 0.8, c.text))
    m = re.search(rf"\b(?:study|studying|studied|am studying) (?P<m>[A-Za-z][\w -]{{1,30}}?) at {ORG}", p)
    if m and not negated(p[: m.start("m")]):
        out += [fact("major", m.group("m"), 0.8, c.text), fact("school", m.group("org"), 0.8, c.text)]
    m = re.search(rf"\b(?i:(?:got|have|earned|did|finished|completed|hold) (?:my|a|an) {_DEGREE} (?:in|on) )"
                  rf"(?P<m>[A-Za-z][\w -]{{1,30}}?) (?:from|at) {ORG}", p)
    if m and not negated(p[: m.start("deg")]) and (org := _org(m.group("org"))):
        out += [fact("major", m.group("m"), 0.8, c.text), fact("school", org, 0.8, c.text)]
    m = re.search(rf"\b(?:graduated|graduate) from {ORG}", p)
    if m and not negated(p[: m.start("org")]):
        out.append(fact("school", m.group("org"), 0.8, c.text))
    return out


#: Workplaces that tell the line of work when no title is said: "switched jobs to a bakery" → bakery worker.
_WORKPLACE = (r"(?P<place>bakery|caf[eé]|coffee shop|restaurant|bar|pub|hotel|hospital|clinic|pharmacy|school|nursery|"
              r"library|bank|supermarket|bookshop|bookstore|shop|store|warehouse|factory|farm|gym|salon|garage|kitchen|"
              r"brewery|winery|museum|zoo|call cent(?:re|er)|care home|daycare)")
_CHANGED = (r"(?:switched|changed|swapped|moved) (?:jobs?|companies|employers|workplaces?|careers?|fields|industries) "
            r"(?:(?:over )?to|into)")
_WHEN = r"(?=$|[,.!]|\s+(?:last|this|in|on|a|two|three|recently|and|so|but|now|since|after|because|as of)\b)"


#: A job started at a named organisation: "First week at Ondina done", "my first day at Google, the team is
#: lovely". A first *day* somewhere may be a visit ("First day at Coachella!"), so it needs a word of work
#: in the message; a first week or month there is a job.
_FIRST_AT = re.compile(rf"^(?i:(?:my )?first (?:full )?(?P<span>day|week|month) (?:at|with)) {ORG}(?P<rest>.*)$")
_WORK_WORDS = re.compile(r"\b(?:job|work|team|colleagues?|co-?workers?|manager|boss|office|onboarding|role|desk|"
                         r"stand-?up|shift|contract|payroll)\b", re.IGNORECASE)


def first_days_at(c: Clause, message: str) -> str | None:
    """The organisation clause ``c`` says the user has just started working at, if any
    ("First week at Ondina done." → Ondina; "First day at Google tomorrow" → None)."""
    m = _FIRST_AT.match(c.bare) if "first" in c.bare.lower() else None
    if not m or c.subject not in ("self", "with", "my") or not allowed(c, CURRENT) \
            or re.search(r"\b(?:tomorrow|next|coming|starts?|begins?)\b", m.group("rest"), re.IGNORECASE):
        return None
    if m.group("span").lower() == "day" and not _WORK_WORDS.search(message):
        return None
    return _org(m.group("org"))


#: The words every job-change form below holds (a cheap test before the long patterns).
_CHANGE_WORDS = re.compile(r"\b(?:switched|changed|swapped|moved|retrained|requalified|became|become|new|hired|took|"
                           r"taken|accepted|now|currently)\b", re.IGNORECASE)


def _new_job(c: Clause, rest: str, conf: float) -> list[Found]:
    """What a job change names: an employer ("… to Spotify"), a job ("… to a teaching assistant role", "… into
    marketing"), or a workplace without a name (then the old employer is over and the place
    says the line of work: "… to a bakery" → bakery worker)."""
    job = re.match(rf"^(?:a |an |being (?:a |an )?)?{JOB_NP}(?:\s+(?:role|job|position|career))?{_WHEN}", rest, re.IGNORECASE)
    if job:
        return [fact("occupation", _clean_job(job.group("job")), conf, c.text)]
    field = re.match(rf"^(?P<f>{_FIELDS}){_WHEN}", rest, re.IGNORECASE)
    if field:
        return [fact("occupation", field.group("f"), conf, c.text)]
    place = re.match(rf"^(?:a|an|the)\s+(?:(?:small|little|local|family|new|busy|big|tiny|independent|nearby|"
                     rf"[a-z]+-run)\s+)*(?:[a-z]+\s+)?{_WORKPLACE}{_WHEN}", rest, re.IGNORECASE)
    if place:
        return [fact("occupation", f"{place.group('place').lower()} worker", conf - 0.1, c.text),
                Found("employer", None, conf - 0.1, "delete", c.text)]
    org = _org(rest) if re.match(r"[A-Z]", rest) else None
    return [fact("employer", org, conf, c.text)] if org else []


def _job_change(cs: Sequence[Clause], i: int) -> list[Found]:
    """A new job said as a change: "switched jobs to …", "got hired at Stripe", "Stripe hired me
    as …", "became a teacher", "retrained as an electrician", "took a job at the BBC",
    "First week at Ondina done", "moved on from Deloitte to EY"."""
    c, p = cs[i], cs[i].pred
    org = first_days_at(c, " ".join(x.text for x in cs))
    if org:
        return [fact("employer", org, 0.7, c.text)]
    if c.subject not in ("self", "with") or not allowed(c, CURRENT) or not _CHANGE_WORDS.search(p):
        return []
    flags = re.IGNORECASE
    m = re.search(rf"\b{_CHANGED} (?P<rest>.+)$", p, flags) or \
        re.search(r"\bmoved on from .+? to (?P<rest>.+)$", p, flags)
    if m and not negated(p[: m.start()]):
        return _new_job(c, m.group("rest"), 0.8)
    m = re.search(rf"\b(?:switched|moved|changed) (?:over )?(?:to|into) (?:a |an )?{JOB_NP} (?:role|job|position)\b", p, flags) \
        or re.search(rf"\b(?:retrained|requalified) as (?:a |an )?{JOB_NP}", p, flags) \
        or re.search(rf"\b(?:became|have become|have now become) (?:a |an )?{JOB_NP}{_WHEN}", p, flags) \
        or re.search(rf"\bnew (?:job|role|position) as (?:a |an |the )?{JOB_NP}", p, flags)
    if m and not negated(p[: m.start()]):
        return [fact("occupation", _clean_job(m.group("job")), 0.75, c.text)]
    m = re.search(rf"\b(?:got|was|been|have been|just got|recently got) hired (?:at|by) {ORG}"
                  rf"(?:\s+as (?:a |an |the )?{JOB_NP})?", p) or \
        re.search(rf"^{ORG} (?:has )?(?:just |finally |officially )?hired me(?: as (?:a |an |the )?{JOB_NP})?", p) or \
        re.search(rf"\b(?:took|have taken|accepted) (?i:a|the) (?i:new )?(?i:job|role|position) (?i:at|with) {ORG}"
                  rf"(?:\s+as (?:a |an |the )?{JOB_NP})?", p) or \
        re.search(rf"\b(?:took|accepted) the {ORG} (?i:job|role|offer)\b", p)
    if m and not negated(p[: m.start()]) and (org := _org(m.group("org"))):
        out = [fact("employer", org, 0.8, c.text)]
        if m.groupdict().get("job"):
            out.append(fact("occupation", _clean_job(m.group("job")), 0.8, c.text))
        return out
    # "I switched jobs, I'm now at Spotify": "at X" names the new employer after a job change
    m = re.match(rf"^(?:(?:am|are) )?(?:now|currently) at {ORG}$", p)
    if m and re.search(rf"\b(?:{_CHANGED}|switched jobs|changed jobs|new job|left|quit)\b", c.sentence, flags) \
            and (org := _org(m.group("org"))):
        return [fact("employer", org, 0.75, c.text)]
    return []


def work(cs: Sequence[Clause], i: int) -> list[Found]:
    """Every occupation / employer / school / major fact of clause ``i`` of ``cs``."""
    return _occupation(cs, i) + _intro_job(cs, i) + _study(cs, i) + _job_change(cs, i)
