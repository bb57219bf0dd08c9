"""Schema-driven fuzzing: schemathesis (``st run``) generates valid and invalid
requests for every operation of the live OpenAPI schema and checks that none gets a
5xx, that every status and response body is the documented one, and that requests
violating the schema are rejected. Bounded by ``--max-examples`` per operation
(about 1500 requests, ~20 s here)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from server_fixtures import ADMIN_KEY, fast_settings, live_server

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ST = Path(sys.executable).with_name("st")
CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance", "negative_data_rejection")


@pytest.mark.skipif(not ST.exists(), reason="schemathesis is not installed (pip install hmem[dev])")
def test_schemathesis_finds_no_server_error(tmp_path: Path) -> None:
    with live_server(fast_settings(tmp_path / "data")) as (url, _):
        cmd = [
            str(ST), "run", f"{url}/openapi.json",
            "--checks", ",".join(CHECKS),
            "--phases", "examples,coverage,fuzzing",
            "--max-examples", "40", "--seed", "20250601", "--workers", "1",
            "--header", f"Authorization: Bearer {ADMIN_KEY}",
            "--request-timeout", "30", "--no-color",
            "--report", "junit", "--report-dir", str(tmp_path / "report"),
        ]
        env = {**os.environ, "SCHEMATHESIS_HOOKS": "", "NO_COLOR": "1"}
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    counts = re.search(r"(\d+) generated, (\d+) passed", output)
    assert counts and int(counts[1]) == int(counts[2]) >= 500, output[-3000:]
