"""Screenshots of the /ui inspector for docs/: the demo data served, shot by headless Chromium.

Replays sample conversations of ``data/`` into a temporary embedded store exactly as
``hmem demo`` does (its CLI, its settings), serves that store with ``create_app`` on a
loopback port, and saves full-page pictures of the user page and of an Ask (a demo
question whose evidence lies in an early session, asked with a tight budget so the
report shows cuts). Needs Debian's ``chromium`` + ``chromium-driver`` and selenium.

    .venv/bin/python bench/ui_screenshots.py                  # docs/ui-ask.png, docs/ui-user.png
    .venv/bin/python bench/ui_screenshots.py -c zh_01 --budget 500 --out /tmp/shots
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parents[1]
#: Taller pages are cut: the top of each page is what the docs show.
MAX_HEIGHT = 2200


def ingest(folder: str, conversation: str) -> None:
    """``hmem demo --data FOLDER -c CONVERSATION --questions 0``: the demo's own write path."""
    from hmem.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["demo", "--data", folder, "-c", conversation, "--questions", "0", "--json"])
    if code != 0:
        raise SystemExit(f"hmem demo failed with exit code {code}")


def open_demo_store(folder: str) -> Any:
    from hmem.cli.demo_cmd import DEFAULT_BUFFER_TOKENS, demo_overrides
    from hmem.config import Settings
    from hmem.memory import Memory

    args = argparse.Namespace(buffer_tokens=DEFAULT_BUFFER_TOKENS, archive_on_evict=False, model=None)
    return Memory.from_settings(Settings.from_env({}, **demo_overrides(args, folder)))


def full_page(driver: Any, url: str, path: Path, width: int) -> None:
    driver.set_window_size(width, 900)
    driver.get(url)
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(width, min(max(height, 600), MAX_HEIGHT))
    driver.save_screenshot(str(path))
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({width}x{min(height, MAX_HEIGHT)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-c", "--conversation", default="en_01", help="sample conversation (default en_01)")
    parser.add_argument("--budget", type=int, default=700, help="the Ask's prompt budget (default 700)")
    parser.add_argument("--width", type=int, default=1280, help="window width in pixels (default 1280)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="folder for the pictures (default docs/)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from hmem.cli.demo_cmd import pick_questions
    from hmem.cli.samples import load_conversations, load_dataset
    from hmem.config import Settings
    from hmem.server import create_app
    from hmem.server.live import serve_in_thread
    from hmem.testing.browser import chromium, missing_browser, outside_requests

    missing = missing_browser()
    if missing:
        print(missing, file=sys.stderr)
        return 2
    dataset = load_dataset(None)
    conv = load_conversations(None, [args.conversation], dataset)[0]
    question = (pick_questions(conv, dataset.questions_for(conv.id), 1) or [None])[0]
    query = question.question if question else "What do you remember about me?"
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hmem-shots-") as folder:
        ingest(folder, conv.id)
        mem = open_demo_store(folder)
        try:
            with serve_in_thread(create_app(mem, Settings.from_env({}, data_dir=folder))) as url:
                driver = chromium(args.width, 900)
                try:
                    user = f"{url}/ui/users/{quote(conv.id, safe='')}"
                    last = conv.sessions[-1].id
                    ask = f"{user}/ask?" + urlencode({"q": query, "session": last, "budget": args.budget})
                    full_page(driver, ask, args.out / "ui-ask.png", args.width)
                    full_page(driver, user, args.out / "ui-user.png", args.width)
                    outside = outside_requests(driver)
                    if outside:
                        print(f"requests left loopback: {outside}", file=sys.stderr)
                        return 1
                finally:
                    driver.quit()
        finally:
            mem.close()
    print(f"Ask: {conv.id!r} asks {query!r} in session {last!r} with a {args.budget}-token budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
