"""Accuracy parity of bf16 on this CPU (issue 69, item 2): a profile's teachers of the same seeds
trained in float32 and in bf16 autocast -- configurations that differ in their precision alone:
the same split, initialisation, batches and crops -- through the library's ``run_many``, pair
by pair (fp32 then bf16 of each seed, so the two share the machine's state), and one row whose
name contains ``parity``: the paired difference of their test accuracy with its 99 % interval
and the verdict of the rule fixed before measuring
(:func:`dsmlib.chapters.sec5_distillation.parity.parity_row`: no loss beyond seed noise where
the interval lies above minus one point). The row adds each precision's seconds of SGD steps
(``ours_s`` bf16's, ``baseline_s`` fp32's, ``ratio`` their ratio: bf16's speed-up).

The setting: ``cpu-cifar10``'s teachers (ResNet-8, the paper's recipe with crops and flips,
CIFAR-10's 10,000 test images) at a smaller size and fewer epochs, stated by the options. No
profile's precision changes. On quiet cores (``make bench-cpu-precision``):

    .venv/bin/python benchmarks/cpu_parity.py --out benchmarks/cpu_runs/<date>_cpu_precision.jsonl

Expected time on the 2-core AMD EPYC at the defaults (3 seeds, 1,000 images, 20 epochs; fp32
ResNet-8 teacher steps at about 450 images/s, measurement about 1 s an epoch and 5 s a whole
one): about 60 s a teacher, 6 minutes in all. Smoke test: ``--profile smoke --images 64
--epochs 1`` (digits, seconds).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from cpu_precision import machine  # noqa: E402
from rows import write_rows  # noqa: E402

from dsmlib.book.profiles import CPU_CIFAR10, load_specs, resolve  # noqa: E402
from dsmlib.chapters.sec5_distillation.cpu_budget import validation_images  # noqa: E402
from dsmlib.chapters.sec5_distillation.grid import grid_runs  # noqa: E402
from dsmlib.chapters.sec5_distillation.parity import MIN_SEEDS, PRECISIONS, parity_row  # noqa: E402
from dsmlib.models.sec5_distillation.run_config import RunConfig  # noqa: E402
from dsmlib.models.sec5_distillation.runs import run_many  # noqa: E402


def teachers(profile: str, images: int, epochs: int, seeds: int, depth: int | None
             ) -> tuple[list[RunConfig], Path]:
    """Each seed's teacher of ``profile``'s data-limited setting at ``images`` training images
    (validation the paper's fifth of the pool) and ``epochs`` epochs, fp32 then bf16; and the
    profile's data directory."""
    spec = load_specs(ROOT / "notebooks")["sec5_distillation"]
    overrides = {"teacher_epochs": epochs, "headroom_size": images,
                 "headroom_seeds": list(range(seeds))}
    if profile == CPU_CIFAR10:
        overrides["headroom_val"] = validation_images(images)
    if depth is not None:
        overrides["depth"] = depth
    grid = resolve(spec, profile, overrides)
    found = [c for c in grid_runs(grid) if c.role == "teacher" and c.train_limit == images]
    return ([replace(c, precision=p) for c in sorted(found, key=lambda c: c.seed)
             for p in PRECISIONS], ROOT / grid.data_dir)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default=CPU_CIFAR10)
    ap.add_argument("--images", type=int, default=1000, help="training images of the setting")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=MIN_SEEDS, help=f"at least {MIN_SEEDS}")
    ap.add_argument("--depth", type=int, default=None, help="the profile's, unless given")
    ap.add_argument("--runs-dir", default=None, help="keep the runs here (default: a temporary "
                    "directory)")
    ap.add_argument("--out", default=None, help="append the JSON line to this file")
    args = ap.parse_args(argv)
    if args.seeds < MIN_SEEDS:
        ap.error(f"--seeds must be at least {MIN_SEEDS}")
    configs, data_dir = teachers(args.profile, args.images, args.epochs, args.seeds, args.depth)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.runs_dir) if args.runs_dir else Path(tmp)
        records = run_many(configs, root, data_dir=data_dir, device="cpu")
    row = parity_row(records)
    seconds = {p: sum(r["train_s"] for rec in records if rec.config.precision == p
                      for r in rec.history[1:]) for p in PRECISIONS}
    row.update(profile=args.profile, images=args.images, ours_s=seconds["bf16"],
               baseline_s=seconds["fp32"], ratio=seconds["fp32"] / seconds["bf16"],
               wall_s=time.perf_counter() - t0, **machine())
    write_rows([row], args.out)
    return row


if __name__ == "__main__":
    main()
