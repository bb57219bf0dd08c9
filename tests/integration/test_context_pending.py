"""``Memory.context(..., pending=...)``: the prompt for a turn that is not stored yet
(what the chat proxy does before it appends the turn), the same as if it had been
appended; stored ids are not repeated; bad pending messages change nothing.

Bad input tried: a message with role "robot", the reserved system-prompt id, and a
pending list that is not messages at all (InvalidInput naming ``pending``; nothing stored).
"""

from __future__ import annotations

from typing import Any

import pytest

from hmem.errors import InvalidInput
from hmem.memory import SYSTEM_PROMPT_ID, Memory

pytestmark = pytest.mark.integration

MODEL = "gpt-4o-mini"


def _prompt(mem: Memory, session: str, **kw: Any) -> list[tuple[str, str]]:
    ctx = mem.context("alice", session, model=MODEL, budget=3000, system_prompt="Be brief.", **kw)
    return [(m["role"], m["content"]) for m in ctx.messages]


def test_a_pending_turn_is_assembled_as_if_it_had_been_appended(mem: Memory) -> None:
    mem.remember("alice", "Alice's sister Mira lives in Porto and teaches violin.")
    earlier = [{"role": "user", "content": "hi", "id": "u1"}, {"role": "assistant", "content": "hello!", "id": "a1"}]
    turn = {"role": "user", "content": "what does my sister teach?", "id": "u2"}
    for session in ("stored", "pending"):
        mem.add("alice", session, earlier)
    mem.add("alice", "stored", [turn])
    previewed = _prompt(mem, "pending", pending=[turn])
    assert previewed == _prompt(mem, "stored")
    assert any("teaches violin" in content for _, content in previewed)  # recalled with the pending turn as query
    assert previewed[-1] == ("user", "what does my sister teach?")
    assert [m.id for m in mem.history("alice", "pending")] == ["u1", "a1"]  # previewing stores nothing


def test_a_pending_message_already_stored_is_not_repeated(mem: Memory) -> None:
    turn = {"role": "user", "content": "still there?", "id": "u9"}
    mem.add("alice", "s1", [turn])
    assert _prompt(mem, "s1", pending=[turn]) == _prompt(mem, "s1")


@pytest.mark.parametrize("pending", [
    [{"role": "robot", "content": "beep", "id": "x1"}],
    [{"role": "user", "content": "sneaky", "id": SYSTEM_PROMPT_ID}],
    ["not a message"],
])
def test_bad_pending_messages_are_refused_and_change_nothing(mem: Memory, pending: list[Any]) -> None:
    mem.add("alice", "s1", [{"role": "user", "content": "hi", "id": "u1"}])
    with pytest.raises(InvalidInput) as caught:
        mem.context("alice", "s1", model=MODEL, pending=pending)
    assert caught.value.field is not None and caught.value.field.startswith("pending")
    assert [m.id for m in mem.history("alice", "s1")] == ["u1"]
