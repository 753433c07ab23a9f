"""Headless Debian Chromium through its own chromedriver, for the tests that load pages in a browser.

Selenium is pointed at Debian's ``chromium`` and ``chromium-driver`` (``.ci/run``
installs them), so Selenium Manager never downloads a browser or a driver.
"""

import os
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

#: Why the browser tests skip when the browser or its driver is absent.
NO_CHROMIUM = "Chromium not installed: apt-get install chromium chromium-driver"

#: Headless, without the sandbox (root in a container) or a GPU, and without the browser's own
#: traffic (component updates, sync, background requests) that a test neither needs nor expects.
ARGUMENTS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--window-size=1400,1000")


def chromium_installed() -> bool:
    return CHROMIUM.exists() and CHROMEDRIVER.exists()


@contextmanager
def chromium(profile: Path, *arguments: str, logs: tuple[str, ...] = ("browser",)):
    """A Selenium driver of a fresh headless Chromium, quit afterwards.

    Parameters
    ----------
    profile : Path
        An empty directory for the browser's profile.
    *arguments : str
        Command-line switches besides :data:`ARGUMENTS`.
    logs : tuple of str
        The logs kept at level ALL for ``driver.get_log``: ``"browser"`` (the
        console), ``"performance"`` (the DevTools events: every request).
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (*ARGUMENTS, *arguments, f"--user-data-dir={profile}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {kind: "ALL" for kind in logs})
    # The explicit driver path already keeps Selenium Manager out; offline makes sure of it.
    before = os.environ.get("SE_OFFLINE")
    os.environ["SE_OFFLINE"] = "true"
    try:
        driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    finally:
        if before is None:
            del os.environ["SE_OFFLINE"]
        else:
            os.environ["SE_OFFLINE"] = before
    try:
        yield driver
    finally:
        driver.quit()
