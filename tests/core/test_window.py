"""Window policies: message / token / hybrid, their invariants and their bad inputs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toy_tokenizer import ToyTokenizer

from hmem._groups import group_messages, is_orphan_tool
from hmem.errors import InvalidInput
from hmem.protocols import Tokenizer
from hmem.session.window import WindowResult, hybrid_window, message_window, token_window
from hmem.tokens import get_tokenizer
from hmem.types import Message, ToolCall

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


TOKENIZERS: list[Tokenizer] = [ToyTokenizer(), get_tokenizer("gpt-4o-mini")]
TOKENIZER_IDS = [t.name for t in TOKENIZERS]


# -- random conversations -------------------------------------------------------------

TEXT = st.text(alphabet=st.sampled_from(list("ab cd ef 你好世界北京 🐼🎉👍🏽 .,!\n")), max_size=30)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """Chats with system/developer messages, tool-call groups (some incomplete),
    orphan tool results, Chinese and emoji, timestamps moving forward."""
    msgs: list[Message] = []
    clock = [T0]
    calls = [0]

    def add(role: str, content: str | None, **kw: object) -> None:
        clock[0] += timedelta(minutes=draw(st.integers(0, 120)))
        msgs.append(Message(role=role, content=content, created_at=clock[0], **kw))  # type: ignore[arg-type]

    if draw(st.booleans()):
        add("system", draw(TEXT))
    kinds = st.sampled_from(["user"] * 4 + ["assistant"] * 3 + ["tools"] * 3 + ["system", "developer", "orphan"])
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(kinds)
        if kind in ("user", "assistant", "system", "developer"):
            add(kind, draw(TEXT))
        elif kind == "orphan":
            add("tool", draw(TEXT), tool_call_id=f"ghost{len(msgs)}")
        else:
            ids = []
            for _ in range(draw(st.integers(1, 3))):
                calls[0] += 1
                ids.append(f"c{calls[0]}")
            content = draw(st.none() | TEXT)
            add(
                "assistant",
                content,
                tool_calls=tuple(ToolCall(id=i, name="lookup", arguments='{"q":"北京"}') for i in ids),
            )
            answered = draw(st.permutations(ids)) if draw(st.integers(0, 4)) else ids[:-1]
            for call_id in answered:
                add("tool", draw(TEXT), tool_call_id=call_id)
    return msgs


def protected_of(messages: list[Message]) -> list[Message]:
    """Independent statement of what no policy may evict."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=len(messages))
    out = []
    for group in group_messages(messages):
        if is_orphan_tool(group):
            continue
        start = next(i for i, m in enumerate(messages) if m is group[0])
        if group[0].role in ("system", "developer") or start >= last_user:
            out.extend(group)
    return out


def check_invariants(messages: list[Message], result: WindowResult) -> None:
    position = {id(m): i for i, m in enumerate(messages)}
    kept = [position[id(m)] for m in result.kept]
    evicted = [position[id(m)] for m in result.evicted]
    assert kept == sorted(kept) and evicted == sorted(evicted), "order preserved"
    assert sorted(kept + evicted) == list(range(len(messages))), "kept + evicted is exactly the input"
    assert not any(is_orphan_tool(g) for g in group_messages(result.kept)), "no orphan tool kept"
    kept_ids = {id(m) for m in result.kept}
    for group in group_messages(messages):
        assert len({id(m) in kept_ids for m in group}) == 1, "a tool-call group is split"
    assert {id(m) for m in protected_of(messages)} <= kept_ids, "a protected message was evicted"
    # Evicted non-protected messages are the oldest: no evictable group kept before an evicted one.
    protected = {id(m) for m in protected_of(messages)}
    evictable = [g for g in group_messages(messages) if not is_orphan_tool(g) and id(g[0]) not in protected]
    flags = [id(g[0]) in kept_ids for g in evictable]
    assert flags == sorted(flags), "evicted block is not the oldest one"


def newest_evicted_group(messages: list[Message], result: WindowResult) -> list[Message] | None:
    evicted = {id(m) for m in result.evicted}
    candidates = [g for g in group_messages(messages) if id(g[0]) in evicted and not is_orphan_tool(g)]
    return candidates[-1] if candidates else None


def with_group(messages: list[Message], kept: list[Message], group: list[Message]) -> list[Message]:
    ids = {id(m) for m in kept} | {id(m) for m in group}
    return [m for m in messages if id(m) in ids]


# -- properties -----------------------------------------------------------------------

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOKENIZER_IDS)
@PROPERTY
@given(messages=conversations(), budget=st.integers(0, 400))
def test_token_window_properties(tok: Tokenizer, messages: list[Message], budget: int) -> None:
    result = token_window(messages, tok, budget)
    check_invariants(messages, result)
    protected = protected_of(messages)
    if tok.count_messages(protected) <= budget:
        assert tok.count_messages(result.kept) <= budget
        back = newest_evicted_group(messages, result)
        if back is not None:  # evicting less would not have fit
            assert tok.count_messages(with_group(messages, result.kept, back)) > budget
    else:
        assert result.kept == protected, "only the protected parts are kept when they alone exceed"


@PROPERTY
@given(messages=conversations(), limit=st.integers(0, 20))
def test_message_window_properties(messages: list[Message], limit: int) -> None:
    result = message_window(messages, limit)
    check_invariants(messages, result)
    protected = protected_of(messages)
    if len(protected) <= limit:
        assert len(result.kept) <= limit
        back = newest_evicted_group(messages, result)
        if back is not None:
            assert len(result.kept) + len(back) > limit
    else:
        assert result.kept == protected


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOKENIZER_IDS)
@PROPERTY
@given(
    messages=conversations(),
    budget=st.integers(0, 400),
    threshold=st.floats(0.05, 1.0),
    ratio=st.floats(0.05, 1.0),
    min_messages=st.integers(0, 12),
)
def test_hybrid_window_properties(
    tok: Tokenizer, messages: list[Message], budget: int, threshold: float, ratio: float, min_messages: int
) -> None:
    target = threshold * ratio
    result = hybrid_window(messages, tok, budget, threshold=threshold, target=target, min_messages=min_messages)
    check_invariants(messages, result)
    protected = protected_of(messages)
    without_orphans = [m for g in group_messages(messages) if not is_orphan_tool(g) for m in g]
    tokens = tok.count_messages(without_orphans)
    triggered = len(without_orphans) >= min_messages and tokens > threshold * budget
    if not triggered and tokens <= budget:
        assert result.kept == without_orphans, "below the trigger nothing but orphans is evicted"
    elif tok.count_messages(protected) <= (target if triggered else 1.0) * budget:
        assert tok.count_messages(result.kept) <= (target if triggered else 1.0) * budget
    else:
        assert result.kept == protected
    if tok.count_messages(protected) <= budget:
        assert tok.count_messages(result.kept) <= budget


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOKENIZER_IDS)
@PROPERTY
@given(messages=conversations(), age_minutes=st.integers(0, 600), budget=st.integers(0, 400))
def test_max_age_properties(tok: Tokenizer, messages: list[Message], age_minutes: int, budget: int) -> None:
    now = T0 + timedelta(hours=10)
    max_age = timedelta(minutes=age_minutes)
    result = token_window(messages, tok, budget, max_age=max_age, now=now)
    check_invariants(messages, result)
    protected = {id(m) for m in protected_of(messages)}
    kept = {id(m) for m in result.kept}
    for group in group_messages(messages):
        if id(group[0]) in kept and id(group[0]) not in protected:
            assert max(m.created_at for m in group) >= now - max_age, "an expired group was kept"


# -- examples -------------------------------------------------------------------------


def user(text: str, minutes: int = 0) -> Message:
    return Message(role="user", content=text, created_at=T0 + timedelta(minutes=minutes))


def assistant(text: str, minutes: int = 0) -> Message:
    return Message(role="assistant", content=text, created_at=T0 + timedelta(minutes=minutes))


def tool_group(call_id: str, result: str, minutes: int = 0) -> list[Message]:
    at = T0 + timedelta(minutes=minutes)
    return [
        Message(role="assistant", content=None, tool_calls=(ToolCall(id=call_id, name="weather"),), created_at=at),
        Message(role="tool", content=result, tool_call_id=call_id, created_at=at),
    ]


def test_message_window_keeps_the_last_n() -> None:
    msgs = [user(f"q{i}") if i % 2 == 0 else assistant(f"a{i}") for i in range(7)]
    result = message_window(msgs, 3)
    assert result.kept == msgs[-3:]
    assert result.evicted == msgs[:-3]


def test_tool_group_is_evicted_whole_rather_than_split() -> None:
    msgs = [user("weather?"), *tool_group("c1", "sunny 晴"), assistant("It is sunny"), user("thanks 🎉")]
    # 3 slots: the last two messages fit, the 2-message tool group does not -> evicted whole.
    result = message_window(msgs, 3)
    assert result.kept == msgs[-2:]
    assert result.evicted == msgs[:3]


def test_system_messages_and_current_turn_are_never_evicted() -> None:
    system = Message(role="system", content="be brief")
    developer = Message(role="developer", content="answer in 中文")
    current = [user("now"), *tool_group("c9", "42")]
    msgs = [system, user("old"), developer, assistant("old reply"), *current]
    result = message_window(msgs, 0)
    assert result.kept == [system, developer, *current]
    assert result.evicted == [msgs[1], msgs[3]]


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOKENIZER_IDS)
def test_token_window_drops_oldest_until_under_budget(tok: Tokenizer) -> None:
    msgs = [user("你好世界 " * 10, i) for i in range(6)]
    budget = tok.count_messages(msgs[-3:])
    result = token_window(msgs, tok, budget)
    assert result.kept == msgs[-3:]
    assert result.evicted == msgs[:3]


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOKENIZER_IDS)
def test_protected_parts_alone_over_budget_are_kept_exactly(tok: Tokenizer) -> None:
    system = Message(role="system", content="system 🐼 " * 30)
    msgs = [system, user("old"), assistant("reply"), user("current question " * 20)]
    result = token_window(msgs, tok, 10)
    assert result.kept == [system, msgs[-1]]
    assert result.evicted == msgs[1:3]


def test_orphan_tool_message_is_always_evicted_even_in_current_turn() -> None:
    orphan_old = Message(role="tool", content="stray", tool_call_id="nobody")
    orphan_now = Message(role="tool", content="stray too", tool_call_id="nobody2")
    msgs = [orphan_old, user("hi"), assistant("hello"), user("now"), orphan_now]
    result = message_window(msgs, 100)
    assert result.kept == [msgs[1], msgs[2], msgs[3]]
    assert result.evicted == [orphan_old, orphan_now]


def test_max_age_evicts_expired_groups_and_everything_older() -> None:
    msgs = [user("a", 0), assistant("b", 10), user("c", 50), assistant("d", 20), user("now", 70)]
    now = T0 + timedelta(minutes=75)
    # "d" is clock-skewed (older than the cutoff) but newer in order: it expires, and so
    # does everything before it, so the kept history stays contiguous.
    result = message_window(msgs, 100, max_age=timedelta(minutes=30), now=now)
    assert result.kept == [msgs[4]]
    result = message_window(msgs, 100, max_age=timedelta(minutes=60), now=now)
    assert result.kept == msgs[2:]  # cutoff at minute 15: only "a" and "b" expired
    assert message_window(msgs, 100, max_age=timedelta(days=1), now=now).kept == msgs


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOKENIZER_IDS)
def test_hybrid_waits_for_threshold_then_evicts_a_block_down_to_target(tok: Tokenizer) -> None:
    msgs = [user(f"turn {i} 你好 🎉 " * 5, i) for i in range(12)]
    total = tok.count_messages(msgs)
    quiet = hybrid_window(msgs, tok, budget=int(total / 0.7) + 5)  # below the 0.7 trigger
    assert quiet.kept == msgs and quiet.evicted == []
    budget = int(total / 0.8)  # ~0.8 of budget: past the trigger
    result = hybrid_window(msgs, tok, budget)
    assert tok.count_messages(result.kept) <= 0.5 * budget
    assert result.evicted == msgs[: len(result.evicted)], "the block to summarize is the oldest, in order"
    assert tok.count_messages(msgs[len(result.evicted) - 1 :]) > 0.5 * budget, "evicted more than needed"


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOKENIZER_IDS)
def test_hybrid_min_messages_delays_the_block_but_not_the_budget(tok: Tokenizer) -> None:
    msgs = [user(f"long message {i} " * 20, i) for i in range(4)]
    total = tok.count_messages(msgs)
    # Past the threshold with only 4 messages (< 10): nothing evicted while under budget.
    assert hybrid_window(msgs, tok, int(total / 0.9)).evicted == []
    # Over the budget itself: evicts the oldest until it fits, even below min_messages.
    over = hybrid_window(msgs, tok, total - 1)
    assert over.kept == msgs[1:] and tok.count_messages(over.kept) <= total - 1


BAD_WINDOW_CALLS = [
    ("max_messages", lambda m, t: message_window(m, -1)),
    ("max_messages", lambda m, t: message_window(m, 2.5)),  # type: ignore[arg-type]
    ("max_messages", lambda m, t: message_window(m, True)),
    ("budget", lambda m, t: token_window(m, t, -5)),
    ("budget", lambda m, t: hybrid_window(m, t, -1)),
    ("threshold", lambda m, t: hybrid_window(m, t, 100, threshold=0.0)),
    ("threshold", lambda m, t: hybrid_window(m, t, 100, threshold=1.5)),
    ("threshold", lambda m, t: hybrid_window(m, t, 100, threshold=float("nan"))),
    ("target", lambda m, t: hybrid_window(m, t, 100, threshold=0.5, target=0.6)),
    ("target", lambda m, t: hybrid_window(m, t, 100, target=0.0)),
    ("min_messages", lambda m, t: hybrid_window(m, t, 100, min_messages=-1)),
    ("max_age", lambda m, t: message_window(m, 5, max_age=timedelta(minutes=-1))),
    ("max_age", lambda m, t: message_window(m, 5, max_age=30)),  # type: ignore[arg-type]
    ("now", lambda m, t: message_window(m, 5, max_age=timedelta(1), now="yesterday")),  # type: ignore[arg-type]
    ("tokenizer", lambda m, t: token_window(m, object(), 100)),  # type: ignore[arg-type]
    ("messages", lambda m, t: message_window("hello", 5)),  # type: ignore[arg-type]
    ("messages[1].role", lambda m, t: message_window([m[0], {"role": "wizard", "content": "x"}], 5)),
]


@pytest.mark.parametrize(
    ("field", "call"), BAD_WINDOW_CALLS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_WINDOW_CALLS)]
)
def test_bad_arguments_raise_invalid_input_naming_the_field(field: str, call: object) -> None:
    msgs = [user("a"), assistant("b"), user("c")]
    before = list(msgs)
    with pytest.raises(InvalidInput) as info:
        call(msgs, TOKENIZERS[0])  # type: ignore[operator]
    assert info.value.field == field
    assert msgs == before, "the input list was changed"


def test_openai_dicts_are_accepted() -> None:
    result = message_window([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], 1)
    assert [m.content for m in result.kept] == ["b"]


def test_a_max_age_reaching_before_year_one_expires_nothing() -> None:
    # now - max_age would overflow datetime: no message can be older than that cutoff.
    msgs = [user("a", 0), assistant("b", 1), user("c", 2)]
    for max_age in (timedelta.max, timedelta(days=800_000)):
        assert message_window(msgs, 100, max_age=max_age, now=T0).kept == msgs
        assert token_window(msgs, TOKENIZERS[0], 10_000, max_age=max_age).kept == msgs
