"""The LLM contract (:class:`hmem.testing.contracts.LLMContract`) on
:class:`~hmem.providers.llm.OpenAICompatibleLLM`, through the real ``openai`` client
against a real local HTTP server (:class:`~hmem.testing.ScriptedLLMServer`)."""

from __future__ import annotations

import pytest

from hmem.protocols import LLM
from hmem.providers.llm import OpenAICompatibleLLM
from hmem.testing.contracts import LLMContract, LLMFactory


def make(*, base_url: str, model: str, timeout_s: float) -> LLM:
    return OpenAICompatibleLLM(base_url=base_url, api_key="test-key", model=model, timeout=timeout_s, backoff_s=0.0)


class TestOpenAICompatibleLLM(LLMContract):
    @pytest.fixture
    def make_llm(self) -> LLMFactory:
        return make
