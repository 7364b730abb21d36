"""Packed checkpoints (models layer): a lockstep member's weights and SGD state as one flat
tensor per dtype, written after every epoch.

``torch.save`` spends tens of microseconds of Python on each tensor it pickles, whatever its
size, and a ResNet-56 has 332 tensors in its state dict and 170 momentum buffers: written one
by one for every member of a lockstep group, after every epoch, they can take longer than the
group's training epoch on a GPU (and on CUDA each would be cloned and copied to the host, one
synchronising copy at a time). :func:`pack_members` concatenates every member's slice of every
tensor (:mod:`dsmlib.models.sec5_distillation.lockstep`: a member is a slice along the first axis) into one flat
tensor per member and dtype on their device and copies that to the host; the state's
structure, with a small marker in place of each tensor, is pickled once as plain Python.
``benchmarks/bench_distill.py`` measures the gain (row ``distill_checkpoint_k10``). Each
tensor comes back with the strides ``clone()`` gives its member's slice, channels-last
included, so a resumed run's SGD momentum buffers are laid out as an uninterrupted run's
(SGD's fast multi-tensor path on CUDA needs matching layouts).

:func:`unpack` gives back exactly what :func:`dsmlib.models.sec5_distillation.lockstep.member_state` and
``member_optimizer_state`` give (every tensor its own, with the same strides, on the requested
device);
``tests/models/test_checkpoints.py`` checks that bit for bit. A checkpoint that holds plain
state dicts (written before packing) is read as it was.
"""
from __future__ import annotations

import math
import pickle
from typing import Any

import torch
from torch import Tensor

from ...foundation.checks import check_int

__all__ = ["PACKED", "pack_members", "unpack", "is_packed"]

PACKED = "dsmlib-packed-2"
_READABLE = (PACKED, "dsmlib-packed-1")   # -1: no strides (tensors came back row-major)
_LEAF = "dsmlib-packed-tensor"   # a tensor's place: (_LEAF, dtype, offset, shape, strides)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _is_marker(node: Any) -> bool:
    return isinstance(node, tuple) and len(node) in (4, 5) and node[0] == _LEAF


def _walk(tree: Any, is_leaf, leaf) -> Any:
    """``tree`` with ``leaf(x)`` in place of each ``x`` that ``is_leaf`` (dicts, lists and
    tuples kept)."""
    if is_leaf(tree):
        return leaf(tree)
    if isinstance(tree, dict):
        return {key: _walk(value, is_leaf, leaf) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_walk(value, is_leaf, leaf) for value in tree)
    return tree


def pack_members(tree: Any, members: int = 1) -> list[dict[str, Any]]:
    """Every member's part of ``tree`` (a state dict, an SGD state dict, or a dict of them, of
    a ``members``-member grouped module), packed: for member ``k``, ``{"format", "tree",
    "flat"}`` with one flat host tensor per dtype and the tree's structure pickled once. A
    tensor with a first axis gives its ``k``-th of ``members`` slices; a scalar (batch norm's
    shared step count) is the same for every member."""
    members = check_int("members", members, minimum=1)
    parts: dict[str, list[Tensor]] = {}
    sizes: dict[str, int] = {}

    def leaf(t: Tensor) -> tuple:
        if t.ndim and t.shape[0] % members:
            raise ValueError(f"a tensor of shape {tuple(t.shape)} does not split into "
                             f"{members} members")
        t = t.detach()
        # row k: member k's slice, flattened (reshape follows the logical order, so this
        # holds for channels-last tensors too)
        rows = t.reshape(1, 1).expand(members, 1) if t.ndim == 0 else t.reshape(members, -1)
        name = _dtype_name(t.dtype)
        offset = sizes.get(name, 0)
        parts.setdefault(name, []).append(rows)
        sizes[name] = offset + rows.shape[1]
        part = t if t.ndim == 0 else t.chunk(members, dim=0)[0]
        # the layout clone() would give a member's slice (channels-last stays channels-last:
        # SGD's fast multi-tensor path needs a momentum buffer laid out as its parameter)
        stride = torch.empty_like(part, device="meta").stride()
        return (_LEAF, name, offset, tuple(part.shape), stride)

    structure = pickle.dumps(_walk(tree, torch.is_tensor, leaf))
    # one concatenation per member and dtype, so that each member's flat tensor has a storage
    # of its own (torch.save writes a view's whole storage)
    return [{"format": PACKED, "tree": structure,
             "flat": {name: torch.cat([r[k] for r in rows]).cpu() for name, rows in parts.items()}}
            for k in range(members)]


def is_packed(obj: Any) -> bool:
    """A packed state this version reads (this format, or the first one)."""
    return isinstance(obj, dict) and obj.get("format") in _READABLE


def unpack(packed: dict[str, Any], device: Any = "cpu") -> Any:
    """The tree :func:`pack_members` packed, every tensor its own copy on ``device``, laid out as
    ``clone()`` lays out its member's slice (contiguous, or channels-last)."""
    if not is_packed(packed):
        raise ValueError(f"not a packed state (format {packed.get('format')!r}, expected "
                         f"{PACKED!r})" if isinstance(packed, dict) else
                         f"not a packed state (a {type(packed).__name__})")
    flat = {name: t.to(device) for name, t in packed["flat"].items()}

    def restore(marker: tuple) -> Tensor:
        _, name, offset, shape, *stride = marker
        values = flat[name][offset:offset + math.prod(shape)].view(shape)
        if not stride:   # the first format
            return values.clone()
        return torch.empty_strided(shape, stride[0], dtype=values.dtype,
                                   device=values.device).copy_(values)

    return _walk(pickle.loads(packed["tree"]), _is_marker, restore)
