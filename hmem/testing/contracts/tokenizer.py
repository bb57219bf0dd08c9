"""The :class:`~hmem.protocols.Tokenizer` contract suite.

Subclass :class:`TokenizerContract` and override the ``tokenizer`` fixture. An
estimating tokenizer that promises never to count below some exact ones overrides
``never_below`` too; a test double without input checks sets ``checks_input = False``.

Example::

    import pytest
    from hmem.testing.contracts import TokenizerContract
    from hmem.tokens import TiktokenTokenizer

    class TestMyEstimator(TokenizerContract):
        @pytest.fixture
        def tokenizer(self):
            return MyEstimator()

        @pytest.fixture
        def never_below(self):
            return [TiktokenTokenizer("o200k_base")]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pytest

from hmem.errors import InvalidInput
from hmem.protocols import Tokenizer
from hmem.types import Message, ToolCall

__all__ = ["MESSAGES", "TEXTS", "TokenizerContract"]

#: Texts where tokenizers differ: prose, code, numbers, CJK, emoji sequences,
#: combining marks, long runs, whitespace, special-token text.
TEXTS = [
    "hello world",
    "The quick brown fox jumps over the lazy dog, twice; then it naps.",
    "def add(a, b):\n        return a + b  # sum\n\n\n",
    "3.14159 2024-05-06T07:08:09Z 1,234,567 0x1F600",
    "我住在柏林，每天早上喝一杯咖啡。你呢？",
    "👩‍👩‍👧 family 👍🏽 trip 🏖️ — ünïcödé e\u0301 ñ",
    "a" * 300,
    "   \n\n\t  ",
    "<|endoftext|> <|im_start|>user",
    "Mixed 中文 and English, with emoji 😀 and numbers 42.",
]

#: Every shape a chat message takes: names, tool calls without content, tool
#: results, empty content, CJK, a long message.
MESSAGES = [
    Message(role="system", content="You are a helpful assistant."),
    Message(role="user", content="What's the weather in 柏林?", name="ada_1"),
    Message(role="assistant", content=None, tool_calls=(
        ToolCall(id="call_1", name="weather", arguments='{"city": "Berlin"}'),
        ToolCall(id="call_2", name="time", arguments="{}"),
    )),
    Message(role="tool", content='{"temp": 21}', tool_call_id="call_1"),
    Message(role="tool", content="", tool_call_id="call_2"),
    Message(role="assistant", content="It is 21 °C. 👍"),
    Message(role="user", content=""),
    Message(role="developer", content="Answer in one line. " * 50),
]

LIMITS = [0, 1, 2, 5, 17, 60]

BAD_CALLS: list[tuple[str, Callable[[Any], object]]] = [
    ("count None", lambda t: t.count(None)),
    ("count bytes", lambda t: t.count(b"hello")),
    ("count int", lambda t: t.count(5)),
    ("count_messages a string", lambda t: t.count_messages("hello")),
    ("count_messages None", lambda t: t.count_messages(None)),
    ("count_messages None item", lambda t: t.count_messages([MESSAGES[0], None])),
    ("count_message None", lambda t: t.count_message(None)),
    ("truncate text None", lambda t: t.truncate(None, 3)),
    ("truncate max_tokens -1", lambda t: t.truncate("hello world", -1)),
    ("truncate max_tokens float", lambda t: t.truncate("hello world", 1.5)),
    ("truncate max_tokens bool", lambda t: t.truncate("hello world", True)),
    ("truncate max_tokens str", lambda t: t.truncate("hello world", "3")),
]


class TokenizerContract:
    """Behaviour every :class:`~hmem.protocols.Tokenizer` must show: a stable name,
    ``count("") == 0``, exactly additive message counts (the port's contract), a
    message never cheaper than its content, ``truncate`` returning the longest prefix
    within the limit, never counting below the ``never_below`` tokenizers, and bad
    input rejected with :class:`~hmem.errors.InvalidInput` (when ``checks_input``)."""

    checks_input: ClassVar[bool] = True

    @pytest.fixture
    def tokenizer(self) -> Tokenizer:
        raise NotImplementedError("override the `tokenizer` fixture to return a Tokenizer")

    @pytest.fixture
    def never_below(self) -> Sequence[Tokenizer]:
        return ()

    def test_satisfies_the_protocol(self, tokenizer: Tokenizer) -> None:
        assert isinstance(tokenizer, Tokenizer)
        name = tokenizer.name
        assert isinstance(name, str) and name.strip()
        tokenizer.count(TEXTS[1])
        assert tokenizer.name == name

    def test_empty_text_is_zero_tokens_and_text_is_at_least_one(self, tokenizer: Tokenizer) -> None:
        assert tokenizer.count("") == 0
        for text in TEXTS:
            n = tokenizer.count(text)
            assert type(n) is int and n >= (1 if text.strip() else 0), text

    def test_counts_are_deterministic(self, tokenizer: Tokenizer) -> None:
        assert [tokenizer.count(t) for t in TEXTS] == [tokenizer.count(t) for t in TEXTS]
        assert tokenizer.count_messages(MESSAGES) == tokenizer.count_messages(list(MESSAGES))

    @pytest.mark.parametrize("n", range(len(MESSAGES) + 1))
    def test_message_counts_are_additive(self, tokenizer: Tokenizer, n: int) -> None:
        for messages in (MESSAGES[:n], list(reversed(MESSAGES))[:n], MESSAGES[n:]):
            parts = [tokenizer.count_message(m) for m in messages]
            primer = tokenizer.count_messages([])
            assert tokenizer.count_messages(messages) == sum(parts) + primer
            assert tokenizer.count_messages(messages) >= sum(parts)

    def test_the_reply_primer_is_a_non_negative_int(self, tokenizer: Tokenizer) -> None:
        primer = tokenizer.count_messages([])
        assert type(primer) is int and primer >= 0

    @pytest.mark.parametrize("message", MESSAGES, ids=lambda m: f"{m.role}:{(m.content or '')[:12]}")
    def test_a_message_costs_its_content_and_more(self, tokenizer: Tokenizer, message: Message) -> None:
        n = tokenizer.count_message(message)
        assert type(n) is int
        assert n > 0  # framing costs tokens even around empty content
        assert n >= tokenizer.count(message.content or "")

    @pytest.mark.parametrize("limit", LIMITS)
    @pytest.mark.parametrize("text", TEXTS, ids=lambda t: t[:16])
    def test_truncate_returns_the_longest_prefix_within_the_limit(self, tokenizer: Tokenizer, text: str,
                                                                   limit: int) -> None:
        cut = tokenizer.truncate(text, limit)
        assert isinstance(cut, str) and text.startswith(cut)
        assert tokenizer.count(cut) <= limit
        if tokenizer.count(text) <= limit:
            assert cut == text
        # Longest: no longer prefix fits (prefix counts are not monotone, so check them all).
        longer_fitting = [n for n in range(len(cut) + 1, len(text) + 1) if tokenizer.count(text[:n]) <= limit]
        assert longer_fitting == [], f"longer prefixes fit: {longer_fitting[:5]} chars (kept {len(cut)})"

    def test_truncate_of_empty_text_is_empty(self, tokenizer: Tokenizer) -> None:
        assert tokenizer.truncate("", 0) == "" and tokenizer.truncate("", 10) == ""

    def test_never_counts_below_the_reference_tokenizers(self, tokenizer: Tokenizer,
                                                         never_below: Sequence[Tokenizer]) -> None:
        if not never_below:
            pytest.skip("no never_below tokenizers given: this tokenizer promises no lower bound")
        for reference in never_below:
            for text in TEXTS:
                assert tokenizer.count(text) >= reference.count(text), (reference.name, text)
            for message in MESSAGES:
                assert tokenizer.count_message(message) >= reference.count_message(message), (reference.name, message)
            assert tokenizer.count_messages(MESSAGES) >= reference.count_messages(MESSAGES)
            assert tokenizer.count_messages([]) >= reference.count_messages([])

    @pytest.mark.parametrize(("label", "call"), BAD_CALLS, ids=[b[0] for b in BAD_CALLS])
    def test_bad_input_raises_invalid_input(self, tokenizer: Tokenizer, label: str,
                                            call: Callable[[Tokenizer], object]) -> None:
        if not self.checks_input:
            pytest.skip("checks_input = False: this tokenizer does not check its input")
        before = tokenizer.count_messages(MESSAGES)
        with pytest.raises(InvalidInput) as info:
            call(tokenizer)
        assert info.value.field, f"{label}: the error must name the field"
        assert tokenizer.count_messages(MESSAGES) == before
