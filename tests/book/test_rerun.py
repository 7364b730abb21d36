"""A hand re-run of an executed chapter says what it is (issue 46, item 7;
dsmlib.book.execute.rerun): the cell under the title, which shows the runner's provenance, shows a hand
run's own values, what differs from its profile and where its results go: the results/custom/
of the book around the working directory, else of the book this dsmlib is installed from."""
from __future__ import annotations

import re

import pytest

from dsmlib.book.profiles import load_specs, resolve
from dsmlib.book.execute.rerun import UnknownParameter, announce_rerun, undeclared
from dsmlib.book.execute.results import SEAL, custom_results_path, run_values
from helpers import ROOT

SMOKE = resolve(load_specs(ROOT / "notebooks")["ols"], "smoke")


def namespace(**changes) -> dict:
    """The kernel's namespace at the cell under the title: the carried parameters cell's names
    (the smoke execution's values), then papermill's ``-p``."""
    return {"profile": "smoke", "live_widgets": False,
            **run_values(SMOKE, "smoke"), **changes}


def test_a_hand_run_from_outside_any_book_goes_to_the_installed_books_results(tmp_path,
                                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)                       # issue 46: results landed under here
    shown = announce_rerun("ols", namespace(seed=1, steps=20_000)).data
    values = run_values(type(SMOKE)(**{**SMOKE.as_dict(), "seed": 1}), "smoke")
    assert str(custom_results_path(ROOT, "ols", values)) in shown
    assert "Hand run." in shown and "Executed under" not in shown
    assert "under the <code>smoke</code> profile with 1 value changed from the profile's " \
           "(<code>seed</code>)" in shown                  # 20 000 steps is smoke's own
    assert re.search(r"<tr class='override'><td><code>seed</code></td><td><code>1</code>"
                     r"</td><td><strong>this hand run</strong>", shown)
    assert re.search(r"<tr class='override'><td><code>steps</code></td><td><code>20000</code>"
                     r"</td><td><strong>profile smoke</strong>", shown)
    assert not list(tmp_path.iterdir())                   # it says; it writes nothing


def test_a_name_papermill_injected_that_the_chapter_does_not_declare_is_refused():
    with pytest.raises(UnknownParameter) as err:
        announce_rerun("ols", namespace(stpes=10, seed=2))
    assert str(err.value).startswith("unknown parameter(s) ['stpes'] for ols; valid "
                                     "parameters: eta, batch_size, steps, ")
    assert "profile" not in str(err.value) and "live_widgets" not in str(err.value)
    assert err.value._render_traceback_() == [f"UnknownParameter: {err.value}"]
    assert isinstance(err.value, ValueError)
    # IPython's names, underscores and objects are no parameters; the runner's seal is none
    ns = {"In": [], "_i1": "x", "np": re, "results": [object()], "eta": 0.1, "y": [1, 2]}
    assert undeclared(ns, {"eta"}, hidden={"In"}) == ["y"]
    assert announce_rerun("ols", namespace(stpes=10, **{SEAL: {"stage": "x"}})) is None
