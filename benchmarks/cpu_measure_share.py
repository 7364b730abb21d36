"""What measuring costs against training on this CPU (issue 69, item 3), before and after the
measurement changed: ``cpu-cifar10``'s 12 lockstep students at ResNet-8 (1,200 training
images with crops and flips, 300 validation, the 10,000 test images; ``G`` on 64 images,
the training accuracy on 256 between the first and the last epoch) trained ``--epochs`` epochs
through ``train_group`` of a library, from an untrained teacher (what a pass costs does not
depend on the weights). The rows' own timings say where the time goes: each epoch's SGD steps
(``train_s``), its evaluation (``eval_s``) and ``G`` (``gradnorm_s``); row 0 is the
measurement before training, the last epoch's a whole one (every split, the test set too);
what the group's wall time has beyond them is set-up and the teachers' logits.

``--before COMMIT`` compares two libraries in one run: the ``dsmlib`` of ``COMMIT`` (``git
archive``, into a temporary directory) and this checkout's, each in a process of its own, in
turn (before, after; ``--rounds`` times). One JSON line per side and round
(``measure_share_resnet8_students_<side>``) and one comparison
(``measure_share_resnet8_students``: ``ours_s`` after's seconds of measurement per epoch,
``baseline_s`` before's, ``ratio`` before / after, and both sides' shares). ``share``: an
epoch's measurement over its training; ``run_share``: a whole ``cpu-cifar10`` run's (30 epochs:
row 0, 28 measurements between, a whole one after the last, the set-up and teachers' logits)
over its training; ``floor_share``: the share the measured images alone imply where a pass
runs as fast per image as training (a backward pass two forward passes, a probe's pull-back
one backward): the share no faster code gets below without measuring fewer images.

On quiet cores (``make bench-cpu-precision``; the commit before issue 69's measurement change
is 26ed688):

    .venv/bin/python benchmarks/cpu_measure_share.py --before 26ed688 --out benchmarks/cpu_runs/<date>_cpu_precision.jsonl

Expected time on the 2-core AMD EPYC at the defaults (3 epochs, one round): about 3 minutes
before, 2 after. Smoke test: ``--profile smoke --images 64`` (digits, seconds).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rows import write_rows  # noqa: E402

PROFILE_EPOCHS = 30          # a cpu-cifar10 run's epochs, for run_share
NAME = "measure_share_resnet{depth}_students"


def floor_share(n_train: int, n_eval: int, n_gradnorm: int, probes: int, members: int) -> float:
    """The share of an epoch's measurement in its training where every pass runs as fast per
    image as training does: ``n_eval`` forward passes and ``n_gradnorm`` images' forward and
    ``probes`` pull-backs (two forwards each) against ``n_train`` steps (a forward and a
    backward, three forwards) per member, with the teacher's forward shared by the
    ``members``."""
    return (n_eval + n_gradnorm * (1 + 2 * probes)) / (n_train * (3 + 1 / members))


def side_row(history: list[dict], wall_s: float, config: Any, label: str,
             n_val: int) -> dict[str, Any]:
    """One side's row from a member's history (its timings are the group's), its group's wall
    seconds and configuration, and its validation images."""
    mid = history[1:-1]
    train = sum(r["train_s"] for r in history[1:]) / (len(history) - 1)
    measure = [r["eval_s"] + r["gradnorm_s"] for r in mid]
    per_epoch = sum(measure) / len(measure) if measure else None
    row0 = history[0]["eval_s"] + history[0]["gradnorm_s"]
    whole = history[-1]["eval_s"] + history[-1]["gradnorm_s"]
    timed = sum(r["train_s"] + r["eval_s"] + r["gradnorm_s"] for r in history)
    setup = wall_s - timed
    n = history[0]["n_train"]
    members = history[0]["lockstep"]
    run_measure = row0 + (PROFILE_EPOCHS - 2) * (per_epoch or 0.0) + whole + setup
    return {"name": NAME.format(depth=config.depth) + f"_{label}", "side": label,
            "members": members, "epochs": len(history) - 1, "n_train": n,
            "train_s_per_epoch": train, "measure_s_per_epoch": per_epoch,
            "eval_s_per_epoch": sum(r["eval_s"] for r in mid) / len(mid) if mid else None,
            "gradnorm_s_per_epoch": sum(r["gradnorm_s"] for r in mid) / len(mid) if mid else None,
            "share": None if per_epoch is None else per_epoch / train,
            "row0_s": row0, "whole_s": whole, "setup_and_targets_s": setup,
            "run_share": run_measure / (PROFILE_EPOCHS * train),
            "floor_share": floor_share(n, (config.n_train_eval or n) + n_val,
                                       config.n_gradnorm, config.gradnorm_probes, members),
            "wall_s": wall_s}


def run_side(args: argparse.Namespace) -> dict[str, Any]:
    """Train the group with the library on the path (``--lib`` first); its row."""
    sys.path.insert(0, str(Path(args.lib).resolve()))
    sys.path.insert(1, str(ROOT))
    import dsmlib
    from dsmlib.book.profiles import load_specs, resolve
    from dsmlib.chapters.sec5_distillation.cpu_budget import validation_images
    from dsmlib.chapters.sec5_distillation.grid import grid_runs
    from dsmlib.models.sec5_distillation.datasets import load_dataset
    from dsmlib.models.sec5_distillation.loop import train_group
    from dsmlib.models.sec5_distillation.nets import build_model
    spec = load_specs(ROOT / "notebooks")["sec5_distillation"]
    overrides = {"teacher_epochs": args.epochs, "headroom_size": args.images,
                 "headroom_seeds": [0, 1]}
    if args.profile == "cpu-cifar10":
        overrides["headroom_val"] = validation_images(args.images)
    grid = resolve(spec, args.profile, overrides)
    runs = [c for c in grid_runs(grid) if c.train_limit == args.images and c.seed == 0]
    teacher = next(c for c in runs if c.role == "teacher")
    students = [c for c in runs if c.role == "student"]
    data = load_dataset(teacher.dataset, data_dir=ROOT / grid.data_dir, device="cpu",
                        **teacher.data_options())
    model = build_model(teacher, data).eval().requires_grad_(False)
    t0 = time.perf_counter()
    history = train_group(students, data, teacher=model)[0]
    wall = time.perf_counter() - t0
    row = side_row(history, wall, students[0], args.label, int(data.X_val.shape[0]))
    row["lib"] = str(Path(dsmlib.__file__).resolve().parents[1])
    return row


def _archive(commit: str, into: Path) -> Path:
    """``dsmlib`` as it was at ``commit``, extracted under ``into``."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "dsmlib"],
                         check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(tar)) as t:
        t.extractall(into, filter="data")
    return into


def _side(lib: Path, label: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--lib", str(lib), "--label", label,
           "--epochs", str(args.epochs), "--images", str(args.images), "--profile",
           args.profile]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def compare(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Both sides in turn, ``--rounds`` times; their rows and the comparison."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        before = _archive(args.before, Path(tmp))
        for _ in range(args.rounds):
            rows.append({**_side(before, "before", args), "commit": args.before})
            rows.append(_side(ROOT, "after", args))
    best = {side: min((r for r in rows if r["side"] == side),
                      key=lambda r: r["measure_s_per_epoch"] or 0.0)
            for side in ("before", "after")}
    b, a = best["before"], best["after"]
    name = b["name"].rsplit("_", 1)[0]
    rows.append({"name": name, "ours_s": a["measure_s_per_epoch"],
                 "baseline_s": b["measure_s_per_epoch"],
                 "ratio": (b["measure_s_per_epoch"] / a["measure_s_per_epoch"]
                           if a["measure_s_per_epoch"] else None),
                 **{f"{k}_{s}": r[k] for s, r in best.items()
                    for k in ("share", "run_share", "row0_s", "whole_s", "setup_and_targets_s",
                              "train_s_per_epoch")},
                 "floor_share": a["floor_share"], "before": args.before})
    return rows


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default=None, help="compare with dsmlib at this commit")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=3, help="at least 3: row 0, a measurement "
                    "between, a whole one")
    ap.add_argument("--images", type=int, default=1200)
    ap.add_argument("--profile", default="cpu-cifar10")
    ap.add_argument("--lib", default=str(ROOT), help="the checkout whose dsmlib trains")
    ap.add_argument("--label", default="after")
    ap.add_argument("--out", default=None, help="append the JSON lines to this file")
    args = ap.parse_args(argv)
    if args.epochs < 3:
        ap.error("--epochs must be at least 3")
    rows = compare(args) if args.before else [run_side(args)]
    write_rows(rows, args.out)
    return rows


if __name__ == "__main__":
    main()
