"""Headless Chromium (Debian's chromium + chromium-driver, and selenium) rendering a Netron page that
`inspect` serves on localhost into a PNG: tools/netron_screenshot.py and the inspect tests use it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def available() -> bool:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        return False
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return True


def render(url: str, expect: list[str], screenshot: Path | None = None, timeout: float = 30) -> str:
    """Opens `url`, accepts Netron's cookie notice, waits until every string of `expect` is in the
    page, optionally saves a screenshot, and returns the page's HTML."""
    from selenium import webdriver
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    with tempfile.TemporaryDirectory() as profile:
        for flag in (*FLAGS, f"--user-data-dir={profile}", "--window-size=1500,1000"):
            options.add_argument(flag)
        driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
        try:
            driver.get(url)
            driver.add_cookie({"name": "consent", "value": "1"})  # Netron asks once per browser profile
            driver.get(url)
            WebDriverWait(driver, timeout).until(lambda d: all(s in d.page_source for s in expect))
            if screenshot is not None:
                driver.save_screenshot(str(screenshot))
            return driver.page_source
        finally:
            driver.quit()
