"""The token-budgeted assembler: never over budget, strict priority, intact tool groups."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toy_tokenizer import ToyTokenizer

from hmem._groups import group_messages, is_orphan_tool, split_current_turn
from hmem.assembly.assemble import TRUNCATION_MARKER, UNCAPPED, TierCaps, assemble, budget_for
from hmem.assembly.render import DEFAULT_TEMPLATE, ContextTemplate
from hmem.errors import BudgetError, InvalidInput
from hmem.protocols import Tokenizer
from hmem.tokens import get_tokenizer
from hmem.types import TIERS, AssembledContext, Hit, MemoryItem, Message, ProfileEntry, ToolCall

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class LumpyTokenizer(ToyTokenizer):
    """A prompt costs more than its parts (each newline inside a message adds a token
    only when counted as a whole prompt), so per-item estimates run short and only
    the assembler's exact recount keeps it within budget."""

    name: str = "lumpy"

    def count_messages(self, messages: Sequence[Message]) -> int:
        return super().count_messages(messages) + sum(m.text.count("\n") for m in messages)


TOKENIZERS: list[Tokenizer] = [ToyTokenizer(), LumpyTokenizer(), get_tokenizer("gpt-4o-mini")]
TOKENIZER_IDS = [t.name for t in TOKENIZERS]

TEXT = st.text(alphabet=st.sampled_from(list("ab cd ef 你好世界北京 🐼🎉👍🏽 .,!\n{}")), min_size=1, max_size=40)
LONG_OR_SHORT = st.text(alphabet=st.sampled_from(list("ab 你好 🐼 ")), min_size=1, max_size=3) | st.text(
    alphabet=st.sampled_from(list("ab cd 你好世界 🐼 .\n")), min_size=20, max_size=200
)
BARE = ContextTemplate(
    memory_header="", summary_header="", profile_header="", recalled_header="", profile_item="{value}",
    recalled_item="{text}", recalled_group="",
)  # fmt: skip


@st.composite
def buffers(draw: st.DrawFn) -> list[Message]:
    msgs: list[Message] = []
    calls = [0]

    def add(role: str, content: str | None, **kw: Any) -> None:
        msgs.append(Message(role=role, content=content, created_at=T0 + timedelta(minutes=len(msgs)), **kw))  # type: ignore[arg-type]

    kinds = st.sampled_from(["user"] * 4 + ["assistant"] * 3 + ["tools"] * 3 + ["system", "orphan", "unanswered"])
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(kinds)
        if kind in ("user", "assistant", "system"):
            add(kind, draw(TEXT))
        elif kind == "orphan":
            add("tool", draw(TEXT), tool_call_id=f"ghost{len(msgs)}")
        else:
            calls[0] += 1
            ids = [f"c{calls[0]}a", f"c{calls[0]}b"][: draw(st.integers(1, 2))]
            add("assistant", None, tool_calls=tuple(ToolCall(id=i, name="find", arguments='{"q":"北京"}') for i in ids))
            for call_id in ids if kind == "tools" else ids[:-1]:
                add("tool", draw(TEXT), tool_call_id=call_id)
    if draw(st.booleans()):  # usually there is a current turn
        add("user", draw(TEXT))
        if draw(st.booleans()):
            add("assistant", None, tool_calls=(ToolCall(id="now1", name="find"),))
            add("tool", draw(TEXT), tool_call_id="now1")
    return msgs


def profile_entries(values: list[str]) -> list[ProfileEntry]:
    return [ProfileEntry(user_id="u", key=f"k{i}", value=v, valid_from=T0) for i, v in enumerate(values)]


def hits(texts: list[str]) -> list[Hit]:
    return [
        Hit(
            item=MemoryItem(id=f"m{i}", user_id="u", text=t, session_id=f"s{i % 3}", created_at=T0 - timedelta(days=i)),
            score=1.0 / (i + 1),
        )
        for i, t in enumerate(texts)
    ]


def required_messages(system_prompt: str | None, messages: list[Message]) -> list[Message]:
    """Independent statement of what must be in the prompt."""
    before, turn = split_current_turn(messages)
    out = [Message(role="system", content=system_prompt)] if system_prompt is not None else []
    out += [m for m in before if m.role in ("system", "developer")]
    return out + valid(turn)


def valid(messages: list[Message]) -> list[Message]:
    """Messages the API accepts: no orphan tool result, no tool call missing a result."""
    out = []
    for group in group_messages(messages):
        head = group[0]
        answered = {m.tool_call_id for m in group[1:]}
        if not is_orphan_tool(group) and all(c.id in answered for c in head.tool_calls):
            out.extend(group)
    return out


def check_output(ctx: AssembledContext, tok: Tokenizer, budget: int) -> None:
    emitted = [Message.from_openai(d) for d in ctx.messages]
    assert ctx.tokens == tok.count_messages(emitted) <= budget
    assert ctx.report.total == ctx.tokens and ctx.report.budget == budget
    assert sum(t.tokens for t in ctx.report.tiers) + ctx.report.overhead == ctx.tokens
    assert not any(is_orphan_tool(g) for g in group_messages(emitted)), "orphan tool emitted"
    for index, message in enumerate(emitted):
        if message.role == "assistant" and message.tool_calls:
            results = {m.tool_call_id for m in emitted[index + 1 : index + 1 + len(message.tool_calls)]}
            assert results == {c.id for c in message.tool_calls}, "tool-call group split"
    rank = {tier: i for i, tier in enumerate(TIERS)}
    squeezed = [rank[i.tier] for i in ctx.report.items if i.reason == "budget"]
    if squeezed:
        assert not any(i.kept and rank[i.tier] > min(squeezed) for i in ctx.report.items), (
            "a lower tier got room a higher tier was denied"
        )


PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOKENIZER_IDS)
@PROPERTY
@given(
    messages=buffers(),
    system_prompt=st.none() | TEXT,
    summary=st.none() | LONG_OR_SHORT,
    profile=st.lists(LONG_OR_SHORT, max_size=5),
    recalled=st.lists(LONG_OR_SHORT, max_size=8),
    budget=st.integers(0, 600),
    caps=st.sampled_from([TierCaps(), UNCAPPED, TierCaps(history=0.2, summary=0.05, profile=0.3, recalled=1.0)]),
    mode=st.sampled_from(["merge", "separate"]),
    bare=st.booleans(),
)
def test_assembly_properties(
    tok: Tokenizer,
    messages: list[Message],
    system_prompt: str | None,
    summary: str | None,
    profile: list[str],
    recalled: list[str],
    budget: int,
    caps: TierCaps,
    mode: str,
    bare: bool,
) -> None:
    template = dataclasses.replace(BARE if bare else DEFAULT_TEMPLATE, memory_message=mode)
    required = required_messages(system_prompt, messages)
    try:
        ctx = assemble(
            messages, tokenizer=tok, budget=budget, system_prompt=system_prompt, summary=summary,
            profile=profile_entries(profile), recalled=hits(recalled), caps=caps, template=template,
        )  # fmt: skip
    except BudgetError as exc:
        assert exc.budget == budget
        assert exc.required == tok.count_messages(required) > budget
        return
    check_output(ctx, tok, budget)
    emitted = [Message.from_openai(d) for d in ctx.messages]
    # System prompt first, the current turn verbatim at the end.
    if system_prompt is not None:
        assert emitted[0].role == "system" and (emitted[0].content or "").startswith(system_prompt)
    # After the leading system message(s): kept history and pinned messages in order, then the turn.
    kept_ids = {i.ref for i in ctx.report.items if i.kept}
    before, turn = split_current_turn(messages)
    turn = valid(turn)
    expected = [m.to_openai() for m in before if m.id in kept_ids] + [m.to_openai() for m in turn]
    lead = len(ctx.messages) - len(expected)
    assert 0 <= lead <= 2 and all(m["role"] == "system" for m in ctx.messages[:lead])
    assert ctx.messages[lead:] == expected
    # History: a contiguous newest run of the valid groups.
    history = [
        i for i in ctx.report.items if i.tier == "history" and i.reason not in ("orphan tool", "unanswered tool call")
    ]
    flags = [i.kept for i in history]
    assert flags == sorted(flags), "history is not contiguous"
    # Every candidate is reported once; caps hold.
    refs = [i.ref for i in ctx.report.items if i.tier in ("profile", "recalled")]
    assert sorted(refs) == sorted([f"k{i}" for i in range(len(profile))] + [f"m{i}" for i in range(len(recalled))])
    for tier in ctx.report.tiers:
        if tier.cap is not None:
            assert tier.tokens <= tier.cap, f"{tier.tier} over its cap"
    # What the report calls kept is in the prompt, rendered by the template.
    memory_text = "\n".join(m.content or "" for m in emitted if m.role == "system")
    for hit in hits(recalled):
        if hit.item.id in kept_ids:
            assert template.recalled(hit) in memory_text


# -- unit tests ------------------------------------------------------------------------


@pytest.fixture(params=TOKENIZERS, ids=TOKENIZER_IDS)
def tok(request: pytest.FixtureRequest) -> Tokenizer:
    return request.param  # type: ignore[no-any-return]


def chat() -> list[Message]:
    return [
        Message(role="user", content="I moved to Berlin last year", id="u1"),
        Message(role="assistant", content="Nice! How do you like it?", id="a1"),
        Message(role="user", content="天气怎么样？", id="u2"),
        Message(role="assistant", content=None, tool_calls=(ToolCall(id="c1", name="weather"),), id="a2"),
        Message(role="tool", content='{"temp": 21, "sky": "晴"}', tool_call_id="c1", id="t2"),
        Message(role="assistant", content="21 °C and sunny ☀️", id="a3"),
        Message(role="user", content="And tomorrow?", id="u3"),
    ]


def test_budget_error_carries_the_numbers(tok: Tokenizer) -> None:
    msgs = chat()
    prompt = "You are a helpful assistant. " * 5
    required = tok.count_messages([Message(role="system", content=prompt), msgs[-1]])
    with pytest.raises(BudgetError) as info:
        assemble(msgs, tokenizer=tok, budget=required - 1, system_prompt=prompt)
    assert (info.value.required, info.value.budget) == (required, required - 1)
    ctx = assemble(msgs, tokenizer=tok, budget=required, system_prompt=prompt)
    assert [m["content"] for m in ctx.messages] == [prompt, "And tomorrow?"]
    assert ctx.tokens == required


def test_opt_in_truncation_cuts_the_user_text_with_a_marker(tok: Tokenizer) -> None:
    long_text = "Please summarise this report. " + "数据 data 🐼 " * 200
    msgs = [*chat()[:-1], Message(role="user", content=long_text, id="u3")]
    budget = 150
    with pytest.raises(BudgetError):
        assemble(msgs, tokenizer=tok, budget=budget, system_prompt="Be brief.")
    ctx = assemble(msgs, tokenizer=tok, budget=budget, system_prompt="Be brief.", truncate_current_turn=True)
    check_output(ctx, tok, budget)
    content = ctx.messages[-1]["content"]
    prefix, _, _ = content.partition("\n…[truncated by hmem:")
    assert long_text.startswith(prefix) and len(prefix) > 0
    cut = tok.count(long_text) - tok.count(prefix)
    assert content == prefix + TRUNCATION_MARKER.format(n=cut)
    assert ctx.report.truncated_tokens == cut > 0


def test_truncation_cannot_save_an_oversized_system_prompt(tok: Tokenizer) -> None:
    with pytest.raises(BudgetError) as info:
        assemble(chat(), tokenizer=tok, budget=20, system_prompt="rules " * 100, truncate_current_turn=True)
    assert info.value.required > 20


def test_memory_tiers_render_into_the_system_message_with_dates_and_sessions(tok: Tokenizer) -> None:
    item = MemoryItem(id="m1", user_id="u", text="Likes hiking", session_id="s42", speaker="user",
                      created_at=datetime(2023, 11, 5, tzinfo=UTC))  # fmt: skip
    ctx = assemble(
        chat(), tokenizer=tok, budget=2000, system_prompt="Be kind.", summary="They talked about Berlin.",
        profile=profile_entries(["Berlin"]), recalled=[Hit(item=item, score=0.9)],
    )  # fmt: skip
    system = ctx.messages[0]["content"]
    assert system.startswith("Be kind.\n\n# Memory")
    assert "They talked about Berlin." in system and "- k0: Berlin" in system
    assert "[2023-11-05, session s42]\n- user: Likes hiking" in system
    assert [m.get("content") for m in ctx.messages[1:]] == [m.content for m in chat()]


def test_template_can_be_replaced(tok: Tokenizer) -> None:
    template = ContextTemplate(
        memory_header="", recalled_header="Memories:", recalled_item="* {text} ({datetime}, score {score:.2f})",
        recalled_group="", memory_message="separate",
    )  # fmt: skip
    ctx = assemble(
        chat(), tokenizer=tok, budget=2000, system_prompt="Hi.", recalled=hits(["Owns a cat"]), template=template
    )
    assert ctx.messages[0] == {"role": "system", "content": "Hi."}
    assert ctx.messages[1] == {
        "role": "system",
        "content": "Memories:\n* Owns a cat (2024-05-01 09:00 UTC, score 1.00)",
    }
    check_output(ctx, tok, 2000)


def test_a_recalled_turn_says_its_relative_dates_as_calendar_dates(tok: Tokenizer) -> None:
    said = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)  # a Monday
    turn = MemoryItem(id="t1", user_id="u", text="We hiked Mount Tam last Saturday, and I fly out tomorrow.",
                      kind="turn", session_id="s1", created_at=said, speaker="user")
    fact = MemoryItem(id="f1", user_id="u", text="Maya ran a race last Saturday", session_id="s1", created_at=said)
    dated = MemoryItem(id="t2", user_id="u", text="The wedding is on 7 May 2023.", kind="turn", session_id="s1",
                       created_at=said)
    recalled = [Hit(item=turn, score=1.0), Hit(item=fact, score=0.9), Hit(item=dated, score=0.8)]
    ctx = assemble(chat(), tokenizer=tok, budget=2000, recalled=recalled)
    memory = ctx.messages[0]["content"]
    assert "- user: We hiked Mount Tam last Saturday (6 May 2023), and I fly out tomorrow (9 May 2023)." in memory
    # A fact was dated when it was extracted (hmem.longterm.facts); a date with a year is left as said.
    assert "- Maya ran a race last Saturday\n" in memory + "\n"
    assert "- The wedding is on 7 May 2023." in memory
    check_output(ctx, tok, 2000)
    # What the report counts is what was rendered, dates included.
    kept = {i.ref: i.tokens for i in ctx.report.items if i.tier == "recalled"}
    assert kept["t1"] == tok.count(DEFAULT_TEMPLATE.recalled(recalled[0]))
    off = assemble(chat(), tokenizer=tok, budget=2000, recalled=recalled,
                   template=dataclasses.replace(DEFAULT_TEMPLATE, resolve_dates=False))
    assert "- user: We hiked Mount Tam last Saturday, and I fly out tomorrow." in off.messages[0]["content"]


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("template.recalled_item", {"recalled_item": "{txt}"}),
        ("template.profile_item", {"profile_item": "{key} {"}),
        ("template.summary_item", {"summary_item": " "}),
        ("template.memory_message", {"memory_message": "inline"}),
        ("template.profile_header", {"profile_header": 3}),
        ("template.resolve_dates", {"resolve_dates": "yes"}),
        ("template.resolve_dates", {"resolve_dates": 1}),
    ],
)
def test_bad_templates_are_rejected_when_built(field: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput) as info:
        ContextTemplate(**kwargs)
    assert info.value.field == field


def test_report_explains_every_drop(tok: Tokenizer) -> None:
    msgs = [
        Message(role="tool", content="stray", tool_call_id="x", id="orphan"),
        Message(role="system", content="pinned rule", id="sys1"),
        Message(role="assistant", content=None, tool_calls=(ToolCall(id="q", name="f"),), id="unanswered"),
        *chat(),
    ]
    archived = MemoryItem(id="dup", user_id="u", text="And tomorrow?", source_message_id="u3")
    old = ProfileEntry(user_id="u", key="city", value="Paris", valid_from=T0, valid_to=T0 + timedelta(days=1))
    ctx = assemble(
        msgs, tokenizer=tok, budget=5000, summary="  ", profile=[old, *profile_entries(["Berlin"])],
        recalled=[Hit(item=archived, score=1.0), *hits(["Owns a cat"])],
    )  # fmt: skip
    reasons = {i.ref: i.reason for i in ctx.report.items}
    assert reasons["orphan"] == "orphan tool"
    assert reasons["unanswered"] == "unanswered tool call"
    assert reasons["summary"] == "empty"
    assert reasons["city"] == "not current"
    assert reasons["dup"] == "duplicate"
    assert reasons["k0"] is None and reasons["m0"] is None and reasons["sys1"] is None
    assert ctx.report.tier("system").kept == 1 and ctx.report.tier("current_turn").kept == 1
    assert ctx.report.tier("history").kept == 6
    json_ready = ctx.report.to_dict()
    assert json_ready["total"] == ctx.tokens and len(json_ready["items"]) == len(ctx.report.items)
    check_output(ctx, tok, 5000)


def test_history_stops_at_first_group_that_does_not_fit_and_blocks_lower_tiers(tok: Tokenizer) -> None:
    msgs = chat()
    fixed = tok.count_messages(msgs[-1:])
    newest = tok.count_messages(msgs[-4:]) - fixed  # the tool group (a2, t2) and a3
    budget = fixed + newest + 2  # room for them, not for u2 before them
    ctx = assemble(msgs, tokenizer=tok, budget=budget, caps=None, summary="s", profile=profile_entries(["x"]))
    reasons = {i.ref: i.reason for i in ctx.report.items}
    assert [reasons[r] for r in ("a2", "t2", "a3")] == [None, None, None]
    assert reasons["u2"] == "budget"
    assert reasons["u1"] == reasons["a1"] == "history cut"
    assert reasons["summary"] == reasons["k0"] == "budget"  # room went to history first


def test_lower_tiers_get_nothing_once_a_higher_tier_was_denied_room(tok: Tokenizer) -> None:
    msgs = chat()[-1:]
    small = hits(["cat"])
    room = assemble(msgs, tokenizer=tok, budget=10_000, caps=None, recalled=small).tokens
    ctx = assemble(msgs, tokenizer=tok, budget=room + 5, caps=None, summary="long summary " * 50, recalled=small)
    reasons = {i.ref: i.reason for i in ctx.report.items}
    assert reasons["summary"] == "budget"
    assert reasons["m0"] == "budget", "the recalled item would fit, but the summary outranks it"
    # With the summary capped instead, the recalled item gets the room ("caps aside").
    capped = assemble(msgs, tokenizer=tok, budget=room + 5, caps=dataclasses.replace(UNCAPPED, summary=0.01), summary="long " * 50,
                      recalled=small)  # fmt: skip
    assert {i.ref: i.reason for i in capped.report.items} == {"summary": "tier cap", "m0": None, "u3": None}


def test_caps_limit_a_tier_and_leave_room_for_the_next(tok: Tokenizer) -> None:
    msgs = [*(Message(role="user", content=f"old message number {i} " * 5) for i in range(20)), chat()[-1]]
    recalled = hits([f"fact number {i} about the user" for i in range(40)])  # wants more than its share too
    # Shares that add up to the whole budget: no tier leaves room unused, so none flexes.
    caps = TierCaps(history=0.25, recalled=0.75)
    capped = assemble(msgs, tokenizer=tok, budget=400, caps=caps, recalled=recalled)
    assert capped.report.tier("history").tokens <= 100
    assert capped.report.tier("history").stopped_by == "tier cap"
    assert capped.report.tier("recalled").kept > 3
    greedy = assemble(msgs, tokenizer=tok, budget=400, caps=None, recalled=recalled)
    assert greedy.report.tier("history").tokens > 100  # uncapped history takes what it can
    check_output(capped, tok, 400)
    check_output(greedy, tok, 400)


def test_a_tier_may_use_the_share_another_tier_leaves_unused(tok: Tokenizer) -> None:
    # Many history groups, three short recalled items: recalled leaves most of its 0.6
    # share unused, so history may grow past its 0.4 — and the other way round.
    msgs = [*(Message(role="user", content=f"old message number {i} " * 5) for i in range(40)), chat()[-1]]
    few = assemble(msgs, tokenizer=tok, budget=1000, recalled=hits(["fact 0", "fact 1", "fact 2"]))
    assert few.report.tier("recalled").kept == 3
    assert few.report.tier("history").tokens > 400
    assert few.report.tier("history").cap is not None and few.report.tier("history").cap > 400
    # No history at all: recalled items may take far more than 0.6 of the budget.
    many = hits([f"fact number {i} about the user and their week" for i in range(200)])
    alone = assemble(chat()[-1:], tokenizer=tok, budget=1000, recalled=many)
    assert alone.tokens > 900 and (alone.report.tier("recalled").cap or 0) > 600
    assert alone.report.tier("recalled").stopped_by in ("budget", "tier cap")
    # Every tier full: the caps stay the defaults.
    full = assemble(msgs, tokenizer=tok, budget=1000, recalled=many)
    assert full.report.tier("history").cap == 400 and full.report.tier("recalled").cap == 600
    assert full.report.tier("history").tokens <= 400
    for ctx in (few, alone, full):
        check_output(ctx, tok, 1000)


def test_recalled_tier_stops_at_the_relevance_cut_off(tok: Tokenizer) -> None:
    strong = hits([f"fact {i}" for i in range(10)])  # scores 1, 1/2, 1/3 … 1/10
    ctx = assemble(chat()[-1:], tokenizer=tok, budget=5000, recalled=strong, relevance_cutoff=0.3)
    kept = [i.ref for i in ctx.report.items if i.tier == "recalled" and i.kept]
    assert kept == ["m0", "m1", "m2"]  # 1, 0.5, 0.33 >= 0.3; 0.25 is below
    assert ctx.report.tier("recalled").stopped_by == "relevance"
    assert {i.reason for i in ctx.report.items if i.tier == "recalled" and not i.kept} == {"relevance"}
    # No cut-off: all ten fit; the tier was not stopped.
    every = assemble(chat()[-1:], tokenizer=tok, budget=5000, recalled=strong)
    assert every.report.tier("recalled").kept == 10 and every.report.tier("recalled").stopped_by is None
    # An explicit upper bound: the report names it.
    bounded = assemble(chat()[-1:], tokenizer=tok, budget=5000, recalled=strong, max_recalled=4)
    assert bounded.report.tier("recalled").kept == 4 and bounded.report.tier("recalled").stopped_by == "recall limit"
    # A small budget stops it before relevance does.
    small = assemble(chat()[-1:], tokenizer=tok, budget=every.tokens - 20, recalled=strong, relevance_cutoff=0.05)
    assert small.report.tier("recalled").stopped_by == "budget"


def test_recalled_items_are_shown_oldest_first_but_chosen_best_first(tok: Tokenizer) -> None:
    recalled = hits(["alpha-new", "beta-mid", "gamma-old"])  # created T0, T0-1d, T0-2d; best first
    ctx = assemble(chat()[-1:], tokenizer=tok, budget=5000, recalled=recalled)
    block = ctx.messages[0]["content"]
    assert block.index("gamma-old") < block.index("beta-mid") < block.index("alpha-new")
    ranked = assemble(chat()[-1:], tokenizer=tok, budget=5000, recalled=recalled,
                      template=dataclasses.replace(DEFAULT_TEMPLATE, recalled_order="rank"))
    text = ranked.messages[0]["content"]
    assert text.index("alpha-new") < text.index("beta-mid") < text.index("gamma-old")
    # The choice is still best first: a budget for one item keeps the best one.
    one = assemble(chat()[-1:], tokenizer=tok, budget=5000, recalled=recalled, max_recalled=1)
    assert [i.ref for i in one.report.items if i.tier == "recalled" and i.kept] == ["m0"]


def test_budget_for() -> None:
    assert budget_for(128_000) == 126_000
    assert budget_for(8192, reply_reserve=1000) == 7192
    assert budget_for(8192, explicit=6000) == 6000
    for kwargs, field in [
        ({"model_window": 0}, "model_window"),
        ({"model_window": 1000, "reply_reserve": 1000}, "reply_reserve"),
        ({"model_window": 1000, "reply_reserve": -1}, "reply_reserve"),
        ({"model_window": 8192, "explicit": 8000}, "explicit"),
        ({"model_window": 8192, "explicit": -1}, "explicit"),
        ({"model_window": 8192.0}, "model_window"),
    ]:
        with pytest.raises(InvalidInput) as info:
            budget_for(**kwargs)
        assert info.value.field == field


BAD_ASSEMBLE_ARGS = [
    ("budget", {"budget": -1}),
    ("budget", {"budget": 10.5}),
    ("tokenizer", {"tokenizer": "gpt-4o"}),
    ("system_prompt", {"system_prompt": 42}),
    ("system_prompt", {"system_prompt": "bad \ud800"}),
    ("summary", {"summary": ["not", "text"]}),
    ("profile[0]", {"profile": [{"key": "city"}]}),
    ("profile", {"profile": "city=Berlin"}),
    ("recalled[0]", {"recalled": ["text"]}),
    ("recalled[0].score", {"recalled": [Hit(item=MemoryItem(id="m", user_id="u", text="t"), score=float("nan"))]}),
    ("caps", {"caps": {"history": 0.5}}),
    ("caps.history", {"caps": "make"}),
    ("template", {"template": "{text}"}),
    ("truncate_current_turn", {"truncate_current_turn": "yes"}),
    ("relevance_cutoff", {"relevance_cutoff": 1.0}),
    ("relevance_cutoff", {"relevance_cutoff": -0.1}),
    ("relevance_cutoff", {"relevance_cutoff": "0.5"}),
    ("relevance_cutoff", {"relevance_cutoff": True}),
    ("relevance_cutoff", {"relevance_cutoff": float("nan")}),
    ("max_recalled", {"max_recalled": -1}),
    ("max_recalled", {"max_recalled": 2.5}),
    (
        "messages",
        {"messages": [{"role": "user", "content": "a", "id": "x"}, {"role": "user", "content": "b", "id": "x"}]},
    ),
    ("messages[0].role", {"messages": [{"role": "robot", "content": "a"}]}),
]


@pytest.mark.parametrize(
    ("field", "override"), BAD_ASSEMBLE_ARGS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_ASSEMBLE_ARGS)]
)
def test_bad_inputs_raise_invalid_input_and_change_nothing(field: str, override: dict[str, Any]) -> None:
    msgs = chat()
    snapshot = list(msgs)
    kwargs: dict[str, Any] = {"messages": msgs, "tokenizer": TOKENIZERS[0], "budget": 1000}
    if field == "caps.history":
        with pytest.raises(InvalidInput) as info:
            TierCaps(history=1.5)
        assert info.value.field == field
        return
    kwargs.update(override)
    with pytest.raises(InvalidInput) as info:
        assemble(**kwargs)
    assert info.value.field == field
    assert msgs == snapshot


def test_recalled_items_of_one_session_share_one_dated_group_line(tok: Tokenizer) -> None:
    day = datetime(2023, 5, 8, 14, tzinfo=UTC)

    def turn(i: int, session: str, when: datetime, score: float) -> Hit:
        return Hit(item=MemoryItem(id=f"t{i}", user_id="u", text=f"turn number {i}", session_id=session,
                                   speaker="Mel", created_at=when), score=score)

    recalled = [turn(1, "s1", day + timedelta(minutes=2), 0.9), turn(2, "s2", day + timedelta(days=30), 0.8),
                turn(3, "s1", day, 0.7)]
    ctx = assemble(chat()[-1:], tokenizer=tok, budget=2000, recalled=recalled)
    block = ctx.messages[0]["content"]
    assert block.endswith("[2023-05-08, session s1]\n- Mel: turn number 3\n- Mel: turn number 1\n"
                          "[2023-06-07, session s2]\n- Mel: turn number 2")
    ranked = assemble(chat()[-1:], tokenizer=tok, budget=2000, recalled=recalled,
                      template=dataclasses.replace(DEFAULT_TEMPLATE, recalled_order="rank"))
    # Best first interleaves the sessions, so each run gets its own group line.
    assert ranked.messages[0]["content"].count("[2023-05-08, session s1]") == 2
    # One date line per session costs fewer tokens than a date on every line.
    per_line = assemble(chat()[-1:], tokenizer=tok, budget=2000, recalled=recalled,
                        template=dataclasses.replace(DEFAULT_TEMPLATE, recalled_group="",
                                                     recalled_item="- [{date}, session {session}] {speaker_prefix}{text}"))
    assert ctx.tokens < per_line.tokens
    for result in (ctx, ranked, per_line):
        check_output(result, tok, 2000)
