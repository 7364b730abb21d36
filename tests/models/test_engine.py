"""Trainers reused across runs (dsmlib.models.loop.Trainer), checked on the CPU with a stand-in for a
CUDA graph that is stricter than a plain replay: every replay of one capture must touch the
very tensors (storages) its first replay touched, with the same constants, in the same order --
what a real graph, which keeps the addresses of its capture, would read. With it:

- runs of two seeds, teachers and lockstep students of mixed noise kinds, trained one after the
  other on one kept trainer equal their separate eager runs bit for bit, with nothing captured
  after the first run;
- a run interrupted and resumed on a reused trainer equals its uninterrupted run;
- the check itself fails when a step would read a tensor its capture did not (a replaced
  momentum buffer).

On CUDA, where present, the real capture reused across two seeds matches eager runs."""
from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from dsmlib.models.datasets import load_dataset
from dsmlib.models.loop import (Shape, Trainers, build_model, load_optimizer_in_place,
                                member_optimizer_state, member_state, train_group)
from dsmlib.models.run_config import RunConfig, student_of
from dsmlib.models.step import Member, Step, StepLoop, device_policy, plan_epoch
from helpers import deterministic_fp32

NOT_COMPARED = ("train_s", "eval_s", "gradnorm_s")
TEACHER = RunConfig(dataset="digits", depth=8, epochs=4, batch_size=32, train_limit=64,
                    n_gradnorm=4, gradnorm_probes=2, precision="fp32")
LEVELS = [("none", 0.0), ("gaussian", 4.0), ("symmetric", 0.3), ("symmetric_mean", 0.3)]


class Trace(TorchDispatchMode):
    """Every op run inside: its name, the storages of its *persistent* tensor inputs (those
    first met as an input, not made inside: weights, gradients, buffers, static data) and
    its other arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple] = []
        self.made: set[int] = set()
        self.read: set[int] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if str(func).startswith("profiler."):   # the optimizer's profiling marks: no data
            return func(*args, **kwargs)
        persistent, consts = [], []
        for a in tree_flatten((args, kwargs))[0]:
            if isinstance(a, torch.Tensor):
                ptr = a.untyped_storage().data_ptr()
                if ptr not in self.made:
                    persistent.append(ptr)
                    self.read.add(ptr)
            else:
                consts.append(a)
        out = func(*args, **kwargs)
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.read:
                self.made.add(t.untyped_storage().data_ptr())
        self.ops.append((str(func), tuple(persistent), repr(consts)))
        return out


class CheckedCapture:
    """A capture (``capture(fn, pool) -> (replay, pool)``) that records without running, as a
    CUDA graph does; each replay runs ``fn`` under a :class:`Trace` and must match the first."""

    def __init__(self) -> None:
        self.captures = 0
        self.replays = 0

    def __call__(self, fn, pool):
        self.captures += 1
        first: list = []

        def replay():
            trace = Trace()
            with trace:
                fn()
            self.replays += 1
            if not first:
                first.append(trace.ops)
                return
            assert len(trace.ops) == len(first[0]), "a replay ran other ops than its capture"
            for i, (a, b) in enumerate(zip(first[0], trace.ops)):
                assert a == b, f"op {i} of a replay reads other tensors than its capture: {a} / {b}"
        return replay, pool if pool is not None else "pool"


def graph_policy(capture: CheckedCapture):
    """The CPU's policy with the graph step and the checked capture in place of CUDA's."""
    return dataclasses.replace(device_policy("fp32", torch.device("cpu"), "eager"),
                               step="graph", capture=capture)


def _data(seed: int):
    return load_dataset("digits", split_seed=seed, train_limit=64, device="cpu")


def _same(a: list[list[dict]], b: list[list[dict]]) -> None:
    assert len(a) == len(b)
    for run_a, run_b in zip(a, b):
        assert len(run_a) == len(run_b)
        for row_a, row_b in zip(run_a, run_b):
            for key in row_a:
                if key not in NOT_COMPARED:
                    assert row_a[key] == row_b[key], (key, row_a["epoch"])


def _group(seed: int):
    """A teacher of ``seed`` (its initial weights: enough for a target) and its students."""
    t = dataclasses.replace(TEACHER, seed=seed)
    data = _data(seed)
    return data, t, build_model(t, data).eval(), [student_of(t, k, lv) for k, lv in LEVELS]


@pytest.mark.parametrize("role", ["teacher", "students"])
def test_a_reused_trainer_equals_fresh_eager_runs(role):
    capture, trainers = CheckedCapture(), Trainers()
    policy = graph_policy(capture)
    for seed in (0, 1):
        data, t, t_model, students = _group(seed)
        configs, teacher = ([t], None) if role == "teacher" else (students, t_model)
        eager = train_group(configs, data, teacher=teacher, step="eager")
        graph = train_group(configs, data, teacher=teacher, step=policy, trainers=trainers)
        _same(eager, graph)
        if seed == 0:
            first = capture.captures
            assert first == 4   # the step at each of 3 learning rates, and G's pass
    assert capture.captures == first   # the second seed replayed the first seed's graphs
    assert len(trainers.kept) == 1 and capture.replays > 0


def test_a_new_shape_replaces_the_trainer_of_its_role():
    capture, trainers = CheckedCapture(), Trainers()
    policy = graph_policy(capture)
    data, t, t_model, students = _group(0)
    train_group(students, data, teacher=t_model, step=policy, trainers=trainers, stop_after=1)
    train_group([t], data, step=policy, trainers=trainers, stop_after=1)
    first = trainers.kept["students"]
    assert set(trainers.kept) == {"teacher", "students"}
    train_group(students[:2], data, teacher=t_model, step=policy, trainers=trainers, stop_after=1)
    assert trainers.kept["students"] is not first and set(trainers.kept) == {"teacher", "students"}
    eager = train_group(students, data, teacher=t_model, step="eager")
    again = train_group(students, data, teacher=t_model, step=policy, trainers=trainers)
    _same(eager, again)   # a K = 4 trainer built anew after the K = 2 one, same numbers


def test_a_run_resumed_on_a_reused_trainer_equals_its_whole_run():
    capture, trainers = CheckedCapture(), Trainers()
    policy = graph_policy(capture)
    data0, _, t0, students0 = _group(0)
    train_group(students0, data0, teacher=t0, step=policy, trainers=trainers)   # keeps one
    data, _, t_model, students = _group(1)
    whole = train_group(students, data, teacher=t_model, step="eager")
    saved = {}

    def keep(epoch, histories, model, opt):
        k = len(students)
        saved["states"] = [dict(model=member_state(model.state_dict(), i, k),
                                optimizer=member_optimizer_state(opt.state_dict(), i, k),
                                history=[dict(r) for r in histories[i]]) for i in range(k)]
    train_group(students, data, teacher=t_model, step=policy, trainers=trainers, on_epoch=keep,
                stop_after=1)
    train_group(students0, data0, teacher=t0, step=policy, trainers=trainers)   # one between
    resumed = train_group(students, data, teacher=t_model, step=policy, trainers=trainers,
                          states=saved["states"])
    _same(whole, resumed)
    assert capture.captures == 4


def test_the_check_catches_a_step_that_reads_a_new_tensor():
    data = _data(0)
    net = build_model(TEACHER, data)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    step = Step(net, None, [Member("teacher")], pad=data.pad, augment=False, amp=False,
                channels_last=False, dtype=torch.float32)
    capture = CheckedCapture()
    loop = StepLoop(step, net, opt, data.X_train, data.y_train, 1, dtype=torch.float32,
                    capture=capture)
    plan = plan_epoch(0, 0, n=64, batch_size=8, device=data.device, pad=data.pad, flip=False,
                      augment=False, num_classes=10)
    loop.epoch(plan)                    # 3 eager warm-up steps, a capture, its replays
    assert capture.captures == 1 and capture.replays == plan.steps - 3
    p = next(iter(net.parameters()))
    opt.state[p]["momentum_buffer"] = opt.state[p]["momentum_buffer"].clone()
    with pytest.raises(AssertionError, match="reads other tensors than its capture"):
        loop.epoch(plan)


def test_optimizer_state_loads_in_place():
    net = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(torch.ones(1, 3)).sum().backward()
    opt.step()
    bufs = [opt.state[p]["momentum_buffer"] for p in net.parameters()]
    other = {"state": {i: {"momentum_buffer": torch.full_like(b, 7.0)} for i, b in enumerate(bufs)},
             "param_groups": [dict(opt.state_dict()["param_groups"][0], lr=0.5)]}
    load_optimizer_in_place(opt, other)
    for p, b in zip(net.parameters(), bufs):
        assert opt.state[p]["momentum_buffer"] is b and bool((b == 7.0).all())
    assert opt.param_groups[0]["lr"] == 0.5
    # a buffer the loaded state lacks starts again from zero (a fresh optimizer's first step)
    load_optimizer_in_place(opt, {"state": {}, "param_groups": other["param_groups"]})
    for p, b in zip(net.parameters(), bufs):
        assert opt.state[p]["momentum_buffer"] is b and bool((b == 0).all())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (CUDA graphs)")
def test_graphs_reused_across_seeds_match_eager_on_cuda(monkeypatch):
    """Two seeds through one kept trainer per role on the real graph step, teachers then
    students, against eager runs: deterministic fp32 without TF32, so the replays launch the
    eager path's kernels (rel 1e-6, equal accuracies; see test_replay.py)."""
    trainers = Trainers()
    with deterministic_fp32(monkeypatch):
        for seed in (0, 1):
            data = load_dataset("digits", split_seed=seed, train_limit=192, image_size=16,
                                device="cuda")
            t = dataclasses.replace(TEACHER, seed=seed, epochs=2)
            t_model = build_model(t, data).eval()
            for configs, teacher in (([t], None),
                                     ([student_of(t, k, lv) for k, lv in LEVELS], t_model)):
                eager = train_group(configs, data, teacher=teacher, step="eager")
                graph = train_group(configs, data, teacher=teacher, step="graph",
                                    trainers=trainers)
                for a, b in zip(eager, graph):
                    for key in ("train_objective", "train_loss", "val_loss", "gradnorm"):
                        assert b[-1][key] == pytest.approx(a[-1][key], rel=1e-6), (seed, key)
                    for key in ("train_acc", "val_acc", "test_acc"):
                        assert b[-1][key] == a[-1][key], (seed, key)
    assert set(trainers.kept) == {"teacher", "students"}   # a trainer per role


def test_data_sets_that_augment_differently_get_their_own_trainers():
    """Same shapes, but one data set flips and the other does not: their epoch plans differ
    in kind, so one trainer cannot serve both."""
    data = _data(0)
    other = dataclasses.replace(data, spec=dataclasses.replace(data.spec, flip=not data.spec.flip))
    policy = device_policy("fp32", torch.device("cpu"))
    assert Shape.of([TEACHER], data, False, policy) == \
        Shape.of([TEACHER], dataclasses.replace(data), False, policy)
    assert Shape.of([TEACHER], data, False, policy) != Shape.of([TEACHER], other, False, policy)


def test_momentum_switched_on_gets_a_trainer_that_warms_up():
    """A trainer built for SGD without momentum has no momentum buffers; a graph captured for a
    later run with momentum, without a warm-up, would clone the gradient into a new buffer at
    every replay (no momentum at all). Such a run gets its own trainer, and the eager numbers."""
    capture, trainers = CheckedCapture(), Trainers()
    policy = graph_policy(capture)
    data = _data(0)
    plain = dataclasses.replace(TEACHER, momentum=0.0)
    train_group([plain], data, step=policy, trainers=trainers)
    eager = train_group([TEACHER], data, step="eager")
    again = train_group([TEACHER], data, step=policy, trainers=trainers)
    _same(eager, again)


def test_a_replaced_trainer_is_freed_and_an_eager_run_keeps_it():
    import weakref
    capture, trainers = CheckedCapture(), Trainers()
    policy = graph_policy(capture)
    data, t, t_model, students = _group(0)
    train_group(students, data, teacher=t_model, step=policy, trainers=trainers, stop_after=1)
    old = weakref.ref(trainers.kept["students"].X)
    train_group(students, data, teacher=t_model, step="eager", trainers=trainers, stop_after=1)
    assert old() is not None                # an eager run neither uses nor drops it
    train_group(students[:2], data, teacher=t_model, step=policy, trainers=trainers,
                stop_after=1)
    assert old() is None                    # replaced: its memory is free at once


def test_kernel_settings_are_part_of_the_shape(monkeypatch):
    """A replay launches the kernels chosen at its capture: a run under other settings
    (deterministic kernels, TF32) must not replay another's graphs."""
    data = _data(0)
    policy = device_policy("fp32", torch.device("cpu"))
    before = Shape.of([TEACHER], data, False, policy)
    monkeypatch.setattr(torch.backends.cudnn, "deterministic",
                        not torch.backends.cudnn.deterministic)
    assert Shape.of([TEACHER], data, False, policy) != before


def test_compiled_trainers_give_eager_numbers_and_drop_their_code_when_replaced():
    """The compiled step (traced by dynamo without compiling: ``compile_backend="eager"``):
    lockstep groups of four shapes on one :class:`Trainers` give the eager numbers, and the
    compiled code of each replaced trainer is dropped (dynamo would otherwise keep it for the life
    of the process), as is that of a trainer dropped with its keeper."""
    import gc
    import weakref
    policy = dataclasses.replace(device_policy("fp32", torch.device("cpu"), "compiled"),
                                 compile_backend="eager")
    trainers = Trainers()
    data, _, t_model, students = _group(0)
    codes = []
    for k in range(1, 5):
        eager = train_group(students[:k], data, teacher=t_model, step="eager", stop_after=1)
        compiled = train_group(students[:k], data, teacher=t_model, step=policy,
                               trainers=trainers, stop_after=1)
        for run_e, run_c in zip(eager, compiled):
            for key in ("train_objective", "train_loss", "val_loss", "gradnorm"):
                assert run_c[-1][key] == pytest.approx(run_e[-1][key], rel=1e-6), key
        codes.append(weakref.ref(trainers.kept["students"].loop.run.code))
    gc.collect()
    # (dynamo keeps the first code it compiles in a process for good, a one-off: not counted)
    assert [ref() is not None for ref in codes[1:]] == [False, False, True]
    trainers.kept.clear()   # a trainer dropped without being replaced: its code goes with it
    gc.collect()
    assert codes[-1]() is None
