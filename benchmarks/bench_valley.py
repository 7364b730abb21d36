"""Benchmark: label-noisy SGD along the valley (``dsmlib.theory.valley_sgd``), all runs at once
against a per-run, per-step loop over the same random draws.

Prints one JSON object per line, ``{"name", "ours_s", "baseline_s", "ratio", ...}`` with
``ratio = baseline_s / ours_s`` (speed-up), both timed in the same run:

- ``valley_sgd_<backend>_R<runs>``: :func:`run_valley_sgd` with ``backend`` numba (compiled loop)
  or torch (one batched step per iteration), against a Python loop that advances one run at a
  time with numpy, on the same minibatches and noisy labels (``max_abs_diff`` is the largest
  difference of the final parameters: rounding level).

Timing: the minimum of ``--repeats`` runs of ours; the baseline runs once. Compilation is warmed up
before timing. Usage: ``python benchmarks/bench_valley.py [--quick] [--steps K] [--repeats R]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dsmlib.theory import valley as V  # noqa: E402
from dsmlib.theory.valley_sgd import SGDDraws, run_valley_sgd  # noqa: E402


def per_run_loop(problem, u0, v0, *, eta, sigma2, batch_size, steps, n_runs, seed):
    """The baseline: the same draws as ``run_valley_sgd``, consumed one run and one step at a time."""
    draws = SGDDraws(problem, np.full(n_runs, sigma2), batch_size=batch_size, replace=True,
                     noise_mode="fresh", seed=seed)
    idx, labels = (t.numpy() for t in draws(steps))
    X = problem.X.numpy()
    out = []
    for r in range(n_runs):
        u, v = u0.numpy().copy(), v0.numpy().copy()
        for k in range(steps):
            xb = X[idx[k, r]]
            c = ((xb @ (u * v)) - labels[k, r]) @ xb / batch_size
            u, v = u - eta * c * v, v - eta * c * u
        out.append(u)
    return np.array(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer steps and runs")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    steps = args.steps or (1000 if args.quick else 4000)
    problem = V.diagonal_problem(3, 6, seed=1)
    u0, v0 = V.min_norm_start(problem)
    kw = dict(eta=0.1, sigma2=0.25, batch_size=2, steps=steps, seed=0)
    for n_runs in ([16] if args.quick else [16, 64]):
        t = time.perf_counter()
        base = per_run_loop(problem, u0, v0, n_runs=n_runs, **kw)
        baseline_s = time.perf_counter() - t
        for backend in ("numba", "torch"):
            run_valley_sgd(problem, u0, v0, n_runs=n_runs, backend=backend, record_every=steps,
                           **{**kw, "steps": 10})                       # compile / warm up
            times = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                r = run_valley_sgd(problem, u0, v0, n_runs=n_runs, backend=backend,
                                   record_every=steps, **kw)
                times.append(time.perf_counter() - t)
            ours_s = min(times)
            print(json.dumps({"name": f"valley_sgd_{backend}_R{n_runs}", "ours_s": ours_s,
                              "baseline_s": baseline_s, "ratio": baseline_s / ours_s,
                              "steps": steps, "threads": torch.get_num_threads(),
                              "max_abs_diff": float(np.abs(r.u[-1] - base).max())}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
