"""Diagnostic (not a timing benchmark): how far the ``graph`` step drifts from the ``eager``
one after two epochs, against how far two ``eager`` runs drift from each other, on CUDA.

For each setting -- bf16; float32 as torch sets it up (TF32 convolutions, cuDNN free to pick
nondeterministic kernels); float32 with deterministic kernels and no TF32 -- a teacher and a
lockstep group of three students (ResNet-8, 192 digits at 16x16, the CUDA test's runs) train
twice eagerly and once replayed. One JSON line per setting and run kind: the largest
relative difference over the losses and G (``rel_eager_eager``, ``rel_graph_eager``) and the
largest accuracy difference in points. ``benchmarks/gpu_check.sh`` runs it (step ``drift``);
the fp32 tolerance of ``tests/models/test_graph.py`` rests on its figures.

Usage: ``python benchmarks/graph_vs_eager.py [--device cpu]`` (``cpu``: a dry run, the
"replayed" run eager too, at 8x8 for one epoch, so that the script is exercised without a GPU).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dsmlib.models.sec5_distillation.datasets import load_dataset  # noqa: E402
from dsmlib.models.sec5_distillation.graph import Trainers  # noqa: E402
from dsmlib.models.sec5_distillation.loop import train_group  # noqa: E402
from dsmlib.models.sec5_distillation.nets import build_model  # noqa: E402
from dsmlib.models.sec5_distillation.recipe import paper_values  # noqa: E402
from dsmlib.models.sec5_distillation.run_config import Noise, RunConfig, student_of  # noqa: E402

LOSSES = ("train_objective", "train_loss", "val_loss", "gradnorm")
ACCURACIES = ("train_acc", "val_acc", "test_acc")


def drift(a: list[list[dict]], b: list[list[dict]]) -> tuple[float, float]:
    """Largest relative difference of the last epoch's losses and G, and largest accuracy
    difference, over the runs of two results."""
    rel = max(abs(y[-1][k] - x[-1][k]) / max(abs(x[-1][k]), 1e-30)
              for x, y in zip(a, b) for k in LOSSES)
    pts = max(abs(y[-1][k] - x[-1][k]) for x, y in zip(a, b) for k in ACCURACIES)
    return rel, pts


def setting(deterministic: bool) -> None:
    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = not deterministic
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(deterministic)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", help="cuda, or cpu for a dry run")
    dev = ap.parse_args(argv).device
    if dev == "cuda" and not torch.cuda.is_available():
        raise SystemExit("graph_vs_eager.py needs a CUDA device (the graph step), or --device cpu")
    replayed = "graph" if dev == "cuda" else "eager"
    # A dry run only exercises the script, at the digits' own 8x8 and for one epoch: bf16 on a
    # CPU without native bf16 (an AMD EPYC) took 89 s per teacher at 16x16 on 2 loaded cores,
    # and the dry run ran past its 300 s step limit.
    size, epochs = (16, 2) if dev == "cuda" else (None, 1)
    data = load_dataset("digits", train_limit=192, image_size=size, device=dev)
    if dev == "cpu":   # and on 64 validation and test images: bf16 evaluation is the slow part
        data = dataclasses.replace(data, X_val=data.X_val[:64], y_val=data.y_val[:64],
                                   X_test=data.X_test[:64], y_test=data.y_test[:64])
    base = RunConfig(**{**paper_values(), "epochs": epochs, "batch_size": 32},
                     dataset="digits", depth=8, train_limit=64, n_gradnorm=4,
                     gradnorm_probes=2)   # the CUDA test's runs (the chapter's quick values)
    for name, precision, det in (("bf16", "bf16", False), ("fp32", "fp32", False),
                                 ("fp32_deterministic", "fp32", True)):
        setting(det)
        t = dataclasses.replace(base, precision=precision)
        t_model = build_model(t, data).eval()
        cfgs = [student_of(t, Noise.NONE, 0.0), student_of(t, Noise.GAUSSIAN, 4.0),
                student_of(t, Noise.SYMMETRIC, 0.3)]
        for label, group, teacher in (("teacher", [t], None), ("students_k3", cfgs, t_model)):
            try:
                e1, e2, g = (train_group(group, data, teacher=teacher, step=s, trainers=Trainers())
                             for s in ("eager", "eager", replayed))
                (ee, ee_pts), (ge, ge_pts) = drift(e1, e2), drift(e1, g)
                row = dict(rel_eager_eager=ee, rel_graph_eager=ge, points_eager_eager=ee_pts,
                           points_graph_eager=ge_pts)
            except Exception as exc:   # one setting's failure must not hide the others
                row = dict(error=f"{type(exc).__name__}: {exc}"[:400])
            print(json.dumps(dict(name=f"drift_{name}_{label}", **row)), flush=True)
    setting(False)


if __name__ == "__main__":
    main()
