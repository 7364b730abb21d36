"""A grid trained seed by seed on one machine, its records committed as each seed finishes
(book layer): how the ``cpu-cifar10`` reference trains for hours in the background and resumes
wherever it stopped (issue 61).

``python -m dsmlib grid launch --profile cpu-cifar10 --by-seed [--commit]`` takes the grid's
teachers in order and, per teacher, trains it, then its students in lockstep (one process, all
cores, one role at a time: on two CPU cores a group of seeds is no faster,
``benchmarks/bench_cpu_cifar10.py``), then, with ``--commit``, commits the seed's records
(``config.json`` and ``done.json`` of each of its runs, nothing else) in a commit of their own.
Each run keeps its per-epoch checkpoint, so a process killed mid-seed loses at most the epoch
in flight; a session that ends loses at most the seed in flight (its checkpoints and weights are
not committed). A teacher whose record survived without its weights (``final.pt`` is never
committed) is trained again when its students still need it.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ...models.sec5_distillation.run_config import RunConfig
from ...models.sec5_distillation.runs import CONFIG, DONE, FINAL, METRICS, execute_group, execute_run, run_dir, \
    run_status, torch_threads

__all__ = ["RECORD_FILES", "seed_groups", "needs_teacher_again", "train_by_seed",
           "commit_paths", "record_paths", "commit_each_seed"]

RECORD_FILES = (CONFIG, DONE)


def seed_groups(runs: Sequence[RunConfig]) -> list[tuple[RunConfig, list[RunConfig]]]:
    """Each teacher of ``runs`` with its students, in the teachers' order (a teacher without
    students -- a curve's -- alone)."""
    teachers = [c for c in runs if c.role == "teacher"]
    return [(t, [c for c in runs if c.teacher == t]) for t in teachers]


def needs_teacher_again(teacher: RunConfig, students: Sequence[RunConfig],
                        runs_dir: Path) -> bool:
    """Whether a teacher recorded as done must train again: some student still needs its final
    weights, and they are not there (its record came back without them)."""
    d = run_dir(teacher, runs_dir)
    pending = any(run_status(s, runs_dir)[0] != "done" for s in students)
    return pending and (d / DONE).exists() and not (d / FINAL).exists()


def record_paths(configs: Sequence[RunConfig], runs_dir: Path) -> list[Path]:
    """The files that make the records of ``configs``: their configuration and final metrics."""
    return [run_dir(c, runs_dir) / f for c in configs for f in RECORD_FILES]


def commit_paths(root: Path, paths: Sequence[Path], message: str, *, attempts: int = 20
                 ) -> bool:
    """Commit exactly ``paths`` (whatever else is staged stays staged and uncommitted); retried
    while another git command holds the index. Returns whether a commit was made (False:
    nothing changed)."""
    rel = [str(Path(p).resolve().relative_to(root.resolve())) for p in paths]
    for attempt in range(attempts):
        add = subprocess.run(["git", "add", "--", *rel], cwd=root, capture_output=True, text=True)
        if add.returncode == 0:
            diff = subprocess.run(["git", "diff", "--cached", "--quiet", "--", *rel], cwd=root)
            if diff.returncode == 0:
                return False
            done = subprocess.run(["git", "commit", "-q", "-m", message, "--", *rel], cwd=root,
                                  capture_output=True, text=True)
            if done.returncode == 0:
                return True
            err = done.stderr
        else:
            err = add.stderr
        if "index.lock" not in err or attempt == attempts - 1:
            lines = err.strip().splitlines()
            raise RuntimeError(f"git could not commit the records: "
                               f"{lines[-1] if lines else 'git gave no reason'}")
        time.sleep(3)
    return False


def _check_retrained(teacher: RunConfig, runs_dir: Path, before: str) -> None:
    """A teacher trained again (its weights were not there) must give the record it had:
    students finished from the first weights are otherwise distilled from another teacher.
    Warns, naming the run, where the two histories' metrics differ."""
    import json
    old = json.loads(before)["history"]
    new = json.loads((run_dir(teacher, runs_dir) / DONE).read_text())["history"]
    keys = ("train_loss", "val_acc", "test_acc", "gradnorm")
    if [[r.get(k) for k in keys] for r in old] != [[r.get(k) for k in keys] for r in new]:
        print(f"[dsmlib] warning: {teacher.label()} trained again gives another record than "
              "before (other kernels or threads?): its students finished earlier were distilled "
              "from the first weights; delete their records to train them again",
              file=sys.stderr, flush=True)


def _teacher_line(teacher: RunConfig, runs_dir: Path) -> str:
    from ...models.sec5_distillation.runs import load_record
    rec = load_record(teacher, runs_dir)
    last = rec.history[-1] if rec is not None else {}
    fit = last.get("train_acc")
    test = last.get("test_acc")
    return (f"teacher fits {100 * fit:.1f} % of its training images, {100 * test:.2f} % of the "
            f"test images" if fit is not None and test is not None else "teacher")


def train_by_seed(runs: Sequence[RunConfig], runs_dir: str | Path, *,
                  on_seed: Callable[[RunConfig, list[RunConfig], float | None], None] | None
                  = None,
                  threads: int | None = None, progress: bool = True,
                  **options: Any) -> int:
    """Train every unfinished run of ``runs``, teacher by teacher, each teacher then its
    students in lockstep; ``on_seed(teacher, runs, seconds)`` after each seed that trained
    anything (committing its records), and ``on_seed(teacher, runs, None)`` for each seed an
    earlier process finished (whose records it may not have committed). ``options`` go to :func:`execute_group` (``data_dir``,
    ``device``, ...). Returns the seeds trained."""
    runs_dir = Path(runs_dir)
    groups = seed_groups(runs)
    trained = 0
    with torch_threads(threads):
        for k, (teacher, students) in enumerate(groups):
            members = [teacher, *students]
            if all(run_status(c, runs_dir)[0] == "done" for c in members) and not \
                    needs_teacher_again(teacher, students, runs_dir):
                if on_seed is not None:      # a seed finished by an earlier process
                    on_seed(teacher, members, None)
                continue
            t0 = time.perf_counter()
            print(f"[dsmlib] seed {teacher.seed} ({k + 1} of {len(groups)}): "
                  f"{teacher.label()} and {len(students)} students", file=sys.stderr, flush=True)
            before = None
            if needs_teacher_again(teacher, students, runs_dir):
                before = (run_dir(teacher, runs_dir) / DONE).read_text()
                for f in (DONE, METRICS):
                    (run_dir(teacher, runs_dir) / f).unlink(missing_ok=True)
            execute_run(teacher, runs_dir, progress=progress, **options)
            if before is not None:
                _check_retrained(teacher, runs_dir, before)
            if students:
                execute_group(students, runs_dir, progress=progress, **options)
            seconds = time.perf_counter() - t0
            print(f"[dsmlib] seed {teacher.seed} done in {seconds:.0f} s: "
                  f"{_teacher_line(teacher, runs_dir)}", file=sys.stderr, flush=True)
            trained += 1
            if on_seed is not None:
                on_seed(teacher, members, seconds)
    return trained


def commit_each_seed(root: Path, runs_dir: Path, profile: str
                     ) -> Callable[[RunConfig, list[RunConfig], float | None], None]:
    """:func:`train_by_seed`'s ``on_seed`` that commits each seed's records (a seed an
    earlier process finished too, if its records were never committed)."""
    def commit(teacher: RunConfig, members: list[RunConfig], seconds: float | None) -> None:
        how = "finished earlier" if seconds is None else f"trained here in {seconds:.0f} s"
        message = f"{profile}: the records of seed {teacher.seed} ({len(members)} runs, {how})"
        try:
            if commit_paths(root, record_paths(members, runs_dir), message):
                print(f"[dsmlib] committed: {message}", file=sys.stderr, flush=True)
        except RuntimeError as err:        # training goes on; the records stay on disk
            print(f"[dsmlib] warning: seed {teacher.seed}'s records are not committed ({err});"
                  " commit them by hand, or launch again once git can", file=sys.stderr,
                  flush=True)
    return commit
