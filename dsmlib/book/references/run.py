"""``python -m dsmlib reference``: execute chapters under a profile and store them as committed
reference executions (book layer; the store is :mod:`dsmlib.book.references.stored`).

Resumable notebook by notebook: a chapter whose stored reference already has the current
content key is skipped, and each chapter is stored as soon as it finishes, so an interrupted
run loses at most the chapter it was executing. A reference names the commit that made it, so
the working tree must be clean (the ``reference/`` folder aside) unless ``allow_dirty``.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..profiles import load_specs, select
from ..provenance import dirty_files
from ..runner import execute, plan
from ..store import book_lock
from .stored import reference_meta, reference_paths, store_reference

__all__ = ["needs_gpu", "make_references"]

#: Profiles whose GPU chapters are too large for a CPU.
GPU_PROFILES = ("paper", "gpu")


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


def make_references(root: Path, names: list[str] | None = None, *, profile: str,
                    allow_dirty: bool = False, allow_cpu: bool = False, force: bool = False,
                    timeout: int = 1800, progress: bool = True) -> list[Path]:
    """Execute the chapters ``names`` (default: all) under ``profile`` and store each in
    ``reference/<profile>/``. Returns the stored notebooks (skipped ones included).

    A GPU chapter under ``paper`` or ``gpu`` with no CUDA device is refused when named, and
    skipped with a note when not (``allow_cpu`` runs it anyway). ``force`` re-executes even
    chapters whose reference is up to date.
    """
    from tqdm.auto import tqdm
    chosen = select(load_specs(root / "notebooks"), names)
    keys = {s.name: plan(root, s, profile, {}).key for s in chosen}   # every value checked
    dirty = dirty_files(root)
    if dirty and not allow_dirty:
        shown = ", ".join(dirty[:4]) + (f" and {len(dirty) - 4} more" if len(dirty) > 4 else "")
        raise ValueError(f"the working tree has uncommitted changes ({shown}): a reference "
                         "must name the commit that made it; commit them first, or pass "
                         "--allow-dirty (its provenance then says -dirty)")
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
        execute(root, [spec.name], profile=profile, timeout=timeout, progress=progress,
                jobs=1, force=force)
        with book_lock(root, "reference"):
            stored.append(store_reference(root, profile, spec.name))
        print(f"[dsmlib] {spec.name}: reference stored in {nb_path.relative_to(root)}",
              file=sys.stderr, flush=True)
    return stored
