"""The reproducibility page's profile tables and run count, computed from the chapters'
declared parameters (issue 46, item 5: the page said "12 epochs of 2 passes" where the chapter
ran 1 pass, and "about 180 runs" where ``grid status`` counts 162)."""
from __future__ import annotations

import html as html_lib
import re
import subprocess
import sys

from dsmlib.book.site.profile_table import (changed_parameters, grid_runs_sentence, help_html,
                                       profiles_html)
from dsmlib.book.profiles import load_specs, resolve
from dsmlib.foundation.parameters import literal
from helpers import ROOT


def test_every_profile_value_shown_is_the_chapters_own():
    specs = load_specs(ROOT / "notebooks")
    page = profiles_html(specs, {n: f"chapters/{n}" for n in specs})
    tables = re.findall(r"<details class='profile-table'>.*?</details>", page, re.S)
    assert len(tables) == sum(bool(changed_parameters(s)) for s in specs.values()) >= 5
    for spec, table in zip((s for s in specs.values() if changed_parameters(s)), tables):
        assert html_lib.escape(spec.title) in table
        rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1])
        assert [re.search(r"<code>(.*?)</code>", r).group(1) for r in rows] == \
            changed_parameters(spec)
        for key, row in zip(changed_parameters(spec), rows):
            for prof in ("smoke", "quick", "paper"):
                cell = re.search(rf"data-label='{prof}'><code>(.*?)</code>", row).group(1)
                assert html_lib.unescape(cell) == literal(resolve(spec, prof).as_dict()[key])


def test_the_paper_run_count_is_what_grid_status_counts():
    specs = load_specs(ROOT / "notebooks")
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "grid", "status", "--profile",
                           "paper"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    total = int(re.search(r"\(of (\d+)\)", proc.stdout).group(1))
    assert f"**{total} runs** under `paper`" in grid_runs_sentence(specs)


def test_a_parameters_help_shows_its_code_as_code():
    """Issue 53, item 10: "the paper: 200 (here each epoch is `passes` passes)" was printed
    with its backticks."""
    assert help_html("the paper: 200 (here each epoch is `passes` passes) & <b>") == (
        "the paper: 200 (here each epoch is <code>passes</code> passes) &amp; &lt;b&gt;")
    specs = load_specs(ROOT / "notebooks")
    page = profiles_html(specs, {n: f"chapters/{n}" for n in specs})
    assert "`" not in page.replace("```", "")
    assert "each epoch is <code>passes</code> passes" in page
