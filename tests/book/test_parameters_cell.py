"""An executed chapter's parameters cell carries the values it ran with (issue 33;
dsmlib.book.execute.parameters_cell), so that a plain ``papermill executed.ipynb out.ipynb -p x y`` runs
that execution's profile with the one change. The cell is written from the chapter's
``Parameters``, never read back; the hand re-runs themselves are in test_reexecution.py."""
from __future__ import annotations

import ast
import json

import pytest

from dsmlib.book.execute.parameters_cell import carry_parameters
from dsmlib.chapters.prop1_noise import Parameters


def notebook() -> dict:
    cell = lambda src, tags: {"cell_type": "code", "metadata": {"tags": tags},  # noqa: E731
                              "source": src, "outputs": [], "execution_count": 1}
    return {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "# Title\n"},
                      cell('profile = "quick"  # set by the runner\nlive_widgets = True\n'
                           'n_samples = 100_000\n', ["parameters", "remove-cell"]),
                      cell("# Parameters\nn_samples = 5\n", ["injected-parameters"]),
                      cell("print(1)", [])],
            "metadata": {}}


def assigned(src: str) -> dict:
    return {t.id: ast.literal_eval(s.value) for s in ast.parse(src).body
            for t in s.targets}


def test_the_parameters_cell_carries_the_executions_values():
    ran = Parameters(n_samples=1_000_000, n_real_steps=1000,
                     paper_batch_draws=(8_000_000, 400_000))
    nb = carry_parameters(notebook(), ran, "paper")
    src = nb["cells"][0]["source"]
    values = assigned(src)
    assert values == {"profile": "paper", "live_widgets": False,
                      **json.loads(json.dumps(ran.as_dict()))}         # every value, once
    assert Parameters.from_dict({k: v for k, v in values.items()
                                 if k in Parameters.names()}) == ran   # as the kernel reads it
    assert src.startswith("# The values this execution ran with (profile 'paper')")
    assert "n_samples = 1_000_000" in src and "paper_batch_draws = [8_000_000, 400_000]" in src
    # first, before the title (the provenance cell under it runs after it on a hand run), and
    # papermill's injected cell gone
    assert [c["metadata"].get("tags") for c in nb["cells"]] == [
        ["parameters", "remove-cell"], None, []]
    again = carry_parameters(json.loads(json.dumps(nb)), ran, "paper")   # idempotent
    assert again["cells"][0]["source"] == src


def test_types_survive_and_a_notebook_without_the_cell_is_refused():
    nb = carry_parameters(notebook(), Parameters(sigma2=2), "smoke")
    assert type(assigned(nb["cells"][0]["source"])["sigma2"]) is int
    with pytest.raises(ValueError, match="no cell tagged 'parameters'"):
        carry_parameters({"cells": [], "metadata": {}}, Parameters(), "smoke")
