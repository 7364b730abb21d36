"""The chapters' ``Parameters`` refuse every value no run of their chapter accepts, in one line
naming the parameter and the allowed range, before any kernel starts (issue 63, item 8): each
bound here was a value that passed the check and failed in a cell of the notebook."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.chapters.parameters import ols, prop1_noise, prop2_convergence, prop3_regularizer
from dsmlib.chapters.parameters import remark3_valley
from dsmlib.chapters.prop1_claims import prop1_claims
from dsmlib.chapters.prop1_noise import sample_noise_terms
from dsmlib.models import settings
from dsmlib.models.data import DIGITS_SIZE

CHAPTERS = {"ols": ols, "prop1_noise": prop1_noise, "prop2_convergence": prop2_convergence,
            "prop3_regularizer": prop3_regularizer, "remark3_valley": remark3_valley}

REFUSED = [
    ("prop1_noise", {"batch_size": 65}, "'batch_size' of prop1_noise must be <= 63, got 65 "
                                        "(the least-squares model's N = 64 points"),
    ("prop1_noise", {"batch_size": 64}, "must be <= 63, got 64"),
    ("prop1_noise", {"batch_size": 100_000_000}, "must be <= 63, got 100000000"),
    ("prop1_noise", {"n_samples": 499}, "'n_samples' of prop1_noise must be >= 500, got 499 "
                                        "(10 draws in each of the 50 blocks"),
    ("prop1_noise", {"paper_batch_draws": [100_000, 99]}, "must be >= 100, got 99"),
    ("prop1_noise", {"explorer_samples": 1}, "'explorer_samples' of prop1_noise must be >= 2"),
    ("prop1_noise", {"swap_ps": [0.0, 0.5]}, "'swap_ps' of prop1_noise must lie in (0, 1]"),
    ("prop2_convergence", {"halvings": 1}, "'halvings' of prop2_convergence must be >= 2"),
    ("prop2_convergence", {"n_paths": 2}, "'n_paths' of prop2_convergence must be >= 3"),
    ("prop2_convergence", {"sigma2_paths": 2}, "'sigma2_paths' of prop2_convergence must be >= 3"),
    ("prop2_convergence", {"weak_paths": 39}, "'weak_paths' of prop2_convergence must be >= 40, "
                                              "got 39 (two paths in each of the 20 jackknife"),
    ("prop2_convergence", {"n_samples": 1}, "'n_samples' of prop2_convergence must be >= 2"),
    ("prop2_convergence", {"weak_mlp_levels": 1}, "'weak_mlp_levels' of prop2_convergence must "
                                                  "be >= 2"),
    ("prop2_convergence", {"eta_max": 0.3}, "'eta_max' of prop2_convergence must divide horizon "
                                            "(0.5) into whole steps, got 0.3"),
    ("prop2_convergence", {"explorer_etas": [0.125, 0.2]}, "'explorer_etas' of "
                                                           "prop2_convergence must divide"),
    ("prop2_convergence", {"device": "gpu"}, "'device' of prop2_convergence must be 'auto', "
                                             "'cpu', 'cuda' or 'cuda:N', got 'gpu'"),
    ("prop3_regularizer", {"n_real_steps": 1}, "'n_real_steps' of prop3_regularizer must be >= 2"),
    ("prop3_regularizer", {"n_cnn": DIGITS_SIZE + 1}, f"'n_cnn' of prop3_regularizer must be <= "
                                                      f"{DIGITS_SIZE}"),
    ("prop3_regularizer", {"n_mlp": 1, "batch_sizes": [1]}, "'n_mlp' of prop3_regularizer must "
                                                            "be >= 2"),
    ("remark3_valley", {"barrier_n": 1}, "'barrier_n' of remark3_valley must be >= 2"),
    ("remark3_valley", {"sweep_etas": [0.01]}, "'sweep_etas' of remark3_valley must hold a value "
                                               "other than sweep_reference's η (0.01)"),
    ("remark3_valley", {"sweep_batch_sizes": [4, 4]}, "'sweep_batch_sizes' of remark3_valley "
                                                      "must hold a value other than"),
    ("ols", {"n": 1, "batch_size": 1, "sweep_batch_sizes": [1]}, "'n' of ols must be >= 2"),
    ("ols", {"steps": 100}, "'steps' of ols must be >= 101, got 100 (a burn-in of at least one "
                            "step, then two steps in each of the 50 blocks"),
    ("ols", {"explorer_steps": 50}, "'explorer_steps' of ols must be >= 101"),
]


@pytest.mark.parametrize("chapter, values, match", REFUSED,
                         ids=[f"{c}-{'-'.join(v)}" for c, v, _ in REFUSED])
def test_values_no_run_accepts_are_refused_in_one_line(chapter, values, match):
    with pytest.raises(ValueError) as err:
        CHAPTERS[chapter].Parameters.from_dict(values)
    assert match in str(err.value) and "\n" not in str(err.value), str(err.value)


@pytest.mark.parametrize("chapter, values", [
    ("prop1_noise", {"batch_size": 63, "n_samples": 500, "n_real_steps": 10,
                     "paper_batch_draws": [100, 100], "swap_ps": [1.0], "explorer_samples": 2}),
    ("prop2_convergence", {"halvings": 2, "n_paths": 3, "weak_paths": 40, "n_samples": 2,
                           "weak_mlp_levels": 2, "horizon": 1.0, "eta_max": 0.125,
                           "device": "cuda:1"}),
    ("prop3_regularizer", {"n_real_steps": 2, "n_cnn": DIGITS_SIZE, "n_mlp": 16}),
    ("remark3_valley", {"barrier_n": 2, "sweep_etas": [0.02]}),
    ("ols", {"steps": 101, "n": 2, "replace": True})])
def test_the_bounds_are_values_runs_accept(chapter, values):
    """Each bound itself is allowed: the checks refuse only what no run accepts."""
    assert CHAPTERS[chapter].Parameters.from_dict(values)


def test_prop1_batch_bound_is_the_least_squares_models_n():
    """The notebook builds the least-squares and MLP settings with their default N; the bound
    is the smaller N less one. A without-replacement minibatch of all N points has no noise:
    the chapter's claims refuse it (an infinite standard error), and take N - 1."""
    n = prop1_noise.LEAST_SQUARES_N
    assert settings.least_squares_setting().n == n < settings.mlp_setting().n
    s = settings.least_squares_setting(seed=0)

    def claims(b: int) -> list:
        kw = dict(sigma2=0.5, batch_size=b, eta=0.1, n_samples=500, n_real_steps=1)
        return prop1_claims([sample_noise_terms(s, replacement=r, seed=int(r), **kw)
                             for r in (True, False)])
    assert claims(n - 1)
    with np.errstate(divide="ignore", invalid="ignore"), \
            pytest.raises(ValueError, match="must be finite"):
        claims(n)


@pytest.mark.parametrize("horizon, step, whole", [
    (0.5, 0.125, True), (0.1, 0.025, True), (0.5, 0.3, False), (0.25, 0.5, False)])
def test_whole_steps_is_the_paths_time_grid(horizon, step, whole):
    """``eta_max`` and the explorer's steps must cut the horizon into whole steps, as
    :func:`dsmlib.theory.brownian.grid_steps` requires (0.1 / 0.025 counts as 4)."""
    from dsmlib.theory.brownian import grid_steps
    assert prop2_convergence.whole_steps(horizon, step) is whole
    if whole:
        assert grid_steps(horizon, step) == round(horizon / step)
    else:
        with pytest.raises(ValueError):
            grid_steps(horizon, step)
