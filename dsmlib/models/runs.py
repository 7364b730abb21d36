"""Runs that survive (models layer): each run is one job keyed by its full configuration.

A run lives in ``root/<config.key()>/``:

- ``config.json``: the configuration (written first; a directory never changes owner);
- ``checkpoint.pt``: model, optimizer, finished epochs and metrics, rewritten atomically after
  every epoch, so an interrupted run loses at most the epoch in flight;
- ``metrics.json``: the metrics so far (for people and for :func:`load_record`);
- ``final.pt`` and ``done.json``: the final weights and metrics, once the last epoch is done
  (the checkpoint is then deleted).

:func:`execute_run` skips a finished run, resumes an unfinished one from its checkpoint, and
refuses, with the differing fields, a checkpoint written for another configuration (or on a
device with another precision). Students load their teacher's ``final.pt``.
"""
from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch
from torch import nn

from ..foundation.checks import check_int
from ..foundation.rng import resolve_device
from .datasets import DataSplit, load_dataset
from .run_config import RunConfig
from .training import build_model, execution, resolved_precision, train

__all__ = ["CONFIG", "CHECKPOINT", "METRICS", "FINAL", "DONE", "RunRecord", "run_dir",
           "run_status", "load_record", "load_checkpoint", "execute_run", "run_many",
           "torch_threads"]

CONFIG, CHECKPOINT, METRICS, FINAL, DONE = ("config.json", "checkpoint.pt", "metrics.json",
                                            "final.pt", "done.json")


@dataclass
class RunRecord:
    """A run's configuration, its metrics rows so far (row 0 is before training) and whether
    it is finished."""
    config: RunConfig
    history: list[dict[str, float]]
    done: bool


def run_dir(config: RunConfig, root: str | Path) -> Path:
    return Path(root) / config.key()


def _atomic_write(path: Path, write) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def _write_json(path: Path, obj: Any) -> None:
    _atomic_write(path, lambda p: p.write_text(json.dumps(obj, indent=1)))


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
    """A checkpoint to resume ``config`` from; refused, with the reason, if it was written for
    another configuration or with another precision."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"checkpoint {path} does not exist")
    ck = torch.load(path, map_location=device, weights_only=False)
    theirs = RunConfig.from_dict(ck["config"])
    if theirs != config:
        raise ValueError(f"refusing to resume from {path}: it was written for another configuration "
                         f"({'; '.join(config.differences(theirs))})")
    mine = resolved_precision(config, device)
    if ck["precision"] != mine:
        raise ValueError(f"refusing to resume from {path}: it was trained in {ck['precision']}, "
                         f"and this device ({device}) would continue in {mine}; set precision "
                         f"explicitly or resume on a {ck['device_type']} device")
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
    key = (config.dataset, config.split_seed, config.image_size, config.train_limit, str(device))
    if key not in cache:
        cache[key] = load_dataset(config.dataset, split_seed=config.split_seed, data_dir=data_dir,
                                  download=download, image_size=config.image_size,
                                  train_limit=config.train_limit, device=device)
    return cache[key]


def execute_run(config: RunConfig, root: str | Path, *, data_dir: str | Path = "data",
                download: bool = False, device: Any = "auto", deterministic: bool = False,
                progress: bool = False, stop_after: int | None = None,
                resume_from: str | Path | None = None, cache: dict | None = None,
                compile_model: bool = False) -> RunRecord:
    """Run ``config`` to its end (or for ``stop_after`` more epochs), skipping it if finished
    and resuming it if a checkpoint exists (or from ``resume_from``). Returns its record."""
    root = Path(root)
    d = run_dir(config, root)
    rec = load_record(config, root)
    if rec is not None and rec.done:
        return rec
    dev = resolve_device(device)
    cache = {} if cache is None else cache
    d.mkdir(parents=True, exist_ok=True)
    _write_json(d / CONFIG, config.to_dict())
    ck_path = Path(resume_from) if resume_from is not None else d / CHECKPOINT
    state = load_checkpoint(ck_path, config, dev) if ck_path.exists() or resume_from else None
    data = _data(config, cache.setdefault("data", {}), data_dir=data_dir, download=download,
                 device=dev)
    teacher = (None if config.teacher is None else
               _teacher_model(config.teacher, root, data, cache.setdefault("teachers", {})))
    precision = resolved_precision(config, dev)

    def save(epoch: int, history: list, model: nn.Module, opt: torch.optim.Optimizer) -> None:
        _write_json(d / METRICS, {"config": config.to_dict(), "history": history})
        if epoch == config.epochs:   # final weights first: done.json means everything is there
            _atomic_write(d / FINAL, lambda p: torch.save(model.state_dict(), p))
            _write_json(d / DONE, {"config": config.to_dict(), "history": history,
                                   "precision": precision, "device": str(dev)})
            return
        ck = dict(config=config.to_dict(), precision=precision, device_type=dev.type, epoch=epoch,
                  history=history, model=model.state_dict(), optimizer=opt.state_dict())
        _atomic_write(d / CHECKPOINT, lambda p: torch.save(ck, p))

    with execution(deterministic):
        history = train(config, data, teacher=teacher, state=state, on_epoch=save,
                        stop_after=stop_after, progress=progress, compile_model=compile_model)
    done = len(history) - 1 == config.epochs
    if done and (d / CHECKPOINT).exists():
        (d / CHECKPOINT).unlink()
    return RunRecord(config, history, done)


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


def run_many(configs: Sequence[RunConfig], root: str | Path, *, threads: int | None = None,
             progress: bool = False, **options: Any) -> list[RunRecord]:
    """:func:`execute_run` for each configuration in order (teachers must come before their
    students), sharing loaded data and teachers; ``options`` go to :func:`execute_run`."""
    cache: dict = {}
    it: Any = configs
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(configs, desc="runs")
    with torch_threads(threads):
        return [execute_run(c, root, cache=cache, progress=progress, **options) for c in it]
