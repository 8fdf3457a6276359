"""Playwright for Python driving Debian's Chromium (never a downloaded browser build).

`make test` installs Chromium with apt when /usr/bin/chromium is missing (scripts/browser.sh).
"""
import os
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; the live server and the ORM calls of the
# test itself are ordinary synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make test` (scripts/browser.sh installs Debian's chromium) or apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(15000)
    yield page
    context.close()
