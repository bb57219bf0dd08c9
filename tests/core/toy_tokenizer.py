"""A tiny deterministic tokenizer: the protocol reference the pure-core tests use
beside the real one (shared by test_window and test_assemble)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hmem.types import Message


@dataclass(frozen=True)
class ToyTokenizer:
    """One token per ASCII word, per other non-space character; 4 per message; 3 primer."""

    name: str = "toy"

    def count(self, text: str) -> int:
        return len(re.findall(r"[A-Za-z0-9_]+|\S", text))

    def count_message(self, message: Message) -> int:
        total = 4 + self.count(message.text)
        if message.name:
            total += 1 + self.count(message.name)
        for call in message.tool_calls:
            total += 4 + self.count(call.name) + self.count(call.arguments)
        if message.tool_call_id:
            total += self.count(message.tool_call_id)
        return total

    def count_messages(self, messages: Sequence[Message]) -> int:
        return sum(self.count_message(m) for m in messages) + 3

    def truncate(self, text: str, max_tokens: int) -> str:
        low, high = 0, len(text)
        while low < high:  # longest prefix within max_tokens
            middle = (low + high + 1) // 2
            if self.count(text[:middle]) <= max_tokens:
                low = middle
            else:
                high = middle - 1
        return text[:low]
