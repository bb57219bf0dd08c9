"""``hmem export`` / ``hmem import`` with bad files: a clear ``hmem: error:`` on stderr,
exit code 1, no traceback, nothing imported.

Bad inputs tried: an export file that is not UTF-8, an export path whose folder cannot
be created (a regular file is in the way).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_result import Runner

pytestmark = pytest.mark.slow  # `hmem add` loads the real embedding model


def test_import_of_a_non_utf8_file_exits_1_with_a_message(hmem: Runner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'\xff\xfe{"type": "header"}\n')
    out = hmem("import", str(bad), "--as", "u2")
    assert out.code == 1
    assert out.err.startswith("hmem: error:") and "UTF-8" in out.err and "Traceback" not in out.err
    stats = hmem("export", "u2", str(tmp_path / "u2.jsonl"), "--json")
    assert stats.code == 0 and stats.json["stats"]["sessions"] == 0


def test_export_to_an_unwritable_path_exits_1_with_a_message(hmem: Runner, tmp_path: Path) -> None:
    assert hmem("add", "u1", "s1", "I live in Lyon.").code == 0
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way", encoding="utf-8")
    out = hmem("export", "u1", str(blocker / "sub" / "u1.jsonl"))
    assert out.code == 1
    assert out.err.startswith("hmem: error:") and "writable" in out.err and "Traceback" not in out.err
