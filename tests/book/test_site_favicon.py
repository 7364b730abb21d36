"""The first page a browser opens on the built site: the favicon is served by the site
itself, and nothing (no favicon 404, no other failed request) logs a console error. A fresh
browser context each time, so nothing is cached from an earlier page. The root page only
redirects (a meta refresh) to the introduction: the test waits for that navigation itself,
not a fixed second (issue 63: under a loaded `make test` the icon link was read from the
redirect page)."""
from __future__ import annotations

import os
import shutil

import pytest

from helpers import served

pytestmark = [pytest.mark.slow, pytest.mark.browser]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: The page a path lands on: the root's meta refresh goes to the book's root (_toc.yml).
LANDS_ON = {"": "book/intro.html"}


@pytest.fixture(scope="module")
def base_url(smoke_book):
    with served(smoke_book / "_build" / "html") as base:
        yield base


@pytest.mark.parametrize("path", ["", "book/intro.html", "book/chapters/ols.html"])
def test_first_page_load_has_a_local_favicon_and_no_console_error(base_url, path, tmp_path):
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is required under CI=true")
        pytest.skip("Chromium not installed")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        from helpers import chromium_launcher
        browser = p.chromium.launch(executable_path=chromium_launcher(CHROMIUM, tmp_path),
                                    headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context()
        page = context.new_page()
        errors, failed = [], []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.goto(base_url + path, wait_until="load")
        page.wait_for_url(base_url + LANDS_ON.get(path, path), wait_until="load",
                          timeout=60_000)
        href = page.evaluate("(document.querySelector('link[rel~=\"icon\"]') || {}).href || ''")
        status = page.evaluate("h => fetch(h).then(r => r.status)", href) if href else None
        root_icon = page.evaluate("fetch('/favicon.ico').then(r => r.status)")
        browser.close()
    assert href.startswith(base_url) and href.endswith(".svg"), href   # served locally
    assert status == 200 and root_icon == 200, (href, status, root_icon)
    assert errors == [] and failed == [], (errors, failed)
