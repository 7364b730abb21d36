"""Every figure function of every chapter's figures module is built by a test in this folder
(so a new chapter's figures cannot go untested)."""
from __future__ import annotations

import re
from pathlib import Path

from helpers import figure_functions

HERE = Path(__file__).resolve().parent


def test_every_figure_function_is_built_by_a_test():
    found = figure_functions()
    assert len(found) >= 7                      # state_explorer, figure3, ..., perturbation_plot
    sources = {p.stem: p.read_text() for p in HERE.glob("test_*.py") if p.name != Path(__file__).name}
    untested = [f for f in found if not re.search(rf"\b{f.split('.')[1]}\b",
                                                  sources.get(f"test_{f.split('.')[0]}", ""))]
    assert untested == [], f"figure functions without a test in tests/figures/test_<module>.py: {untested}"
