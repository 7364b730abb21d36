"""An executed chapter that re-runs as it ran (book layer).

papermill, re-running a notebook (``papermill executed.ipynb out.ipynb -p seed 1``), replaces
the cell it injected the first time, and that cell is where the runner put the profile's
values, ``live_widgets = False`` and the results directory: the re-run silently fell back to
the parameters cell's defaults (the ``quick`` profile). So :func:`carry_parameters` writes every
value the execution ran with into the ``parameters`` cell itself, where papermill injects
*after* it and never replaces it, and drops the injected cell (its values are now the
parameters cell's; papermill's record stays in ``metadata.papermill.parameters``, the run's in
``metadata.dsmlib.provenance``). A plain papermill re-run with one ``-p`` then runs the
execution's profile with that one change (and writes, being no runner's run, to
``results/custom/``, with the profile's name; see :mod:`dsmlib.foundation.results`).

``results_dir`` keeps the notebook's own default (``"results"``, under the kernel's working
directory): the runner's absolute path names the machine that executed it.
"""
from __future__ import annotations

import ast
import json
from typing import Any

__all__ = ["carry_parameters", "executed_values"]

PARAMETERS_TAG, INJECTED_TAG = "parameters", "injected-parameters"
#: What the first line of a carried parameters cell says.
HEADER = ("# The values this execution ran with (profile {profile!r}); "
          "`papermill THIS.ipynb OUT.ipynb -p NAME VALUE` changes one.")


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _literal(value: Any) -> str:
    """``value`` as Python source that reads back as the same value and type."""
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)
    if ast.literal_eval(text) != value or type(ast.literal_eval(text)) is not type(value):
        raise ValueError(f"cannot write the parameter value {value!r} as a Python literal")
    return text


def _rewritten(src: str, values: dict[str, Any]) -> str:
    """``src`` (a parameters cell) with each assignment of a name in ``values`` given that
    value; comments, layout and unchanged literals are kept."""
    lines = src.splitlines(keepends=True)
    edits = []
    for stmt in ast.parse(src).body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in values):
            continue
        new = values[stmt.targets[0].id]
        try:
            old = ast.literal_eval(stmt.value)
            if old == new and type(old) is type(new):
                continue
            if isinstance(old, tuple) and list(old) == new:   # JSON made the tuple a list
                continue
        except ValueError:
            pass
        v = stmt.value
        edits.append((v.lineno - 1, v.col_offset, v.end_lineno - 1, v.end_col_offset,
                      _literal(new)))
    for l0, c0, l1, c1, text in sorted(edits, reverse=True):   # from the end: offsets hold
        lines[l0:l1 + 1] = [lines[l0][:c0] + text + lines[l1][c1:]]
    return "".join(lines)


def executed_values(nb: dict[str, Any]) -> dict[str, Any]:
    """Every value a decorated execution ran with (its provenance's parameters, ``profile``
    included), with the static site's explorers (``live_widgets = False``)."""
    prov = (nb.get("metadata", {}).get("dsmlib") or {}).get("provenance") or {}
    if "parameters" not in prov or "profile" not in prov:
        raise ValueError("the notebook has no dsmlib provenance: it was not executed by "
                         "`python -m dsmlib execute`")
    return {**prov["parameters"], "profile": prov["profile"], "live_widgets": False}


def carry_parameters(nb: dict[str, Any], values: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``values`` (default :func:`executed_values`) into ``nb``'s parameters cell, under
    a first line saying so, and drop the cell papermill injected. Modifies and returns ``nb``.
    A name the parameters cell does not assign is a ValueError (it would be lost)."""
    values = executed_values(nb) if values is None else values
    cells = nb["cells"]
    at = next((i for i, c in enumerate(cells)
               if PARAMETERS_TAG in c.get("metadata", {}).get("tags", [])), None)
    if at is None:
        raise ValueError("the notebook has no cell tagged 'parameters'")
    src = _source(cells[at])
    body = "".join(line for line in src.splitlines(keepends=True)
                   if not line.startswith("# The values this execution ran with"))
    declared = {t.id for s in ast.parse(body).body if isinstance(s, ast.Assign)
                for t in s.targets if isinstance(t, ast.Name)}
    lost = sorted(set(values) - declared)
    if lost:
        raise ValueError(f"parameter(s) {lost} are not assigned in the parameters cell")
    header = HEADER.format(profile=values.get("profile"))
    cells[at]["source"] = header + "\n" + _rewritten(body, values)
    cells[:] = [c for c in cells
                if INJECTED_TAG not in c.get("metadata", {}).get("tags", [])]
    return nb
