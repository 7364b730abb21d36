"""Does a Section 5 setting's teacher fit its training images? A pilot on the CPU, before a
GPU call is spent on the setting (issue 51: every teacher must fit at least 99 % of its
training images, or the setting's accuracy claims are not judged).

It trains one teacher of the chapter's grid under a profile (with ``-p`` overrides, as the
CLI takes them) through the library's own ``execute_run`` (a finished run in ``--runs-dir`` is
read, not trained again), and prints one JSON line: the setting, the teacher's configuration,
its SGD steps, and its final accuracies (training accuracy on all of its training images), with
every epoch's history under ``--history``.

    .venv/bin/python benchmarks/fit_pilot.py --profile gpu-cifar10 --seed 0
    python benchmarks/fit_pilot.py --device cuda -p teacher_epochs 200   # on a GPU: seconds
    .venv/bin/python benchmarks/fit_pilot.py --profile gpu-cifar10 -p headroom_size 1000 \\
        -p headroom_val 200 -p teacher_epochs 126 --threads 1 --history
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dsmlib.book.profiles import load_specs, parse_value, resolve  # noqa: E402
from dsmlib.chapters.sec5_distillation.gains import FIT_ACCURACY  # noqa: E402
from dsmlib.chapters.sec5_distillation.grid import grid_runs  # noqa: E402
from dsmlib.models.sec5_distillation.runs import execute_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KEEP = ("epoch", "lr", "train_objective", "train_acc", "val_acc", "test_acc", "n_train")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="gpu-cifar10")
    ap.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                    help="a chapter parameter, as `python -m dsmlib execute -p` takes it")
    ap.add_argument("--seed", type=int, default=0, help="the teacher's seed (one of the grid's)")
    ap.add_argument("--setting", default="headroom", choices=["headroom", "full"])
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--device", default="cpu", help="cpu | cuda | auto")
    ap.add_argument("--runs-dir", default="results/pilot_runs")
    ap.add_argument("--history", action="store_true", help="every epoch's accuracies too")
    args = ap.parse_args(argv)
    spec = load_specs(ROOT / "notebooks")["sec5_distillation"]
    try:
        grid = resolve(spec, args.profile, {k: parse_value(v, k) for k, v in args.p})
    except ValueError as err:
        raise SystemExit(str(err)) from None
    teachers = [c for c in grid_runs(grid) if c.role == "teacher" and c.seed == args.seed
                and (c.train_limit is not None) == (args.setting == "headroom")]
    if not teachers:
        raise SystemExit(f"--seed {args.seed}: no {args.setting} teacher with that seed in "
                         f"profile {args.profile}")
    config = teachers[0]
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    record = execute_run(config, ROOT / args.runs_dir, data_dir=ROOT / grid.data_dir,
                         download=False, device=args.device, progress=True)
    last = record.history[-1]
    steps_per_epoch = (last["n_train"] * config.passes) // config.batch_size
    out = {"profile": args.profile, "overrides": dict(args.p), "config": asdict(config),
           "done": record.done, "sgd_steps": steps_per_epoch * config.epochs,
           "train_acc": last["train_acc"], "val_acc": last["val_acc"],
           "test_acc": last["test_acc"], "fits": last["train_acc"] >= FIT_ACCURACY,
           "fit_accuracy": FIT_ACCURACY, "wall_s": round(time.perf_counter() - t0, 1),
           "torch_threads": torch.get_num_threads(), "device": args.device}
    if args.history:
        out["history"] = [{k: r.get(k) for k in KEEP} for r in record.history]
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
