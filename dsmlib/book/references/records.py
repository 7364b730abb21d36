"""The run records of a reference (book layer): what a chapter trained, committed beside its
reference, so that its analysis can be executed again on a CPU without training anything.

A chapter with training runs (its ``Parameters.runs()``: Section 5's grid) keys every run by
its :class:`~dsmlib.models.sec5_distillation.run_config.RunConfig`, whose key hashes every field, the training
recipe (:data:`~dsmlib.models.sec5_distillation.run_config.RECIPE`) and the teacher's configuration included. A
reference made where the runs trained commits, for each run the profile asks for, its record
``reference/<profile>/runs/<run key>/{config.json,done.json}`` (the configuration and the
per-epoch metrics, per-image test results included; never weights or checkpoints: the analysis
reads the records alone), and ``reference/<profile>/runs/trained-<chapter>.json``, which says
where and at which commit they were trained (:func:`store_run_records`).

Two keys then say what a stale reference needs (:mod:`dsmlib.book.references.freshness`):

- the *training key* (:func:`training_key`): the set of run keys the profile asks for, which
  the committed records must cover. It changes with ``RECIPE``, with any ``RunConfig`` field
  and with any of the profile's parameters that decide a run, and only with those: a change to
  what is trained needs the hardware that trains it (a GPU). The models layer's source is
  deliberately not hashed into it: most changes to it (refactors, a faster step, new checks)
  train the same numbers, and ``RECIPE`` is the code's declaration that training computes
  other numbers (bumping it changes every key). The files of the models layer that changed
  since the runs were trained are named in the stale notice all the same
  (:func:`dsmlib.book.references.freshness.stale_reason`).
- the *analysis key*: the reference's content key (:func:`dsmlib.book.execute.provenance.code_key`),
  as for every execution. When only it changed and the records cover the training key, the
  reference is re-derived on a CPU: ``python -m dsmlib reference <chapter> --profile <profile>
  --rederive`` executes the chapter with :func:`rederive_overrides` (its ``runs_dir`` the
  committed records, ``train_missing`` off) and keeps the training's provenance beside the
  analysis's.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ...foundation.files import atomic_write_text
from ..profiles import resolve
from .stored import REFERENCE_DIR

if TYPE_CHECKING:   # the models layer imports torch: 2 s of every command's start (the site's)
    from ...models.sec5_distillation.run_config import RunConfig

__all__ = ["RUNS", "RECORD_FILES", "records_dir", "manifest_path", "profile_runs",
           "training_key", "missing_records", "rederive_overrides", "rederive_command",
           "store_run_records", "TIMING", "record_seconds", "records_seconds",
           "training_seconds", "load_manifest"]

RUNS = "runs"
#: What a committed record holds: the configuration and the finished run's metrics
#: (:data:`dsmlib.models.sec5_distillation.runs.CONFIG` and ``DONE``, the names :func:`~dsmlib.models.sec5_distillation.runs.load_record`
#: reads; tests/book/test_rederive.py checks that they agree).
RECORD_FILES = ("config.json", "done.json")


def records_dir(root: Path, profile: str) -> Path:
    """``reference/<profile>/runs/``: the committed run records of ``profile``'s references."""
    return root / REFERENCE_DIR / profile / RUNS


def manifest_path(root: Path, profile: str, name: str) -> Path:
    """Where chapter ``name``'s records say where and at which commit they were trained."""
    return records_dir(root, profile) / f"trained-{name}.json"


def profile_runs(spec, profile: str) -> list[RunConfig] | None:
    """Every run chapter ``spec`` asks for under ``profile`` (None: a chapter without runs)."""
    runs = getattr(resolve(spec, profile), "runs", None)
    return runs() if callable(runs) else None


def training_key(configs: Sequence[RunConfig]) -> str:
    """A short hash of the set of run keys ``configs`` (order and repeats aside)."""
    text = "\n".join(sorted({c.key() for c in configs}))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def missing_records(root: Path, profile: str, configs: Sequence[RunConfig]) -> list[str]:
    """The keys of the runs in ``configs`` that have no committed record under ``profile``
    (in ``configs``' order, each once)."""
    base = records_dir(root, profile)
    keys = dict.fromkeys(c.key() for c in configs)
    return [k for k in keys if not all((base / k / f).is_file() for f in RECORD_FILES)]


def rederive_overrides(profile: str) -> dict[str, Any]:
    """The parameters a re-derivation executes with: the committed records as the runs
    directory (relative to the book's root, where the kernel runs) and no training."""
    return {"runs_dir": f"{REFERENCE_DIR}/{profile}/{RUNS}", "train_missing": False}


def rederive_command(name: str, profile: str) -> str:
    return f"python -m dsmlib reference {name} --profile {profile} --rederive"


#: The seconds an epoch's row of a run's history records: its SGD steps, its measurements
#: (accuracies, losses) and G, each timed for the whole group that trained together.
TIMING = ("train_s", "eval_s", "gradnorm_s")


def record_seconds(history: Iterable[Mapping[str, Any]]) -> float:
    """The seconds one run's record (its ``done.json``'s ``history``) says it took to train:
    for every epoch's row, the steps', measurements' and G's time (:data:`TIMING`) divided
    by the row's ``lockstep``, the number of runs that trained together and share that time.
    So adding this over every run of a group counts the group's time once, however the runs
    were grouped. This is the one place training time is read from the records (issue 71):
    the wall time of the command that made a reference is no training time at all for runs
    trained before it (``grid launch --by-seed``)."""
    total = 0.0
    for row in history:
        share = max(1, int(row.get("lockstep") or 1))
        total += sum(float(row.get(k) or 0.0) for k in TIMING) / share
    return total


def records_seconds(runs_dir: Path, keys: Iterable[str]) -> float:
    """The training seconds of the runs ``keys`` (each once), summed over their records
    ``runs_dir/<key>/done.json`` (:func:`record_seconds`)."""
    return sum(record_seconds(json.loads((runs_dir / k / "done.json").read_text())["history"])
               for k in dict.fromkeys(keys))


def training_seconds(configs: Sequence[RunConfig], runs_dir: Path) -> float:
    """The seconds the runs of ``configs`` took, summed from their records under ``runs_dir``
    (:func:`records_seconds`)."""
    return records_seconds(runs_dir, (c.key() for c in configs))


def load_manifest(root: Path, profile: str, name: str) -> dict[str, Any] | None:
    """Chapter ``name``'s training manifest under ``profile`` (None when none was committed)."""
    path = manifest_path(root, profile, name)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise ValueError(f"{path} cannot be read as JSON: {err}") from None


def store_run_records(root: Path, profile: str, name: str, configs: Sequence[RunConfig],
                      runs_dir: Path, provenance: dict[str, Any]) -> Path:
    """Copy the record of every run in ``configs`` (finished, under ``runs_dir``) to
    ``reference/<profile>/runs/<key>/``, config and metrics only, then write the manifest:
    the chapter, the training key, the run keys and ``provenance``'s commit, hardware, versions
    and wall time (where and at which commit they were trained). Records that the chapter's
    previous manifest listed and these configurations do not are removed. Returns the
    manifest's path."""
    from ...models.sec5_distillation.runs import DONE, run_dir
    base = records_dir(root, profile)
    unfinished = [c.label() for c in configs if not (run_dir(c, runs_dir) / DONE).is_file()]
    if unfinished:
        raise ValueError(f"{len(unfinished)} of {len(configs)} runs have no finished record "
                         f"under {runs_dir} (e.g. {', '.join(unfinished[:3])}): a reference "
                         "commits the records of the runs it analysed")
    keys = sorted({c.key() for c in configs})
    for c in configs:
        src, dest = run_dir(c, runs_dir), base / c.key()
        for f in RECORD_FILES:
            atomic_write_text(dest / f, (src / f).read_text())
    old = load_manifest(root, profile, name) or {}
    others = {k for m in base.glob("trained-*.json") if m != manifest_path(root, profile, name)
              for k in json.loads(m.read_text()).get("runs", [])}
    for key in sorted(set(old.get("runs", [])) - set(keys) - others):
        shutil.rmtree(base / key, ignore_errors=True)
    manifest = {"chapter": name, "profile": profile, "training_key": training_key(configs),
                "runs": keys,
                "trained": {**{k: provenance.get(k) for k in
                               ("profile", "commit", "hardware", "versions", "wall_s")},
                            "records_s": training_seconds(configs, base)}}
    return atomic_write_text(manifest_path(root, profile, name),
                             json.dumps(manifest, indent=1) + "\n")
