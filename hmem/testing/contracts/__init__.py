"""Contract suites, one per port of :mod:`hmem.protocols`, for any implementation.

A suite is a pytest test class whose name does not start with ``Test``, so pytest
only runs it through a subclass. To check a backend or provider, subclass the suite in
a test module, override its fixture to build your implementation, and run pytest:
every behaviour hmem relies on is then checked against your code, exactly as hmem's
own backends are checked (``tests/contract/`` in the hmem repository).

==========================  =========================  ===================================
suite                       port                       fixture to override
==========================  =========================  ===================================
SessionStoreContract        SessionStore               ``session_backend`` → SessionBackend
SummaryStoreContract        SummaryStore               ``store``
ProfileStoreContract        ProfileStore               ``profile_backend`` → ProfileBackend
ItemStoreContract           ItemStore                  ``store``
JobQueueContract            JobQueue                   ``job_backend`` → JobQueueBackend
VectorIndexContract         VectorIndex                ``index``
SentenceKeyIndexContract    SentenceKeyIndex           ``keys`` and ``embedder``
LexicalIndexContract        LexicalIndex               ``make_index`` → () -> index
EmbedderContract            Embedder                   ``embedder``
LLMContract                 LLM (OpenAI-compatible)    ``make_llm`` → LLMFactory
TokenizerContract           Tokenizer                  ``tokenizer`` (+ ``never_below``)
==========================  =========================  ===================================

Optional features are class attributes (``VectorIndexContract.has_query_ids``,
``LexicalIndexContract.has_add_many``, ``TokenizerContract.checks_input`` …): set one
to False to declare that your implementation lacks it; those tests are then skipped
with that reason. Store fixtures yield a fresh, empty store and clean up after it.

The suites need pytest and hypothesis (``pip install pytest hypothesis``); importing
:mod:`hmem.testing` alone needs neither. Assertions in the suites are rewritten by
pytest, so a failure shows the values, as in your own tests.

Example (a ``test_my_store.py`` in your project)::

    import pytest
    from hmem.testing.contracts import ItemStoreContract

    from my_package import MyItemStore


    class TestMyItemStore(ItemStoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            store = MyItemStore(tmp_path / "items.db")
            yield store
            store.close()

Run it with ``pytest test_my_store.py``; each test of the suite shows up as
``TestMyItemStore::test_...``. A test you believe does not apply can be overridden in
the subclass like any method.
"""

from __future__ import annotations

import pytest

# Must run before the suites are imported: assertions in them then report their values.
pytest.register_assert_rewrite(
    *(f"hmem.testing.contracts.{name}" for name in
      ("embed", "items", "jobs", "keys", "lexical", "llm", "profile", "sessions", "summaries", "tokenizer", "vectors"))
)

from hmem.testing.contracts.embed import EmbedderContract  # noqa: E402
from hmem.testing.contracts.items import ItemStoreContract  # noqa: E402
from hmem.testing.contracts.jobs import JobQueueBackend, JobQueueContract  # noqa: E402
from hmem.testing.contracts.keys import SentenceKeyIndexContract  # noqa: E402
from hmem.testing.contracts.lexical import LexicalIndexContract  # noqa: E402
from hmem.testing.contracts.llm import LLMContract, LLMFactory  # noqa: E402
from hmem.testing.contracts.profile import ProfileBackend, ProfileStoreContract  # noqa: E402
from hmem.testing.contracts.sessions import SessionBackend, SessionStoreContract  # noqa: E402
from hmem.testing.contracts.summaries import SummaryStoreContract  # noqa: E402
from hmem.testing.contracts.tokenizer import TokenizerContract  # noqa: E402
from hmem.testing.contracts.vectors import VectorIndexContract  # noqa: E402

__all__ = [
    "EmbedderContract",
    "ItemStoreContract",
    "JobQueueBackend",
    "JobQueueContract",
    "LLMContract",
    "LLMFactory",
    "LexicalIndexContract",
    "ProfileBackend",
    "ProfileStoreContract",
    "SentenceKeyIndexContract",
    "SessionBackend",
    "SessionStoreContract",
    "SummaryStoreContract",
    "TokenizerContract",
    "VectorIndexContract",
]
