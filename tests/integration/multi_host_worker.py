"""One "host" of tests/integration/test_multi_host.py: a separate OS process with its own
``Memory`` (built from ``HMEM_*`` variables: Redis, ``chroma run`` server, the real
MiniLM model), driven by JSON lines on stdin; it answers one JSON line per command on
stdout. Commands (``op``):

- ``remember`` {user, text} -> {id}
- ``recall`` {user, query, k} -> {texts}
- ``add`` {user, session, messages} -> {version} or {error, message}
- ``quit``

Errors become ``{"error": <type name>, "message": ...}`` so the test can count them.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from hmem.memory import Memory


def handle(memory: Memory, cmd: dict[str, Any]) -> dict[str, Any]:
    op = cmd["op"]
    if op == "remember":
        return {"id": memory.remember(cmd["user"], cmd["text"]).item.id}
    if op == "recall":
        return {"texts": [hit.item.text for hit in memory.recall(cmd["user"], cmd["query"], k=cmd.get("k", 5))]}
    if op == "add":
        return {"version": memory.add(cmd["user"], cmd["session"], cmd["messages"]).version}
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    with Memory.from_settings() as memory:
        memory.warm_up()
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd["op"] == "quit":
                break
            try:
                reply = handle(memory, cmd)
            except Exception as exc:  # reported to the test, which asserts on the types
                reply = {"error": type(exc).__name__, "message": str(exc)}
            print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
