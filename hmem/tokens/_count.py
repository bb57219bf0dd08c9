"""Offline token counting with the model's own tokenizer, chat overhead included.

OpenAI models are counted exactly with tiktoken (``o200k_base`` or
``cl100k_base``). tiktoken normally downloads its BPE files; hmem instead builds
the :class:`tiktoken.Encoding` from the copies shipped in the ``bpe-openai``
package (sha256-checked against the hash tiktoken expects), so counting works
with no network and no user setup. Other models (Claude, Gemini, Llama, Qwen …)
get a documented over-estimate (:class:`EstimateTokenizer`). See ``docs/tokens.md``.

Example::

    >>> from hmem.tokens import count_tokens, get_tokenizer
    >>> count_tokens("hello world", model="gpt-4o-mini")
    2
    >>> count_tokens([{"role": "user", "content": "hello world"}], model="gpt-4o")
    9
    >>> get_tokenizer("gpt-4o").truncate("hello world", 1)
    'hello'
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any

import tiktoken

from hmem.errors import InvalidInput
from hmem.protocols import Tokenizer
from hmem.tokens._bpe import _EXPECTED_SHA256, load_encoding
from hmem.tokens.models import resolve_model
from hmem.types import Message

__all__ = [
    "ESTIMATE_SAFETY",
    "REPLY_PRIMER",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_NAME",
    "TOOL_CALL_OVERHEAD",
    "EstimateTokenizer",
    "TiktokenTokenizer",
    "count_tokens",
    "get_tokenizer",
    "load_encoding",
]

# Chat format, from OpenAI's cookbook `num_tokens_from_messages` (gpt-3.5-turbo-0613
# and later, gpt-4*, gpt-4o*, o-series): every message is framed by 3 tokens
# (<|start|>{role}…<|end|>), a name costs 1 more, every reply is primed with 3.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMER = 3
# OpenAI does not publish how tool calls are rendered. Each call is framed like a
# message of its own, addressed ``to=functions.NAME``: 3 framing tokens plus the
# 4 tokens of "to=functions." (the same in both encodings), plus name and arguments.
TOOL_CALL_OVERHEAD = TOKENS_PER_MESSAGE + 4

#: Multiplier of the estimate for models without a public tokenizer, by provider.
#: Third-party measurements put Claude's tokenizer 15-30 % above o200k on English
#: and code, so Anthropic models get more headroom than the default.
ESTIMATE_SAFETY: Mapping[str, float] = {"anthropic": 1.3}
_DEFAULT_SAFETY = 1.1


# --------------------------------------------------------------------- validation


def _check_text(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a str, got {type(value).__name__}", field=field)
    return value


def _check_max_tokens(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"max_tokens must be an int, got {type(value).__name__}", field="max_tokens")
    if value < 0:
        raise InvalidInput(f"max_tokens must be >= 0, got {value}", field="max_tokens")
    return value


def _as_message(value: object, field: str = "message") -> Message:
    if isinstance(value, Message):
        return value
    try:
        return Message.from_openai(value)
    except InvalidInput as exc:
        where = f"{field}.{exc.field}" if exc.field else field
        raise InvalidInput(f"{where}: {exc}", field=where) from None


def _as_messages(value: object, field: str = "messages") -> list[Message]:
    if isinstance(value, str | bytes | bytearray | Mapping | Message) or not isinstance(value, Iterable):
        raise InvalidInput(f"{field} must be a list of messages, got {type(value).__name__}", field=field)
    return [_as_message(m, f"{field}[{i}]") for i, m in enumerate(value)]


# --------------------------------------------------------------------- tokenizers

_RUN = re.compile(r"\s+|\w+|[^\s\w]+")
_SCAN_LIMIT = 64
_MEMO_ENTRIES = 8192  # texts whose counts a tokenizer remembers
_MEMO_CHARS = 2000  # longer texts are counted each time (rarely recounted; keeps the memo under ~16 MB)


class _ChatTokenizer:
    """The chat-format arithmetic and truncation shared by both tokenizers.

    Subclasses give ``_raw`` (tokens of one text piece) and ``_scale`` (applied to
    each message total, identity for exact counting).
    """

    _name: str
    _memo: dict[str, int] | None = None  # text -> _raw(text), made on first use

    @property
    def name(self) -> str:
        return self._name

    def _raw(self, text: str) -> int:
        raise NotImplementedError

    def _piece(self, text: str) -> int:
        """``_raw(text)``, remembered for short texts: the session buffer's messages are
        counted again on every add (the window policy) and every context()."""
        if len(text) > _MEMO_CHARS:
            return self._raw(text)
        memo = self._memo
        if memo is None:
            memo = self._memo = {}
        found = memo.get(text)
        if found is None:
            if len(memo) >= _MEMO_ENTRIES:
                memo.clear()  # crude but safe under threads; refilled by the next few calls
            found = memo[text] = self._raw(text)
        return found

    def _scale(self, n: int) -> int:
        return n

    def _probe(self, text: str, max_tokens: int) -> int | None:
        """None if ``text`` fits in ``max_tokens``, else a first guess of the
        answer's length in characters."""
        total = self.count(text)
        return None if total <= max_tokens else len(text) * max_tokens // total

    def count(self, text: str) -> int:
        """Tokens of a bare text (special-token text such as ``<|endoftext|>``
        counts as ordinary text, as the API does for message content)."""
        return self._scale(self._raw(_check_text(text, "text")))

    def count_message(self, message: Message | Mapping[str, Any]) -> int:
        """Tokens one message adds to a chat prompt (see ``docs/tokens.md``)::

        3 + role + content [+ 1 + name] [+ tool_call_id]
          + sum over tool calls of (7 + function name + arguments)
        """
        m = _as_message(message)
        n = TOKENS_PER_MESSAGE + self._piece(m.role) + self._piece(m.content or "")
        if m.name is not None:
            n += TOKENS_PER_NAME + self._piece(m.name)
        if m.tool_call_id is not None:
            n += self._raw(m.tool_call_id)
        for call in m.tool_calls:
            n += TOOL_CALL_OVERHEAD + self._raw(call.name) + self._raw(call.arguments)
        return self._scale(n)

    def count_messages(self, messages: Sequence[Message | Mapping[str, Any]]) -> int:
        """Tokens of a whole chat prompt: the messages plus the reply primer.

        Always ``sum(count_message(m)) + count_messages([])``.
        """
        checked = _as_messages(messages)
        return sum(self.count_message(m) for m in checked) + self._scale(REPLY_PRIMER)

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` (in code points) with at most
        ``max_tokens`` tokens; ``text`` itself if it fits.

        Token counts of prefixes are not monotone (a half word can take more
        tokens than the whole word), so after a binary search the end of the
        current word is scanned too.
        """
        _check_text(text, "text")
        limit = _check_max_tokens(max_tokens)
        guess = self._probe(text, limit)
        if guess is None:
            return text
        if limit == 0:
            return ""

        def fits(length: int) -> bool:
            return self._scale(self._raw(text[:length])) <= limit

        lo, hi = _bracket(fits, min(max(guess, 0), len(text) - 1), len(text))
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid
        best = lo
        end = _scan_end(text, lo)
        for length in range(lo + 2, end + 1):
            if fits(length):
                best = length
        return text[:best]


def _bracket(fits: Callable[[int], bool], guess: int, n: int) -> tuple[int, int]:
    """(lo, hi) with fits(lo) and not fits(hi), galloping out from ``guess``.
    ``fits(0)`` and ``not fits(n)`` are known."""
    step = 8
    if fits(guess):
        lo = guess
        while lo + step < n and fits(lo + step):
            lo, step = lo + step, step * 2
        return lo, min(lo + step, n)
    hi = guess
    while hi - step > 0 and not fits(hi - step):
        hi, step = hi - step, step * 2
    return max(hi - step, 0), hi


def _scan_end(text: str, pos: int) -> int:
    """End of the run (word, number, spaces, punctuation) at ``pos`` and of the run
    after it, capped: the only place a longer fitting prefix can hide."""
    end = pos
    for _ in range(2):
        m = _RUN.match(text, end)
        if m is None:
            break
        end = m.end()
    return min(end + 1, len(text), pos + _SCAN_LIMIT)


class TiktokenTokenizer(_ChatTokenizer):
    """Exact counts for OpenAI models with a tiktoken encoding, loaded on first use.

    Example::

        >>> TiktokenTokenizer("cl100k_base").count("hello world")
        2
    """

    def __init__(self, encoding: str) -> None:
        if encoding not in _EXPECTED_SHA256:
            raise InvalidInput(f"encoding must be one of {sorted(_EXPECTED_SHA256)}", field="encoding")
        self._name = encoding

    @property
    def encoding(self) -> tiktoken.Encoding:
        return load_encoding(self._name)

    def _raw(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text)) if text else 0

    def _probe(self, text: str, max_tokens: int) -> int | None:
        # Encode a window a little longer than the answer can be (a token averages
        # well under 8 characters) instead of the whole text: cost follows the
        # budget, not the text. The window's first max_tokens tokens are the whole
        # text's (they can differ only in the window's last word).
        enc = self.encoding
        window = text[: (max_tokens + 16) * 8]
        tokens = enc.encode_ordinary(window)
        if len(window) < len(text) and len(tokens) <= max_tokens + 8:
            window, tokens = text, enc.encode_ordinary(text)
        if len(window) == len(text) and len(tokens) <= max_tokens:
            return None
        nbytes = sum(len(enc.decode_single_token_bytes(t)) for t in tokens[:max_tokens])
        return len(window.encode("utf-8", "surrogatepass")[:nbytes].decode("utf-8", "ignore"))


class EstimateTokenizer(_ChatTokenizer):
    """An over-estimate for models without a public tokenizer.

    Each text piece counts ``max(o200k, cl100k)`` tokens; each message total (and
    a bare text) is multiplied by ``safety`` and rounded up. Never below either
    encoding; see ``docs/tokens.md`` for the measured ratios.

    Example::

        >>> EstimateTokenizer(1.1).count("hello world")
        3
    """

    def __init__(self, safety: float = _DEFAULT_SAFETY) -> None:
        if isinstance(safety, bool) or not isinstance(safety, int | float) or not 1.0 <= safety <= 4.0:
            raise InvalidInput("safety must be a number between 1.0 and 4.0", field="safety")
        self.safety = float(safety)
        self._name = f"estimate(x{self.safety:g})"

    def _raw(self, text: str) -> int:
        if not text:
            return 0
        return max(
            len(load_encoding("o200k_base").encode_ordinary(text)),
            len(load_encoding("cl100k_base").encode_ordinary(text)),
        )

    def _scale(self, n: int) -> int:
        # round() first so 1.1 * 10 does not become 12 through float error.
        return math.ceil(round(n * self.safety, 6))


@cache
def _tokenizer(encoding: str, safety: float) -> TiktokenTokenizer | EstimateTokenizer:
    if encoding == "estimate":
        return EstimateTokenizer(safety)
    return TiktokenTokenizer(encoding)


def get_tokenizer(model: str = "gpt-4o-mini") -> Tokenizer:
    """The :class:`~hmem.protocols.Tokenizer` for a model (any name
    :func:`hmem.tokens.models.resolve_model` accepts, or an encoding name
    ``"o200k_base"``/``"cl100k_base"``/``"estimate"``). Cached per encoding; the BPE
    file is loaded on first count, not here.

    Example::

        >>> get_tokenizer("gpt-4o-2024-08-06").name
        'o200k_base'
        >>> get_tokenizer("claude-sonnet-4-5").name
        'estimate(x1.3)'
    """
    if model in ("o200k_base", "cl100k_base"):
        return _tokenizer(model, _DEFAULT_SAFETY)
    if model == "estimate":
        return _tokenizer("estimate", _DEFAULT_SAFETY)
    info = resolve_model(model)
    safety = ESTIMATE_SAFETY.get(info.provider, _DEFAULT_SAFETY) if info.encoding == "estimate" else _DEFAULT_SAFETY
    return _tokenizer(info.encoding, safety)


def count_tokens(text_or_messages: str | Iterable[Message | Mapping[str, Any]], model: str = "gpt-4o-mini") -> int:
    """Tokens of a text, or of a whole chat prompt (a list of :class:`~hmem.types.Message`
    or OpenAI dicts, per-message overhead and reply primer included).

    Example::

        >>> count_tokens("你好，世界", model="gpt-4o")
        3
    """
    tokenizer = get_tokenizer(model)
    if isinstance(text_or_messages, str):
        return tokenizer.count(text_or_messages)
    if text_or_messages is None or isinstance(text_or_messages, bytes | bytearray):
        raise InvalidInput(
            f"text_or_messages must be a str or a list of messages, got {type(text_or_messages).__name__}",
            field="text_or_messages",
        )
    return tokenizer.count_messages(_as_messages(text_or_messages))
