"""Benchmark: the strong-error sweep of Proposition 2 (Eqs. 16-18), vectorised over paths,
against a loop that solves one path at a time.

Both solve, for every step size ``eta``, Eq. (17) with step ``eta`` and Eq. (16) with step
``eta / refine`` on the same Brownian increments, from the chapter's starting points:

- ours: :func:`dsmlib.theory.sde.strong_errors` (all paths in one tensor: one batched
  Jacobian, one batched eigendecomposition per step);
- baseline: the same increments (drawn once, outside the loop), then a Python loop over paths
  calling :func:`dsmlib.theory.sde.solve` on one path at a time.

Prints one JSON line per model, ``{"name", "ours_s", "baseline_s", "ratio", "rel_error", ...}``
with ``ratio = baseline_s / ours_s`` (speed-up), both timed in this run (ours: best of
``--repeats``; the loop: once); ``rel_error`` is the largest relative difference between the
two results (rounding only).

Usage: ``python benchmarks/bench_sde.py [--paths P] [--repeats R] [--threads T]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dsmlib.chapters.prop2_convergence import prop2_problems, step_sizes  # noqa: E402
from dsmlib.theory.brownian import BrownianIncrements, coarsen  # noqa: E402
from dsmlib.theory.dsm import dsm_sde  # noqa: E402
from dsmlib.theory.sde import solve, strong_errors  # noqa: E402

HORIZON, REFINE, SEED = 0.25, 2, 0


def per_path_loop(sdes, x0, etas) -> torch.Tensor:
    bm = BrownianIncrements(horizon=HORIZON, fine_dt=min(etas) / REFINE, block_dt=max(etas),
                            n_paths=x0.shape[0], dim=sdes[0].noise_dim, seed=SEED,
                            dtype=x0.dtype)
    blocks = [bm.fine_block(k) for k in range(bm.n_blocks)]
    out = torch.empty(x0.shape[0], len(etas), dtype=x0.dtype)
    for p in range(x0.shape[0]):
        for j, (sde, h) in enumerate(zip(sdes, etas)):
            coarse = fine = x0[p:p + 1]
            for dW in blocks:
                w = dW[:, p:p + 1]
                coarse = solve(sde, coarse, coarsen(w, bm.factor(h)), h)
                fine = solve(sde, fine, coarsen(w, bm.factor(h / REFINE)), h / REFINE)
            out[p, j] = (coarse - fine).pow(2).sum()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--paths", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)          # a benchmark script, not the library
    etas = step_sizes(0.125, 2)
    for name, problem in prop2_problems().items():
        sdes = [dsm_sde(problem, eta=e, batch_size=1, sigma2=1.0) for e in etas]
        x0 = problem.theta0.expand(args.paths, -1).clone()
        strong_errors(sdes, x0[:2], etas, horizon=HORIZON, refine=REFINE, seed=SEED)  # warm-up
        best = float("inf")
        for _ in range(args.repeats):
            t = time.perf_counter()
            ours = strong_errors(sdes, x0, etas, horizon=HORIZON, refine=REFINE, seed=SEED)
            best = min(best, time.perf_counter() - t)
        t = time.perf_counter()
        loop = per_path_loop(sdes, x0, etas)
        baseline = time.perf_counter() - t
        rel = float(((ours - loop).abs() / loop.abs().clamp_min(1e-300)).max())
        print(json.dumps({"name": f"prop2_strong_sweep_{name.replace(' ', '_')}",
                          "ours_s": best, "baseline_s": baseline, "ratio": baseline / best,
                          "rel_error": rel, "paths": args.paths, "etas": etas,
                          "threads": args.threads}), flush=True)


if __name__ == "__main__":
    main()
