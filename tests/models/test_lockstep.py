"""Students in lockstep equal their separate runs: the grouped network is its members, the
epoch plan draws what a per-step loop draws, G of every member comes out of one pass, and a
lockstep group trained (and interrupted, and resumed) gives each student the numbers of its
own run, to 1e-6 relative in float64 and 1e-4 in float32."""
from __future__ import annotations

import math

import pytest
import torch

from dsmlib.foundation.rng import as_torch_generator
from dsmlib.models.datasets import load_dataset
from dsmlib.models.datasets import apply_augment, augment_draws
from dsmlib.models.lockstep import (lockstep_key, member_optimizer_state, member_state,
                                    stack_optimizer_states, stack_states)
from dsmlib.models.networks import cifar_resnet
from dsmlib.models.run_config import RunConfig, student_of
from dsmlib.models.runs import FINAL, lockstep_groups, run_dir, run_many, run_status
from dsmlib.models.loop import build_model, plan_epoch, train, train_group
from dsmlib.theory.gradient_norm import gradient_norm_probe, gradient_norm_probe_members
from dsmlib.theory.label_noise import GaussianNoise, SymmetricSwapNoise
from tiny_runs import tiny_teacher

NOT_COMPARED = ("train_s", "eval_s", "gradnorm_s", "lockstep")


def members(k: int, device, dtype=torch.float64, shortcut="A"):
    return [cifar_resnet(8, 5, in_channels=2, seed=s, device=device, dtype=dtype,
                         shortcut=shortcut).eval() for s in range(k)]


@pytest.mark.parametrize("shortcut", ["A", "B"])
def test_grouped_network_is_its_members(device, shortcut):
    nets = members(3, device, shortcut=shortcut)
    group = cifar_resnet(8, 5, in_channels=2, members=3, device=device, dtype=torch.float64,
                         shortcut=shortcut).eval()
    group.load_state_dict(stack_states([m.state_dict() for m in nets]))
    x = torch.randn(4, 2, 12, 12, generator=torch.Generator().manual_seed(0),
                    dtype=torch.float64).to(device)
    out = group(x)
    assert out.shape == (4, 3, 5)
    for k, m in enumerate(nets):
        torch.testing.assert_close(out[:, k], m(x), rtol=1e-10, atol=1e-10)
        back = member_state(group.state_dict(), k, 3)
        assert all(torch.equal(back[n], t) for n, t in m.state_dict().items())


def test_optimizer_states_stack_and_split():
    nets = members(2, "cpu")
    opts = []
    for m in nets:
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        m.train()
        m(torch.randn(3, 2, 8, 8, dtype=torch.float64,
                      generator=torch.Generator().manual_seed(len(opts)))).sum().backward()
        opt.step()
        opts.append(opt.state_dict())
    both = stack_optimizer_states(opts)
    for k in range(2):
        mine = member_optimizer_state(both, k, 2)
        for i, st in opts[k]["state"].items():
            assert torch.equal(mine["state"][i]["momentum_buffer"], st["momentum_buffer"])
    opts[1]["param_groups"][0]["lr"] = 0.5
    with pytest.raises(ValueError, match="cannot train in lockstep"):
        stack_optimizer_states(opts)


def test_epoch_plan_draws_what_a_per_step_loop_draws(device):
    plan = plan_epoch(7, 3, n=50, batch_size=8, device=device, pad=2, flip=True, augment=True,
                      num_classes=4, kinds={"gaussian", "symmetric"})
    assert plan.steps == 6 and plan.batches.idx.shape == (6, 8)
    from dsmlib.foundation.rng import child_seed
    from dsmlib.models.loop import STREAM_DATA, STREAM_NOISE
    g = as_torch_generator(child_seed(7, STREAM_DATA, 3), device)
    assert torch.equal(torch.randperm(50, generator=g, device=device)[:48].view(6, 8), plan.batches.idx)
    gn = as_torch_generator(child_seed(7, STREAM_NOISE, 3), device)
    gs = as_torch_generator(child_seed(7, STREAM_NOISE, 3), device)
    y = torch.randn(8, 4, device=device, generator=as_torch_generator(0, device))
    for s in range(6):
        dy, dx, fl = augment_draws(8, g, pad=2, flip=True)
        assert torch.equal(dy, plan.batches.dy[s]) and torch.equal(dx, plan.batches.dx[s])
        assert torch.equal(fl, plan.batches.flips[s])
        assert torch.equal(GaussianNoise(2.0).draw(y, gn), GaussianNoise(2.0).apply(y, plan.batches.gauss[s]))
        swap = SymmetricSwapNoise(0.3)
        assert torch.equal(swap.draw(y, gs), swap.apply(y, (plan.batches.swap_u[s], plan.batches.swap_r[s])))
    x = torch.arange(2 * 3 * 5 * 5, dtype=torch.float32, device=device).view(2, 3, 5, 5)
    same = apply_augment(x, torch.tensor([1, 1], device=device), torch.tensor([1, 1], device=device),
                         None, pad=1)
    assert torch.equal(same, x)   # offset = pad: the crop of the padded image is the image


def test_members_gradient_norms_in_one_pass_equal_separate_estimates(device):
    nets = members(3, device)
    group = cifar_resnet(8, 5, in_channels=2, members=3, device=device, dtype=torch.float64).eval()
    group.load_state_dict(stack_states([m.state_dict() for m in nets]))
    X = torch.randn(6, 2, 8, 8, generator=torch.Generator().manual_seed(1),
                    dtype=torch.float64).to(device)
    ests = gradient_norm_probe_members(group, X, 3, n_probes=3, seed=11, chunk_size=4)
    for m, est in zip(nets, ests):
        one = gradient_norm_probe(m, X, n_probes=3, seed=11, chunk_size=4)
        assert est.estimate == pytest.approx(one.estimate, rel=1e-9)
        assert est.standard_error == pytest.approx(one.standard_error, rel=1e-9)
        assert est.dof == pytest.approx(one.dof, rel=1e-9)
    with pytest.raises(ValueError, match="do not split into 4 members"):
        gradient_norm_probe_members(group, X, 4)


TEACHER = tiny_teacher(n_gradnorm=6)


def _group(precision: str) -> list[RunConfig]:
    t = RunConfig(**{**TEACHER.to_dict(), "precision": precision})
    return [student_of(t, "none", 0.0), student_of(t, "gaussian", 4.0),
            student_of(t, "symmetric", 0.3), student_of(t, "symmetric_mean", 0.3),
            student_of(t, "hinton", 4.0)]


def _assert_rows_close(a: list[dict], b: list[dict], rtol: float) -> None:
    assert len(a) == len(b)
    for ra, rb in zip(a, b):
        assert set(ra) == set(rb)
        for k, v in ra.items():
            if k in NOT_COMPARED or v is None:
                assert k in NOT_COMPARED or rb[k] is None
                continue
            assert math.isclose(v, rb[k], rel_tol=rtol, abs_tol=rtol * 1e-3), (k, v, rb[k])


@pytest.mark.parametrize("precision, rtol", [("fp64", 1e-6), ("fp32", 1e-4)])
def test_lockstep_students_equal_their_separate_runs(precision, rtol):
    data = load_dataset("digits", train_limit=96, device="cpu")
    configs = _group(precision)
    t_model = build_model(configs[0].teacher, data).eval()   # an untrained teacher will do
    finals = {}

    def keep(epoch, histories, model, opt):
        finals["group"] = {k: v.clone() for k, v in model.state_dict().items()}
    together = train_group(configs, data, teacher=t_model, on_epoch=keep)
    group_state = finals["group"]
    for k, c in enumerate(configs):
        def keep_one(epoch, history, model, opt):
            finals[k] = {n: v.clone() for n, v in model.state_dict().items()}
        alone = train(c, data, teacher=t_model, on_epoch=keep_one)
        _assert_rows_close(together[k], alone, rtol)
        mine = member_state(group_state, k, len(configs))
        for name, t in finals[k].items():
            if t.is_floating_point():
                torch.testing.assert_close(mine[name], t, rtol=rtol, atol=rtol * 1e-2)
    # the members really differ: the noise acted, and the control is not the noiseless student
    assert len({round(h[-1]["train_objective"], 6) for h in together}) == len(configs)
    assert {h[-1]["lockstep"] for h in together} == {len(configs)}


def test_interrupted_lockstep_group_resumes_exactly(tmp_path):
    configs = _group("fp32")
    everything = [configs[0].teacher] + configs
    assert [len(g) for g in lockstep_groups(everything)] == [1, 5]
    assert len({lockstep_key(c) for c in configs}) == 1
    ref = run_many(everything, tmp_path / "a", threads=1)
    run_many(everything[:1], tmp_path / "b", threads=1)
    run_many(configs, tmp_path / "b", threads=1, stop_after=1)
    assert {run_status(c, tmp_path / "b") for c in configs} == {("partial", 1)}
    # one member resumed alone first: the others then catch up as a smaller group
    run_many(configs[1:2], tmp_path / "b", threads=1)
    res = run_many(everything, tmp_path / "b", threads=1)
    for r, s in zip(ref, res):
        assert s.done
        _assert_rows_close(r.history, s.history, 1e-6)
    for c in configs:
        a = torch.load(run_dir(c, tmp_path / "a") / FINAL)
        b = torch.load(run_dir(c, tmp_path / "b") / FINAL)
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-8)
    # separate runs (lockstep off) agree with the group as well
    alone = run_many(everything, tmp_path / "c", threads=1, lockstep=False)
    for r, s in zip(ref, alone):
        _assert_rows_close(r.history, s.history, 1e-4)
