"""The device policy (dsmlib.models.sec5_distillation.device): the step's form and its defaults per device, and
a clear error where a form cannot run."""
from __future__ import annotations

import pytest
import torch

from dsmlib.models.sec5_distillation.datasets import load_dataset
from dsmlib.models.sec5_distillation.device import device_policy, resolved_precision
from dsmlib.models.sec5_distillation.loop import train
from tiny_runs import tiny_teacher


def test_graph_step_needs_cuda():
    with pytest.raises(ValueError, match="step='graph' needs a CUDA device"):
        device_policy("auto", torch.device("cpu"), "graph")
    assert device_policy("auto", torch.device("cpu")).step == "eager"
    assert device_policy("auto", torch.device("cuda")).step == "graph"
    # a captured G pass keeps its chunk's per-sample gradients: smaller chunks there
    assert device_policy("auto", torch.device("cuda")).gradnorm_chunk == 64
    assert device_policy("auto", torch.device("cuda"), "eager").gradnorm_chunk == 256
    data = load_dataset("digits", train_limit=64, device="cpu")
    with pytest.raises(ValueError, match="needs a CUDA device"):
        train(tiny_teacher(train_limit=64, epochs=1), data, step="graph")


def test_precision_resolves_per_device():
    assert resolved_precision("auto", torch.device("cpu")) == "fp32"
    assert resolved_precision("auto", torch.device("cuda")) == "bf16"
    assert resolved_precision("fp64", torch.device("cuda")) == "fp64"
    policy = device_policy("bf16", torch.device("cpu"))
    assert policy.amp and policy.dtype == torch.float32
    # channels-last on both devices (faster on 2 CPU cores too); the CPU evaluates and pulls
    # G's probes back in small chunks (benchmarks/bench_cpu_cifar10.py)
    assert policy.channels_last and device_policy("auto", torch.device("cuda")).channels_last
    assert (policy.eval_batch, policy.gradnorm_chunk) == (64, 8)
    assert device_policy("auto", torch.device("cuda")).eval_batch == 1024
