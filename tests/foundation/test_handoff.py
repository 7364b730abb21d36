"""How a page hands its claims to the book without importing it (issue 68, item 1;
dsmlib.foundation.handoff): the runner's seal and a hand run's record, both read from the
kernel's namespace, and the plain fallback where the book put neither there."""
from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

from dsmlib.foundation import claims as C
from dsmlib.foundation.handoff import (HAND_RUN, SEAL, custom_results_path, run_values,
                                       write_results)
from helpers import chapter_parameters


def _claims():
    return [C.measure("n.x", "x is one", paper=1, measured=1.0, se=0.01, band=(0.9, 1.1),
                      scope="setting")]


@pytest.fixture
def kernel(monkeypatch) -> dict:
    """A notebook kernel's namespace, as write_results finds it (IPython's ``get_ipython``)."""
    user_ns: dict = {}
    shell = SimpleNamespace(user_ns=user_ns)
    monkeypatch.setitem(sys.modules, "IPython", SimpleNamespace(get_ipython=lambda: shell))
    return user_ns


def test_a_hand_runs_record_in_the_kernel_says_where_and_what_changed(kernel, tmp_path,
                                                                      capsys):
    """The record the book left in the kernel (the cell under an executed chapter's title, or
    ``lab``'s first cell) names where the results go and what the run changed."""
    params = chapter_parameters("n", x=2.0)
    values = run_values(params, "smoke")
    dest = tmp_path / "book" / "results" / "custom" / "n-abc.json"
    kernel[HAND_RUN] = {"notebook": "n", "profile": "smoke", "parameters": values,
                        "changed": {"x": 2.0}, "results": str(dest)}
    assert write_results(_claims(), params, profile="smoke", root=tmp_path / "elsewhere") == dest
    run = json.loads(dest.read_text())["run"]
    assert run["changed"] == {"x": 2.0} and run["custom"] and run["key"] is None
    assert (f"[dsmlib] Hand run (the 'smoke' profile's, with x=2.0, not run by `python -m "
            f"dsmlib execute`): the results were written to {dest.resolve()}"
            in capsys.readouterr().out)


@pytest.mark.parametrize("other", [{"notebook": "m"}, {"profile": "quick"},
                                   {"parameters": {"profile": "smoke", "x": 3.0}}])
def test_a_record_of_another_run_is_not_this_ones(kernel, tmp_path, other):
    """A record left by another notebook, profile or set of values (a value changed in a cell
    after the one that recorded the run) is ignored: the plain fallback, changed unknown."""
    params = chapter_parameters("n", x=2.0)
    values = run_values(params, "smoke")
    kernel[HAND_RUN] = {"notebook": "n", "profile": "smoke", "parameters": values,
                        "changed": {"x": 2.0}, "results": str(tmp_path / "no.json"), **other}
    path = write_results(_claims(), params, profile="smoke", root=tmp_path)
    assert path == custom_results_path(tmp_path, "n", values)
    assert json.loads(path.read_text())["run"]["changed"] is None


def test_the_runners_seal_in_the_kernel_wins(kernel, tmp_path, capsys):
    """The runner's seal for exactly these values sends the results to its staging file, with
    its content key, whatever hand-run record the kernel also holds; nothing is printed."""
    params = chapter_parameters("n", x=2.0)
    values = run_values(params, "smoke")
    stage = tmp_path / "stage" / "n.json"
    stage.parent.mkdir()
    kernel[SEAL] = {"profile": "smoke", "parameters": values, "key": "k", "stage": str(stage)}
    kernel[HAND_RUN] = {"notebook": "n", "profile": "smoke", "parameters": values,
                        "changed": {}, "results": str(tmp_path / "no.json")}
    assert write_results(_claims(), params, profile="smoke") == stage
    run = json.loads(stage.read_text())["run"]
    assert run["key"] == "k" and not run["custom"] and "changed" not in run
    assert capsys.readouterr().out == "" and not (tmp_path / "no.json").exists()


def test_outside_a_kernel_the_plain_fallback(tmp_path, capsys):
    """No kernel (library code, a test): ``root``'s results/custom/, changed None; the words
    say only the profile."""
    params = chapter_parameters("n", x=2.0)
    path = write_results(_claims(), params, profile="smoke", root=tmp_path)
    assert path == custom_results_path(tmp_path, "n", run_values(params, "smoke"))
    assert json.loads(path.read_text())["run"]["changed"] is None
    assert "[dsmlib] Hand run (under the 'smoke' profile, not run by" in capsys.readouterr().out
