"""An executed chapter re-runs as it ran (issue 33): its parameters cell carries every value of
its execution (dsmlib.book.rerun), so that a plain ``papermill executed.ipynb out.ipynb -p x y``
runs that execution's profile with the one change, and a name the notebook does not declare is
refused in one line, under papermill too."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dsmlib.book.rerun import carry_parameters, executed_values
from helpers import ROOT

PARAMS = ('profile = "quick"        # set by the runner\n'
          'results_dir = "results"  # claims go here\n'
          'live_widgets = True      # the runner sets False\n'
          'n_samples = 100_000      # draws\n'
          'sigmas = [0.5,\n          1.0]          # two lines\n'
          'depth = 8\n')


def notebook(params: dict, parameters_src: str = PARAMS) -> dict:
    cell = lambda src, tags: {"cell_type": "code", "metadata": {"tags": tags},  # noqa: E731
                              "source": src, "outputs": [], "execution_count": 1}
    return {"cells": [cell(parameters_src, ["parameters", "remove-cell"]),
                      cell("# Parameters\nn_samples = 5\n", ["injected-parameters"]),
                      cell("print(1)", [])],
            "metadata": {"dsmlib": {"provenance": {"profile": params["profile"],
                                                   "parameters": params}}}}


def assigned(src: str) -> dict:
    return {t.id: ast.literal_eval(s.value) for s in ast.parse(src).body
            for t in s.targets}


def test_the_parameters_cell_carries_the_executions_values():
    params = {"profile": "paper", "n_samples": 1_000_000, "sigmas": [0.5, 1.0, 2.0],
              "depth": 8}
    nb = carry_parameters(notebook(params))
    src = nb["cells"][0]["source"]
    assert assigned(src) == {"profile": "paper", "results_dir": "results",
                             "live_widgets": False, "n_samples": 1_000_000,
                             "sigmas": [0.5, 1.0, 2.0], "depth": 8}
    assert src.startswith("# The values this execution ran with (profile 'paper')")
    assert "# claims go here" in src and "# two lines" in src and "depth = 8\n" in src
    assert [c["metadata"]["tags"] for c in nb["cells"]] == [["parameters", "remove-cell"], []]
    again = carry_parameters(json.loads(json.dumps(nb)))           # idempotent
    assert again["cells"][0]["source"] == src


def test_a_tuple_default_stays_a_tuple_when_its_values_do():
    """Provenance is JSON: a tuple default comes back as a list; equal, it is kept as written."""
    src = 'profile = "quick"\nresults_dir = "results"\nlive_widgets = True\ngrid = (0.1, 1.0, 4)\n'
    nb = carry_parameters(notebook({"profile": "paper", "grid": [0.1, 1.0, 4]}, src))
    assert "grid = (0.1, 1.0, 4)\n" in nb["cells"][0]["source"]
    nb = carry_parameters(notebook({"profile": "paper", "grid": [0.2, 1.0, 4]}, src))
    assert assigned(nb["cells"][0]["source"])["grid"] == [0.2, 1.0, 4]


def test_types_survive_and_a_lost_value_is_refused():
    nb = carry_parameters(notebook({"profile": "smoke", "n_samples": 5.0, "depth": 8,
                                    "sigmas": [1, 2]}))
    vals = assigned(nb["cells"][0]["source"])
    assert type(vals["n_samples"]) is float and vals["sigmas"] == [1, 2]
    with pytest.raises(ValueError, match=r"\['batch'\] are not assigned"):
        carry_parameters(notebook({"profile": "smoke", "batch": 4}))
    with pytest.raises(ValueError, match="no dsmlib provenance"):
        executed_values({"cells": [], "metadata": {}})


def papermill(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "papermill", *args, "--no-progress-bar"],
                          cwd=cwd, capture_output=True, text=True, timeout=900)


REFERENCE = ROOT / "reference" / "paper" / "prop1_noise.ipynb"


@pytest.mark.slow
def test_a_plain_papermill_rerun_of_a_paper_execution_keeps_the_papers_values(tmp_path):
    """The README's re-run route on the committed ``paper`` reference of Proposition 1 (its
    cheapest paper run): ``-p`` changes the values it names (the three sample sizes, so that
    the run takes seconds), and the paper's ``n_real_steps`` (1,000; ``quick``: 200), its
    profile and the static explorer stay. Before issue 33 the run recorded profile ``quick``
    and 200 real steps, and drew a live widget."""
    ref = json.loads(REFERENCE.read_text())
    paper = executed_values(ref)
    assert paper["profile"] == "paper" and paper["n_real_steps"] != 200
    changed = {"n_samples": 5000, "swap_draws": 100, "paper_batch_draws": [20000, 2000]}
    assert all(paper[k] != v for k, v in changed.items())
    proc = papermill(str(REFERENCE), "out.ipynb", "-p", "n_samples", "5000", "-p", "swap_draws",
                     "100", "-y", "paper_batch_draws: [20000, 2000]", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [res] = (tmp_path / "results" / "custom").glob("prop1_noise-*.json")
    doc = json.loads(res.read_text())
    expected = {k: v for k, v in paper.items() if k != "live_widgets"} | changed
    assert doc["profile"] == "paper" and doc["run"]["custom"]
    assert doc["run"]["parameters"] == expected
    assert doc["run"]["injected"] == changed
    out = (tmp_path / "out.ipynb").read_text()
    assert "application/vnd.jupyter.widget-view+json" not in out      # the static explorer
    assert re.search(r"'paper' profile's, with [^)]*n_samples=5000", out)   # it says so


@pytest.mark.slow
def test_an_undeclared_parameter_stops_a_papermill_run_in_one_line(tmp_path):
    """papermill only warns about ``-p batch_sise 4``; the chapter's first code cell refuses
    it, in one line, before any work (no results are written)."""
    proc = papermill(str(REFERENCE), "out.ipynb", "-p", "batch_sise", "4", cwd=tmp_path)
    assert proc.returncode != 0
    nb = json.loads((tmp_path / "out.ipynb").read_text())
    [err] = [o for c in nb["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert err["ename"] == "UnknownParameter"
    assert err["traceback"] == [f"UnknownParameter: {err['evalue']}"]        # one line
    assert err["evalue"].startswith("unknown parameter(s) ['batch_sise']: this notebook's "
                                    "parameters are ") and "batch_size" in err["evalue"]
    assert proc.stderr.rstrip().splitlines()[-1] == f"UnknownParameter: {err['evalue']}"
    assert not (tmp_path / "results").exists()
