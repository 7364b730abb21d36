"""Benchmark: the gradient norm G(theta) = (1/N) sum_i ||grad_theta f(x_i, theta)||_F^2
(Prop. 3, Eq. (18)) of a CIFAR ResNet-20 on random CIFAR-shaped inputs (3x32x32, 10
outputs).

Prints one JSON object per line, ``{"name", "ours_s", "baseline_s", "ratio", ...}`` with
``ratio = baseline_s / ours_s`` (speed-up), ours and baseline timed in the same run:

- ``gradnorm_exact``: :func:`dsmlib.covariances.gradient_norm` (torch.func vmap(jacrev)
  in chunks) vs a per-sample autograd loop (one forward and L backward passes per sample);
  ``rel_error`` is the relative difference of the two exact values.
- ``gradnorm_probe_<method>_K<k>``: :func:`dsmlib.covariances.gradient_norm_probe` vs the
  same loop, for a few probe counts ``k`` (the accuracy/speed trade-off): ``rel_error`` =
  |estimate - exact| / exact, ``rel_se`` = reported SE / exact, ``z`` = error / SE.

The model is resnet20(seed=0) with BatchNorm running statistics calibrated on the inputs
(one cumulative-average pass in train mode, then eval): with the initial statistics
(mean 0, var 1) the residual stages of an untrained network blow the outputs up by
orders of magnitude, which is not the regime the paper measures.

Timing: ours is the minimum of ``--repeats`` runs; the baseline loop runs once over all
inputs in blocks of 64 and is reported as ``n_blocks x median block time``
(``baseline_raw_s`` is the plain total): sporadic stalls from other processes
sharing the cores are filtered out on both sides.

Usage: ``python benchmarks/bench_gradnorm.py [--quick] [--n N] [--chunk-size C] [--repeats R]``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from typing import Callable

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dsmlib.models import networks as models  # noqa: E402
from dsmlib.theory import gradient_norm as gn  # noqa: E402
from dsmlib.theory import jacobians  # noqa: E402


def calibrated_resnet20(X: torch.Tensor, seed: int = 0) -> torch.nn.Module:
    """resnet20 whose BatchNorm running statistics are the exact averages over ``X``."""
    model = models.resnet20(seed=seed)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None                      # cumulative moving average
    model.train()
    with torch.no_grad():
        for chunk in X.split(128):
            model(chunk)
    return model.eval()


def loop_gradient_norm(model: torch.nn.Module, X: torch.Tensor) -> float:
    """Baseline: plain per-sample autograd, one backward pass per output."""
    params = [p for p in model.parameters() if p.requires_grad]
    total = 0.0
    for i in range(X.shape[0]):
        out = model(X[i:i + 1]).reshape(-1)
        for l in range(out.numel()):
            grads = torch.autograd.grad(out[l], params, retain_graph=l < out.numel() - 1)
            total += float(sum(g.pow(2).sum() for g in grads))
    return total / X.shape[0]


def timed(fn: Callable[[], object], repeats: int = 1) -> tuple[object, float, list[float]]:
    """Result and minimum wall time over ``repeats`` runs (timeit convention: robust to
    sporadic stalls when other processes share the 2 cores), plus all the times."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, min(times), times


def timed_loop(model: torch.nn.Module, X: torch.Tensor, block: int) -> tuple[float, float, float]:
    """The baseline loop over all of X in blocks; returns (exact value, robust time =
    n_blocks * median block time (scaled for a short last block), raw total time)."""
    vals, times = [], []
    for s in range(0, X.shape[0], block):
        xb = X[s:s + block]
        t0 = time.perf_counter()
        vals.append(loop_gradient_norm(model, xb) * xb.shape[0])
        times.append((time.perf_counter() - t0) / xb.shape[0])
    return sum(vals) / X.shape[0], statistics.median(times) * X.shape[0], \
        sum(t * min(block, X.shape[0] - i * block) for i, t in enumerate(times))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, < 30 s")
    ap.add_argument("--n", type=int, default=None, help="number of inputs (default 512, quick 16)")
    ap.add_argument("--chunk-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=None, help="timing repeats of ours (default 2, quick 1)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    n = args.n or (16 if args.quick else 512)
    repeats = args.repeats or (1 if args.quick else 2)
    block = 8 if args.quick else 64
    vjp_probes = [2, 4] if args.quick else [2, 4, 8]
    jvp_probes = [4, 16]

    g = torch.Generator().manual_seed(args.seed)
    X = torch.randn(n, 3, 32, 32, generator=g)
    model = calibrated_resnet20(X, seed=args.seed)
    common = {"n": n, "d": jacobians.parameter_dim(model), "outputs": 10, "model": "resnet20",
              "dtype": "float32", "threads": torch.get_num_threads(), "chunk_size": args.chunk_size,
              "repeats": repeats, "quick": bool(args.quick)}

    # warm-up (one-time torch.func tracing / allocator costs are not what we compare)
    loop_gradient_norm(model, X[:2])
    gn.gradient_norm(model, X[:2], chunk_size=2)
    gn.gradient_norm_probe(model, X[:2], n_probes=2, chunk_size=2)
    gn.gradient_norm_probe(model, X[:2], n_probes=2, chunk_size=2, method="jvp")

    exact_loop, t_loop, t_loop_raw = timed_loop(model, X, block)
    base = {"baseline_s": round(t_loop, 4), "baseline_raw_s": round(t_loop_raw, 4)}
    exact, t_exact, ts = timed(lambda: gn.gradient_norm(model, X, chunk_size=args.chunk_size), repeats)
    print(json.dumps({"name": "gradnorm_exact", "ours_s": round(t_exact, 4), **base,
                      "ratio": round(t_loop / t_exact, 3),
                      "rel_error": abs(exact - exact_loop) / exact_loop, "value": exact,
                      "ours_all_s": [round(t, 3) for t in ts], **common}), flush=True)

    for method, ks in (("vjp", vjp_probes), ("jvp", jvp_probes)):
        for k in ks:
            # a distinct probe seed per configuration, so the trade-off lines are independent
            probe_seed = 1000 * args.seed + 100 * (method == "jvp") + k
            est, t, ts = timed(lambda: gn.gradient_norm_probe(
                model, X, n_probes=k, seed=probe_seed, method=method,
                chunk_size=args.chunk_size if method == "vjp" else 4 * args.chunk_size), repeats)
            err = abs(est.estimate - exact_loop)
            print(json.dumps({"name": f"gradnorm_probe_{method}_K{k}", "ours_s": round(t, 4), **base,
                              "ratio": round(t_loop / t, 3),
                              "rel_error": err / exact_loop,
                              "rel_se": est.standard_error / exact_loop,
                              "z": err / est.standard_error if est.standard_error > 0 else math.inf,
                              "method": method, "n_probes": k, "probe_seed": probe_seed,
                              "estimate": est.estimate,
                              "standard_error": est.standard_error,
                              "ours_all_s": [round(t, 3) for t in ts], **common}), flush=True)


if __name__ == "__main__":
    main()
