"""Browser tests: a real headless Chromium (Debian's ``chromium`` + ``chromium-driver``)
drives the /ui inspector and /docs on a real uvicorn, with every host but loopback
unresolvable. Without Chromium or its driver these tests, and only these, are skipped,
and the skip names the Debian package to install (.ci/run installs both)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hmem.testing.browser import chromium, missing_browser, outside_requests

# The live-server fixtures are shared with the HTTP integration tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = missing_browser()
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)
            if missing:
                item.add_marker(pytest.mark.skip(reason=f"browser test skipped: {missing}"))


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    browser = chromium(width=1280, height=900)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture
def offline(driver: Any) -> Iterator[Any]:
    """The driver, and after the test: no page request left loopback."""
    outside_requests(driver)  # drain what earlier tests left
    yield driver
    assert outside_requests(driver) == []
