"""The Tokenizer contract (:class:`hmem.testing.contracts.TokenizerContract`) on
tiktoken (both encodings), the estimator (which must never count below either
encoding) and the toy tokenizer the pure-core tests use."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from hmem.protocols import Tokenizer
from hmem.testing.contracts import TokenizerContract
from hmem.tokens import EstimateTokenizer, TiktokenTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from toy_tokenizer import ToyTokenizer


class TestTiktokenTokenizer(TokenizerContract):
    @pytest.fixture(params=["o200k_base", "cl100k_base"])
    def tokenizer(self, request: pytest.FixtureRequest) -> Tokenizer:
        return TiktokenTokenizer(request.param)


class TestEstimateTokenizer(TokenizerContract):
    @pytest.fixture(params=[1.1, 1.3], ids=["default", "anthropic"])
    def tokenizer(self, request: pytest.FixtureRequest) -> Tokenizer:
        return EstimateTokenizer(request.param)

    @pytest.fixture
    def never_below(self) -> Sequence[Tokenizer]:
        return [TiktokenTokenizer("o200k_base"), TiktokenTokenizer("cl100k_base")]


class TestToyTokenizer(TokenizerContract):
    checks_input = False  # a test double: it trusts its callers

    @pytest.fixture
    def tokenizer(self) -> Tokenizer:
        return ToyTokenizer()
