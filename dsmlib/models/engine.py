"""What a run trains with (models layer): the grouped network, the teacher it reads its targets
from, the optimizer, the training data, the step loop and the ``G`` meter -- built once per
*shape* on the ``graph`` and ``compiled`` steps and rebound to every later run of that shape in
place, so that a CUDA graph captured (or a step compiled) for one run replays for the next.

A captured graph keeps the addresses of every tensor it touches: the weights and their
gradients, SGD's momentum buffers, the batch norms' statistics, the teacher's weights, the
training images and labels, the epoch plan's buffers, ``G``'s images and probes. So an engine
that is reused owns all of them (the data and the teacher are copied in), and rebinding a run
only copies values into them: the run's initial weights (its seed's initialisation, its
teacher's weights, or a checkpoint's), SGD's momentum (zero, which makes the first step equal
a fresh optimizer's, whose buffer starts as the first gradient: there is no dampening), the
images of the run's split, and the seed of ``G``'s probes. A run on a reused engine therefore
gives the numbers of a run on a fresh one; ``tests/models/test_engine.py`` checks that, and
that every replay reads the very tensors its capture read.

Without reuse (the ``eager`` step), an engine is built for each run and reads the data set's
own tensors (no copies).
"""
from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
from torch import Tensor, nn

from .datasets import DataSplit
from .measure import GradNormMeter
from .pipeline import CompiledStep, Member, Step
from .policy import DevicePolicy
from .replay import GraphPool, StepLoop
from .run_config import RunConfig

__all__ = ["Engine", "engine_key", "kernel_settings", "build_engine", "engine_for",
           "zero_momentum", "load_optimizer_in_place"]

# build(config, members) -> a freshly initialised network of config's seed (training.build_model)
Builder = Callable[[RunConfig, int], nn.Module]


@dataclass
class Engine:
    """The per-shape objects of a run (see the module's docstring). ``step.net`` is the
    grouped network being trained; ``owned``: the data and the teacher are the engine's own
    copies (graph and compiled steps), so it can be rebound to later runs."""
    step: Step
    opt: torch.optim.Optimizer
    X: Tensor
    y: Tensor
    loop: StepLoop
    gradnorm: GradNormMeter
    owned: bool

    @property
    def model(self) -> nn.Module:
        return self.step.net


def engine_key(configs: Sequence[RunConfig], data: DataSplit, students: bool,
               policy: DevicePolicy, members: tuple[Member, ...]) -> tuple:
    """Everything a capture or a compilation bakes in besides Python numbers of the optimizer
    (those key the graphs themselves, :meth:`dsmlib.models.replay.StepLoop.baked`): the
    members and their levels, the network's shape, the batch and the passes per epoch (the
    plan's shape), the data set (its augmentation:
    a plan's flips exist or not), shapes and padding, the ``G`` subsample and probes, the
    device policy, whether SGD keeps momentum buffers (a graph captured without them would
    clone the gradient into a new buffer at every replay: no momentum), and the kernel
    settings in force (:func:`kernel_settings`: a replay launches the kernels chosen at its
    capture)."""
    c = configs[0]
    return ("engine", members, c.depth, c.num_classes, c.batch_size, c.passes, c.augment, data.spec,
            tuple(data.X_train.shape), data.X_train.dtype, data.pad, c.n_gradnorm,
            c.gradnorm_probes, students, policy, c.momentum != 0, kernel_settings())


def kernel_settings() -> tuple:
    """Torch's switches that choose kernels (cuDNN autotuning and determinism, deterministic
    algorithms, TF32), as they are now; :func:`dsmlib.models.policy.execution` sets some."""
    return (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic,
            torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.allow_tf32,
            torch.backends.cuda.matmul.allow_tf32)


def build_engine(configs: Sequence[RunConfig], data: DataSplit, teacher: nn.Module | None,
                 policy: DevicePolicy, members: tuple[Member, ...], build: Builder) -> Engine:
    """A new engine for ``configs``; on the ``graph`` and ``compiled`` steps it owns copies
    of the data and of the teacher (so it can be rebound in place to later runs)."""
    c, k_all = configs[0], len(configs)
    owned = policy.reusable
    X, y = ((data.X_train.clone(), data.y_train.clone()) if owned
            else (data.X_train, data.y_train))
    own_teacher = (teacher if teacher is None or not owned else
                   build(c.teacher, 1).eval().requires_grad_(False))
    net = build(c, k_all)
    step = run = Step(net, own_teacher, members, pad=data.pad, augment=c.augment, amp=policy.amp,
                      channels_last=policy.channels_last, dtype=policy.dtype)
    if policy.compiled:
        run = CompiledStep(step, data.device, policy.compile_backend)
        torch._dynamo.mark_static_address(X)   # indexed in place, never copied
        torch._dynamo.mark_static_address(y)
    opt = torch.optim.SGD(net.parameters(), lr=c.lr, momentum=c.momentum,
                          weight_decay=c.weight_decay)
    capture, pool = policy.capture, GraphPool()
    gradnorm = GradNormMeter(net, X[:c.n_gradnorm], k_all, seed=c.seed,
                             n_probes=c.gradnorm_probes, chunk_size=policy.gradnorm_chunk,
                             capture=capture, pool=pool)
    loop = StepLoop(run, net, opt, X, y, k_all, dtype=policy.dtype, capture=capture, pool=pool,
                    static_grads=not policy.compiled)
    return Engine(step, opt, X, y, loop, gradnorm, owned)


def zero_momentum(opt: torch.optim.Optimizer) -> None:
    """Zero SGD's momentum buffers in place (a fresh optimizer's state, as far as its next
    step is concerned: without dampening, ``0 * momentum + g`` is ``g``, a new buffer)."""
    for state in opt.state.values():
        buf = state.get("momentum_buffer")
        if buf is not None:
            buf.zero_()


def load_optimizer_in_place(opt: torch.optim.Optimizer, state_dict: dict[str, Any]) -> None:
    """``opt.load_state_dict(state_dict)``, keeping the tensors of ``opt``'s state where they
    are (values copied into them): a captured step holds their addresses. A buffer that
    ``state_dict`` lacks is zeroed (see :func:`zero_momentum`)."""
    old = {id(p): dict(opt.state[p]) for g in opt.param_groups for p in g["params"]
           if p in opt.state}
    opt.load_state_dict(state_dict)
    for group in opt.param_groups:
        for p in group["params"]:
            for name, mine in old.get(id(p), {}).items():
                if not torch.is_tensor(mine):
                    continue
                new = opt.state[p].get(name)
                if torch.is_tensor(new) and new.shape != mine.shape:
                    raise ValueError(f"optimizer state {name} has the shape {tuple(new.shape)}, "
                                     f"not the {tuple(mine.shape)} of its parameter's buffer")
                mine.copy_(new) if torch.is_tensor(new) else mine.zero_()
                opt.state[p][name] = mine


def engine_for(configs: Sequence[RunConfig], data: DataSplit, teacher: nn.Module | None,
               policy: DevicePolicy, members: tuple[Member, ...], build: Builder,
               cache: dict | None) -> Engine:
    """The engine of a run: from ``cache`` when the last one built for its role (teacher or
    students) has this run's shape (graph or compiled steps), rebound to this run's data,
    teacher, seed and hyper-parameters; else a new one, which replaces that one in ``cache``
    when it can be reused (at most an engine per role stays alive: a grid's runs come data
    set by data set, and an engine's graphs and data copies hold device memory). A teacher
    run's network holds its seed's initialisation; a student's weights and a checkpoint's
    state are set by the caller."""
    c = configs[0]
    role = "students" if teacher is not None else "teacher"
    key = engine_key(configs, data, teacher is not None, policy, members)
    kept = cache.get(role) if cache is not None else None
    engine = kept[1] if kept is not None and kept[0] == key else None
    del kept
    if engine is None:
        reusable = cache is not None and policy.reusable
        if reusable and cache.pop(role, None) is not None:
            gc.collect()   # an engine's parts refer to each other: free its memory (and a
                           # compiled step's code, :class:`CompiledStep`) now
        engine = build_engine(configs, data, teacher, policy, members, build)
        if reusable:
            cache[role] = (key, engine)
    else:
        engine.X.copy_(data.X_train)
        engine.y.copy_(data.y_train)
        engine.gradnorm.rebind(data.X_train[:c.n_gradnorm], c.seed)
        zero_momentum(engine.opt)
        if teacher is None:   # this seed's initialisation (a student starts from its teacher)
            engine.model.load_state_dict(build(c, len(configs)).state_dict())
    if engine.owned and teacher is not None:
        engine.step.teacher.load_state_dict(teacher.state_dict())
    for group in engine.opt.param_groups:
        group.update(lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay)
    return engine
