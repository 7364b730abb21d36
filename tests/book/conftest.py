"""The headless Chromium that the browser tests of this folder share, one per test file, and
the smoke book with a third Section 5 reference (:func:`three_reference_book`)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

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


#: The coming reference that :func:`three_reference_book` makes from ``cpu-cifar10``'s files.
FIT = "cpu-cifar10-fit"


def install_renamed_reference(root: Path, source: str = "cpu-cifar10", profile: str = FIT,
                              name: str = "sec5_distillation") -> Path:
    """Copy ``root``'s committed ``source`` reference of chapter ``name`` to
    ``reference/<profile>/`` with its profile fields renamed (the notebook's provenance, the
    results' profile and run) and stamped with the content key the code under test gives
    ``profile`` (as :func:`helpers.install_fixture_reference` does), marked as a test fixture;
    any records of ``profile`` there before (a training in progress) are removed first.
    Returns the copied notebook."""
    from dsmlib.book.execute.runner import plan
    from dsmlib.book.profiles import load_specs
    dest = root / "reference" / profile
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    nb = json.loads((root / "reference" / source / f"{name}.ipynb").read_text())
    res = json.loads((root / "reference" / source / f"{name}.json").read_text())
    meta = nb["metadata"]["dsmlib"]
    overrides = (meta.get("rederived") or {}).get("overrides") or {}
    key = plan(root, load_specs(root / "notebooks")[name], profile, overrides).key
    meta["provenance"]["profile"] = res["profile"] = res["run"]["profile"] = profile
    meta["key"] = res["run"]["key"] = key
    meta["fixture"] = (f"the {source} reference copied under the {profile} profile, to test how "
                       "a page carries three references; its numbers are the " + source + "'s")
    (dest / f"{name}.ipynb").write_text(json.dumps(nb))
    (dest / f"{name}.json").write_text(json.dumps(res))
    return dest / f"{name}.ipynb"


@pytest.fixture(scope="module")
def three_reference_book(smoke_book, tmp_path_factory) -> Path:
    """A copy of the session's smoke book (the committed ``cpu-cifar10`` reference and the
    fixture ``gpu`` one) with a third Section 5 reference, ``cpu-cifar10-fit`` made from
    ``cpu-cifar10``'s files (:func:`install_renamed_reference`), its site built again."""
    root = Path(shutil.copytree(smoke_book, tmp_path_factory.mktemp("three") / "book",
                                symlinks=True))
    install_renamed_reference(root)
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), "build",
                           "--profile", "smoke"], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root
