"""Section 5's grid at scale (chapters layer, its wing): launch, watch and collect its runs
with ``submitit`` -- on SLURM, on this machine, or in this process -- and check its data first.

:func:`launch` first checks, in this process, that every data set is present and readable (a
problem is a one-line error and nothing is submitted), then submits the runs that are not
finished, teachers before students. ``local``: ``N`` worker processes on this machine, each
running its share of the runs one after the other (and ``cpus / N`` threads); ``debug``: in
this process; ``slurm``: two job arrays, one job per teacher, then one job per teacher's
students (in lockstep) starting after the teachers' (``afterok``), at most ``N`` at a time.
Finished runs are skipped and unfinished ones resume from their checkpoints, so launching again
after an interruption (or a SLURM preemption) loses at most one epoch per run. ``members`` lets
runs of several seeds train as one group (the teachers of a setting; the students of several of
its teachers); ``auto`` is the device policy's (:func:`group_limits`: none on the CPU, measured
on a GPU). :func:`status` counts finished, partial and new runs; :func:`collect` gathers the
finished ones (the page reads them; ``python -m dsmlib grid collect`` writes them to a file).
The command line around them is :mod:`dsmlib.book.commands.grid`.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from ...foundation.checks import check_choice, check_int
from ...foundation.files import atomic_write_text
from ...foundation.rng import resolve_device
from ...models.sec5_distillation.dataset_files import DatasetFileError, how_to_get
from ...models.sec5_distillation.datasets import check_data, train_images
from ...models.sec5_distillation.device import group_members
from ...models.sec5_distillation.grouping import measured_members
from ...models.sec5_distillation.run_config import CLUSTERS, RunConfig
from ...models.sec5_distillation.runs import (RunRecord, load_record, lockstep_groups,
                                              run_groups, run_status, torch_threads)

__all__ = ["CLUSTERS", "EXECUTE_OPTIONS", "MEMBER_CHOICES", "GridJob", "failure_line",
           "prepare_data", "group_cost", "balance", "group_limits", "launch", "status",
           "collect"]

EXECUTE_OPTIONS = ("data_dir", "download", "device", "deterministic", "progress", "step",
                   "lockstep")
#: The options that decide how runs are grouped (in :func:`launch`, before the jobs).
GROUPING_OPTIONS = ("lockstep",)
#: ``members`` other than a number: the device policy's group size, or one measured here.
MEMBER_CHOICES = ("auto", "measure")


class GridJob:
    """One submitit job: its groups of runs, in order, on the worker (``configs``: one group, or
    a list of groups). On SLURM a timeout or a preemption requeues the job (submitit's
    ``checkpoint`` hook), and the rerun resumes every unfinished run from its last per-epoch
    checkpoint."""

    def __call__(self, configs: list[RunConfig] | list[list[RunConfig]], runs_dir: str,
                 threads: int | None, options: dict[str, Any]) -> list[tuple[str, bool]]:
        groups = configs if configs and isinstance(configs[0], list) else [configs]
        run_options = {k: v for k, v in options.items() if k not in GROUPING_OPTIONS}
        return [(r.config.key(), r.done)
                for r in run_groups(groups, runs_dir, threads=threads, **run_options)]

    def checkpoint(self, *args: Any, **kwargs: Any):
        import submitit
        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)


def prepare_data(datasets: Sequence[str], data_dir: str | Path, *, fetch: bool = False
                 ) -> list[str]:
    """Check that every data set in ``datasets`` is present under ``data_dir`` and readable,
    fetching the missing ones first if ``fetch``; one line per set says what is there. A
    problem is a one-line ``ValueError`` naming the path and the fix."""
    lines, problems = [], []
    for name in sorted(set(datasets)):
        try:
            lines.append(check_data(name, data_dir, fetch_missing=fetch))
        except DatasetFileError as err:     # every set's problem, not only the first one's
            problems.append((name, str(err)))
    if problems:
        what = "; ".join(p.replace(f"; {how_to_get(n, data_dir)}", "") for n, p in problems)
        raise DatasetFileError(problems[0][1] if len(problems) == 1 else
                               f"{len(problems)} data sets cannot be read: {what}; "
                               + how_to_get(problems[0][0], data_dir))
    return lines


_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*")


def failure_line(err: Exception) -> str:
    """The worker's exception in one line: the last ``SomeError: ...`` line of submitit's
    message (the trace it carries is followed by the paths of the logs), else its last line."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    raised = [ln for ln in lines if _RAISED.match(ln)]
    return raised[-1] if raised else (lines[-1] if lines else type(err).__name__)


def _wait(jobs: list, cluster: str) -> None:
    for job in jobs:
        if cluster == "debug":   # run in this process, without submitit's post-mortem debugger
            err = job.exception()
            if err is not None:
                raise err
            continue
        try:
            job.result()
        except Exception as err:   # submitit's FailedJobError carries the worker's stderr
            raise RuntimeError(f"grid job {job.job_id} failed: {failure_line(err)} (its log: "
                               f"{job.paths.stderr})") from None


def group_cost(group: Sequence[RunConfig]) -> float:
    """A group's work, roughly: its members times its steps' images (epochs x passes x
    training images) plus each epoch's measurement (about as many images again as a small
    training set: validation, a training subsample, G); the unit does not matter."""
    c = group[0]
    n = c.train_limit or train_images(c.dataset)
    return len(group) * c.epochs * (c.passes * n + 1000)


def balance(groups: Sequence[Sequence[RunConfig]], workers: int
            ) -> list[list[list[RunConfig]]]:
    """The groups dealt to at most ``workers`` chunks (each a list of groups), the costliest
    first, each to the chunk with the least work so far (:func:`group_cost`; greedy
    longest-processing-time), so that one worker does not train the big groups while another
    waits. Groups stay whole."""
    chunks: list[list[list[RunConfig]]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for g in sorted(groups, key=group_cost, reverse=True):
        i = loads.index(min(loads))
        chunks[i].append(list(g))
        loads[i] += group_cost(g)
    return [c for c in chunks if c]


def group_limits(runs: Sequence[RunConfig], members: int | str, *, cluster: str,
                 threads: int | None, options: dict[str, Any]) -> int | dict[str, int]:
    """How many runs a group may hold (:func:`dsmlib.models.sec5_distillation.runs.lockstep_groups`' ``members``):
    ``members`` as given; ``"auto"``: the device policy's
    (:func:`dsmlib.models.sec5_distillation.device.group_members`: 1 on the CPU, measured on a GPU);
    ``"measure"``: measured on any device. Measured here, with the workers' threads, per kind
    of runs (:func:`dsmlib.models.sec5_distillation.grouping.measured_members`). On SLURM this machine is not
    where the runs train: ``auto`` and ``measure`` are 1 there (give a number)."""
    if members not in MEMBER_CHOICES:
        return check_int("members", members, minimum=1)
    if cluster == "slurm":
        return 1
    device = resolve_device(options.get("device", "auto"))
    if members == "auto" and group_members(device) is not None:
        return group_members(device)
    with torch_threads(threads):
        sizes = measured_members(runs, device=device, data_dir=options.get("data_dir", "data"),
                                 step=options.get("step", "auto"))
    for key, size in sizes.items():
        print(f"[dsmlib] group size {size.members} (measured rates "
              f"{ {k: round(v) for k, v in size.rates.items()} } member-images/s; memory holds "
              f"{size.fits})", file=sys.stderr)
    return {key: size.members for key, size in sizes.items()}


def launch(runs: Sequence[RunConfig], runs_dir: str | Path, *, cluster: str = "local",
           workers: int = 1, threads: int | None = None, folder: str | Path | None = None,
           timeout_min: int = 24 * 60, slurm: dict[str, Any] | None = None,
           members: int | str = "auto", **options: Any) -> list:
    """Check the parameters and the data (see :func:`prepare_data`; with ``download``, missing
    sets are fetched here, once, not by the workers), then submit the unfinished ``runs``
    (teachers, then students) and, except on SLURM, wait for them. ``options`` (``data_dir``,
    ``download``, ``device``, ``deterministic``, ``progress``, ``step``) go to
    :func:`dsmlib.models.sec5_distillation.runs.run_groups`; ``lockstep`` and ``members`` (an int, or ``"auto"``:
    :func:`group_limits`) decide the groups (:func:`dsmlib.models.sec5_distillation.runs.lockstep_groups`), each
    of which stays in one job: the students of one teacher train in lockstep, and runs of
    several seeds as one group where ``members`` allows; ``slurm`` holds extra submitit
    parameters (``slurm_partition``, ``gpus_per_node``, ...). Returns the submitted jobs."""
    import submitit
    cluster = check_choice("cluster", cluster, CLUSTERS)
    workers = check_int("workers", workers, minimum=1)
    threads = None if threads is None else check_int("threads", threads, minimum=1)
    timeout_min = check_int("timeout_min", timeout_min, minimum=1)
    bad = set(options) - set(EXECUTE_OPTIONS)
    if bad:
        raise ValueError(f"unknown run option(s) {sorted(bad)}; allowed: {list(EXECUTE_OPTIONS)}")
    runs_dir = Path(runs_dir)
    pending = [c for c in runs if run_status(c, runs_dir)[0] != "done"]
    if not pending:
        return []
    prepare_data([c.dataset for c in pending], options.get("data_dir", "data"),
                 fetch=bool(options.get("download")))
    options = {**options, "download": False}
    if cluster == "local" and threads is None:
        threads = max(1, (os.cpu_count() or 1) // workers)
    executor = submitit.AutoExecutor(folder=Path(folder or runs_dir / "submitit"), cluster=cluster)
    executor.update_parameters(timeout_min=timeout_min, name="dsm-distill")
    limits = group_limits(pending, members, cluster=cluster, threads=threads, options=options)
    lockstep = options.pop("lockstep", True)
    phases = [lockstep_groups([c for c in pending if c.role == role], lockstep, limits)
              for role in ("teacher", "student")]
    if cluster == "slurm":
        return _slurm_arrays(executor, phases, runs_dir, threads, options, workers, slurm)
    submitted = []
    for groups in phases:
        jobs = [executor.submit(GridJob(), chunk, str(runs_dir), threads, options)
                for chunk in balance(groups, workers)]
        _wait(jobs, cluster)
        submitted += jobs
    return submitted


def _slurm_arrays(executor: Any, phases: list[list[list[RunConfig]]], runs_dir: Path,
                  threads: int | None, options: dict[str, Any], workers: int,
                  slurm: dict[str, Any] | None) -> list:
    """Two job arrays, one job per group: the teachers', then the students' after them."""
    executor.update_parameters(**{"gpus_per_node": 1, "cpus_per_task": 8,
                                  "slurm_array_parallelism": workers, **(slurm or {})})
    teachers, students = phases
    jobs = executor.map_array(GridJob(), teachers, [str(runs_dir)] * len(teachers),
                              [threads] * len(teachers), [options] * len(teachers)) if teachers else []
    if jobs:
        arrays = sorted({j.job_id.split("_")[0] for j in jobs})
        executor.update_parameters(slurm_additional_parameters={
            **(slurm or {}).get("slurm_additional_parameters", {}),
            "dependency": "afterok:" + ":".join(arrays)})
    return jobs + executor.map_array(GridJob(), students, [str(runs_dir)] * len(students),
                                     [threads] * len(students), [options] * len(students))


def status(runs: Sequence[RunConfig], runs_dir: str | Path) -> dict[str, Any]:
    """Counts of finished / partial / new runs, and the partial ones with their epochs."""
    out: dict[str, Any] = {"done": 0, "partial": 0, "new": 0, "partial_runs": []}
    for c in runs:
        state, epochs = run_status(c, runs_dir)
        out[state] += 1
        if state == "partial":
            out["partial_runs"].append(f"{c.label()}: {epochs}/{c.epochs} epochs")
    return out


def collect(runs: Sequence[RunConfig], runs_dir: str | Path, *, out: str | Path | None = None,
            allow_missing: bool = False, profile: str | None = None) -> list[RunRecord]:
    """The records of ``runs`` (finished ones only unless ``allow_missing``), written to
    ``out`` as JSON if given; a missing run is an error naming the command that launches it
    (under ``profile``, the one the grid is built from)."""
    records, missing = [], []
    for c in runs:
        rec = load_record(c, runs_dir)
        if rec is None or not rec.done:
            missing.append(c.label())
        if rec is not None:
            records.append(rec)
    if missing and not allow_missing:
        raise ValueError(f"{len(missing)} of {len(runs)} runs are not finished (e.g. "
                         f"{', '.join(missing[:3])}): launch them with `python -m dsmlib grid "
                         f"launch --profile {profile or '<the profile executed>'}` (see the "
                         "chapter's reader guide)")
    if out is not None:
        atomic_write_text(Path(out), json.dumps({"runs": [dict(
            config=r.config.to_dict(), done=r.done, history=r.history) for r in records]}))
    return records
