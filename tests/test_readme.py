"""The README stays short and true (issue 45): at most about 120 lines, and its list of committed
reference executions names exactly the chapters and devices that `reference/` holds, so a newer
reference (or a removed one) fails here until the README says so. The commands it shows exist."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from dsmlib.book.references.stored import load_references

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
LINE = re.compile(r"^- `reference/(\w+)/`: (.+), on (.+)$", re.M)


def listed() -> dict[str, tuple[set[str], set[str]]]:
    """README's reference list: profile -> (chapters, devices)."""
    return {p: ({c.strip() for c in chapters.split(",")}, {d.strip() for d in devices.split(";")})
            for p, chapters, devices in LINE.findall(README)}


def committed() -> dict[str, tuple[set[str], set[str]]]:
    names = sorted(p.stem for p in (ROOT / "notebooks").glob("*.md") if p.stem != "README")
    out: dict[str, tuple[set[str], set[str]]] = {}
    for ref in load_references(ROOT, names, lambda profile, name, overrides=None: ""):
        chapters, devices = out.setdefault(ref.profile, (set(), set()))
        chapters.add(ref.name)
        devices.add(ref.device)
    return out


def test_readme_is_short():
    assert len(README.splitlines()) <= 120


def test_readme_lists_the_committed_references_and_their_devices():
    assert committed(), "no committed reference found"
    assert listed() == committed()


def test_the_list_parser_sees_a_changed_device():
    """The check above is not vacuous: a README naming another device or a missing chapter
    is read as different."""
    got = listed()
    profile, (chapters, devices) = next(iter(got.items()))
    assert {**got, profile: (chapters, {"another device"})} != committed()
    assert {**got, profile: (chapters - {min(chapters)}, devices)} != committed()


def test_readme_commands_exist():
    """Each `python -m dsmlib <command>` and `make <target>` shown is real."""
    commands = set(re.findall(r"python -m dsmlib (\w+)", README))
    usage = subprocess.run([sys.executable, "-m", "dsmlib", "--help"], capture_output=True,
                           text=True, timeout=120, cwd=ROOT).stdout
    known = set(re.search(r"\{([\w,]+)\}", usage).group(1).split(","))
    assert commands and commands <= known, commands - known
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"`make (\w+)", README))
    for t in targets:
        assert re.search(rf"^{t}:", makefile, re.M), t
