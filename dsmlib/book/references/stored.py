"""The committed reference executions (book layer): chapters executed once, under a profile,
where the hardware is, and committed with their provenance, so that any build can show them.

``reference/<profile>/<name>.ipynb`` is the executed notebook (its ``metadata["dsmlib"]``
holds the content key and the provenance: device, versions, wall time, commit) and
``reference/<profile>/<name>.json`` its results. :func:`store_reference` copies a finished
execution there; :func:`load_references` reads every reference back for a build, checks that
its results belong to its notebook, and says whether it is *fresh* (its content key is the
one the current code and profile give) or *stale* (measured with other code: shown with the
commit it was measured at, never mixed in as current).

Stored notebooks are slimmed to stay small (:data:`MAX_BYTES`, the site's budget per page):
a figure keeps its plotly JSON (which Jupyter draws) and drops the static site's HTML copy,
which :func:`dsmlib.book.references.section.site_outputs` rebuilds from the JSON when a page
shows the reference.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ...foundation.files import atomic_write_text
from ..execute.store import executed_path, results_mismatch, results_path

__all__ = ["REFERENCE_DIR", "MAX_BYTES", "PLOTLY_JSON", "Reference", "reference_paths",
           "reference_meta", "slim_notebook", "store_reference", "load_references",
           "references_by_chapter", "device_label", "origin"]

REFERENCE_DIR = "reference"
#: The largest stored notebook, in bytes: the same budget as one page of the site.
MAX_BYTES = 600_000
PLOTLY_JSON = "application/vnd.plotly.v1+json"
#: The tag of the runner's "custom run: results are in results/custom/" notice, which a
#: re-derived reference drops (:func:`dsmlib.book.execute.runner.notice_results`).
CUSTOM_NOTICE_TAG = "dsmlib-custom-run"


@dataclass(frozen=True)
class Reference:
    """One committed reference execution of one chapter under one profile."""
    profile: str
    name: str
    doc: dict[str, Any]            # its results (``write_results``'s document)
    provenance: dict[str, Any]     # the executed notebook's ``metadata.dsmlib.provenance``
    key: str                       # the content key it was executed with
    fresh: bool                    # whether that key is the current code's
    notebook: Path
    fixture: str = ""              # non-empty for a test fixture: what it is
    reason: str = ""               # for a stale one: what changed since (HTML)
    #: the parameters a re-derivation from committed run records executed with ({}: none)
    overrides: dict[str, Any] = field(default_factory=dict)
    #: for a stale one, what refreshes it: "rederive" (on a CPU, from its run records), "gpu"
    #: (train again where its hardware is) or "execute" (a chapter without runs)
    refresh: str = ""
    hint: str = ""                 # for a stale one: the command that refreshes it (HTML)

    @property
    def commit(self) -> str:
        """The commit its numbers were computed (analysed) at."""
        return str(self.provenance.get("commit", "unknown"))

    @property
    def device(self) -> str:
        """Where it ran; for one re-derived from run records, where they trained too (once,
        where both are the same kind of device)."""
        trained = self.provenance.get("trained")
        here = device_label(self.provenance)
        if not trained or device_label(trained) == here:
            return here
        return f"{device_label(trained)} (training), {here} (analysis)"

    @property
    def origin(self) -> str:
        return origin(self.provenance)

    def claims(self) -> dict[str, dict[str, Any]]:
        return {c["id"]: c for c in self.doc.get("claims", [])}


def device_label(prov: dict[str, Any]) -> str:
    """The device a run used, in a few words: the GPU if any, else the CPU and its cores."""
    hw = prov.get("hardware") or {}
    if hw.get("gpu"):
        return str(hw["gpu"])
    cpu = str(hw.get("cpu") or "unknown CPU")
    return f"{cpu}, {hw.get('cpu_count', '?')} cores"


def origin(prov: dict[str, Any]) -> str:
    """Where and at which commit a reference's numbers were made, in a few words: "executed on
    <device> at commit A", or for one re-derived from committed run records, "trained on
    <device> at commit A, analysed on <device> at commit B"."""
    here = f"{device_label(prov)} at commit {prov.get('commit', 'unknown')}"
    trained = prov.get("trained")
    if not trained:
        return f"executed on {here}"
    return (f"trained on {device_label(trained)} at commit {trained.get('commit', 'unknown')}, "
            f"analysed on {here}")


def reference_paths(root: Path, profile: str, name: str) -> tuple[Path, Path]:
    """(executed notebook, results) of ``name``'s reference under ``profile``."""
    d = root / REFERENCE_DIR / profile
    return d / f"{name}.ipynb", d / f"{name}.json"


def slim_notebook(nb: dict[str, Any]) -> dict[str, Any]:
    """``nb`` without the copies a reader does not need: a figure's static-site HTML (kept
    as its plotly JSON) and saved widget state. Modifies and returns ``nb``."""
    nb.get("metadata", {}).pop("widgets", None)
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            data = out.get("data") or {}
            if PLOTLY_JSON in data:
                data.pop("text/html", None)
    return nb


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path} cannot be read as JSON: {err}") from None


def reference_meta(path: Path) -> dict[str, Any]:
    """The ``dsmlib`` metadata of a stored reference notebook (its key, provenance and fixture
    mark); ValueError naming the file when it cannot be read."""
    return _read_json(path).get("metadata", {}).get("dsmlib", {})


def store_reference(root: Path, profile: str, name: str, *, fixture: str = "",
                    run: Any = None, trained: dict[str, Any] | None = None) -> Path:
    """Copy ``name``'s execution under ``profile`` (``book/chapters/<profile>/`` and
    ``results/<profile>/``, which must match) to ``reference/<profile>/``, slimmed, each file
    by an atomic rename (results first, as the runner does). ``fixture``: mark it as a test
    fixture, with this description. ``run``: the execution is this planned custom run
    (:func:`dsmlib.book.execute.runner.plan`), a re-derivation from the run records trained as
    ``trained`` says (their manifest's provenance: :mod:`dsmlib.book.references.records`);
    its overrides and that provenance are kept beside the analysis's. Returns the stored
    notebook's path."""
    src_nb, src_res = ((executed_path(root, profile, name), results_path(root, profile, name))
                       if run is None else (run.out, run.results))
    nb = _read_json(src_nb)
    meta = nb.get("metadata", {}).get("dsmlib", {})
    prov = meta.get("provenance") or {}
    why = results_mismatch(src_res, meta.get("key", ""), prov.get("parameters", {}), profile,
                           custom=run is not None and run.custom)
    if why:
        raise ValueError(f"{src_res.relative_to(root)} does not match {src_nb.relative_to(root)}"
                         f": {why}; execute it again before storing a reference")
    if fixture:
        meta["fixture"] = fixture
    if run is not None:
        meta["rederived"] = {"overrides": {k: run.values[k] for k, v in run.set_by.items()
                                           if v == "command line"}}
        prov["trained"] = dict(trained or {})
        nb["cells"] = [c for c in nb.get("cells", [])          # "results are in custom/"
                       if CUSTOM_NOTICE_TAG not in c.get("metadata", {}).get("tags", [])]
    text = json.dumps(slim_notebook(nb), ensure_ascii=False, separators=(",", ":"))
    dest_nb, dest_res = reference_paths(root, profile, name)
    if len(text.encode()) > MAX_BYTES:
        raise ValueError(f"the reference notebook of {name!r} under {profile!r} would be "
                         f"{len(text.encode()) / 1e3:.0f} kB, over the {MAX_BYTES / 1e3:.0f} kB "
                         "budget of a page: make its figures smaller")
    atomic_write_text(dest_res, src_res.read_text())
    atomic_write_text(dest_nb, text)
    return dest_nb


def load_references(root: Path, names: Iterable[str], current_key: Callable[[str, str], str],
                    *, exclude: str | None = None) -> list[Reference]:
    """Every reference under ``reference/*/`` of the chapters ``names`` (book order, then
    profile name), except profile ``exclude`` (the one being built).

    ``current_key(profile, name, overrides)`` is the content key the current code gives with
    the parameters ``overrides`` that the reference was executed with ({} but for one
    re-derived from run records) (the runner's :func:`dsmlib.book.execute.runner.plan`;
    :func:`dsmlib.book.references.freshness.current_references`). A reference whose results do
    not belong to its notebook (another profile, other parameters or another key) is a
    ValueError naming both files: it would show numbers its page did not produce.
    """
    base = root / REFERENCE_DIR
    names = list(names)
    profiles = sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    refs = []
    for name in names:
        for profile in profiles:
            if profile == exclude:
                continue
            nb_path, res_path = reference_paths(root, profile, name)
            if not nb_path.exists() and not res_path.exists():
                continue
            if not nb_path.exists() or not res_path.exists():
                have, miss = (nb_path, res_path) if nb_path.exists() else (res_path, nb_path)
                raise ValueError(f"{have.relative_to(root)} has no {miss.name} beside it: a "
                                 "reference is a notebook and its results; store it again "
                                 f"with `python -m dsmlib reference {name} --profile {profile}`")
            meta = reference_meta(nb_path)
            prov, key = meta.get("provenance") or {}, meta.get("key", "")
            overrides = dict((meta.get("rederived") or {}).get("overrides") or {})
            why = results_mismatch(res_path, key, prov.get("parameters", {}), profile,
                                   custom="rederived" in meta)
            if why or prov.get("profile") != profile:
                why = why or f"the notebook was executed under {prov.get('profile')!r}"
                raise ValueError(f"reference {res_path.relative_to(root)} does not match its "
                                 f"executed notebook {nb_path.relative_to(root)}: {why}; run "
                                 f"`python -m dsmlib reference {name} --profile {profile} "
                                 "--force` again")
            refs.append(Reference(profile, name, _read_json(res_path), prov, key,
                                  key == current_key(profile, name, overrides), nb_path,
                                  str(meta.get("fixture", "")), overrides=overrides))
    return refs


def references_by_chapter(refs: Iterable[Reference]) -> dict[str, list[Reference]]:
    out: dict[str, list[Reference]] = {}
    for r in refs:
        out.setdefault(r.name, []).append(r)
    return out
