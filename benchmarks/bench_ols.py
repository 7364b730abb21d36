"""Benchmark: Figure 3 at the paper's scale (16 runs x 10^6 SGD steps, full trajectories).

Prints one JSON object per line: {"name", "ours_s", "baseline_s", "ratio"} with
ratio = baseline_s / ours_s (a speed-up), both measured in this run. The baseline is the naive
per-step Python loop (dsmlib.theory.least_squares_sgd.naive_sgd).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from dsmlib.chapters.ols import BETA_STAR, paper_panels
from dsmlib.theory import least_squares as ols
from dsmlib.theory.least_squares_sgd import naive_sgd, sgd_trajectories


def best_of(fn, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--naive-steps", type=int, default=1_000_000,
                    help="steps of the naive loop actually timed (one chain)")
    ap.add_argument("--replace", type=int, default=1, choices=[0, 1],
                    help="minibatch scheme (1: with replacement, the naive loop's fastest form)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    problems = [ols.make_problem(100, p.cov, BETA_STAR, p.sigma2, seed=0) for p in paper_panels()]
    eta, b, k, rep = 0.01, 5, args.steps, bool(args.replace)

    def ours_fig3() -> None:
        for i, p in enumerate(problems):
            for mode in ("fixed", "none"):
                sgd_trajectories(p, eta, b, k, label_noise=mode, replace=rep, seed=i)

    def ours_one() -> None:
        sgd_trajectories(problems[1], eta, b, k, replace=rep, seed=0)

    sgd_trajectories(problems[0], eta, b, 10, replace=False)  # load the compiled kernel
    one = best_of(ours_one, args.repeats)
    fig3 = best_of(ours_fig3, args.repeats)
    t = time.perf_counter()
    naive_sgd(problems[1], eta, b, args.naive_steps, replace=rep, seed=0)
    naive = (time.perf_counter() - t) * k / args.naive_steps
    print(json.dumps({"name": "ols_sgd_one_chain_1e6", "ours_s": one, "baseline_s": naive,
                      "ratio": naive / one, "steps": k, "replace": rep, "naive_steps_timed": args.naive_steps}))
    print(json.dumps({"name": "ols_figure3_16x1e6", "ours_s": fig3, "baseline_s": 16 * naive,
                      "ratio": 16 * naive / fig3, "replace": rep, "goal_s": 2.0, "goal_ratio": 50,
                      "note": "baseline = 16 x the naive chain timed in this run"}))


if __name__ == "__main__":
    main()
