"""Where executed notebooks and results live, and how they are replaced (book layer).

- ``book/chapters/<profile>/<name>.ipynb``: each profile's executed chapters, kept apart, so
  that executing a chapter under one profile never invalidates another profile's book;
- ``book/chapters/custom/<name>-<hash>.ipynb`` and ``results/custom/<name>-<hash>.json``: runs
  with parameters that are not exactly a profile's (``-p`` overrides, papermill by hand);
- ``book/chapters/failed/<name>.ipynb``: the last failed or interrupted execution, for
  inspection; it never replaces a good chapter;
- ``book/chapters/<name>.ipynb``: the site's copy of the profile being built (staged by
  ``build``).

Every file is replaced by an atomic rename, and one lock per book keeps two ``execute`` or
``build`` processes from interleaving their writes.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterator

from ...foundation.files import atomic_write_text
from ...foundation.handoff import SEAL, custom_results_path, parameters_hash, same_parameters

__all__ = ["BookBusy", "executed_path", "results_path", "custom_paths", "failed_path",
           "stage_dir", "book_lock", "results_mismatch", "rerun_by_hand", "runner_metadata",
           "is_fresh", "publish", "stage_site_copy", "keep_failed", "clear_stage"]


class BookBusy(RuntimeError):
    """Another process holds this book's lock."""


def executed_path(root: Path, profile: str, name: str) -> Path:
    return root / "book" / "chapters" / profile / f"{name}.ipynb"


def results_path(root: Path, profile: str, name: str) -> Path:
    return root / "results" / profile / f"{name}.json"


def custom_paths(root: Path, name: str, values: dict[str, Any]) -> tuple[Path, Path]:
    """(executed notebook, results) of a run whose values are not a profile's."""
    return (root / "book" / "chapters" / "custom" / f"{name}-{parameters_hash(values)}.ipynb",
            custom_results_path(root, name, values))


def failed_path(root: Path, name: str) -> Path:
    return root / "book" / "chapters" / "failed" / f"{name}.ipynb"


def stage_dir(root: Path) -> Path:
    """Where runs write before they are moved into place (one sub-folder per run)."""
    return root / "_build" / "stage"


@contextlib.contextmanager
def book_lock(root: Path, command: str) -> Iterator[None]:
    """Hold this book's lock (``_build/dsmlib.lock``) inside; raise :class:`BookBusy` naming
    the holder if another process has it."""
    import fcntl
    path = root / "_build" / "dsmlib.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            holder = path.read_text().strip() or "another process"
            raise BookBusy(f"this book is busy: {holder} holds {path}; wait for it to finish, "
                           f"then run `python -m dsmlib {command}` again") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"`python -m dsmlib {command}` (pid {os.getpid()})".encode())
        yield
    finally:
        os.close(fd)          # closing releases the lock


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def results_mismatch(results: Path, key: str, params: dict[str, Any], profile: str, *,
                     custom: bool = False) -> str:
    """Why ``results`` does not belong to the chapter executed with ``key`` and ``params``
    ("" when it does); ``custom``: the chapter is a custom run, not the profile's."""
    doc = _json(results)
    if doc is None:
        return "it is missing or unreadable"
    run = doc.get("run") or {}
    if doc.get("profile") != profile or run.get("profile") != profile:
        return f"it was produced under profile {run.get('profile', doc.get('profile'))!r}"
    if bool(run.get("custom")) != custom or not same_parameters(run.get("parameters") or {}, params):
        got = run.get("parameters") or {}
        diff = sorted(k for k in set(got) | set(params) if got.get(k) != params.get(k))
        return ("its parameters differ from the executed chapter's"
                + (f" ({', '.join(diff)})" if diff else ""))
    if run.get("key") != key:
        return "its content key differs from the executed chapter's (another run wrote it)"
    return ""


def rerun_by_hand(metadata: dict[str, Any]) -> bool:
    """Whether a notebook (its ``metadata``) that the runner executed was executed again by
    plain papermill: papermill then recorded that run's parameters, which lack the runner's
    seal, under ``metadata.papermill.parameters``."""
    injected = (metadata.get("papermill") or {}).get("parameters")
    return isinstance(injected, dict) and SEAL not in injected


def runner_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """An executed notebook's ``metadata.dsmlib`` (its content key and provenance) when it
    describes the notebook's last execution; {} for a notebook re-executed by hand
    (:func:`rerun_by_hand`). Papermill copies a notebook's metadata as it is and no kernel can
    rewrite it, so a hand run's output still carries the runner's key and provenance (issue
    53, item 8): they must not be read as the hand run's. A hand run's own record is its
    results file (``results/custom/``) and the cell under its title
    (:func:`dsmlib.book.execute.rerun.announce_rerun`, whose output also carries it as JSON)."""
    return {} if rerun_by_hand(metadata) else dict(metadata.get("dsmlib") or {})


def is_fresh(executed: Path, key: str) -> bool:
    """Whether the executed chapter ``executed`` exists, ran to the end, was last executed by
    the runner (not by hand) and was made from the same content key ``key`` (:func:`dsmlib.book.execute.provenance.code_key`): then ``execute`` does
    not run it again."""
    if not executed.exists():
        return False
    try:
        meta = json.loads(executed.read_text()).get("metadata", {})
    except (OSError, ValueError):
        return False
    return runner_metadata(meta).get("key") == key and not meta.get("papermill", {}).get(
        "exception")


def publish(staged: Path, dest: Path) -> Path:
    """Move a finished file into place with an atomic rename."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staged, dest)
    return dest


def stage_site_copy(src: Path, dest: Path) -> None:
    """Copy ``src`` to ``dest`` only if the bytes differ (so Sphinx re-reads exactly the
    chapters that changed: a fresh mtime on change, none otherwise)."""
    data = src.read_text()
    if dest.exists() and dest.read_text() == data:
        return
    atomic_write_text(dest, data)


def keep_failed(partial: Path, root: Path, name: str) -> Path | None:
    """Move a failed run's partial notebook to ``book/chapters/failed/<name>.ipynb``."""
    if not partial.exists():
        return None
    return publish(partial, failed_path(root, name))


def clear_stage(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
