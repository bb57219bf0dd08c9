"""Profile rules shared by every profile backend and extractor: pure functions, no I/O.

* :func:`normalize_key` — one spelling per key (NFKC, case-folded, trimmed,
  inner whitespace / hyphens → ``_``); Chinese keys are fine.
* :func:`coerce_value` — the typed values a profile holds (``str``, finite
  ``int``/``float``, ``bool``, list of strings → ``tuple[str, ...]``) with size caps.
* :func:`encode_value` / :func:`decode_value` — the JSON text backends store.
* :func:`history_problems` — the invariants of one key's history (used by tests).
* :func:`render_profile` / :func:`render_profile_tokens` — compact ``key: value``
  lines for the prompt, most recently confirmed first.

What a write does to a key's history is :mod:`hmem.profile.versioning`.

Example::

    >>> normalize_key("  Home-Town ")
    'home_town'
    >>> coerce_value(["tea", "chess"])
    ('tea', 'chess')
    >>> from datetime import UTC, datetime
    >>> from hmem.types import ProfileEntry
    >>> t = datetime(2024, 1, 1, tzinfo=UTC)
    >>> print(render_profile([ProfileEntry("u1", "location", "Paris", t),
    ...                       ProfileEntry("u1", "likes", ("tea", "chess"), t)]))
    likes: tea, chess
    location: Paris
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence

from hmem.errors import InvalidInput
from hmem.protocols import Tokenizer
from hmem.types import ProfileEntry, ProfileValue, Provenance, check_id, check_utf8

__all__ = [
    "DEFAULT_MAX_KEYS",
    "MAX_INT",
    "MAX_KEY_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_VALUE_CHARS",
    "check_confidence",
    "check_provenance",
    "coerce_value",
    "decode_value",
    "encode_value",
    "format_value",
    "history_problems",
    "normalize_key",
    "render_profile",
    "render_profile_tokens",
    "same_value",
    "sort_for_prompt",
]

#: Default cap on live keys per user. The profile is the always-in-the-prompt part of
#: memory; hundreds of keys means something is extracting too broadly.
DEFAULT_MAX_KEYS = 200
#: Longest normalized key, in characters.
MAX_KEY_CHARS = 64
#: Longest string value (or sum of a list's items), in characters.
MAX_VALUE_CHARS = 2_000
#: Most items in a list value.
MAX_LIST_ITEMS = 50
#: Integers must fit a signed 64-bit slot so SQLite and Redis store them exactly.
MAX_INT = 2**63 - 1

_SEPARATORS = re.compile(r"[\s\-‐-―_]+")
_KEY_OK = re.compile(r"^[\w.]+$")  # \w is Unicode-aware: CJK, accented letters, digits
_PROVENANCE_SOURCES = frozenset({"message", "api", "import", "extractor"})


def normalize_key(key: object, field_name: str = "key") -> str:
    """The canonical spelling of a profile key, or :class:`InvalidInput`.

    NFKC (full-width letters become ASCII), case-folded, trimmed; runs of
    whitespace, hyphens and underscores become one ``_``; leading/trailing ``_``
    dropped. What remains must be letters, digits, ``_`` or ``.`` (any script).

    >>> normalize_key("Favourite  Food"), normalize_key("ＮＡＭＥ"), normalize_key(" 居住 城市 ")
    ('favourite_food', 'name', '居住_城市')
    """
    if not isinstance(key, str):
        raise InvalidInput(f"{field_name} must be a string, got {type(key).__name__}", field=field_name)
    check_utf8(key, field_name)
    text = _SEPARATORS.sub("_", unicodedata.normalize("NFKC", key).casefold().strip()).strip("_")
    if not text:
        raise InvalidInput(f"{field_name} must not be empty or only spaces/hyphens: {key!r}", field=field_name)
    if len(text) > MAX_KEY_CHARS:
        raise InvalidInput(
            f"{field_name} is {len(text)} characters after normalization; the limit is {MAX_KEY_CHARS}",
            field=field_name,
        )
    if not _KEY_OK.match(text):
        raise InvalidInput(
            f"{field_name} may contain only letters, digits, spaces, '-', '_' and '.': {key!r}", field=field_name
        )
    return text


def _check_str(value: str, field_name: str) -> str:
    check_utf8(value, field_name)
    if not value.strip():
        raise InvalidInput(f"{field_name} must not be empty; use delete() to remove a key", field=field_name)
    if "\x00" in value:
        raise InvalidInput(f"{field_name} must not contain NUL characters", field=field_name)
    return value


def coerce_value(value: object, field_name: str = "value") -> ProfileValue:
    """Validate a profile value; lists become tuples. Raises :class:`InvalidInput`.

    Accepted: non-empty ``str`` (≤ :data:`MAX_VALUE_CHARS`), ``bool``, ``int`` within
    64 bits, finite ``float``, and a non-empty list/tuple of non-empty strings
    (≤ :data:`MAX_LIST_ITEMS` items, ≤ :data:`MAX_VALUE_CHARS` characters in all).
    Rejected: ``None`` (use ``delete``), dicts, sets, bytes, NaN/inf, anything else.

    >>> coerce_value(3), coerce_value(True), coerce_value(("a",))
    (3, True, ('a',))
    """
    if isinstance(value, str):
        _check_str(value, field_name)
        if len(value) > MAX_VALUE_CHARS:
            raise InvalidInput(
                f"{field_name} has {len(value):,} characters; a profile value holds at most {MAX_VALUE_CHARS:,}"
                " (store long text as a memory item instead)",
                field=field_name,
            )
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -MAX_INT - 1 <= value <= MAX_INT:
            raise InvalidInput(f"{field_name} does not fit in 64 bits: {value}", field=field_name)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{field_name} must be a finite number, got {value!r}", field=field_name)
        return value
    if isinstance(value, list | tuple):
        if not value:
            raise InvalidInput(
                f"{field_name} must not be an empty list; use delete() to remove a key", field=field_name
            )
        if len(value) > MAX_LIST_ITEMS:
            raise InvalidInput(
                f"{field_name} has {len(value)} items; a profile list holds at most {MAX_LIST_ITEMS}", field=field_name
            )
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise InvalidInput(
                    f"{field_name}[{i}] must be a string, got {type(item).__name__} (lists hold strings only)",
                    field=f"{field_name}[{i}]",
                )
            _check_str(item, f"{field_name}[{i}]")
        total = sum(len(item) for item in value)
        if total > MAX_VALUE_CHARS:
            raise InvalidInput(
                f"{field_name} items total {total:,} characters; the limit is {MAX_VALUE_CHARS:,}", field=field_name
            )
        return tuple(value)
    raise InvalidInput(
        f"{field_name} must be a string, number, bool or list of strings, got {type(value).__name__}",
        field=field_name,
    )


def check_confidence(value: object, field_name: str = "confidence") -> float:
    """A confidence in ``[0, 1]`` as a float, or :class:`InvalidInput`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{field_name} must be a number in [0, 1], got {type(value).__name__}", field=field_name)
    # Compare before math.isfinite: a huge int (10**400) would make it raise OverflowError.
    if not 0 <= value <= 1 or not math.isfinite(value):
        raise InvalidInput(f"{field_name} must be in [0, 1], got {value!r}", field=field_name)
    return float(value)


def check_provenance(value: object) -> Provenance:
    """``None`` → ``Provenance("api")``; otherwise a valid :class:`Provenance`."""
    if value is None:
        return Provenance()
    if not isinstance(value, Provenance):
        raise InvalidInput(f"provenance must be a Provenance, got {type(value).__name__}", field="provenance")
    if value.source not in _PROVENANCE_SOURCES:
        raise InvalidInput(
            f"provenance.source must be one of {sorted(_PROVENANCE_SOURCES)}, got {value.source!r}",
            field="provenance.source",
        )
    if value.session_id is not None:
        check_id(value.session_id, "provenance.session_id")
    if value.message_id is not None:
        check_id(value.message_id, "provenance.message_id")
    return value


def same_value(a: ProfileValue | None, b: ProfileValue | None) -> bool:
    """Equality that respects types: ``True`` ≠ ``1`` ≠ ``1.0`` ≠ ``"1"``."""
    return type(a) is type(b) and a == b


def encode_value(value: ProfileValue) -> str:
    """JSON text of a value (tuples as arrays); :func:`decode_value` inverts it exactly.

    >>> decode_value(encode_value(("北京", "上海"))), decode_value(encode_value(1.0))
    (('北京', '上海'), 1.0)
    """
    return json.dumps(list(value) if isinstance(value, tuple) else value, ensure_ascii=False, allow_nan=False)


def decode_value(text: str) -> ProfileValue:
    data = json.loads(text)
    if isinstance(data, list):
        return tuple(str(item) for item in data)
    if isinstance(data, str | int | float | bool):
        return data
    raise InvalidInput(f"stored profile value is not a supported type: {text[:80]!r}", field="value")


def history_problems(history: Sequence[ProfileEntry]) -> list[str]:
    """What breaks the chain invariants of one key's ``history`` (oldest first):
    each closed version must end exactly where the next begins, only the newest may
    be open, and no interval may run backwards. ``[]`` means the history is sound."""
    problems: list[str] = []
    for i, entry in enumerate(history):
        if i == len(history) - 1:
            if entry.valid_to is not None:
                problems.append(f"the newest version {i} is closed (valid_to={entry.valid_to})")
            continue
        nxt = history[i + 1]
        if entry.valid_to is None:
            problems.append(f"version {i} is open but not the newest")
        elif entry.valid_to != nxt.valid_from:
            problems.append(f"gap or overlap between versions {i} and {i + 1}")
        elif entry.valid_from > entry.valid_to:
            problems.append(f"version {i} ends before it starts")
    return problems


# -- rendering -------------------------------------------------------------------------

_WS = re.compile(r"\s+")


def format_value(value: ProfileValue) -> str:
    """One-line text of a value: lists joined with ``", "``, bools as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return ", ".join(_WS.sub(" ", item).strip() for item in value)
    if isinstance(value, float):
        return repr(value)
    return _WS.sub(" ", str(value)).strip()


def sort_for_prompt(entries: Iterable[ProfileEntry], *, min_confidence: float = 0.0) -> list[ProfileEntry]:
    """Live entries, most recently confirmed first (ties by key), below
    ``min_confidence`` dropped."""
    live = [e for e in entries if e.value is not None and e.valid_to is None and e.confidence >= min_confidence]
    live.sort(key=lambda e: e.key)
    live.sort(key=lambda e: e.last_confirmed, reverse=True)
    return live


def _line(entry: ProfileEntry) -> str:
    assert entry.value is not None
    return f"{entry.key}: {format_value(entry.value)}"


def render_profile(entries: Iterable[ProfileEntry], *, min_confidence: float = 0.0) -> str:
    """Compact ``key: value`` lines, most recently confirmed first; ``""`` if none."""
    return "\n".join(_line(e) for e in sort_for_prompt(entries, min_confidence=min_confidence))


def render_profile_tokens(
    entries: Iterable[ProfileEntry],
    tokenizer: Tokenizer,
    *,
    max_tokens: int | None = None,
    min_confidence: float = 0.0,
) -> tuple[str, int]:
    """``(text, tokens)`` of the rendered profile, counted with ``tokenizer``.

    With ``max_tokens`` the text never exceeds it: lines are taken in priority
    order (most recently confirmed first) and a line that does not fit is skipped
    whole — a value is never cut in half — while shorter later lines may still fit.
    """
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0):
        raise InvalidInput(f"max_tokens must be a non-negative int, got {max_tokens!r}", field="max_tokens")
    lines = [_line(e) for e in sort_for_prompt(entries, min_confidence=min_confidence)]
    if max_tokens is None:
        text = "\n".join(lines)
        return text, tokenizer.count(text) if text else 0
    kept: list[str] = []
    tokens = 0
    for line in lines:
        candidate = "\n".join([*kept, line])
        count = tokenizer.count(candidate)
        if count <= max_tokens:
            kept.append(line)
            tokens = count
    return "\n".join(kept), tokens
