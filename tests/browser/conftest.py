"""Headless Debian Chromium driven by Playwright (never a downloaded browser)."""
import os
from pathlib import Path

import pytest

# The real stack's fixtures, for every browser test (imported here, where pytest finds them, not in each module).
from tests.browser.live_stack import engine, stack, web  # noqa: F401

CHROMIUM = Path("/usr/bin/chromium")
# Playwright's sync API runs an event loop in this thread; the live server's ORM calls happen in another.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module: Playwright's sync API keeps an event loop running in this thread while it
    is open, which would break ``async_to_sync`` in the tests of other folders that run after these."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), (
        f"{CHROMIUM} is missing: the browser tests use Debian's chromium (`apt-get install chromium`, "
        "which .ci/run does)"
    )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            # Root in a container needs --no-sandbox; the rest keep Chromium off the (closed) network.
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    # Generous: a click or a navigation on a loaded machine may take many seconds, and a wait ends as soon as
    # its condition holds.
    page.set_default_timeout(60_000)
    yield page
    context.close()
