"""A hand re-run of an executed chapter says what it is (issue 46, item 7;
dsmlib.book.execute.rerun): the cell under the title, which shows the runner's provenance, shows a hand
run's own values, what differs from its profile and where its results go: the results/custom/
of the book around the working directory, else of the book this dsmlib is installed from."""
from __future__ import annotations

import os
import re
import time

import pytest

from dsmlib.book.profiles import load_specs, resolve
from dsmlib.book.execute import rerun
from dsmlib.book.execute.rerun import UnknownParameter, announce_rerun, results_said, undeclared
from dsmlib.foundation.handoff import HAND_RUN, SEAL, custom_results_path, run_values
from helpers import ROOT

SMOKE = resolve(load_specs(ROOT / "notebooks")["ols"], "smoke")


@pytest.fixture(autouse=True)
def said_at_exit(monkeypatch) -> list:
    """What a hand run asks its kernel to say as it exits (``atexit``), recorded: this test
    process is no kernel, and registers nothing."""
    said: list = []
    monkeypatch.setattr(rerun.atexit, "register", lambda f, *args: said.append(args))
    monkeypatch.setattr(rerun.atexit, "unregister", lambda f: said.clear())
    return said


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


def test_a_hand_run_says_where_its_results_are_as_its_kernel_exits(said_at_exit):
    """The chapter's own line about its results lands in the middle of papermill's progress
    bar (issue 71, item 7): the kernel says it again as it exits, under the finished bar, once
    per kernel however often the notebook is re-run in it."""
    announce_rerun("ols", namespace(seed=2))
    announce_rerun("ols", namespace(seed=1))
    values = run_values(type(SMOKE)(**{**SMOKE.as_dict(), "seed": 1}), "smoke")
    [(path, since)] = said_at_exit
    assert path == custom_results_path(ROOT, "ols", values).resolve()
    assert abs(since - (time.time() - 1.0)) < 60


def test_the_exit_line_says_whether_this_run_wrote_its_results(tmp_path):
    path = tmp_path / "results" / "custom" / "ols-abc.json"
    assert results_said(path, time.time()) == (
        f"[dsmlib] This hand run wrote no results: it stopped before writing {path}")
    path.parent.mkdir(parents=True)
    path.write_text("{}")
    now = time.time()
    os.utime(path, (now, now))
    assert results_said(path, now - 5) == f"[dsmlib] This hand run's results are in {path}"
    os.utime(path, (now - 3600, now - 3600))       # an earlier run's, with the same values
    assert results_said(path, now - 5).startswith("[dsmlib] This hand run wrote no results")


def test_a_hand_run_leaves_its_record_for_write_results_in_the_kernel():
    """The chapter hands its claims over through the foundation (issue 68, item 1), which
    cannot ask the book what a hand run changed: the cell under the title leaves the run's
    record in the kernel's namespace, the one the page shows, and a second run of the notebook
    in the same kernel (Jupyter) is not refused for it."""
    ns = namespace(seed=1)
    shown = announce_rerun("ols", ns)
    values = run_values(type(SMOKE)(**{**SMOKE.as_dict(), "seed": 1}), "smoke")
    record = ns[HAND_RUN]
    assert record == shown.record and record["notebook"] == "ols" and record["hand_run"]
    assert record["parameters"] == values and record["changed"] == {"seed": 1}
    assert record["results"] == str(custom_results_path(ROOT, "ols", values))
    ns["seed"] = 2
    assert announce_rerun("ols", ns).record["changed"] == {"seed": 2} == ns[HAND_RUN]["changed"]
