"""A headless Chromium (Debian's ``chromium`` + ``chromium-driver``) that cannot leave loopback.

Used by the browser tests (tests/browser/) and ``bench/ui_screenshots.py``. Needs
``selenium`` (the ``dev`` extra); imported only when a driver is made.

Every host name resolves to nothing except ``127.0.0.1``/``localhost``, so a page that
tries a CDN fails as it would offline; :func:`outside_requests` lists the requests the
pages made that left loopback anyway (from Chrome's performance log), which a test
asserts to be empty.

Example::

    missing = missing_browser()          # None, or the Debian package to install
    driver = chromium(width=1280, height=900)
    driver.get("http://127.0.0.1:8080/ui")
    assert outside_requests(driver) == []
    driver.quit()
"""

from __future__ import annotations

import json
import shutil
from typing import Any
from urllib.parse import urlsplit

__all__ = ["chromium", "missing_browser", "outside_requests"]

#: The binaries and the Debian package of each.
BINARIES = (("chromium", "chromium"), ("chromedriver", "chromium-driver"))
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def missing_browser() -> str | None:
    """None when Chromium, its driver and selenium are installed, else what to install."""
    for binary, package in BINARIES:
        if shutil.which(binary) is None:
            return f"`{binary}` not found: install the Debian package {package} (apt-get install -y {package})"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -e '.[dev]'"
    return None


def chromium(width: int = 1280, height: int = 900, *, scale: float = 1.0) -> Any:
    """A headless Chromium WebDriver whose DNS maps every name but loopback to nothing."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
        f"--window-size={width},{height}", f"--force-device-scale-factor={scale}",
        # Offline by construction: no name resolves except loopback, no proxy, no background traffic.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
        "--no-proxy-server", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-default-apps", "--no-first-run", "--disable-extensions",
        "--disable-features=Translate,OptimizationHints,MediaRouter",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    service = Service(executable_path=shutil.which("chromedriver") or "chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(60)
    return driver


def outside_requests(driver: Any) -> list[str]:
    """The URLs requested since the last call that were not loopback (nor ``data:``/``about:``)."""
    outside: list[str] = []
    for entry in driver.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        if event.get("method") != "Network.requestWillBeSent":
            continue
        url = str(event["params"]["request"]["url"])
        parts = urlsplit(url)
        if parts.scheme in ("data", "about", "blob", "chrome", "devtools"):
            continue
        if parts.hostname not in _LOCAL_HOSTS:
            outside.append(url)
    return outside
