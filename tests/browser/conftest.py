"""Headless Chromium (Debian's chromium and chromium-driver) against the real service.

The app (PostgreSQL behind it, as everywhere in the tests) is served by werkzeug on a free
loopback port in a thread; selenium drives /usr/bin/chromium through /usr/bin/chromedriver
and downloads nothing (SE_OFFLINE). Without a browser, driver or selenium these tests are
skipped, saying which is missing; `.ci/run` installs them. Screenshots of every page go
to BROWSER_ARTIFACTS (default test-artifacts/browser/).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
ARTIFACTS = Path(os.environ.get("BROWSER_ARTIFACTS", "test-artifacts/browser"))
# The viewer's zone: not UTC, so a time the console shows in it differs from the stored one.
VIEWER_ZONE = "Asia/Taipei"
DESK, PHONE = (1366, 900), (390, 844)


def _missing() -> str | None:
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (Path(path).is_file() and os.access(path, os.X_OK)) and not shutil.which(path):
            return f"no {path}: install Debian's {package} (apt-get install chromium " \
                   "chromium-driver), as .ci/run does"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -e '.[dev]'"
    return None


@pytest.fixture(scope="session")
def live_url(app: Flask) -> Iterator[str]:
    """Serve the session's app on a free loopback port; give its base URL."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join()


@pytest.fixture(scope="session")
def chrome() -> Iterator[Any]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    os.environ["SE_OFFLINE"] = "true"  # selenium manager: never fetch a browser or driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", f"--window-size={DESK[0]},{DESK[1]}", "--lang=en-US",
                     "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    # The browser takes its time zone from TZ, as a viewer's machine from its settings.
    service = Service(CHROMEDRIVER, env={**os.environ, "TZ": VIEWER_ZONE})
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture()
def browser(chrome: Any, live_url: str) -> Iterator[Any]:
    """The shared browser with no cookies: every test starts signed out."""
    chrome.get(f"{live_url}/console/sign-in")
    chrome.delete_all_cookies()
    yield chrome
    chrome.delete_all_cookies()


@pytest.fixture(scope="session")
def shoot() -> Any:
    """Return a function saving a full-page screenshot as ARTIFACTS/NAME-WIDTH.png, at the
    desk's width (1366 px) unless told another."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def save(driver: Any, name: str, width: int = DESK[0]) -> Path:
        driver.set_window_size(width, DESK[1])
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(width, min(max(int(height) + 40, 700), 8000))
        path = ARTIFACTS / f"{name}-{width}.png"
        driver.save_screenshot(str(path))
        driver.set_window_size(*DESK)
        return path

    save.folder = ARTIFACTS  # type: ignore[attr-defined]
    return save
