"""Packed checkpoints: a member's packed state unpacks to exactly what the state-dict slicing
of :mod:`dsmlib.models.sec5_distillation.lockstep` gives, and a checkpoint written before packing (plain state
dicts) still resumes a run to the numbers of an uninterrupted one."""
from __future__ import annotations

import pytest
import torch

import dataclasses

from dsmlib.models.sec5_distillation.checkpoints import PACKED, is_packed, pack_members, unpack
from dsmlib.models.sec5_distillation.datasets import load_dataset
from dsmlib.models.sec5_distillation.recipe import PAPER
from dsmlib.models.sec5_distillation.device import device_policy
from dsmlib.models.sec5_distillation.lockstep import member_optimizer_state, member_state
from dsmlib.models.sec5_distillation.loop import train_group
from dsmlib.models.networks import cifar_resnet
from dsmlib.models.sec5_distillation.runs import CHECKPOINT, execute_run, load_checkpoint, run_dir
from tiny_runs import tiny_teacher

TIMING = ("train_s", "eval_s", "gradnorm_s")


def group_after_a_step(device, dtype, members=3, channels_last=False):
    """A grouped network (channels-last, as CUDA runs keep it, if asked) and its SGD state
    after one step with momentum (buffers laid out as their parameters)."""
    net = cifar_resnet(8, 5, in_channels=2, members=members, seed=0, device=device, dtype=dtype,
                       shortcut="B")   # 1x1 convolutions: strides of size-1 dimensions
    if channels_last:
        net = net.to(memory_format=torch.channels_last)
    opt = PAPER.optimizer(net.parameters())
    x = torch.randn(6, 2, 8, 8, generator=torch.Generator().manual_seed(1), dtype=dtype)
    net(x.to(device)).square().sum().backward()
    opt.step()
    return net.state_dict(), opt.state_dict()


def assert_identical(a, b):
    """The same tree: same keys in the same order, equal non-tensors, tensors equal bit for bit
    with the same dtype, shape, strides and device."""
    if torch.is_tensor(a):
        assert torch.is_tensor(b)
        assert (a.dtype, a.shape, a.stride(), a.device) == (b.dtype, b.shape, b.stride(), b.device)
        assert torch.equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            assert_identical(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_identical(x, y)
    else:
        assert a == b


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("channels_last", [False, True])
def test_packed_member_unpacks_to_its_sliced_state_dicts(device, dtype, channels_last):
    state, opt_state = group_after_a_step(device, dtype, channels_last=channels_last)
    assert any(t.ndim == 0 and t.dtype == torch.int64 for t in state.values())   # BN counts
    if channels_last:
        assert any(not t.is_contiguous() for t in state.values())
    for k in range(3):
        packed = pack_members(dict(model=state, optimizer=opt_state), 3)[k]
        assert is_packed(packed) and packed["format"] == PACKED
        assert {t.device.type for t in packed["flat"].values()} == {"cpu"}
        assert set(packed["flat"]) == {str(dtype).removeprefix("torch."), "int64"}
        back = unpack(packed, device)
        assert_identical(dict(model=member_state(state, k, 3),
                              optimizer=member_optimizer_state(opt_state, k, 3)), back)
    # a single network packs whole
    whole = unpack(pack_members(state)[0], device)
    assert_identical({n: t.clone() for n, t in state.items()}, whole)
    # a slice that is not dense (a transposed tensor's rows) comes back laid out as clone() does
    odd = {"w": torch.arange(24.0, device=device).view(4, 6).t()}
    assert_identical(member_state(odd, 1, 2), unpack(pack_members(odd, 2)[1], device))


def test_packed_tensors_do_not_share_memory():
    """Every unpacked tensor owns its storage: none is a view of the packed flat buffers (views
    of one buffer never overlap, so writing to one and reading another would not tell)."""
    state, _ = group_after_a_step("cpu", torch.float64)
    packed = pack_members(state, 3)[1]
    flat_before = {k: t.clone() for k, t in packed["flat"].items()}
    back = unpack(packed)
    tensors = [t for t in back.values() if t.numel()]
    storages = {t.untyped_storage().data_ptr() for t in tensors}
    assert len(storages) == len(tensors)
    assert not storages & {t.untyped_storage().data_ptr() for t in packed["flat"].values()}
    first, second = tensors[:2]
    first.add_(1.0)
    torch.testing.assert_close(second, member_state(state, 1, 3)[list(back)[1]], rtol=0, atol=0)
    for k, t in packed["flat"].items():
        torch.testing.assert_close(t, flat_before[k], rtol=0, atol=0)


def test_bad_input_is_a_clear_error():
    state, _ = group_after_a_step("cpu", torch.float32)
    with pytest.raises(ValueError, match="members must be >= 1"):
        pack_members(state, 0)
    with pytest.raises(ValueError, match="does not split into 4 members"):
        pack_members(state, 4)
    with pytest.raises(ValueError, match="not a packed state"):
        unpack({"model": state})


def test_the_first_packed_format_still_reads():
    """Checkpoints of the first packed format (no strides) unpack to the same values,
    row-major, as that version gave them."""
    import pickle
    state, opt_state = group_after_a_step("cpu", torch.float32, channels_last=True)
    packed = pack_members(dict(model=state, optimizer=opt_state), 3)[2]

    def drop_strides(node):
        if isinstance(node, tuple) and len(node) == 5 and node[0] == "dsmlib-packed-tensor":
            return node[:4]
        if isinstance(node, dict):
            return {key: drop_strides(value) for key, value in node.items()}
        return type(node)(drop_strides(v) for v in node) if isinstance(node, (list, tuple)) else node
    first = dict(packed, format="dsmlib-packed-1",
                 tree=pickle.dumps(drop_strides(pickle.loads(packed["tree"]))))
    assert is_packed(first)
    old, new = unpack(first), unpack(packed)
    assert all(t.is_contiguous() for t in old["model"].values())
    assert all(torch.equal(old["model"][n], t) for n, t in new["model"].items())


def test_a_checkpoint_in_an_unknown_format_is_a_clear_error(tmp_path):
    config = tiny_teacher()
    execute_run(config, tmp_path, stop_after=1)
    path = run_dir(config, tmp_path) / CHECKPOINT
    raw = torch.load(path, weights_only=False)
    for state, shown in (({"format": "dsmlib-packed-99"}, "'dsmlib-packed-99'"), ([1], "'list'")):
        torch.save(dict(raw, state=state), path)
        with pytest.raises(ValueError, match=f"format this version does not read \\({shown}\\)"):
            load_checkpoint(path, config, torch.device("cpu"))


def test_checkpoint_written_before_packing_still_resumes(tmp_path):
    """A run interrupted after one epoch, its checkpoint rewritten in the old layout (model and
    optimizer as plain state dicts), resumes to the numbers of the uninterrupted run."""
    config = tiny_teacher()
    whole = execute_run(config, tmp_path / "a", deterministic=True)
    execute_run(config, tmp_path / "b", deterministic=True, stop_after=1)
    path = run_dir(config, tmp_path / "b") / CHECKPOINT
    raw = torch.load(path, weights_only=False)
    assert is_packed(raw["state"]) and "model" not in raw
    old = load_checkpoint(path, config, torch.device("cpu"))
    assert "state" not in old and set(old) >= {"model", "optimizer", "epoch", "history"}
    torch.save(old, path)
    resumed = execute_run(config, tmp_path / "b", deterministic=True)
    strip = [[{k: v for k, v in row.items() if k not in TIMING} for row in r.history]
             for r in (whole, resumed)]
    assert resumed.done and strip[0] == strip[1]


def test_resumed_momentum_is_laid_out_as_in_an_uninterrupted_run(tmp_path):
    """Channels-last weights (as on CUDA): after a resume from a packed checkpoint, every SGD
    momentum buffer has the strides it has in an uninterrupted run, its parameter's (SGD's fast
    multi-tensor path on CUDA needs that; a row-major buffer would fall back to one kernel per
    tensor at every step)."""
    policy = dataclasses.replace(device_policy("fp32", torch.device("cpu"), "eager"),
                                 channels_last=True)
    config = tiny_teacher()
    data = load_dataset(config.dataset, split_seed=config.split_seed,
                        train_limit=config.train_limit)

    def layouts(states=None) -> list:
        seen = []
        train_group([config], data, states=states, step=policy,
                    on_epoch=lambda e, h, model, opt: seen.append(
                        [opt.state[p]["momentum_buffer"].stride() for p in model.parameters()]))
        return seen[-1]
    whole = layouts()
    execute_run(config, tmp_path, stop_after=1, step=policy)
    state = load_checkpoint(run_dir(config, tmp_path) / CHECKPOINT, config, torch.device("cpu"))
    assert layouts([state]) == whole
    contiguous = [p.stride() for p in cifar_resnet(8, 10, in_channels=1).parameters()]
    assert whole != contiguous   # channels-last buffers: the check can fail
