"""Runs that survive (models layer): each run is one job keyed by its full configuration.

A run lives in ``root/<config.key()>/``:

- ``config.json``: the configuration (written first; a directory never changes owner);
- ``checkpoint.pt``: model, optimizer, finished epochs and metrics, rewritten atomically after
  every epoch, so an interrupted run loses at most the epoch in flight (model and optimizer
  packed, :mod:`dsmlib.models.sec5_distillation.checkpoints`);
- ``metrics.json``: the metrics so far (for people and for :func:`load_record`);
- ``final.pt`` and ``done.json``: the final weights and metrics, once the last epoch is done
  (the checkpoint is then deleted).

The students of one teacher train in lockstep (:func:`execute_group`, and :func:`run_many` by
default): one grouped network, one pass per batch. Runs that differ only in their seed -- the
teachers of a setting, or the students of several of its teachers -- can train in one group too,
each lane on its own data split, batches and teacher (:func:`lockstep_groups` with
``members``: how many runs a group may hold, :mod:`dsmlib.models.sec5_distillation.grouping` measures it). Each
run still has its own directory, key, checkpoints and record, in exactly the layout of a
separate run, so groups and separate runs resume from each other's checkpoints.

:func:`execute_run` skips a finished run, resumes an unfinished one from its checkpoint, and
refuses, with the differing fields, a checkpoint written for another configuration (or on a
device with another precision). Students load their teacher's ``final.pt``.
"""
from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import torch
from torch import nn

from ...foundation.checks import check_int
from ...foundation.files import atomic_write
from ...foundation.rng import resolve_device
from .datasets import DataSplit, load_dataset
from .checkpoints import is_packed, pack_members, unpack
from .device import execution, resolved_precision
from .graph import Trainers
from .lockstep import across_seeds_key, lanes_of, lockstep_key, member_state
from .loop import train_group
from .nets import build_model
from .run_config import RunConfig

__all__ = ["CONFIG", "CHECKPOINT", "METRICS", "FINAL", "DONE", "RunRecord", "Loaded", "run_dir",
           "run_status", "load_record", "load_checkpoint", "epoch_saver", "execute_run",
           "execute_group", "lockstep_groups", "run_groups", "run_many", "torch_threads"]

CONFIG, CHECKPOINT, METRICS, FINAL, DONE = ("config.json", "checkpoint.pt", "metrics.json",
                                            "final.pt", "done.json")


@dataclass
class RunRecord:
    """A run's configuration, its metrics rows so far (row 0 is before training) and whether
    it is finished."""
    config: RunConfig
    history: list[dict[str, float]]
    done: bool


@dataclass
class Loaded:
    """What the runs of one process share: data sets by split and device, finished teachers by
    key, and the :class:`~dsmlib.models.sec5_distillation.graph.Trainers` kept for the next run of their shape."""
    data: dict[tuple, DataSplit] = field(default_factory=dict)
    teachers: dict[str, nn.Module] = field(default_factory=dict)
    trainers: Trainers = field(default_factory=Trainers)


def run_dir(config: RunConfig, root: str | Path) -> Path:
    return Path(root) / config.key()


def _write_json(path: Path, obj: Any) -> None:
    atomic_write(path, lambda p: p.write_text(json.dumps(obj, indent=1)))


def run_status(config: RunConfig, root: str | Path) -> tuple[str, int]:
    """``("done" | "partial" | "new", epochs finished)``."""
    rec = load_record(config, root)
    if rec is None:
        return "new", 0
    return ("done" if rec.done else "partial"), len(rec.history) - 1


def _check_owner(config: RunConfig, d: Path) -> None:
    path = d / CONFIG
    if path.exists():
        other = RunConfig.from_dict(json.loads(path.read_text()))
        if other != config:
            raise ValueError(f"{d} belongs to another configuration ({'; '.join(config.differences(other))})")


def load_record(config: RunConfig, root: str | Path) -> RunRecord | None:
    """The finished or partial metrics of ``config`` under ``root`` (None if never started)."""
    d = run_dir(config, root)
    _check_owner(config, d)
    if (d / DONE).exists():
        return RunRecord(config, json.loads((d / DONE).read_text())["history"], True)
    if (d / METRICS).exists():
        return RunRecord(config, json.loads((d / METRICS).read_text())["history"], False)
    return None


def load_checkpoint(path: str | Path, config: RunConfig, device: torch.device) -> dict[str, Any]:
    """A checkpoint to resume ``config`` from (``model`` and ``optimizer`` as state dicts on
    ``device``); refused, with the reason, if it was written for another configuration or with
    another precision."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"checkpoint {path} does not exist")
    ck = torch.load(path, map_location=device, weights_only=False)
    theirs = RunConfig.from_dict(ck["config"])
    if theirs != config:
        raise ValueError(f"refusing to resume from {path}: it was written for another configuration "
                         f"({'; '.join(config.differences(theirs))})")
    mine = resolved_precision(config.precision, device)
    if ck["precision"] != mine:
        raise ValueError(f"refusing to resume from {path}: it was trained in {ck['precision']}, "
                         f"and this device ({device}) would continue in {mine}; set precision "
                         f"explicitly or resume on a {ck['device_type']} device")
    if "state" in ck:   # packed (else model and optimizer as state dicts)
        if not is_packed(ck["state"]):
            fmt = (ck["state"].get("format") if isinstance(ck["state"], dict)
                   else type(ck["state"]).__name__)
            raise ValueError(f"cannot resume from {path}: its state is in a format this version "
                             f"does not read ({fmt!r})")
        ck.update(unpack(ck.pop("state"), device))
    return ck


def _teacher_model(config: RunConfig, root: Path, data: DataSplit,
                   cache: dict[str, nn.Module]) -> nn.Module:
    key = config.key()
    if key not in cache:
        path = run_dir(config, root) / FINAL
        if not path.exists():
            raise ValueError(f"the teacher run {config.label()} ({run_dir(config, root)}) is not "
                             "finished: run the teachers of a grid before its students")
        model = build_model(config, data)
        model.load_state_dict(torch.load(path, map_location=data.device, weights_only=True))
        cache[key] = model.eval()
    return cache[key]


def _data(config: RunConfig, cache: dict, *, data_dir: str | Path, download: bool,
          device: torch.device) -> DataSplit:
    options = config.data_options()
    key = (config.dataset, *options.values(), str(device))
    if key not in cache:
        cache[key] = load_dataset(config.dataset, data_dir=data_dir, download=download,
                                  device=device, **options)
    return cache[key]


def execute_run(config: RunConfig, root: str | Path, *, resume_from: str | Path | None = None,
                **options: Any) -> RunRecord:
    """Run ``config`` to its end (or for ``stop_after`` more epochs), skipping it if finished
    and resuming it if a checkpoint exists (or from ``resume_from``). Returns its record.
    ``options``: those of :func:`execute_group`."""
    return execute_group([config], root, resume_from=None if resume_from is None
                         else {config.key(): resume_from}, **options)[0]


def epoch_saver(configs: Sequence[RunConfig], dirs: Sequence[Path], precision: str,
                dev: torch.device):
    """``train_group``'s ``on_epoch``: after each epoch, every member's metrics and checkpoint
    (or final weights) in its own run directory, in a separate run's layout."""
    def save(epoch: int, histories: list, model: nn.Module, opt: torch.optim.Optimizer) -> None:
        k_all = len(configs)
        state, opt_state = model.state_dict(), opt.state_dict()
        packed = (None if all(epoch == c.epochs for c in configs) else
                  pack_members(dict(model=state, optimizer=opt_state), k_all))
        for k, (config, d, history) in enumerate(zip(configs, dirs, histories)):
            _write_json(d / METRICS, {"config": config.to_dict(), "history": history})
            if epoch == config.epochs:   # final weights first: done.json means all is there
                weights = member_state(state, k, k_all)
                atomic_write(d / FINAL, lambda p: torch.save(weights, p))
                _write_json(d / DONE, {"config": config.to_dict(), "history": history,
                                       "precision": precision, "device": str(dev)})
                continue
            ck = dict(config=config.to_dict(), precision=precision, device_type=dev.type,
                      epoch=epoch, history=history,
                      state=packed[k])
            atomic_write(d / CHECKPOINT, lambda p: torch.save(ck, p))
    return save


def _pending(configs: Sequence[RunConfig], root: Path, dev: torch.device,
             resume_from: dict[str, str | Path]
             ) -> tuple[dict[str, RunRecord], dict[int, list[tuple[RunConfig, dict | None]]]]:
    """The finished runs' records, and the others by the epoch they resume from (0: new),
    each with its checkpoint (None: new); every unfinished run's directory and config
    written."""
    records: dict[str, RunRecord] = {}
    pending: dict[int, list[tuple[RunConfig, dict | None]]] = {}
    for config in configs:
        rec = load_record(config, root)
        if rec is not None and rec.done:
            records[config.key()] = rec
            continue
        d = run_dir(config, root)
        d.mkdir(parents=True, exist_ok=True)
        _write_json(d / CONFIG, config.to_dict())
        ck_path = Path(resume_from.get(config.key(), d / CHECKPOINT))
        state = (load_checkpoint(ck_path, config, dev)
                 if ck_path.exists() or config.key() in resume_from else None)
        pending.setdefault(0 if state is None else state["epoch"], []).append((config, state))
    return records, pending


def _lane_inputs(todo: Sequence[RunConfig], root: Path, loaded: Loaded, dev: torch.device,
                 data_dir: str | Path, download: bool) -> tuple[list[DataSplit], list[nn.Module]]:
    """Each lane's data split and, for students, its teacher (loaded once per process)."""
    lanes = lanes_of(todo)
    firsts = [todo[lanes.index(lane)] for lane in range(max(lanes) + 1)]
    splits = [_data(c, loaded.data, data_dir=data_dir, download=download, device=dev)
              for c in firsts]
    teachers = [] if firsts[0].teacher is None else [
        _teacher_model(c.teacher, root, d, loaded.teachers) for c, d in zip(firsts, splits)]
    return splits, teachers


def execute_group(configs: Sequence[RunConfig], root: str | Path, *,
                  data_dir: str | Path = "data", download: bool = False, device: Any = "auto",
                  deterministic: bool = False, progress: bool = False,
                  stop_after: int | None = None, resume_from: dict[str, str | Path] | None = None,
                  loaded: Loaded | None = None, step: str = "auto") -> list[RunRecord]:
    """Run ``configs`` -- one teacher, students of one teacher, or several lanes of either that
    differ only in their seed (one group, :func:`lockstep_groups`) -- together: finished runs
    are skipped; the others resume from their checkpoints (``resume_from``: run key ->
    checkpoint path), and those at the same epoch train together. ``step``: ``auto`` |
    ``eager`` | ``graph`` | ``compiled``. ``loaded``: data, teachers and trainers shared with
    other calls. Returns the records in the order of ``configs``."""
    root, dev = Path(root), resolve_device(device)
    records, pending = _pending(configs, root, dev, dict(resume_from or {}))
    loaded = Loaded() if loaded is None else loaded
    for group in pending.values():
        todo, states = [c for c, _ in group], [s for _, s in group]
        splits, teachers = _lane_inputs(todo, root, loaded, dev, data_dir, download)
        dirs = [run_dir(c, root) for c in todo]
        precision = resolved_precision(todo[0].precision, dev)
        with execution(deterministic):
            histories = train_group(
                todo, splits, teacher=teachers or None,
                states=None if states[0] is None else states,
                on_epoch=epoch_saver(todo, dirs, precision, dev), stop_after=stop_after,
                progress=progress, step=step, trainers=loaded.trainers)
        for c, d, history in zip(todo, dirs, histories):
            done = len(history) - 1 == c.epochs
            if done and (d / CHECKPOINT).exists():
                (d / CHECKPOINT).unlink()
            records[c.key()] = RunRecord(c, history, done)
    return [records[c.key()] for c in configs]


def lockstep_groups(configs: Sequence[RunConfig], lockstep: bool = True,
                    members: int | Mapping[str, int] = 1) -> list[list[RunConfig]]:
    """``configs`` cut into the groups that train together, in order of first appearance:
    without ``lockstep`` each run alone; with it, each lane (a teacher, or the students of one
    teacher in lockstep, :func:`~dsmlib.models.sec5_distillation.lockstep.lockstep_key`) in a group, joined by
    the next lanes that differ from it only in their seed
    (:func:`~dsmlib.models.sec5_distillation.lockstep.across_seeds_key`) while the group holds at most
    ``members`` runs (whole lanes: a lane larger than that is a group of its own; a mapping:
    per across-seeds key, 1 where it has none, :func:`dsmlib.models.sec5_distillation.grouping.measured_members`).
    ``members = 1``: no group across seeds."""
    limits = dict(members) if isinstance(members, Mapping) else {}
    default = 1 if isinstance(members, Mapping) else members
    for v in (default, *limits.values()):
        check_int("members", v, minimum=1)
    if not lockstep:
        return [[c] for c in configs]
    lanes: dict[str, list[RunConfig]] = {}
    for c in configs:
        lanes.setdefault(lockstep_key(c), []).append(c)
    groups: list[list[RunConfig]] = []
    open_group: dict[str, list[RunConfig]] = {}
    for lane in lanes.values():
        key = across_seeds_key(lane[0])
        group = open_group.get(key)
        if group is None or len(group) + len(lane) > limits.get(key, default):
            group = open_group[key] = []
            groups.append(group)
        group += lane
    return groups


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Use ``threads`` intra-op threads inside (None: leave as is), then restore."""
    if threads is None:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(check_int("threads", threads, minimum=1))
    try:
        yield
    finally:
        torch.set_num_threads(old)


def run_groups(groups: Sequence[Sequence[RunConfig]], root: str | Path, *,
               threads: int | None = None, progress: bool = False,
               **options: Any) -> list[RunRecord]:
    """:func:`execute_group` for each of ``groups`` in turn (teachers' groups before their
    students'), sharing loaded data, teachers and trainers (:class:`Loaded`); ``options`` go
    to :func:`execute_group`. Returns the records in the order of the groups' runs."""
    loaded = Loaded()
    todo: Any = groups
    if progress:
        from tqdm.auto import tqdm
        todo = tqdm(groups, desc="run groups")
    with torch_threads(threads):
        return [r for g in todo
                for r in execute_group(g, root, loaded=loaded, progress=progress, **options)]


def run_many(configs: Sequence[RunConfig], root: str | Path, *, threads: int | None = None,
             progress: bool = False, lockstep: bool = True,
             members: int | Mapping[str, int] = 1, **options: Any) -> list[RunRecord]:
    """:func:`run_groups` for the groups of ``configs`` (:func:`lockstep_groups` with
    ``lockstep`` and ``members``; teachers must come before their students). Returns the
    records in the order of ``configs``."""
    groups = lockstep_groups(configs, lockstep, members)
    records = {r.config.key(): r for r in run_groups(groups, root, threads=threads,
                                                     progress=progress, **options)}
    return [records[c.key()] for c in configs]
