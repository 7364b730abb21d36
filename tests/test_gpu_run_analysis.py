"""``benchmarks/gpu_runs/sigma2_gap.py`` reads a ``gpu`` reference right: its G curves end where
the claim's measurement does (the committed reference and the H100's, which its README
analyses), the plans behave, and the figures the H100 runs' README cites are the ones it prints
from that run's reference."""
from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest

from helpers import ROOT

REF = ROOT / "reference" / "gpu" / "sec5_distillation.ipynb"
#: The H100's reference of 2026-11-26 (3e15bed), which its README's figures are read from
H100 = ROOT / "benchmarks" / "gpu_runs" / "2026-11-26_h100" / "1_tests_profile_bench" / \
    "reference" / "gpu" / "sec5_distillation.ipynb"


def _script():
    path = ROOT / "benchmarks" / "gpu_runs" / "sigma2_gap.py"
    spec = importlib.util.spec_from_file_location("sigma2_gap", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def analysis():
    return _script().analyse(H100)


@pytest.fixture(scope="module", params=[REF, H100], ids=["committed", "h100"])
def any_analysis(request):
    return _script().analyse(request.param)


#: Stored values read back, not recomputed by a simulation: the analysis is a few hundred
#: float64 operations on them (rounding ~1e-16 on any CPU), checked to 1e-4 (the curves are
#: stored in float32) and to the 3 decimals the README prints.
@pytest.mark.stored_values
def test_the_curves_end_at_the_claims_measurement(any_analysis):
    # The figure's curves are geometric means over seeds, so their log ratio at the last epoch
    # is the claim's mean paired gap (curves are stored in float32).
    case = any_analysis["case"]
    level = case["case"].split(": ")[-1]
    assert any_analysis["gaps"][level]["by_epoch"][-1] == pytest.approx(case["measured"], abs=1e-4)
    assert len(any_analysis["gaps"][level]["by_epoch"]) == any_analysis["epochs"]


def test_plans_need_fewer_seeds_for_a_larger_gap_or_less_spread(analysis):
    plans = {(label, round(effect, 6)): m for label, _, effect, m in analysis["plans"]}
    g = analysis["case"]["measured"]
    for label in ("as measured", "with exact G"):
        assert plans[(label, round(2 * g, 6))] < plans[(label, round(g, 6))]
    assert plans[("with exact G", round(g, 6))] < plans[("as measured", round(g, 6))]
    assert 0.0 < analysis["probe_share"] < 1.0
    assert analysis["exact_spread"] < analysis["spread"]


@pytest.mark.stored_values
def test_the_readme_cites_what_the_script_prints(analysis):
    readme = (ROOT / "benchmarks" / "gpu_runs" / "2026-11-26_h100" / "README.md").read_text()
    for _, spread, effect, m in analysis["plans"][:1] + analysis["plans"][2:3]:
        assert f"{m} seeds" in readme
    assert f"{analysis['probe_share']:.0%}" in readme
    assert f"{analysis['spread']:.3f}" in readme


def _synthetic(tmp_path, epochs: int, late_gaps: list[float]):
    """A reference of 4 seeds whose σ² = 1 gap ends with ``late_gaps``."""
    seeds = 4
    gaps = np.r_[0.0, np.linspace(-0.3, 0.1, epochs - len(late_gaps)), late_gaps]
    none = np.full(epochs + 1, 100.0)
    fig = {"layout": {"yaxis": {"title": {"text": _script().TITLE}}},
           "data": [{"name": "noiseless student", "y": none.tolist()},
                    {"name": "σ² = 1", "y": (none * np.exp(gaps)).tolist()}]}
    nb = {"cells": [{"outputs": [{"data": {"application/vnd.plotly.v1+json": fig}}]}]}
    (tmp_path / "r.ipynb").write_text(json.dumps(nb))
    case = {"case": "digits: σ² = 1", "measured": late_gaps[-1], "interval": [-0.3, 0.1]}
    doc = {"run": {"parameters": {"seeds": list(range(seeds)), "student_epochs": epochs}},
           "claims": [{"id": _script().CLAIM, "band": [None, -1e-12], "details": [case]}]}
    (tmp_path / "results.json").write_text(json.dumps(doc))
    return _script().analyse(tmp_path / "r.ipynb", tmp_path / "results.json")


def test_a_flat_late_gap_leaves_no_probe_error(tmp_path):
    # the gap is constant after the second learning-rate drop (epochs 10-12 of 12), so the
    # probes' share is 0 and the exact-G spread is the measured one
    a = _synthetic(tmp_path, 12, [-0.1, -0.1, -0.1])
    assert a["gaps"]["σ² = 1"]["probe"] == pytest.approx(0.0, abs=1e-12)
    assert a["probe_share"] == pytest.approx(0.0, abs=1e-12)
    assert a["exact_spread"] == pytest.approx(a["spread"])
    assert a["gaps"]["σ² = 1"]["late_mean"] == pytest.approx(-0.1)
    assert [p[0] for p in a["plans"]] == ["as measured"] * 2 + ["with exact G"] * 2


def test_too_few_late_epochs_bound_nothing(tmp_path, capsys):
    # a tiny run (gpu_check.sh --dry-run explore: 3 epochs) has 1 epoch after the second drop
    a = _synthetic(tmp_path, 3, [-0.1])
    assert math.isnan(a["probe_share"]) and math.isnan(a["gaps"]["σ² = 1"]["probe_upper"])
    assert [p[0] for p in a["plans"]] == ["as measured"] * 2
    _script().main(tmp_path / "r.ipynb", tmp_path / "results.json")
    assert "the probes' share is not bounded" in capsys.readouterr().out
