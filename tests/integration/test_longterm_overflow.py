"""Overflowing numbers and dates through the real long-term store: InvalidInput naming
the field, and nothing changed (the HTTP fuzzer's ``recency_half_life=1e300`` and kin)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from longterm_fixtures import make_stack

from hmem.errors import InvalidInput
from hmem.longterm.options import RecallOptions
from hmem.types import Message

OVERFLOWING: list[tuple[str, str, Callable[[Any], object]]] = [
    ("recall half-life 1e300", "recency_half_life", lambda lt: lt.recall("u1", "bees", options=RecallOptions(recency_half_life=1e300))),
    ("recall half-life inf", "recency_half_life", lambda lt: lt.recall("u1", "bees", options=RecallOptions(recency_half_life=float("inf")))),
    ("recall half-life NaN", "recency_half_life", lambda lt: lt.recall("u1", "bees", options=RecallOptions(recency_half_life=float("nan")))),
    ("recall half-life 10**400", "recency_half_life", lambda lt: lt.recall("u1", "bees", options=RecallOptions(recency_half_life=10**400))),
    ("recall since 10**400", "since", lambda lt: lt.recall("u1", "bees", options=RecallOptions(since=10**400))),
    ("recall until 1e300", "until", lambda lt: lt.recall("u1", "bees", options=RecallOptions(until=1e300))),
    ("recall since before year 1", "since", lambda lt: lt.recall("u1", "bees", options=RecallOptions(since="0001-01-01T00:00:00+05:00"))),
    ("recall importance 10**400", "importance_weight", lambda lt: lt.recall("u1", "bees", options=RecallOptions(importance_weight=10**400))),
    ("forget before year 1", "before", lambda lt: lt.forget("u1", before="0001-01-01T00:00:00Z")),
    ("forget before -1e300", "before", lambda lt: lt.forget("u1", before=-1e300)),
    ("forget before after 9999", "before", lambda lt: lt.forget("u1", before="9999-12-31T23:00:00-05:00")),
    ("remember created_at 10**400", "created_at", lambda lt: lt.remember("u1", "x", created_at=10**400)),
    ("remember_many created_at NaN", "entries[0].created_at",
     lambda lt: lt.remember_many("u1", [{"text": "x", "created_at": float("nan")}])),
]


@pytest.mark.parametrize(("label", "field", "call"), OVERFLOWING, ids=[c[0] for c in OVERFLOWING])
def test_overflowing_input_is_invalid_input_and_changes_nothing(
    tmp_path: Path, label: str, field: str, call: Callable[[Any], object]
) -> None:
    stack = make_stack("memory", tmp_path)
    stack.store.remember("u1", "I keep bees on my roof")
    stack.store.archive_turns("u1", "s1", [Message(role="user", content="the bees are fine", id="b1")])
    before = stack.snapshot("u1")
    with pytest.raises(InvalidInput) as info:
        call(stack.store)
    assert info.value.field is not None and info.value.field.endswith(field), info.value.field
    assert stack.snapshot("u1") == before
