"""LangChain's own standard suite for retrievers (``langchain-tests``) against HmemRetriever.

langchain-core ships no standard suite for chat histories; HmemChatMessageHistory is
tested end to end in test_langchain_adapter.py. Skipped when ``langchain-tests`` is
not installed (it is a test-only package, not an hmem extra).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hmem.memory import Memory
from hmem.providers.embed import SentenceTransformerEmbedder

pytestmark = pytest.mark.slow

_SPEC = importlib.util.find_spec("langchain_tests")
_HOME = list(_SPEC.submodule_search_locations or []) if _SPEC is not None else []
if not _HOME:
    pytest.skip("langchain-tests is not installed", allow_module_level=True)

from hmem.integrations.langchain import HmemRetriever  # noqa: E402


def _load_retriever_suite() -> type:
    # ``langchain_tests.integration_tests/__init__`` imports the chat-model suite too, whose
    # ``pytest.mark.benchmark``/``vcr`` marks fail under --strict-markers unless the
    # pytest-benchmark and pytest-recording plugins are installed; the retriever suite
    # needs neither, so its module is loaded on its own.
    path = Path(_HOME[0]) / "integration_tests" / "retrievers.py"
    spec = importlib.util.spec_from_file_location("langchain_tests_retrievers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    suite: type = module.RetrieversIntegrationTests
    return suite


RetrieversIntegrationTests = _load_retriever_suite()

FACTS = [
    "I'm allergic to peanuts and cashews.",
    "I play the cello in a community orchestra.",
    "We adopted a grey cat called Pixel last spring.",
    "I work as a nurse on night shifts.",
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # for the suite's one async test; trio is not a dependency


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    mem = Memory.open(tmp_path_factory.mktemp("std"), embedder=SentenceTransformerEmbedder(), vectors="memory")
    for fact in FACTS:
        mem.remember("std", fact)
    yield mem
    mem.close()


@pytest.mark.anyio
class TestHmemRetrieverStandard(RetrieversIntegrationTests):  # type: ignore[misc,valid-type]
    shared: Memory | None = None

    @pytest.fixture(autouse=True)
    def _bind(self, memory: Memory) -> None:
        # The suite reads its constructor arguments from a property, which cannot take fixtures.
        type(self).shared = memory

    @property
    def retriever_constructor(self) -> type[HmemRetriever]:
        return HmemRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": type(self).shared, "user_id": "std"}

    @property
    def retriever_query_example(self) -> str:
        return "what instrument does the user play?"
