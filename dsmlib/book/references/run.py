"""``python -m dsmlib reference``: execute chapters under a profile and store them as committed
reference executions (book layer; the store is :mod:`dsmlib.book.references.stored`).

Resumable notebook by notebook: a chapter whose stored reference already has the current
content key is skipped, and each chapter is stored as soon as it finishes, so an interrupted
run loses at most the chapter it was executing. A reference names the commit that made it, so
the working tree must be clean (the ``reference/`` folder aside) unless ``allow_dirty``.

A chapter that trains (Section 5) also commits the records of its runs with its reference
(:func:`dsmlib.book.references.records.store_run_records`). With ``rederive``, such a chapter
is executed again from those records, on any machine, training nothing: its runs directory the
committed records, ``train_missing`` off (:func:`rederive_references`). That is how a reference made on
a GPU follows a change to the analysis alone; a missing record (something that trains
changed) is refused with its key.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..profiles import load_specs, select
from ..execute.provenance import dirty_files
from ..execute.runner import execute, plan
from ..execute.store import book_lock
from .records import (load_manifest, missing_records, profile_runs, records_dir,
                      rederive_overrides, store_run_records)
from .stored import reference_meta, reference_paths, store_reference

__all__ = ["needs_gpu", "make_references", "train_by_seed_first", "store_records",
           "rederive_references"]

#: Profiles whose GPU chapters are too large for a CPU.
GPU_PROFILES = ("paper", "gpu", "gpu-cifar10")


def needs_gpu(spec, profile: str) -> bool:
    """Whether ``spec`` under ``profile`` is meant for a GPU (and none is here)."""
    if not (spec.gpu and profile in GPU_PROFILES):
        return False
    try:
        import torch
        return not torch.cuda.is_available()
    except ImportError:
        return True


def stored_key(root: Path, profile: str, name: str) -> str | None:
    nb, res = reference_paths(root, profile, name)
    if not (nb.exists() and res.exists()):
        return None
    try:
        return reference_meta(nb).get("key")
    except ValueError:
        return None


def _check_clean(root: Path, allow_dirty: bool) -> None:
    dirty = dirty_files(root)
    if dirty and not allow_dirty:
        shown = ", ".join(dirty[:4]) + (f" and {len(dirty) - 4} more" if len(dirty) > 4 else "")
        raise ValueError(f"the working tree has uncommitted changes ({shown}): a reference "
                         "must name the commit that made it; commit them first, or pass "
                         "--allow-dirty (its provenance then says -dirty)")


def make_references(root: Path, names: list[str] | None = None, *, profile: str,
                    allow_dirty: bool = False, allow_cpu: bool = False, force: bool = False,
                    timeout: int = 1800, progress: bool = True,
                    rederive: bool = False) -> list[Path]:
    """Execute the chapters ``names`` (default: all) under ``profile`` and store each in
    ``reference/<profile>/``, a chapter that trains with its run records. Returns the stored
    notebooks (skipped ones included).

    A GPU chapter under ``paper`` or ``gpu`` with no CUDA device is refused when named, and
    skipped with a note when not (``allow_cpu`` runs it anyway). ``force`` re-executes even
    chapters whose reference is up to date. ``rederive``: :func:`rederive_references` instead.
    """
    if rederive:
        return rederive_references(root, names, profile=profile, allow_dirty=allow_dirty,
                                   force=force, timeout=timeout, progress=progress)
    from tqdm.auto import tqdm
    specs = load_specs(root / "notebooks")
    chosen = select(specs, names)
    keys = {s.name: plan(root, s, profile, {}).key for s in chosen}   # every value checked
    _check_clean(root, allow_dirty)
    gpu_only = [s.name for s in chosen if needs_gpu(s, profile) and not allow_cpu]
    if gpu_only and names and names != ["all"]:
        raise ValueError(f"{', '.join(gpu_only)} under profile {profile!r} needs a GPU and "
                         "torch sees none: run it where one is, or pass --allow-cpu")
    for name in gpu_only:
        print(f"[dsmlib] {name}: skipped (profile {profile!r} needs a GPU; none here)",
              file=sys.stderr, flush=True)
    chosen = [s for s in chosen if s.name not in gpu_only]
    stored = []
    bar = tqdm(chosen, desc=f"references ({profile})", unit="chapter", disable=not progress,
               file=sys.stderr)
    for spec in bar:
        bar.set_postfix_str(spec.name)
        nb_path, _ = reference_paths(root, profile, spec.name)
        if not force and stored_key(root, profile, spec.name) == keys[spec.name]:
            print(f"[dsmlib] {spec.name}: reference up to date ({nb_path.relative_to(root)})",
                  file=sys.stderr, flush=True)
            stored.append(nb_path)
            continue
        train_by_seed_first(root, spec, profile)
        execute(root, [spec.name], profile=profile, timeout=timeout, progress=progress,
                jobs=1, force=force)
        with book_lock(root, "reference"):
            stored.append(store_reference(root, profile, spec.name))
            store_records(root, spec, profile, stored[-1])
        print(f"[dsmlib] {spec.name}: reference stored in {nb_path.relative_to(root)}",
              file=sys.stderr, flush=True)
    return stored


def train_by_seed_first(root: Path, spec, profile: str) -> int:
    """Where the chapter's parameters under ``profile`` say ``by_seed`` (a reference that
    trains for hours on a CPU), train its missing runs here first, outside the kernel (no
    cell's time limit), seed by seed, committing each seed's records as it finishes
    (the chapter's ``Parameters.machinery()``); the page then finds every run done.
    Returns the seeds trained (0 for any other chapter or profile)."""
    params = plan(root, spec, profile, {}).parameters
    if not (getattr(params, "by_seed", False) and getattr(params, "train_missing", False)):
        return 0
    tools = params.machinery()
    runs_dir, data_dir = (p if p.is_absolute() else root / p
                          for p in (Path(params.runs_dir), Path(params.data_dir)))
    runs = params.runs()
    tools.launch.prepare_data(sorted({c.dataset for c in runs}), data_dir)
    return tools.seed_runs.train_by_seed(
        runs, runs_dir, on_seed=tools.seed_runs.commit_each_seed(root, runs_dir, profile),
        data_dir=data_dir, device="auto")


def store_records(root: Path, spec, profile: str, notebook: Path) -> Path | None:
    """Commit the records of the runs chapter ``spec`` analysed under ``profile`` beside its
    stored reference ``notebook`` (whose provenance says where they trained); None for a
    chapter without runs."""
    configs = profile_runs(spec, profile)
    if configs is None:
        return None
    params = plan(root, spec, profile, {}).parameters
    runs_dir = Path(params.runs_dir)
    prov = reference_meta(notebook).get("provenance") or {}
    return store_run_records(root, profile, spec.name, configs,
                             runs_dir if runs_dir.is_absolute() else root / runs_dir, prov)


def rederive_references(root: Path, names: list[str] | None = None, *, profile: str,
             allow_dirty: bool = False, force: bool = False, timeout: int = 1800,
             progress: bool = True) -> list[Path]:
    """Execute again, from their committed run records, the references under ``profile`` of
    the chapters ``names`` that train (default: every such chapter with a reference there),
    training nothing, and store each with both provenances: where the runs trained and where
    they were analysed. Refused, naming the missing run keys, when the records do not cover
    every run the profile asks for now (something that trains changed: that needs the hardware
    that trains). Returns the stored notebooks."""
    specs = load_specs(root / "notebooks")
    chosen = select(specs, names)
    trains = {s.name: profile_runs(s, profile) for s in chosen}
    named = bool(names) and names != ["all"]
    if named and any(c is None for c in trains.values()):
        bad = ", ".join(n for n, c in trains.items() if c is None)
        raise ValueError(f"{bad} trains nothing: only a chapter with training runs is re-derived "
                         f"from run records; execute it with `python -m dsmlib reference {bad} "
                         f"--profile {profile}`")
    chosen = [s for s in chosen if trains[s.name] is not None
              and (named or reference_paths(root, profile, s.name)[0].exists())]
    if not chosen:
        raise ValueError(f"no reference under profile {profile!r} trains: nothing to re-derive")
    where = records_dir(root, profile).relative_to(root).as_posix()
    for s in chosen:
        if load_manifest(root, profile, s.name) is None:
            raise ValueError(f"cannot re-derive {s.name} under {profile!r}: no run records were "
                             f"committed ({where}/trained-{s.name}.json is missing); it needs a "
                             f"GPU run: `python -m dsmlib reference {s.name} --profile {profile}` "
                             "where a GPU is")
        missing = missing_records(root, profile, trains[s.name])
        if missing:
            raise ValueError(f"cannot re-derive {s.name} under {profile!r}: {len(missing)} of "
                             f"its {len(trains[s.name])} runs have no committed record in "
                             f"{where}/ ({', '.join(missing[:5])}"
                             f"{' and more' if len(missing) > 5 else ''}): something that "
                             "trains changed (RECIPE, a RunConfig field or a run parameter); "
                             f"it needs a GPU run: `python -m dsmlib reference {s.name} "
                             f"--profile {profile}` where a GPU is")
    _check_clean(root, allow_dirty)
    overrides = rederive_overrides(profile)
    stored = []
    for s in chosen:
        run = plan(root, s, profile, overrides)
        nb_path, _ = reference_paths(root, profile, s.name)
        if not force and stored_key(root, profile, s.name) == run.key:
            print(f"[dsmlib] {s.name}: reference up to date ({nb_path.relative_to(root)})",
                  file=sys.stderr, flush=True)
            stored.append(nb_path)
            continue
        execute(root, [s.name], profile=profile, overrides=overrides, timeout=timeout,
                progress=progress, jobs=1, force=force)
        with book_lock(root, "reference"):
            trained = (load_manifest(root, profile, s.name) or {}).get("trained")
            stored.append(store_reference(root, profile, s.name, run=run, trained=trained))
        print(f"[dsmlib] {s.name}: re-derived from {where}/ on this machine, stored in "
              f"{nb_path.relative_to(root)}", file=sys.stderr, flush=True)
    return stored
