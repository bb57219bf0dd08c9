"""hmem.tokens: exact offline counts for OpenAI models, chat overhead, the
estimator for other models, truncation, offline loading and bad input.

The oracle is tiktoken itself, loaded through its *own* loader, spec and hash
check (``tiktoken.get_encoding``) from a cache directory seeded with the files;
hmem builds its encodings by a different path, so agreement is evidence.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import inspect
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hmem.errors import InvalidInput
from hmem.protocols import Tokenizer
from hmem.tokens import (
    TOOL_CALL_OVERHEAD,
    EstimateTokenizer,
    TiktokenTokenizer,
    count_tokens,
    get_tokenizer,
    load_encoding,
)
from hmem.tokens._bpe import _EXPECTED_SHA256, _PINNED, _spec_from_tiktoken
from hmem.types import Message, ToolCall

ROOT = Path(__file__).resolve().parents[2]

CORPUS: dict[str, str] = {
    "empty": "",
    "en_prose": (
        "Memory systems for assistants keep what was said, condense it, and recall it later when it "
        "matters. The quick brown fox jumps over the lazy dog; internationalization isn't trivial."
    ),
    "en_punct": "It's 3:45pm on Tuesday, 2024-05-06; the meeting (room B-12) was moved — again! RSVP: alice@example.com.",
    "zh": "我们今天去北京的天安门广场看升旗仪式，然后去吃烤鸭。明天打算去长城，后天回上海。",
    "zh_tech": "机器学习是人工智能的一个分支，它使计算机能够在没有明确编程的情况下从数据中学习。",
    "zh_rare": "龘靐齉爩鱻麤灥馫。饕餮魑魅魍魉，耄耋之年，觊觎饕餮。",
    "mixed": "用户说 I live in Berlin 并且喜欢 Python 编程 🐍，邮箱 bob@x.cn。",
    "emoji": "😀👍🏽👨‍👩‍👧🎉🔥✨🚀💡 party time 🥳🥳🥳 🇩🇪🇨🇳",
    "code": 'def f(x):\n    return {"a": [1, 2, 3], "b": None}  # comment\n\t\tpass\n\nclass A(B):\n    async def run(self) -> int: ...\n',
    "json": '{"user": {"id": 12345, "tags": ["a","b"], "nested": {"k": 3.14159, "ok": true, "v": null}}}',
    "whitespace": "   \n\n\t  x    y\r\n\r\n     ",
    "only_spaces": "          ",
    "newlines": "\n\n\n\n",
    "digits": "31415926535897932384626433832795028841971693993751",
    "special_text": "<|endoftext|> and <|endofprompt|> are plain text here",
    "ja_ko_ru": "今日はいい天気ですね。안녕하세요. Привет, как дела?",
    "url_b64": "https://example.com/p?q=abc&x=1#f aGVsbG8gd29ybGQgYmFzZTY0IQ==",
    "long_word": "Pneumonoultramicroscopicsilicovolcanoconiosis " * 3,
    "combining": "e\u0301 n\u0303 Zalgo: Z\u0351\u0358a\u0352l\u0353g\u0354o",
}

OPENAI_MODELS = [
    "gpt-4o-mini",
    "gpt-4o",
    "gpt-4.1",
    "o3",
    "o1",
    "gpt-5",
    "gpt-4",
    "gpt-3.5-turbo",
    "text-embedding-3-small",
]
URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tiktoken.Encoding]]:
    """tiktoken's own encodings, loaded by tiktoken from a seeded cache dir."""
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    data = Path(tiktoken.__file__).parents[1] / "bpe_openai" / "data"
    for name in ("cl100k_base", "o200k_base"):
        raw = gzip.decompress((data / f"{name}.tiktoken.gz").read_bytes())
        (cache / hashlib.sha1(URL.format(name).encode()).hexdigest()).write_bytes(raw)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        yield {name: tiktoken.get_encoding(name) for name in ("cl100k_base", "o200k_base")}


def cookbook_count(enc: tiktoken.Encoding, messages: list[dict[str, Any]]) -> int:
    """OpenAI cookbook num_tokens_from_messages, extended with the tool formula of docs/tokens.md."""
    n = 0
    for m in messages:
        n += 3
        for key, value in m.items():
            if key == "tool_calls":
                for call in value:
                    fn = call["function"]
                    n += (
                        3
                        + len(enc.encode("to=functions."))
                        + len(enc.encode(fn["name"]))
                        + len(enc.encode(fn["arguments"]))
                    )
            elif value is not None:
                n += len(enc.encode(value, disallowed_special=()))
                if key == "name":
                    n += 1
    return n + 3


# ------------------------------------------------------------------ exact counts


@pytest.mark.parametrize("model", OPENAI_MODELS)
def test_count_equals_tiktoken_on_varied_corpus(model: str, oracle: dict[str, tiktoken.Encoding]) -> None:
    enc = oracle[tiktoken.encoding_name_for_model(model)]  # tiktoken's own model map
    for label, text in CORPUS.items():
        assert count_tokens(text, model=model) == len(enc.encode(text, disallowed_special=())), label


def test_encodings_are_built_identically_to_tiktoken(oracle: dict[str, tiktoken.Encoding]) -> None:
    for name, ref in oracle.items():
        ours = load_encoding(name)
        assert ours._mergeable_ranks == ref._mergeable_ranks
        assert ours._pat_str == ref._pat_str
        assert ours._special_tokens == ref._special_tokens


def test_pinned_fallback_and_hashes_agree_with_installed_tiktoken() -> None:
    source = inspect.getsource(__import__("tiktoken_ext.openai_public", fromlist=["x"]))
    for name, sha in _EXPECTED_SHA256.items():
        assert re.search(rf'{name}\.tiktoken",\s*expected_hash="{sha}"', source), name
        spec = _spec_from_tiktoken(name)
        assert spec is not None
        assert (spec["pat_str"], spec["special_tokens"]) == _PINNED[name]


def test_cookbook_example_matches_api_reported_counts() -> None:
    # The OpenAI cookbook ("How to count tokens with tiktoken") reports that the API
    # itself billed 129 prompt tokens for these messages on gpt-3.5-turbo / gpt-4
    # and 124 on gpt-4o / gpt-4o-mini.
    example = [
        {
            "role": "system",
            "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English.",
        },
        {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
        {
            "role": "system",
            "name": "example_assistant",
            "content": "Things working well together will increase revenue.",
        },
        {
            "role": "system",
            "name": "example_user",
            "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.",
        },
        {
            "role": "system",
            "name": "example_assistant",
            "content": "Let's talk later when we're less busy about how to do better.",
        },
        {
            "role": "user",
            "content": "This late pivot means we don't have time to boil the ocean for the client deliverable.",
        },
    ]
    assert count_tokens(example, model="gpt-3.5-turbo") == 129
    assert count_tokens(example, model="gpt-4-0613") == 129
    assert count_tokens(example, model="gpt-4o") == 124
    assert count_tokens(example, model="gpt-4o-mini-2024-07-18") == 124


CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are hmem's assistant. 回答要简洁。"},
    {"role": "developer", "content": "Prefer metric units."},
    {"role": "user", "name": "alice", "content": "北京明天天气怎么样？ And Berlin?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_abc123XYZ",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "北京"}'},
            },
            {
                "id": "call_def456UVW",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Berlin", "unit": "c"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_abc123XYZ", "content": '{"temp": 21, "sky": "晴"}'},
    {"role": "tool", "tool_call_id": "call_def456UVW", "content": '{"temp": 14, "sky": "rain"}'},
    {"role": "assistant", "content": "北京 21°C 晴；Berlin 14°C, rain 🌧️."},
]


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])
def test_chat_overhead_and_tool_calls_match_independent_tiktoken_computation(
    model: str, oracle: dict[str, tiktoken.Encoding]
) -> None:
    enc = oracle[tiktoken.encoding_name_for_model(model)]
    assert count_tokens(CONVERSATION, model=model) == cookbook_count(enc, CONVERSATION)
    for i in range(len(CONVERSATION)):  # every prefix, so each message kind is checked alone
        assert count_tokens(CONVERSATION[: i + 1], model=model) == cookbook_count(enc, CONVERSATION[: i + 1])
    messages = [Message.from_openai(m) for m in CONVERSATION]
    assert count_tokens(messages, model=model) == cookbook_count(enc, CONVERSATION)


def test_tool_call_overhead_is_framing_plus_recipient(oracle: dict[str, tiktoken.Encoding]) -> None:
    for enc in oracle.values():
        assert 3 + len(enc.encode("to=functions.")) == TOOL_CALL_OVERHEAD


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4", "claude-3-5-sonnet", "some-unknown-model"])
def test_count_messages_is_sum_of_messages_plus_primer(model: str) -> None:
    tok = get_tokenizer(model)
    assert isinstance(tok, Tokenizer)
    msgs = [Message.from_openai(m) for m in CONVERSATION]
    assert tok.count_messages(msgs) == sum(tok.count_message(m) for m in msgs) + tok.count_messages([])
    assert tok.count_messages([]) > 0  # the reply primer
    # a name and a tool call each cost tokens
    plain = Message(role="user", content="hi")
    assert tok.count_message(Message(role="user", content="hi", name="bob")) > tok.count_message(plain)
    one = Message(role="assistant", content=None, tool_calls=(ToolCall("c1", "f", "{}"),))
    two = Message(role="assistant", content=None, tool_calls=(ToolCall("c1", "f", "{}"), ToolCall("c2", "f", "{}")))
    assert tok.count_message(two) > tok.count_message(one)


_PIECE = st.text(alphabet=st.sampled_from(list("ab cd 12 你好世界 🐼👍🏽 .,!{}\"\n<|>")), max_size=40)


@st.composite
def _chat(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = []
    for i in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["system", "user", "assistant", "calls"]))
        if kind == "calls":
            ids = [f"c{i}_{j}" for j in range(draw(st.integers(1, 3)))]
            calls = tuple(ToolCall(id=c, name=draw(st.sampled_from(["f", "get_weather"])), arguments=draw(_PIECE))
                          for c in ids)
            out.append(Message(role="assistant", content=draw(st.none() | _PIECE), tool_calls=calls))
            out.extend(Message(role="tool", content=draw(_PIECE), tool_call_id=c) for c in ids)
        else:
            out.append(Message(role=kind, content=draw(_PIECE),  # type: ignore[arg-type]
                               name=draw(st.none() | st.sampled_from(["bob", "李雷"]))))
    return out


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4", "claude-3-5-sonnet", "some-unknown-model"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=_chat())
def test_message_counts_are_additive_the_tokenizer_contract(model: str, messages: list[Message]) -> None:
    # hmem.protocols.Tokenizer promises this; the window policies and the assembler cost
    # lists by summing per-message counts, so a tokenizer breaking it could overrun a budget.
    tok = get_tokenizer(model)
    assert tok.count_messages(messages) == sum(tok.count_message(m) for m in messages) + tok.count_messages([])


def test_tokenizers_are_cached_per_encoding() -> None:
    assert get_tokenizer("gpt-4o") is get_tokenizer("gpt-4.1-mini") is get_tokenizer("o200k_base")
    assert get_tokenizer("gpt-4") is get_tokenizer("text-embedding-3-large")
    assert get_tokenizer("gpt-4o").name == "o200k_base"
    assert get_tokenizer("gpt-3.5-turbo").name == "cl100k_base"
    assert get_tokenizer("gemini-2.5-pro") is get_tokenizer("not-a-model-xyz")
    assert get_tokenizer().name == "o200k_base"


# ------------------------------------------------------------------ estimator


def test_estimator_is_never_below_either_tiktoken_encoding(
    oracle: dict[str, tiktoken.Encoding], capsys: pytest.CaptureFixture[str]
) -> None:
    texts = [t for t in CORPUS.values() if t]
    texts += [CORPUS["en_prose"] * 20, CORPUS["zh"] * 20, "".join(CORPUS.values())]
    rows = []
    for model in ("gemini-2.5-pro", "claude-sonnet-4-5", "qwen3-32b", "llama-3.1-8b", "unknown-xyz"):
        tok = get_tokenizer(model)
        for text in texts:
            est = tok.count(text)
            for name, enc in oracle.items():
                true = len(enc.encode(text, disallowed_special=()))
                rows.append((est / true, tok.name, name, text[:20]))
    worst = min(rows)
    mean = sum(r[0] for r in rows) / len(rows)
    with capsys.disabled():
        print(
            f"\n[estimator] worst est/true = {worst[0]:.3f} ({worst[1]} vs {worst[2]} on {worst[3]!r}); mean {mean:.3f}; n={len(rows)}"
        )
    assert worst[0] >= 1.0  # the contract is >= 0.9; by construction it is never below


def test_estimator_message_counts_cover_exact_counts() -> None:
    exact = get_tokenizer("gpt-4o").count_messages(CONVERSATION)
    exact_cl = get_tokenizer("gpt-4").count_messages(CONVERSATION)
    est = get_tokenizer("deepseek-chat").count_messages(CONVERSATION)
    assert est >= max(exact, exact_cl)


def test_estimate_safety_must_be_sane() -> None:
    for bad in (0.5, 0, -1, 10, "1.1", True, float("nan")):
        with pytest.raises(InvalidInput):
            EstimateTokenizer(bad)  # type: ignore[arg-type]


# ------------------------------------------------------------------ truncate

PIECES = [
    *"abcdefghij xyz  \n\t.,!?'-0123456789",
    *"我们今天北京的龘靐齉",
    "😀",
    "👍🏽",
    "🇩🇪",
    "\u200d",
    "é",
    "internationalization",
    " hello",
    "  ",
    "北京天安门",
    '{"k": 1}',
]
TEXT = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)


def _check_longest_prefix(tok: Tokenizer, text: str, limit: int) -> None:
    out = tok.truncate(text, limit)
    assert text.startswith(out)
    assert tok.count(out) <= limit
    # no longer prefix fits: checked against every longer prefix, not just the next one
    for length in range(len(out) + 1, len(text) + 1):
        assert tok.count(text[:length]) > limit, (text, limit, out, length)


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4", "gemini-2.5-pro"])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT, limit=st.integers(min_value=0, max_value=25))
def test_truncate_returns_longest_prefix_within_limit(model: str, text: str, limit: int) -> None:
    _check_longest_prefix(get_tokenizer(model), text, limit)


def test_truncate_handles_non_monotone_prefixes_and_long_text() -> None:
    tok = get_tokenizer("gpt-4o")
    text = ("internationalization " * 3 + "我们今天去北京的天安门广场看升旗仪式，然后去吃烤鸭。 😀👍🏽 ") * 40
    for limit in (0, 1, 2, 3, 5, 17, 100, 333):
        _check_longest_prefix(tok, text[:400], limit)
    big = text * 20
    out = tok.truncate(big, 2_000)
    assert tok.count(out) <= 2_000 < tok.count(big[: len(out) + 1])
    assert tok.truncate(big, 10**9) == big
    assert tok.truncate("", 0) == ""


# ------------------------------------------------------------------ bad input

BAD_TEXTS: list[Any] = [None, b"bytes", bytearray(b"x"), 123, 1.5, ["a"], {"role": "user"}]
BAD_MESSAGE_LISTS: list[Any] = [
    {"role": "user", "content": "a single dict is not a list"},
    Message(role="user", content="a single Message is not a list"),
    [{"role": "bogus", "content": "x"}],
    [{"content": "no role"}],
    [{"role": "user", "content": 5}],
    [{"role": "user", "content": "x", "extra": 1}],
    [{"role": "tool", "content": "no tool_call_id"}],
    [{"role": "assistant", "content": None}],
    [{"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}],
    [{"role": "user", "content": b"bytes"}],
    ["just a string"],
    [None],
    42,
]
BAD_MAX_TOKENS: list[Any] = [-1, -100, 1.5, "3", None, True, False]


@pytest.mark.parametrize("bad", BAD_TEXTS, ids=repr)
def test_bad_text_raises_invalid_input(bad: Any) -> None:
    for model in ("gpt-4o", "claude-3-5-haiku"):
        with pytest.raises(InvalidInput):
            count_tokens(bad, model=model)
        with pytest.raises(InvalidInput):
            get_tokenizer(model).count(bad)
        with pytest.raises(InvalidInput):
            get_tokenizer(model).truncate(bad, 5)


@pytest.mark.parametrize("bad", BAD_MESSAGE_LISTS, ids=repr)
def test_invalid_messages_raise_invalid_input_and_are_not_changed(bad: Any) -> None:
    before = copy.deepcopy(bad)
    for model in ("gpt-4o", "gemini-2.0-flash"):
        with pytest.raises(InvalidInput) as info:
            count_tokens(bad, model=model)
        assert info.value.field
        with pytest.raises(InvalidInput):
            get_tokenizer(model).count_messages(bad)
    assert bad == before


@pytest.mark.parametrize("bad", BAD_MAX_TOKENS, ids=repr)
def test_bad_max_tokens_raise_invalid_input(bad: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        get_tokenizer("gpt-4o").truncate("some text", bad)
    assert info.value.field == "max_tokens"


@pytest.mark.parametrize("bad", ["", "   ", None, 5, b"gpt-4o"], ids=repr)
def test_bad_model_names_raise_invalid_input(bad: Any) -> None:
    with pytest.raises(InvalidInput):
        get_tokenizer(bad)
    with pytest.raises(InvalidInput):
        count_tokens("x", model=bad)


def test_unknown_encoding_name_is_rejected() -> None:
    with pytest.raises(InvalidInput):
        load_encoding("p50k_base")


# ------------------------------------------------------------------ offline


def _run(script: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **env_extra}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_works_with_no_network_and_an_empty_tiktoken_cache(
    tmp_path: Path, oracle: dict[str, tiktoken.Encoding]
) -> None:
    cache = tmp_path / "empty-cache"
    cache.mkdir()
    script = """
        import socket, sys
        def refuse(*a, **k):
            raise OSError("network is disabled in this test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        import hmem.tokens as t
        import hmem.tokens._bpe as bpe
        assert not bpe._loaded, "nothing may load at import"
        text = "Offline: 离线计数 works 😀"
        print(t.count_tokens(text, "gpt-4o"), t.count_tokens(text, "gpt-4"), t.count_tokens(text, "claude-3-opus"))
        assert "bpe_openai" not in sys.modules  # its native library is not needed
    """
    proc = _run(script, {"TIKTOKEN_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stderr
    text = "Offline: 离线计数 works 😀"
    o, c = (len(oracle[n].encode(text)) for n in ("o200k_base", "cl100k_base"))
    got = [int(x) for x in proc.stdout.split()]
    assert got[:2] == [o, c]
    assert got[2] >= max(o, c)
    assert list(cache.iterdir()) == []  # nothing written to tiktoken's cache either


def test_missing_bpe_openai_gives_config_error_with_the_fix() -> None:
    script = """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "bpe_openai":
                    raise ModuleNotFoundError(name)
                return None
        sys.meta_path.insert(0, Block())
        from hmem.errors import ConfigError
        from hmem.tokens import count_tokens
        try:
            count_tokens("hello", "gpt-4o")
        except ConfigError as exc:
            print(exc)
        else:
            raise SystemExit("no ConfigError")
    """
    proc = _run(script, {})
    assert proc.returncode == 0, proc.stderr
    assert "pip install bpe-openai" in proc.stdout


def test_remembered_counts_stay_exact_past_the_memo_bound() -> None:
    """count_message remembers the counts of short texts (the buffer is recounted on every
    add): counts stay those of tiktoken itself while the memo fills, is cleared and refills,
    and a long text (not remembered) is still counted."""
    from hmem.tokens._count import _MEMO_CHARS, _MEMO_ENTRIES

    tokenizer = TiktokenTokenizer("o200k_base")
    enc = tiktoken.get_encoding("o200k_base")
    texts = [f"note {i}: {'ab' * (i % 7)} the {i % 13}th pass" for i in range(_MEMO_ENTRIES + 500)]
    texts.append("word " * (_MEMO_CHARS // 4))
    for _ in range(2):  # the second pass reads what the first remembered (and what survived the clear)
        for text in texts:
            message = Message(role="user", content=text)
            assert tokenizer.count_message(message) == 3 + len(enc.encode("user")) + len(enc.encode_ordinary(text))
    assert 0 < len(tokenizer._memo or {}) <= _MEMO_ENTRIES
