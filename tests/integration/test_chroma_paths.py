"""Embedded Chroma opened by a relative path follows the working directory.

Chroma caches its clients per path string; hmem resolves the path first, so the same
relative ``./hmem-data/chroma`` in two working directories is two separate stores (and
a deleted earlier folder is never reused).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client

pytestmark = pytest.mark.integration


def test_same_relative_path_in_two_folders_is_two_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    one = ChromaVectorIndex(chroma_persistent_client("hmem-data/chroma"))
    one.upsert("u1", ["x"], [[1.0, 0.0, 0.0]])
    assert (first / "hmem-data" / "chroma").is_dir()
    shutil.rmtree(first / "hmem-data")  # the first store is gone, as after a test's tmp dir cleanup

    monkeypatch.chdir(second)
    two = ChromaVectorIndex(chroma_persistent_client("hmem-data/chroma"))
    assert two.query("u1", [1.0, 0.0, 0.0], 5) == []  # nothing of the first folder's data
    two.upsert("u1", ["y"], [[0.0, 1.0, 0.0]])
    assert [hit.id for hit in two.query("u1", [0.0, 1.0, 0.0], 5)] == ["y"]
    assert (second / "hmem-data" / "chroma").is_dir()
