"""Rebuild BENCHMARKS.md from the per-area reports in docs/bench-*.md.

Each area's benchmark script writes (by hand, with its command) into
docs/bench-<area>.md; this script puts the summary first and every report after it,
so BENCHMARKS.md is never edited by hand. Run: ``.venv/bin/python bench/collect.py``.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["eval", "longterm", "lexical", "sessions", "summary", "server", "redis-items", "caps", "window", "tokens"]


_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def _from_root(body: str) -> str:
    """Relative links of a docs/ page, rewritten to work from the repository root."""

    def fix(match: re.Match[str]) -> str:
        target = match.group(2)
        if re.match(r"^([a-z]+:|#|/)", target):
            return match.group(0)
        return match.group(1) + posixpath.normpath(posixpath.join("docs", target)) + match.group(3)

    return _LINK.sub(fix, body)


def main() -> None:
    summary = (ROOT / "bench" / "SUMMARY.md").read_text(encoding="utf-8").strip()
    reports = sorted((ROOT / "docs").glob("bench-*.md"), key=lambda p: (
        ORDER.index(p.stem[6:]) if p.stem[6:] in ORDER else len(ORDER), p.name))
    parts = [summary]
    for path in reports:
        body = _from_root(path.read_text(encoding="utf-8").strip())
        parts.append(f"<!-- from {path.relative_to(ROOT)} -->\n" + body.replace("# ", "## ", 1))
    (ROOT / "BENCHMARKS.md").write_text("\n\n---\n\n".join(parts) + "\n", encoding="utf-8")
    print(f"BENCHMARKS.md: summary + {len(reports)} reports")


if __name__ == "__main__":
    main()
