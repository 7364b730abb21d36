"""The headless Chromium that the browser tests of this folder share, one per test file."""
from __future__ import annotations

import os
import shutil
import warnings

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not os.path.exists(CHROMIUM):
        msg = ("\n" + "!" * 78 + "\n  Chromium is not installed: the browser tests are SKIPPED.\n"
               "  Install it with `apt-get install chromium` (make test tries to).\n" + "!" * 78)
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is required under CI=true" + msg)
        warnings.warn(msg)
        print(msg)
        pytest.skip("Chromium not installed")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        from helpers import chromium_launcher
        exe = chromium_launcher(CHROMIUM, tmp_path_factory.mktemp("chromium"))
        b = p.chromium.launch(executable_path=exe, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()
