"""Runs that survive: an interrupted run, resumed, ends exactly where an uninterrupted one does;
finished runs are skipped; checkpoints of another configuration are refused with the reason."""
from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from dsmlib.models.sec5_distillation.run_config import RunConfig, student_of
from dsmlib.models.sec5_distillation.runs import (CHECKPOINT, CONFIG, DONE, FINAL, execute_run, load_record,
                                run_dir, run_many, run_status)
from tiny_runs import tiny_teacher

TIMING = ("train_s", "eval_s", "gradnorm_s")


def strip(history):
    return [{k: v for k, v in row.items() if k not in TIMING} for row in history]


TEACHER = tiny_teacher(epochs=3)
STUDENT = student_of(TEACHER, "gaussian", 4.0, epochs=3)


def test_interrupted_run_resumes_to_the_same_final_metrics(tmp_path, device):
    """Bit-identical on the CPU; on CUDA with deterministic kernels (the determinism switch)."""
    a, b = tmp_path / "a", tmp_path / "b"
    opts = dict(threads=1, device=device, deterministic=True)
    ref = run_many([TEACHER, STUDENT], a, **opts)
    assert all(r.done for r in ref)
    # the same runs, each interrupted after one epoch (and the student once more after two)
    with_break = run_many([TEACHER], b, stop_after=1, **opts)[0]
    assert not with_break.done and run_status(TEACHER, b) == ("partial", 1)
    assert (run_dir(TEACHER, b) / CHECKPOINT).exists()
    run_many([TEACHER], b, **opts)
    run_many([STUDENT], b, stop_after=1, **opts)
    run_many([STUDENT], b, stop_after=1, **opts)
    assert run_status(STUDENT, b) == ("partial", 2)
    res = run_many([TEACHER, STUDENT], b, **opts)
    for r, s in zip(ref, res):
        assert s.done and strip(s.history) == strip(r.history)
    assert torch.equal(torch.load(run_dir(STUDENT, a) / FINAL)["linear.weight"],
                       torch.load(run_dir(STUDENT, b) / FINAL)["linear.weight"])
    assert json.loads((run_dir(STUDENT, b) / DONE).read_text())["device"].startswith(device.type)
    assert not (run_dir(STUDENT, b) / CHECKPOINT).exists()


def test_finished_runs_are_skipped(tmp_path):
    run_many([TEACHER], tmp_path, threads=1)
    done = run_dir(TEACHER, tmp_path) / DONE
    before = done.stat().st_mtime_ns
    rec = execute_run(TEACHER, tmp_path)
    assert rec.done and done.stat().st_mtime_ns == before
    assert load_record(TEACHER, tmp_path).history == rec.history


def test_checkpoint_of_another_configuration_is_refused(tmp_path):
    run_many([TEACHER], tmp_path, threads=1, stop_after=1)
    ck = run_dir(TEACHER, tmp_path) / CHECKPOINT
    other = dataclasses.replace(TEACHER, lr=0.05)
    with pytest.raises(ValueError, match=r"refusing to resume .* another configuration \(lr: 0.05 != 0.1\)"):
        execute_run(other, tmp_path / "elsewhere", resume_from=ck)
    # a checkpoint trained in bf16 (on a GPU) does not silently continue in float32
    state = torch.load(ck, weights_only=False)
    state["precision"], state["device_type"] = "bf16", "cuda"
    torch.save(state, tmp_path / "gpu.pt")
    with pytest.raises(ValueError, match="trained in bf16.*continue in fp32"):
        execute_run(TEACHER, tmp_path / "elsewhere", resume_from=tmp_path / "gpu.pt", device="cpu")
    # a directory whose config.json names another configuration is refused too
    d = run_dir(other, tmp_path)
    d.mkdir()
    (d / CONFIG).write_text(json.dumps(TEACHER.to_dict()))
    with pytest.raises(ValueError, match="belongs to another configuration"):
        execute_run(other, tmp_path)


def test_student_needs_a_finished_teacher(tmp_path):
    with pytest.raises(ValueError, match="teacher run .* is not finished"):
        execute_run(STUDENT, tmp_path)
